//! The command log ([`CellStore`]): what a room's history is made of (stored events and
//! commands), the group commit that writes a batch of them in one transaction conditional on
//! the room's epoch and version, and the answer a cell gives to an applied command.

use std::sync::Arc;

use async_trait::async_trait;
use room_domain::{Actor, Command, CommandId, Event, EventEnvelope, GiftOrder, RoomId, Timestamp};
use serde::{Deserialize, Serialize};

use super::directory::RoomSummary;
use super::payouts::Payout;
use super::timers::Timer;
use crate::error::Result;

/// An event as stored in a room's log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredEvent {
    /// Position in the room's history, from 1, without gaps.
    pub seq: u64,
    /// When the command that caused it was applied.
    pub occurred_at: Timestamp,
    /// The event (unredacted: the log is internal).
    pub event: Event,
}

/// A command as stored in a room's log, with the range of events it produced. A command with
/// no events (a no-op) or a rejection is not stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandRecord {
    /// The command's id; unique within the room.
    pub command_id: CommandId,
    /// The command.
    pub command: Command,
    /// Who issued it.
    pub actor: Actor,
    /// When it was applied.
    pub applied_at: Timestamp,
    /// The seq of its first event.
    pub first_seq: u64,
    /// The seq of its last event.
    pub last_seq: u64,
}

/// The answer to an applied command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandReply {
    /// The room's version after the command (or its current version for a no-op).
    pub version: u64,
    /// The events the command produced; empty for a no-op.
    pub events: Vec<StoredEvent>,
}

/// Everything one group commit writes, in ONE transaction, only if the room's epoch is still
/// `epoch` and its version still `expected_version`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitBatch {
    /// The room.
    pub room_id: RoomId,
    /// The epoch this node activated the room with.
    pub epoch: u64,
    /// The room's version before the batch.
    pub expected_version: u64,
    /// The accepted commands.
    pub commands: Vec<CommandRecord>,
    /// Their events, seq `expected_version + 1` onwards.
    pub events: Vec<StoredEvent>,
    /// Envelopes of the durable events, for the outbox.
    pub outbox: Vec<EventEnvelope>,
    /// Gift orders the batch applied (now APPLIED or COMPLETED). Each must be stored and
    /// still await its room ([`GiftOrder::awaits_room`]): else the batch is refused,
    /// [`Error::NotFound`](crate::Error::NotFound) or
    /// [`Error::OrderSettled`](crate::Error::OrderSettled).
    pub orders: Vec<GiftOrder>,
    /// Timers to arm (replacing any with the same id).
    pub timers: Vec<Timer>,
    /// Credits the batch owes (rocket rewards), for the payout worker. A payout already owed
    /// under the same op id is kept as first recorded.
    pub payouts: Vec<Payout>,
    /// The room as the directory shows it after the batch.
    pub summary: Option<RoomSummary>,
}

impl CommitBatch {
    /// The room's version after the batch.
    pub fn new_version(&self) -> u64 {
        self.expected_version + self.events.len() as u64
    }

    /// A command id that stands twice in the batch: every store refuses such a batch as
    /// [`Error::AlreadyExists`](crate::Error::AlreadyExists).
    pub fn repeated_command(&self) -> Option<&CommandId> {
        let mut seen = std::collections::HashSet::new();
        self.commands
            .iter()
            .map(|c| &c.command_id)
            .find(|id| !seen.insert(*id))
    }

    /// Why the events' seqs do not follow `expected_version` without gaps, if they do not:
    /// every store refuses such a batch as [`Error::Invalid`](crate::Error::Invalid).
    pub fn seq_problem(&self) -> Option<String> {
        self.events
            .iter()
            .enumerate()
            .find(|(i, e)| e.seq != self.expected_version + 1 + *i as u64)
            .map(|(_, e)| format!("event seq {} does not follow the version", e.seq))
    }
}

/// The room's position when this node activated it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Activation {
    /// The new epoch: every commit of this activation must carry it.
    pub epoch: u64,
    /// The newest committed version.
    pub version: u64,
}

/// The command log: activation with an epoch bump, conditional group commits, replay.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait CellStore: Send + Sync {
    /// Bumps the room's epoch (creating its row if new), records `node` as owner, and returns
    /// the new epoch and the committed version. Every earlier activation is fenced from now on.
    async fn activate(&self, room_id: &RoomId, node: &str) -> Result<Activation>;

    /// Writes the batch in one transaction if the room's epoch and version are as the batch
    /// says: [`Error::NotOwner`](crate::Error::NotOwner) if the epoch moved,
    /// [`Error::Conflict`](crate::Error::Conflict) if the version moved,
    /// [`Error::AlreadyExists`](crate::Error::AlreadyExists) if a command id is already stored.
    /// Nothing is written on any error.
    async fn commit(&self, batch: &CommitBatch) -> Result<()>;

    /// Events with `seq > after`, in order, at most `limit`. Once the log was pruned
    /// ([`CellStore::prune_log`]) it starts past seq 1, so the first event returned may come
    /// after `after + 1`: a reader that needs every event after `after` checks for the gap.
    async fn list_events(
        &self,
        room_id: &RoomId,
        after: u64,
        limit: u32,
    ) -> Result<Vec<StoredEvent>>;

    /// A stored command by id, while its events (`first_seq..=last_seq`) are all stored too:
    /// a repeat of the command is answered with them. A command whose events
    /// [`CellStore::prune_log`] has begun to delete is absent, never answered without them.
    async fn get_command(
        &self,
        room_id: &RoomId,
        command_id: &CommandId,
    ) -> Result<Option<CommandRecord>>;

    /// Deletes the oldest part of room logs, at most `limit` rows (events and commands
    /// together) per call across all rooms; returns how many rows went. A caller loops until
    /// a call returns less than `limit`: nothing more could go then.
    ///
    /// The rule, for each room whose newest snapshot (as this store's
    /// [`SnapshotStore`](crate::ports::SnapshotStore) holds it) is at version `V`:
    ///
    /// - A command *expires* when it was applied before `older_than` and its events end at or
    ///   before the snapshot (`applied_at < older_than` and `last_seq <= V`).
    /// - Events go from the front of the log, up to `V` and up to the first event of the
    ///   room's first command that has not expired. The log stays one run of events, from
    ///   some seq to the room's version.
    /// - An expired command goes once its events are gone; from the moment the first of them
    ///   goes, [`CellStore::get_command`] no longer finds it.
    ///
    /// So nothing after `V` goes (activation loads the snapshot and replays the events after
    /// it), a room without a snapshot keeps everything, and a command applied at or after
    /// `older_than` stays with all of its events (and every event after them), so that a
    /// repeat of its id is answered from the log as the first time. An event's time is its
    /// command's (`occurred_at == applied_at`): an event younger than `older_than` belongs
    /// to a command that has not expired, and stays. A repeat of a command id that is older
    /// than `older_than` may not be recognised any more: `older_than` must lie further back
    /// than any client retries a command.
    async fn prune_log(&self, older_than: Timestamp, limit: u32) -> Result<u64>;
}

/// Shared handle to a [`CellStore`].
pub type CellStoreRef = Arc<dyn CellStore>;
