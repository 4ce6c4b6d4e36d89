//! The bodies of the platform admins' robot room routes: a robot room's configuration as it is
//! created, changed and read.

use room_app::ports::RobotRoomConfig;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::fields::{default_true, whole};
use super::schema::{Audience, Id, ImageUrl, Notice, Region, RobotPool, RoomName};

/// A robot room's profile, as the room API has it.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RobotProfileRequest {
    /// The room's name, 1 to 30 characters.
    #[schema(value_type = RoomName, example = "Late night songs")]
    pub name: String,
    /// The notice board (default empty).
    #[serde(default)]
    #[schema(value_type = Option<Notice>)]
    pub notice: Option<String>,
    /// The cover image URL; `""` or absent: none.
    #[schema(value_type = Option<ImageUrl>)]
    pub cover_url: Option<String>,
}

/// A change to a robot room's profile: absent fields stay.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchRobotProfileRequest {
    /// New name, 1 to 30 characters.
    #[schema(value_type = Option<RoomName>)]
    pub name: Option<String>,
    /// New notice board text.
    #[schema(value_type = Option<Notice>)]
    pub notice: Option<String>,
    /// New cover image URL; `""` removes it.
    #[schema(value_type = Option<ImageUrl>)]
    pub cover_url: Option<String>,
}

/// One gift of a robot room's gift mix.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GiftShareRequest {
    /// A catalog gift.
    #[schema(value_type = Id, example = "rose")]
    pub gift_id: String,
    /// Its weight among the mix, 1 to 10,000.
    #[serde(deserialize_with = "whole::u32")]
    #[schema(minimum = 1, maximum = 10_000)]
    pub weight: u32,
}

/// `POST /v1/admin/robot-rooms`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateRobotRoomRequest {
    /// What the room shows.
    pub profile: RobotProfileRequest,
    /// The room's mic seats, 1 to 20 (default 8); fixed once created.
    #[serde(default, deserialize_with = "whole::option_i64")]
    #[schema(minimum = 1, maximum = 20)]
    pub seat_count: Option<i64>,
    /// The room's region code, up to 32 characters.
    #[schema(value_type = Option<Region>)]
    pub region: Option<String>,
    /// The robot pool.
    #[schema(value_type = RobotPool)]
    pub robots: Vec<String>,
    /// Target robot listeners for each hour of the day (UTC).
    #[serde(deserialize_with = "whole::u32_list")]
    #[schema(value_type = Audience)]
    pub audience: Vec<u32>,
    /// Target seats robots occupy, 0 to the seat count less one (robots never take the last
    /// free seat) and at most the pool's size.
    #[serde(deserialize_with = "whole::i64")]
    #[schema(minimum = 0, maximum = 19)]
    pub seats: i64,
    /// Robot gifts per minute, 0 to 600.
    #[serde(deserialize_with = "whole::u32")]
    #[schema(minimum = 0, maximum = 600)]
    pub gift_rate_per_minute: u32,
    /// 1 to 20 distinct catalog gifts with their weights.
    #[schema(min_items = 1, max_items = 20)]
    pub gift_mix: Vec<GiftShareRequest>,
    /// Whether the room is run (default true).
    #[serde(default = "default_true")]
    pub enabled: bool,
}

/// `PATCH /v1/admin/robot-rooms/{room_id}`: absent fields stay; the result is checked as a
/// whole.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchRobotRoomRequest {
    /// Profile changes.
    pub profile: Option<PatchRobotProfileRequest>,
    /// A new robot pool (the room's owner stays who it is).
    #[schema(value_type = Option<RobotPool>)]
    pub robots: Option<Vec<String>>,
    /// New hourly audience targets.
    #[serde(default, deserialize_with = "whole::option_u32_list")]
    #[schema(value_type = Option<Audience>)]
    pub audience: Option<Vec<u32>>,
    /// New seat target.
    #[serde(default, deserialize_with = "whole::option_i64")]
    #[schema(minimum = 0, maximum = 19)]
    pub seats: Option<i64>,
    /// New gift rate.
    #[serde(default, deserialize_with = "whole::option_u32")]
    #[schema(minimum = 0, maximum = 600)]
    pub gift_rate_per_minute: Option<u32>,
    /// A new gift mix.
    #[schema(min_items = 1, max_items = 20)]
    pub gift_mix: Option<Vec<GiftShareRequest>>,
    /// Run the room or not.
    pub enabled: Option<bool>,
    /// The version the change is based on, from 1 (0 is refused with 400
    /// `INVALID_ROBOT_ROOM`): given, the change is refused with 409 `ROBOT_ROOM_CHANGED` when
    /// the configuration has moved on, unless the configuration already says what the change
    /// asks for (a repeat of it): that answers 200 with the configuration.
    #[schema(minimum = 1)]
    pub version: Option<u64>,
}

/// A robot room's profile.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RobotProfileResponse {
    /// Name.
    pub name: String,
    /// Notice board.
    pub notice: String,
    /// Cover image.
    pub cover_url: Option<String>,
}

/// One gift of a gift mix.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct GiftShareResponse {
    /// The catalog gift.
    pub gift_id: String,
    /// Its weight.
    pub weight: u32,
}

/// A robot room's configuration.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RobotRoomResponse {
    /// The room.
    pub room_id: String,
    /// What the room shows.
    pub profile: RobotProfileResponse,
    /// The room's mic seats.
    pub seat_count: u8,
    /// The robot pool.
    pub robots: Vec<String>,
    /// Target robot listeners for each hour of the day (UTC).
    pub audience: Vec<u32>,
    /// Target seats robots occupy.
    pub seats: u8,
    /// Robot gifts per minute.
    pub gift_rate_per_minute: u32,
    /// Which gifts robots send, with their weights.
    pub gift_mix: Vec<GiftShareResponse>,
    /// Whether the room is run.
    pub enabled: bool,
    /// Rises with every change, from 1.
    pub version: u64,
    /// When it was created.
    pub created_at: i64,
    /// When it was last changed.
    pub updated_at: i64,
    /// The id of the node running the room (`local` for an embedded node), or null when no
    /// node runs it.
    pub running_on: Option<String>,
}

impl RobotRoomResponse {
    /// The configuration as the API shows it, with the node running it.
    pub fn new(config: RobotRoomConfig, running_on: Option<String>) -> Self {
        RobotRoomResponse {
            room_id: config.room_id.to_string(),
            profile: RobotProfileResponse {
                name: config.profile.name,
                notice: config.profile.notice,
                cover_url: config.profile.cover_url,
            },
            seat_count: config.seat_count,
            robots: config.robots.iter().map(ToString::to_string).collect(),
            audience: config.audience,
            seats: config.seats,
            gift_rate_per_minute: config.gift_rate_per_minute,
            gift_mix: config
                .gift_mix
                .into_iter()
                .map(|share| GiftShareResponse {
                    gift_id: share.gift_id.to_string(),
                    weight: share.weight,
                })
                .collect(),
            enabled: config.enabled,
            version: config.version,
            created_at: config.created_at.0,
            updated_at: config.updated_at.0,
            running_on,
        }
    }
}

/// `GET /v1/admin/robot-rooms`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RobotRoomListResponse {
    /// Robot rooms, by room id.
    pub robot_rooms: Vec<RobotRoomResponse>,
    /// Pass as `cursor` for the next page; absent on the last page.
    pub next_cursor: Option<String>,
}
