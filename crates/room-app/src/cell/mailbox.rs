//! A cell's mailbox: the requests callers send a cell, and the queue the cell takes them from,
//! in batches, holding those that arrive while a commit is in flight.

use std::collections::VecDeque;
use std::sync::Arc;

use room_domain::{Actor, Command, GiftOrder, RoomId, RoomState};
use tokio::sync::{mpsc, oneshot};

use crate::error::{Error, Result};
use crate::ports::CommandReply;

/// What an active cell keeps in memory to answer repeated commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecentReplies {
    /// Replies remembered.
    pub count: usize,
    /// Their estimated size in bytes, within
    /// [`CellConfig::recent_commands_bytes`](crate::CellConfig::recent_commands_bytes).
    pub bytes: usize,
}

/// A read of the room's state, run by the cell.
pub(super) type Query = Box<dyn FnOnce(&RoomState) + Send>;

/// What a caller sends a cell.
pub(super) enum Request {
    /// Applies a command.
    Command(Box<CommandRequest>),
    /// Reads what storage holds: waits for a commit in flight.
    Query(Query),
    /// Reads the newest state, which may hold a batch whose commit is in flight.
    Peek(Query),
    /// Reads what the cell remembers of recent commands.
    Recent(oneshot::Sender<RecentReplies>),
}

/// A command to apply, with what it needs and where its answer goes.
pub(super) struct CommandRequest {
    pub(super) command: Command,
    pub(super) actor: Actor,
    pub(super) order: Option<GiftOrder>,
    pub(super) reply: oneshot::Sender<Result<Arc<CommandReply>>>,
}

/// A cell's queue: the channel, plus the requests that arrived while a commit was in flight.
pub(super) struct Mailbox {
    pub(super) rx: mpsc::Receiver<Request>,
    /// Commands (in arrival order) taken off the channel during a commit, for the next batch.
    pub(super) held: VecDeque<Request>,
    /// Queries taken off the channel during a commit, answered once it has ended.
    pub(super) held_queries: Vec<Query>,
    /// The most requests held; beyond that the channel fills and senders are told to back off.
    pub(super) cap: usize,
}

impl Mailbox {
    pub(super) async fn recv(&mut self) -> Option<Request> {
        match self.held.pop_front() {
            Some(request) => Some(request),
            None => self.rx.recv().await,
        }
    }

    pub(super) fn take_batch(&mut self, first: Request, max: usize) -> Vec<Request> {
        let mut batch = Vec::with_capacity(max.min(64));
        batch.push(first);
        while batch.len() < max {
            match self
                .held
                .pop_front()
                .map(Ok)
                .unwrap_or_else(|| self.rx.try_recv())
            {
                Ok(request) => batch.push(request),
                Err(_) => break,
            }
        }
        batch
    }

    /// Waits for `work` (a commit), taking requests off the channel meanwhile: commands for
    /// the next batch, queries to answer once the commit has ended. `state` already holds
    /// the batch being committed: a query answered from it now could show what a failed
    /// commit then takes back, so only peeks are answered from it.
    pub(super) async fn hold_while<F: Future>(&mut self, state: &RoomState, work: F) -> F::Output {
        tokio::pin!(work);
        loop {
            tokio::select! {
                biased;
                output = &mut work => return output,
                Some(request) = self.rx.recv(), if self.held.len() + self.held_queries.len() < self.cap => match request {
                    Request::Query(query) => self.held_queries.push(query),
                    Request::Peek(peek) => peek(state),
                    command => self.held.push_back(command),
                },
            }
        }
    }
}

/// Answers a request the cell will not run: a command with `error` (retryable as such),
/// a query by dropping it.
pub(super) fn fail(request: Request, error: &Error, room_id: &RoomId) {
    if let Request::Command(command) = request {
        let error = match error {
            Error::NotOwner(_) => Error::NotOwner(room_id.to_string()),
            Error::Cancelled => Error::Cancelled,
            other => Error::Unavailable(other.to_string()),
        };
        let _ = command.reply.send(Err(error));
    }
    // A dropped query answers NotOwner through its closed channel.
}
