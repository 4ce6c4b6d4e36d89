//! The body of a system message from a platform admin, and its answer.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::schema::{MessageTargetSchema, MessageText};

/// `POST /v1/admin/system-messages`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SystemMessageRequest {
    /// What the rooms show.
    #[schema(value_type = MessageText)]
    pub text: String,
    /// Whom it is for: `{"room_id": ...}`, `{"region": ...}` or `{"all": true}`.
    #[schema(value_type = MessageTargetSchema)]
    pub target: TargetField,
}

/// Whom a system message is for.
#[derive(Debug, Clone, Deserialize)]
#[serde(try_from = "serde_json::Value")]
pub enum TargetField {
    /// One room (its id, checked by the handler).
    Room(String),
    /// Every open room of a region.
    Region(String),
    /// Every open room.
    All,
}

/// The three forms, each closed: one field and nothing else.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RoomTarget {
    room_id: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RegionTarget {
    region: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AllTarget {
    all: bool,
}

impl TryFrom<serde_json::Value> for TargetField {
    type Error = String;

    fn try_from(value: serde_json::Value) -> Result<Self, String> {
        let wrong =
            || "target must be {\"room_id\": ...}, {\"region\": ...} or {\"all\": true}".to_owned();
        let serde_json::Value::Object(fields) = &value else {
            return Err(wrong());
        };
        let field = |e: serde_json::Error| format!("target: {e}");
        match fields.keys().next().map(String::as_str) {
            Some("room_id") if fields.len() == 1 => serde_json::from_value::<RoomTarget>(value)
                .map(|t| TargetField::Room(t.room_id))
                .map_err(field),
            Some("region") if fields.len() == 1 => serde_json::from_value::<RegionTarget>(value)
                .map(|t| TargetField::Region(t.region))
                .map_err(field),
            Some("all") if fields.len() == 1 => match serde_json::from_value::<AllTarget>(value) {
                Ok(AllTarget { all: true }) => Ok(TargetField::All),
                Ok(_) => Err("target: `all` must be true".to_owned()),
                Err(e) => Err(field(e)),
            },
            _ => Err(wrong()),
        }
    }
}

/// What came of a system message.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
pub struct SystemMessageResponse {
    /// Rooms that show it.
    pub sent: u32,
    /// Rooms that closed before it reached them.
    pub closed: u32,
    /// Rooms it could not reach now (overloaded or moving): send the same request again with
    /// the same `Idempotency-Key` to reach them, without showing it twice in the others.
    pub failed: u32,
}

impl From<room_app::MessageReport> for SystemMessageResponse {
    fn from(report: room_app::MessageReport) -> Self {
        SystemMessageResponse {
            sent: report.sent,
            closed: report.closed,
            failed: report.failed,
        }
    }
}
