//! Holding a room's cell on this node ([`HeldCell`]): what is sent through it reaches that one
//! cell, never a later cell of the room nor another node.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use room_domain::{Actor, Command, RoomId, RoomState};
use tokio::sync::{mpsc, oneshot};

use super::mailbox::{CommandRequest, Request};
use super::runtime::CellRuntime;
use crate::error::{Error, Result};
use crate::ports::CommandReply;

/// This node's cell of a room, as [`CellRuntime::activate_here`] started it. What is sent
/// through it reaches that cell only: never a later cell of the room, never another node.
/// Once the cell stops (its lease lost, idle, released, the node stopping), every request
/// through it is answered [`Error::NotOwner`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldCell {
    room_id: RoomId,
    id: u64,
}

impl HeldCell {
    /// The room.
    pub fn room_id(&self) -> &RoomId {
        &self.room_id
    }
}

impl CellRuntime {
    /// Activates the room on this node, never forwarding: the cell takes the room's lease
    /// and loads the room, and once it has, the room is held here until the cell stops
    /// ([`HeldCell`]). An active cell of the room is taken as it is. [`Error::NotOwner`] when
    /// another node holds the lease or the cell stopped before it was active.
    pub async fn activate_here(&self, room_id: &RoomId) -> Result<HeldCell> {
        let (reply, answer) = oneshot::channel();
        let id = self.send(
            room_id,
            Request::Query(Box::new(move |_| {
                let _ = reply.send(());
            })),
        )?;
        answer
            .await
            .map_err(|_| Error::NotOwner(room_id.to_string()))?;
        let held = HeldCell {
            room_id: room_id.clone(),
            id,
        };
        // A cell that was already stopping answered from its drain: it holds nothing.
        if !self.holds(&held) {
            return Err(Error::NotOwner(room_id.to_string()));
        }
        Ok(held)
    }

    /// Whether the cell `held` still runs.
    pub fn holds(&self, held: &HeldCell) -> bool {
        self.held_sender(held).is_some()
    }

    /// Applies `command` as `actor` on the cell `held`, and only there: [`Error::NotOwner`]
    /// once it stopped.
    pub async fn execute_on(
        &self,
        held: &HeldCell,
        command: Command,
        actor: Actor,
    ) -> Result<Arc<CommandReply>> {
        let (reply, answer) = oneshot::channel();
        self.send_held(
            held,
            Request::Command(Box::new(CommandRequest {
                command,
                actor,
                order: None,
                reply,
            })),
        )?;
        answer
            .await
            .unwrap_or_else(|_| Err(Error::NotOwner(held.room_id.to_string())))
    }

    /// Runs `read` on the committed state of the cell `held`, as [`CellRuntime::query`]
    /// does, and only there: [`Error::NotOwner`] once it stopped.
    pub async fn query_on<T, F>(&self, held: &HeldCell, read: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&RoomState) -> T + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        self.send_held(
            held,
            Request::Query(Box::new(move |state| {
                let _ = reply.send(read(state));
            })),
        )?;
        answer
            .await
            .map_err(|_| Error::NotOwner(held.room_id.to_string()))
    }

    /// Has the cell `held` stop in order, as an idle one does: it answers what is queued,
    /// writes its snapshot and releases the room's lease, so that another node may take the
    /// room at once.
    pub fn release(&self, held: &HeldCell) {
        if let Some(entry) = self.inner.lock_cells().get(&held.room_id)
            && entry.id == held.id
        {
            entry.control.release.cancel();
        }
    }

    /// Has this node's cell of `room_id`, if it has one, stop in order as
    /// [`CellRuntime::release`] does.
    pub fn release_room(&self, room_id: &RoomId) {
        if let Some(entry) = self.inner.lock_cells().get(room_id) {
            entry.control.release.cancel();
        }
    }

    fn held_sender(&self, held: &HeldCell) -> Option<mpsc::Sender<Request>> {
        let cells = self.inner.lock_cells();
        cells
            .get(&held.room_id)
            .filter(|entry| {
                entry.id == held.id
                    && entry.control.active.load(Ordering::Acquire)
                    && !entry.control.fence.is_cancelled()
                    && !entry.control.release.is_cancelled()
            })
            .map(|entry| entry.tx.clone())
    }

    fn send_held(&self, held: &HeldCell, request: Request) -> Result<()> {
        let not_owner = || Error::NotOwner(held.room_id.to_string());
        let tx = self.held_sender(held).ok_or_else(not_owner)?;
        match tx.try_send(request) {
            Ok(()) => Ok(()),
            Err(mpsc::error::TrySendError::Full(_)) => {
                metrics::counter!("room_cell_overloaded_total").increment(1);
                Err(Error::Overloaded(held.room_id.to_string()))
            }
            Err(mpsc::error::TrySendError::Closed(_)) => Err(not_owner()),
        }
    }
}
