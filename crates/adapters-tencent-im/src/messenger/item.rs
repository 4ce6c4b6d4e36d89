//! What moves through the messenger: one commit's display events as `publish` queues them
//! ([`Batch`]), one event waiting in its room ([`Item`]) and one message's content ([`Pack`]).

use room_app::ports::DisplayMessage;
use room_domain::{EventEnvelope, ImPriority, RoomId};
use tokio::time::Instant;

/// One commit's display events, as `publish` queues them.
pub(super) struct Batch {
    pub(super) room_id: RoomId,
    pub(super) messages: Vec<DisplayMessage>,
    pub(super) at: Instant,
}

/// An event waiting to be sent.
pub(super) struct Item {
    pub(super) envelope: EventEnvelope,
    pub(super) priority: ImPriority,
    pub(super) key: Option<&'static str>,
    pub(super) published: Instant,
}

impl Item {
    pub(super) fn seq(&self) -> u64 {
        self.envelope.seq
    }
}

/// One message's content.
pub(super) struct Pack {
    pub(super) data: String,
    pub(super) priority: ImPriority,
    /// When each of its events was published.
    pub(super) published: Vec<Instant>,
    /// Each of its events' envelope JSON and priority, in order: what its halves are made of
    /// if Tencent refuses it as too long.
    pub(super) parts: Vec<(String, ImPriority)>,
}
