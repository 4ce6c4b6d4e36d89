//! Display events ([`Messenger`]): what a commit hands to the room's IM group (or the event
//! stream in embedded mode), best effort.

use std::sync::Arc;

use async_trait::async_trait;
use room_domain::{EventEnvelope, RoomId};

/// A display event on its way to the room's IM group (or the SSE stream in embedded mode).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DisplayMessage {
    /// The envelope (redacted).
    pub envelope: EventEnvelope,
    /// Its priority.
    pub priority: room_domain::ImPriority,
    /// Coalescing key, if display may keep only the newest.
    pub coalesce_key: Option<&'static str>,
}

/// Sends display events. Best effort: never blocks or fails a command.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait Messenger: Send + Sync {
    /// Hands over the display events of one commit of one room, in seq order.
    async fn publish(&self, room_id: &RoomId, messages: Vec<DisplayMessage>);
}

/// Shared handle to a [`Messenger`].
pub type MessengerRef = Arc<dyn Messenger>;
