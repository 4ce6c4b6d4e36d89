//! The room lists: `GET /v1/rooms` and the pins of `/v1/admin/pins`.

use room_app::lists::ListItem;
use room_app::ports::RoomPin;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::schema::Id;

/// One room of a list.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RoomListItem {
    /// The room id.
    pub room_id: String,
    /// Its short numeric id (`null` when it has none).
    pub short_id: Option<u32>,
    /// Name.
    pub name: String,
    /// Cover picture URL (`null` when none).
    pub cover_url: Option<String>,
    /// The owner.
    pub owner: String,
    /// The owner's nickname (`null` when the service has none).
    pub owner_nickname: Option<String>,
    /// The owner's avatar URL (`null` when the service has none).
    pub owner_avatar_url: Option<String>,
    /// Members present.
    pub online_count: u32,
    /// Seats with someone on them.
    pub seats_taken: u32,
    /// The room's region (empty when unknown).
    pub region: String,
    /// The room's country: its owner's (`null` when unknown).
    pub country: Option<String>,
    /// Whether joining needs a password (the password is never shown).
    pub locked: bool,
    /// Whether an admin's pin put it at this place.
    pub pinned: bool,
    /// Whether it is open (always `true` but in the `following` tab).
    pub open: bool,
    /// Its `hot` score when the list was ranked: recent heat plus boosts, rounded.
    pub score: i64,
}

impl From<ListItem> for RoomListItem {
    fn from(item: ListItem) -> Self {
        let room = item.room;
        RoomListItem {
            room_id: room.room_id.to_string(),
            short_id: room.short_id,
            name: room.name,
            cover_url: room.cover_url,
            owner: room.owner.to_string(),
            owner_nickname: room.owner_nickname,
            owner_avatar_url: room.owner_avatar_url,
            online_count: room.online,
            seats_taken: room.seats_taken,
            region: room.region,
            country: room.country,
            locked: room.locked,
            pinned: item.pinned,
            open: item.open,
            score: room.score.round() as i64,
        }
    }
}

/// `GET /v1/rooms`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RoomListResponse {
    /// The rooms of the page, in the list's order.
    pub rooms: Vec<RoomListItem>,
    /// Pass as `cursor` for the next page; absent on the last page.
    pub next_cursor: Option<String>,
}

/// `POST /v1/admin/pins`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreatePinRequest {
    /// The room to pin.
    #[schema(value_type = Id)]
    pub room_id: String,
    /// The tab: `hot`, `new`, `region` or `country`.
    #[schema(pattern = r"^(hot|new|region|country)$")]
    pub tab: String,
    /// The region, for the `region` tab only.
    #[schema(value_type = Option<super::schema::Region>)]
    pub region: Option<String>,
    /// The country (ISO 3166-1 alpha-2), for the `country` tab only.
    #[schema(value_type = Option<super::schema::Country>)]
    pub country: Option<String>,
    /// The position in the list, from 1 to 100.
    #[schema(minimum = 1, maximum = 100)]
    pub position: i64,
    /// When the pin starts showing (ms since the epoch; default now).
    pub starts_at_ms: Option<i64>,
    /// When it stops showing (ms since the epoch), after its start and in the future.
    pub ends_at_ms: i64,
}

/// A pin.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PinResponse {
    /// The pin's id.
    pub pin_id: String,
    /// The pinned room.
    pub room_id: String,
    /// The tab: `hot`, `new`, `region` or `country`.
    pub tab: String,
    /// The region of a `region` pin, the country of a `country` pin, `null` for the whole
    /// app.
    pub scope: Option<String>,
    /// The position, from 1.
    pub position: u32,
    /// When it starts showing.
    pub starts_at_ms: i64,
    /// When it stops showing.
    pub ends_at_ms: i64,
    /// When it was made.
    pub created_at_ms: i64,
}

impl From<RoomPin> for PinResponse {
    fn from(pin: RoomPin) -> Self {
        let scope = Some(pin.list.scope().to_owned()).filter(|s| !s.is_empty());
        PinResponse {
            pin_id: pin.pin_id,
            room_id: pin.room_id.to_string(),
            tab: pin.list.tab().to_owned(),
            scope,
            position: pin.position,
            starts_at_ms: pin.starts_at.0,
            ends_at_ms: pin.ends_at.0,
            created_at_ms: pin.created_at.0,
        }
    }
}

/// `GET /v1/admin/pins`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PinListResponse {
    /// Pins, ended ones too, by pin id.
    pub pins: Vec<PinResponse>,
    /// Pass as `cursor` for the next page; absent on the last page.
    pub next_cursor: Option<String>,
}
