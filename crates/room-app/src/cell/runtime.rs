//! The runtime's handle ([`CellRuntime`]): starting cells on demand, sending them requests on
//! this node, reading their state, and stopping them all.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use room_domain::{Actor, Command, GiftOrder, RoomId, RoomRules, RoomState, UserId};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::config::{CellConfig, CellDeps};
use super::mailbox::{CommandRequest, Query, RecentReplies, Request};
use super::registry::{CellControl, CellEntry, Inner};
use super::run::run_cell;
use crate::error::{Error, Result};
use crate::ports::{CommandReply, ForwarderRef, LeaseRef, Membership, PresenceRef, ReadKind};

/// The registry of active Room Cells on this node. Cheap to clone.
#[derive(Clone)]
pub struct CellRuntime {
    pub(super) inner: Arc<Inner>,
}

impl CellRuntime {
    /// A runtime whose cells stop when `cancel` is cancelled.
    ///
    /// Starts the node's lease keeper, so it must be called within a tokio runtime.
    pub fn new(deps: CellDeps, config: CellConfig, cancel: CancellationToken) -> Self {
        let runtime = CellRuntime {
            inner: Arc::new(Inner {
                deps,
                presence: std::sync::OnceLock::new(),
                forwarder: std::sync::OnceLock::new(),
                owners: Mutex::new(HashMap::new()),
                member_hints: Mutex::new(HashMap::new()),
                cells: Mutex::new(HashMap::new()),
                stopping: Mutex::new(HashMap::new()),
                next_cell_id: AtomicU64::new(1),
                tracker: TaskTracker::new(),
                cancel,
                rules: std::sync::RwLock::new((config.rules.clone(), 0)),
                config,
            }),
        };
        runtime.spawn_keeper();
        runtime
    }

    /// Has every room loaded from storage restore its members into `presence`, so that members
    /// whose clients went away while the room was not loaded are evicted too. Set once.
    pub fn restore_presence_into(&self, presence: PresenceRef) {
        let _ = self.inner.presence.set(presence);
    }

    /// The rules cells decide with now: the configured ones, with the rocket's levels of the
    /// newest version set ([`set_rocket`](Self::set_rocket)).
    pub fn rules(&self) -> Arc<RoomRules> {
        self.inner.rules()
    }

    /// Has cells decide with `settings`' rocket levels from their next batch, if its version
    /// is newer than the one they use (an older or the same version changes nothing): a room
    /// fuels and ignites by them from then on, and a rocket counting down launches with the
    /// prize it ignited with. Returns whether it changed the rules. The caller validates the
    /// levels.
    pub fn set_rocket(&self, settings: &room_domain::RocketSettings) -> bool {
        let mut rules = self.inner.rules.write().unwrap_or_else(|e| e.into_inner());
        if settings.version <= rules.1 {
            return false;
        }
        let mut next = (*rules.0).clone();
        next.rocket_levels = settings.levels.clone();
        *rules = (Arc::new(next), settings.version);
        true
    }

    /// The version of the rocket's levels cells decide with (0: the configured levels).
    pub fn rocket_version(&self) -> u64 {
        self.inner.rules.read().unwrap_or_else(|e| e.into_inner()).1
    }

    /// The lease the runtime holds its rooms with.
    pub fn lease(&self) -> &LeaseRef {
        &self.inner.deps.lease
    }

    /// How long a lease (and a [`Lease::try_lock`](crate::ports::Lease::try_lock) lock) holds
    /// without renewal: [`CellConfig::lease_ttl`](crate::CellConfig::lease_ttl).
    pub fn lease_ttl(&self) -> std::time::Duration {
        self.inner.config.lease_ttl()
    }

    /// Sends requests for rooms that another live node owns to that node through `forwarder`
    /// (several nodes); without one, every room is this node's to run (embedded mode). Set
    /// once.
    pub fn forward_with(&self, forwarder: ForwarderRef) {
        let _ = self.inner.forwarder.set(forwarder);
    }

    /// Applies `command` on this node's cell of the room, activating it if needed (the
    /// internal endpoint that forwarded requests reach): never forwards.
    pub async fn execute_local(
        &self,
        room_id: &RoomId,
        command: Command,
        actor: Actor,
        order: Option<GiftOrder>,
    ) -> Result<Arc<CommandReply>> {
        let (reply, answer) = oneshot::channel();
        self.send(
            room_id,
            Request::Command(Box::new(CommandRequest {
                command,
                actor,
                order,
                reply,
            })),
        )?;
        // A cell that stops without answering lost the room: the caller may retry.
        answer
            .await
            .unwrap_or_else(|_| Err(Error::NotOwner(room_id.to_string())))
    }

    /// Runs `read` on the room's state and returns the result. The state is what storage
    /// holds: a query that arrives during a commit waits for it to end. When another live node
    /// owns the room, its state comes from that node.
    pub async fn query<T, F>(&self, room_id: &RoomId, read: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&RoomState) -> T + Send + 'static,
    {
        self.read(room_id, read, ReadKind::Committed).await
    }

    /// Like [`CellRuntime::query`], but answered at once from the newest state, which may
    /// hold a batch whose commit is still in flight (and could yet fail). Only for checks
    /// the room makes again when it decides, such as a gift's pre-check.
    pub async fn peek<T, F>(&self, room_id: &RoomId, read: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&RoomState) -> T + Send + 'static,
    {
        self.read(room_id, read, ReadKind::Newest).await
    }

    /// [`CellRuntime::membership`] on this node's cell (activating it if needed): what the
    /// internal endpoint answers other nodes. Never forwards.
    pub async fn membership_local(
        &self,
        room_id: &RoomId,
        user: &UserId,
        kind: ReadKind,
    ) -> Result<Membership> {
        let user = user.clone();
        self.read_here(
            room_id,
            move |state| Membership {
                status: state.status,
                member: state.members.contains_key(&user),
                version: state.version,
            },
            kind,
        )
        .await
    }

    /// A copy of the room's state on this node's cell (activating it if needed), as
    /// [`CellRuntime::query`] or [`CellRuntime::peek`] see it: what the internal endpoint
    /// answers other nodes. Never forwards.
    pub async fn read_local(&self, room_id: &RoomId, kind: ReadKind) -> Result<RoomState> {
        self.read_here(room_id, RoomState::clone, kind).await
    }

    pub(super) async fn read_here<T, F>(
        &self,
        room_id: &RoomId,
        read: F,
        kind: ReadKind,
    ) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&RoomState) -> T + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let query: Query = Box::new(move |state| {
            let _ = reply.send(read(state));
        });
        let request = match kind {
            ReadKind::Committed => Request::Query(query),
            ReadKind::Newest => Request::Peek(query),
        };
        self.send(room_id, request)?;
        answer
            .await
            .map_err(|_| Error::NotOwner(room_id.to_string()))
    }

    /// What the room's cell remembers of recent commands (activating it if needed).
    pub async fn recent_replies(&self, room_id: &RoomId) -> Result<RecentReplies> {
        let (reply, answer) = oneshot::channel();
        self.send(room_id, Request::Recent(reply))?;
        answer
            .await
            .map_err(|_| Error::NotOwner(room_id.to_string()))
    }

    /// Whether the room has an active cell on this node.
    pub fn is_active(&self, room_id: &RoomId) -> bool {
        self.inner.lock_cells().contains_key(room_id)
    }

    /// The id of the node running the room's cell: this node when the cell is active here,
    /// else the holder of the room's lease ([`Lease::get_holder`](crate::ports::Lease)), if
    /// any. `None` when no node runs the room. Reads only: activates nothing.
    pub async fn running_on(&self, room_id: &RoomId) -> Result<Option<String>> {
        if self.is_active(room_id) {
            return Ok(Some(self.inner.config.node_id.clone()));
        }
        Ok(self
            .inner
            .deps
            .lease
            .get_holder(room_id)
            .await?
            .map(|holder| holder.node_id))
    }

    /// Rooms with an active cell on this node.
    pub fn active_rooms(&self) -> usize {
        self.inner.lock_cells().len()
    }

    /// Stops intake and waits until every cell has drained its queue, written its snapshot and
    /// released its lease.
    pub async fn shutdown(&self) {
        self.inner.cancel.cancel();
        self.inner.tracker.close();
        self.inner.tracker.wait().await;
    }

    /// Sends `request` to this node's cell of the room (activating it if needed); answers
    /// the cell's registry id.
    pub(super) fn send(&self, room_id: &RoomId, mut request: Request) -> Result<u64> {
        // The second attempt covers a cell that was deactivating when we found it.
        for _ in 0..2 {
            if self.inner.cancel.is_cancelled() {
                return Err(Error::Cancelled);
            }
            let (id, tx) = self.sender_for(room_id);
            match tx.try_send(request) {
                Ok(()) => return Ok(id),
                Err(mpsc::error::TrySendError::Full(_)) => {
                    metrics::counter!("room_cell_overloaded_total").increment(1);
                    return Err(Error::Overloaded(room_id.to_string()));
                }
                Err(mpsc::error::TrySendError::Closed(returned)) => {
                    self.inner.forget(room_id, id);
                    request = returned;
                }
            }
        }
        Err(Error::NotOwner(room_id.to_string()))
    }

    fn sender_for(&self, room_id: &RoomId) -> (u64, mpsc::Sender<Request>) {
        let mut cells = self.inner.lock_cells();
        if let Some(entry) = cells.get(room_id) {
            return (entry.id, entry.tx.clone());
        }
        let id = self.inner.next_cell_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel(self.inner.config.mailbox);
        let control = Arc::new(CellControl::default());
        cells.insert(
            room_id.clone(),
            CellEntry {
                id,
                tx: tx.clone(),
                control: control.clone(),
            },
        );
        metrics::gauge!("room_cells_active").set(cells.len() as f64);
        let inner = self.inner.clone();
        let room = room_id.clone();
        self.inner
            .tracker
            .spawn(async move { run_cell(inner, room, id, rx, control).await });
        (id, tx)
    }
}
