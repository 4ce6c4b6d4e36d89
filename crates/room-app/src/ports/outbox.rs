//! Durable facts on their way out: the [`Outbox`] a commit fills in its transaction, and the
//! [`EventPublisher`] (the message broker) the publisher drains it to.

use std::sync::Arc;

use async_trait::async_trait;
use room_domain::{EventEnvelope, RoomId, Timestamp};

use crate::error::Result;

/// A durable fact waiting in the outbox for the publisher.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxMessage {
    /// Assigned by the store, rising in commit order.
    pub id: i64,
    /// The envelope to publish (already redacted).
    pub envelope: EventEnvelope,
}

/// The outbox the commit fills and the publisher drains.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait Outbox: Send + Sync {
    /// Undelivered messages with `id > after` in commit order (per room, seq order), at most
    /// `limit` (`after` 0 for the oldest), but those of the rooms in `skip`: the publisher
    /// pages on past the rows of the rooms it holds back. Dead letters are not pending.
    async fn list_pending(
        &self,
        after: i64,
        skip: &[RoomId],
        limit: u32,
    ) -> Result<Vec<OutboxMessage>>;
    /// Marks messages delivered. Unknown ids are ignored.
    async fn mark_delivered(&self, ids: &[i64], at: Timestamp) -> Result<()>;
    /// Deletes at most `limit` messages delivered before `before`; returns how many.
    async fn delete_delivered_before(&self, before: Timestamp, limit: u32) -> Result<u64>;

    /// Messages with `id > after` in id (commit) order, delivered or not, at most `limit`:
    /// what an in-process consumer reads after its position
    /// ([`OutboxSource`](crate::consumers::OutboxSource)). A store whose transactions commit
    /// out of id order (MySQL) waits for the rows still being written in the range it reads,
    /// so a row below the last one returned can appear later only in the instant between its
    /// id's allotment and its insertion: a reader that must see every row waits a moment at a
    /// gap in the ids before it passes it.
    async fn list_after(&self, after: i64, limit: u32) -> Result<Vec<OutboxMessage>>;
    /// Marks delivered at `at` at most `limit` undelivered messages with `id <= through`,
    /// lowest ids first; returns how many. With no broker configured, a message is done once
    /// every in-process consumer has passed it, and this is how it becomes one that retention
    /// deletes ([`delete_delivered_before`](Outbox::delete_delivered_before)).
    async fn mark_passed(&self, through: i64, at: Timestamp, limit: u32) -> Result<u64>;

    /// Sets the undelivered message `id` aside as a dead letter with `reason` (the broker
    /// refused it for good), in one step: it is no longer pending, and the later messages of
    /// its room go on without it. `Ok(false)`, changing nothing, when no undelivered message
    /// has that id.
    async fn dead_letter(&self, id: i64, reason: &str, at: Timestamp) -> Result<bool>;
    /// Dead letters with `id > after`, in id order, at most `limit`.
    async fn list_dead_letters(&self, after: i64, limit: u32) -> Result<Vec<DeadLetter>>;
    /// Puts dead letter `id` back in the outbox, pending under its own id, for the publisher
    /// to publish again (after a fix of the broker or of the message's cause). `Ok(false)`
    /// when there is no such dead letter.
    async fn replay_dead_letter(&self, id: i64) -> Result<bool>;
}

/// A durable fact the broker refused for good, set aside by the publisher
/// ([`Outbox::dead_letter`]) until an admin replays it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetter {
    /// Its outbox id (it keeps it when replayed).
    pub id: i64,
    /// What was refused.
    pub envelope: EventEnvelope,
    /// Why the broker refused it.
    pub reason: String,
    /// When it was set aside.
    pub dead_at: Timestamp,
}

/// What [`EventPublisher::publish`] got the broker to take.
#[derive(Debug, Default)]
pub struct Published {
    /// The ids of the messages the broker acknowledged, in the order given. A message it did
    /// not take leaves out every later message of the same room too, so that marking these
    /// delivered never puts a room's facts out of order.
    pub delivered: Vec<i64>,
    /// The messages the broker refused for good (too large, invalid), each the first message
    /// of its room not taken, with the reason: the publisher sets them aside as dead letters
    /// instead of trying them again. Their room's later messages are not delivered.
    pub refused: Vec<(i64, String)>,
    /// Why some message was not taken, if one was, other than a refusal for good (in
    /// `refused`): a retry can help.
    pub error: Option<crate::error::Error>,
}

/// The message broker durable facts go to from the outbox (Kafka's `room.events.v1`, keyed by
/// room id so each room's facts stay in order).
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait EventPublisher: Send + Sync {
    /// Publishes `messages` (outbox order) and waits until the broker has acknowledged each
    /// one or given up on it. A message may reach the broker twice when an acknowledgement is
    /// lost; consumers drop the repeat by its `event_id`.
    async fn publish(&self, messages: &[OutboxMessage]) -> Published;
}

/// Shared handle to an [`Outbox`].
pub type OutboxRef = Arc<dyn Outbox>;
/// Shared handle to an [`EventPublisher`].
pub type EventPublisherRef = Arc<dyn EventPublisher>;
