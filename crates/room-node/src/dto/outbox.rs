//! The outbox's dead letters, as the admin routes show them.

use serde::Serialize;
use utoipa::ToSchema;

/// A durable fact the broker refused for good, set aside by the outbox publisher.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DeadLetterResponse {
    /// Its outbox id (as a string: ids outgrow JavaScript's integers); replay it by this id.
    pub id: String,
    /// The room whose fact it is.
    pub room_id: String,
    /// The fact's position in its room's log.
    pub seq: u64,
    /// The fact's `event_id`.
    pub event_id: String,
    /// The fact's type (`RoomGiftSent`, ...).
    pub event_type: String,
    /// Why the broker refused it.
    pub reason: String,
    /// When it was set aside, in milliseconds since the epoch.
    pub dead_at: i64,
    /// The whole envelope as it would be published.
    #[schema(value_type = Object)]
    pub envelope: serde_json::Value,
}

/// `GET /v1/admin/outbox/dead-letters`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DeadLetterListResponse {
    /// Dead letters, oldest first.
    pub dead_letters: Vec<DeadLetterResponse>,
    /// Pass as `cursor` for the next page; absent on the last page.
    pub next_cursor: Option<String>,
}
