//! The event stream's answer, as a schema of the OpenAPI document.

use utoipa::ToSchema;

/// One event of a Server-Sent Events stream, as a client reads it: the schema of the event
/// stream's answer.
#[derive(Debug, Clone, ToSchema)]
#[expect(
    dead_code,
    reason = "only its schema is used: the stream's events are written by axum's `Sse`"
)]
pub struct StreamEvent {
    /// `subscribed`, a room event's type (`RoomGiftSent`, `RoomMicChanged`, ...) or `lagged`.
    pub event: String,
    /// JSON: `{"room_id","version"}` for `subscribed`, the event's envelope for a room event,
    /// `{"missed"}` for `lagged`.
    pub data: String,
    /// The room event's `seq`; absent on `subscribed` and `lagged`.
    pub id: Option<String>,
}
