//! The bodies of the VIP routes: a user's grant, and the level table.

use room_app::ports::{VipGrant, VipLevels};
use room_domain::{Timestamp, VipPrivileges};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::fields::whole;

/// `PUT /v1/admin/users/{user_id}/vip`: grants, extends or changes the user's VIP level (the
/// last write wins).
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PutVipRequest {
    /// The level: one the level table has (1 to its number of levels, at most 32).
    #[serde(deserialize_with = "whole::u32")]
    #[schema(minimum = 1, maximum = 32)]
    pub level: u32,
    /// When the grant ends (ms since the epoch): it must lie in the future. From that
    /// instant the user has no VIP privileges.
    #[serde(deserialize_with = "whole::i64")]
    pub expires_at_ms: i64,
}

/// A user's VIP grant as stored.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct VipGrantResponse {
    /// The user.
    pub user_id: String,
    /// The level granted.
    pub level: u8,
    /// When the grant ends (ms since the epoch).
    pub expires_at_ms: i64,
    /// Whether the grant is in force now (its expiry lies ahead).
    pub active: bool,
}

impl VipGrantResponse {
    /// The answer for `user`'s `grant`, as of `now`.
    pub fn new(user: &str, grant: VipGrant, now: Timestamp) -> Self {
        VipGrantResponse {
            user_id: user.to_owned(),
            level: grant.level,
            expires_at_ms: grant.expires_at.0,
            active: grant.level_at(now).is_some(),
        }
    }
}

/// What one VIP level gives its holder.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VipLevelBody {
    /// Room admins cannot kick the holder (the owner and platform admins still can).
    #[serde(default)]
    pub kick_shield: bool,
    /// Room admins cannot mute the holder on the public screen (the owner and platform
    /// admins still can).
    #[serde(default)]
    pub mute_shield: bool,
    /// The entry animation clients play when the holder joins a room: 1 to 64 ASCII letters,
    /// digits, `-`, `_`, `.`, `:`.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9._:-]{1,64}$")]
    pub entry_effect_id: Option<String>,
    /// The vehicle clients show the holder arriving in: the same rule.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 64, pattern = r"^[A-Za-z0-9._:-]{1,64}$")]
    pub vehicle_id: Option<String>,
    /// The holder may take seats reserved for VIP (`POST /v1/rooms/{room_id}/seats/{seat}/vip`);
    /// everyone else is refused them (403 `VIP_SEAT`).
    #[serde(default)]
    pub seat_priority: bool,
    /// Room backgrounds exclusive to VIP: a user may set one as their room's background only
    /// when their level, or a lower one, lists it (else 403 `VIP_BACKGROUND`). At most 16.
    #[serde(default)]
    #[schema(value_type = Vec<super::schema::VipBackgroundUrl>, max_items = 16)]
    pub backgrounds: Vec<String>,
}

impl From<VipPrivileges> for VipLevelBody {
    fn from(privileges: VipPrivileges) -> Self {
        VipLevelBody {
            kick_shield: privileges.kick_shield,
            mute_shield: privileges.mute_shield,
            entry_effect_id: privileges.entry_effect_id,
            vehicle_id: privileges.vehicle_id,
            seat_priority: privileges.seat_priority,
            backgrounds: privileges.backgrounds,
        }
    }
}

impl From<VipLevelBody> for VipPrivileges {
    fn from(body: VipLevelBody) -> Self {
        VipPrivileges {
            kick_shield: body.kick_shield,
            mute_shield: body.mute_shield,
            entry_effect_id: body.entry_effect_id,
            vehicle_id: body.vehicle_id,
            seat_priority: body.seat_priority,
            backgrounds: body.backgrounds,
        }
    }
}

/// `GET /v1/admin/vip-levels`: the level table.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct VipLevelsResponse {
    /// The version: 0 before the first change, one more for each.
    pub version: u64,
    /// What levels 1, 2, ... give, level 1 first.
    pub levels: Vec<VipLevelBody>,
}

impl From<VipLevels> for VipLevelsResponse {
    fn from(table: VipLevels) -> Self {
        VipLevelsResponse {
            version: table.version,
            levels: table.levels.into_iter().map(Into::into).collect(),
        }
    }
}

/// `PUT /v1/admin/vip-levels`: a new level table.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PutVipLevelsRequest {
    /// The version this change replaces, as `GET` answered it: the table is replaced only if
    /// it is still current (else 409 `VIP_LEVELS_STALE`).
    #[serde(deserialize_with = "whole::u64")]
    #[schema(minimum = 0)]
    pub expected_version: u64,
    /// What levels 1, 2, ... give, level 1 first; at most 32.
    #[schema(max_items = 32)]
    pub levels: Vec<VipLevelBody>,
}
