//! The bodies of the room routes: creating, changing, joining and moderating a room, its
//! seats, and the room, member, ban and rank views.

use room_app::{BannedUser, OnlineUser, RankEntry, RoomView};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::fields::{present, whole};
use super::schema::{Id, ImageUrl, Notice, Reason, Region, RoomName};

/// `POST /v1/rooms`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateRoomRequest {
    /// 1 to 30 characters.
    #[schema(value_type = RoomName, example = "Night talk")]
    pub name: String,
    /// Mic seats, 1 to 20 (default 8).
    #[serde(default, deserialize_with = "whole::option_i64")]
    #[schema(minimum = 1, maximum = 20)]
    pub seat_count: Option<i64>,
    /// Region code, up to 32 characters.
    #[schema(value_type = Option<Region>)]
    pub region: Option<String>,
}

/// `PATCH /v1/rooms/{room_id}`: absent fields stay as they are.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchRoomRequest {
    /// New name (1 to 30 characters).
    #[schema(value_type = Option<RoomName>)]
    pub name: Option<String>,
    /// New notice board text.
    #[schema(value_type = Option<Notice>)]
    pub notice: Option<String>,
    /// New cover image URL; `""` removes it.
    #[schema(value_type = Option<ImageUrl>)]
    pub cover_url: Option<String>,
    /// New background image URL; `""` removes it.
    #[schema(value_type = Option<ImageUrl>)]
    pub background_url: Option<String>,
    /// Public chat on or off.
    pub chat_enabled: Option<bool>,
    /// A string (1 to 64 characters) locks the room with that password; `null` unlocks it.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, min_length = 1, max_length = 64)]
    pub password: Option<Option<String>>,
}

/// `POST /v1/admin/rooms/{room_id}/revoke`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RevokeRequest {
    /// What to reset to its default: 1 to 4 resources (one named twice counts once).
    #[schema(min_items = 1, max_items = 4)]
    pub resources: Vec<RevokedResource>,
    /// Why: shown to the room.
    #[schema(value_type = Reason)]
    pub reason: String,
}

/// A part of a room's profile a platform admin can reset: the name (to the configured default
/// name), the notice (empty), the cover or the background (none).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RevokedResource {
    /// The name.
    Name,
    /// The notice.
    Notice,
    /// The cover.
    Cover,
    /// The background.
    Background,
}

impl From<RevokedResource> for room_domain::RoomResource {
    fn from(resource: RevokedResource) -> Self {
        match resource {
            RevokedResource::Name => room_domain::RoomResource::Name,
            RevokedResource::Notice => room_domain::RoomResource::Notice,
            RevokedResource::Cover => room_domain::RoomResource::Cover,
            RevokedResource::Background => room_domain::RoomResource::Background,
        }
    }
}

/// `POST /v1/rooms/{room_id}/join` (the body may be left out).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct JoinRequest {
    /// The password of a locked room, up to 64 characters.
    #[schema(max_length = 64)]
    pub password: Option<String>,
}

/// `POST /v1/rooms/{room_id}/seats/{seat}/lock`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LockSeatRequest {
    /// Lock (frees the seat) or unlock.
    pub locked: bool,
}

/// `POST /v1/rooms/{room_id}/seats/{seat}/vip`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SeatVipRequest {
    /// Reserve the seat for VIP with seat priority (its holder stays), or open it again.
    pub vip_only: bool,
}

/// `POST /v1/rooms/{room_id}/invites`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InviteRequest {
    /// The invitee.
    #[schema(value_type = Id)]
    pub user_id: String,
    /// The seat to hold for them, from 0 (400 `INVALID_SEAT` for a seat the room does not
    /// have); absent: an invite to the room.
    #[serde(default, deserialize_with = "whole::option_u32")]
    #[schema(minimum = 0, maximum = 255)]
    pub seat: Option<u32>,
}

/// An invite as the room made it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct InviteResponse {
    /// The room.
    pub room_id: String,
    /// The invitee.
    pub user_id: String,
    /// The seat held for them until the invite expires (`null`: an invite to the room).
    pub seat: Option<u8>,
    /// When the invite expires (ms since the epoch): until then the invitee joins without the
    /// password and the seat is theirs to take.
    pub expires_at_ms: i64,
}

impl From<room_app::Invite> for InviteResponse {
    fn from(invite: room_app::Invite) -> Self {
        InviteResponse {
            room_id: invite.room_id.to_string(),
            user_id: invite.user.to_string(),
            seat: invite.seat.map(|seat| seat.0),
            expires_at_ms: invite.expires_at.0,
        }
    }
}

/// `POST /v1/rooms/{room_id}/seats/{seat}/mute`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MuteSeatRequest {
    /// Mute or unmute.
    pub muted: bool,
}

/// `POST /v1/rooms/{room_id}/kick`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct KickRequest {
    /// Who.
    #[schema(value_type = Id)]
    pub user_id: String,
    /// Also ban them for this many seconds (0: no ban).
    #[serde(default, deserialize_with = "whole::option_u32")]
    #[schema(format = Int64, minimum = 0, maximum = 4_294_967_295_i64)]
    pub ban_seconds: Option<u32>,
}

/// `POST /v1/rooms/{room_id}/unban`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UnbanRequest {
    /// Who.
    #[schema(value_type = Id)]
    pub user_id: String,
}

/// `POST /v1/rooms/{room_id}/mute`: mute a member on the public screen.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChatMuteRequest {
    /// Who.
    #[schema(value_type = Id)]
    pub user_id: String,
    /// For how long; 0 unmutes.
    #[serde(deserialize_with = "whole::u32")]
    #[schema(format = Int64, minimum = 0, maximum = 4_294_967_295_i64)]
    pub seconds: u32,
}

/// A room as clients see it (never its password).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RoomResponse {
    /// The room id.
    pub room_id: String,
    /// The short numeric id people read out to each other (6 to 8 digits).
    pub short_id: Option<u32>,
    /// `open` or `closed`.
    #[schema(example = "open")]
    pub status: String,
    /// The owner.
    pub owner: Option<String>,
    /// The owner's nickname (`null` when they have none); a change shows within
    /// `ROOM__PROFILES__CACHE_TTL_MS`.
    pub owner_nickname: Option<String>,
    /// The owner's avatar URL (`null` when they have none).
    pub owner_avatar_url: Option<String>,
    /// Name.
    pub name: String,
    /// Notice board.
    pub notice: String,
    /// Cover image.
    pub cover_url: Option<String>,
    /// Background image.
    pub background_url: Option<String>,
    /// Whether public chat is on.
    pub chat_enabled: bool,
    /// Whether joining needs a password.
    pub locked: bool,
    /// Region code.
    pub region: String,
    /// The mic seats, from 0.
    pub seats: Vec<SeatResponse>,
    /// Members present.
    pub online_count: u32,
    /// Appointed admins.
    pub admins: Vec<String>,
    /// Popularity.
    pub heat: i64,
    /// The room rocket.
    pub rocket: RocketResponse,
    /// The room's version: rises with every change.
    pub version: u64,
    /// How many users follow the room; in the answer of `GET /v1/rooms/{room_id}` (absent
    /// from the answers of changes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub follower_count: Option<u64>,
}

/// A mic seat.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SeatResponse {
    /// Its index, from 0.
    pub index: u8,
    /// Who sits on it.
    pub user_id: Option<String>,
    /// The holder's nickname (`null` when empty or they have none).
    pub nickname: Option<String>,
    /// The holder's avatar URL (`null` when empty or they have none).
    pub avatar_url: Option<String>,
    /// Locked seats cannot be taken.
    pub locked: bool,
    /// Muted.
    pub muted: bool,
    /// Whether RTC confirmed the holder's audio.
    pub publishing: bool,
    /// Reserved for VIP: only users whose VIP level gives seat priority may take it.
    pub vip_only: bool,
    /// The invitee it is held for while their invite lasts (`null`: not held).
    pub held_for: Option<String>,
    /// Until when it is held (ms since the epoch).
    pub held_until_ms: Option<i64>,
}

/// The room rocket.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RocketResponse {
    /// Level, from 1.
    pub level: u32,
    /// Fuel gathered at this level.
    pub fuel: i64,
    /// Fuel the level needs to ignite.
    pub threshold: i64,
    /// `idle`, `ignited` or `launched`.
    pub status: String,
    /// When an ignited rocket launches.
    pub launch_at: Option<i64>,
}

fn enum_name<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(name)) => name,
        _ => String::new(),
    }
}

impl From<RoomView> for RoomResponse {
    fn from(view: RoomView) -> Self {
        RoomResponse {
            room_id: view.room_id.to_string(),
            short_id: view.short_id,
            status: enum_name(&view.status),
            owner: view.owner.map(|u| u.to_string()),
            owner_nickname: view.owner_nickname,
            owner_avatar_url: view.owner_avatar_url,
            name: view.name,
            notice: view.notice,
            cover_url: view.cover_url,
            background_url: view.background_url,
            chat_enabled: view.chat_enabled,
            locked: view.locked,
            region: view.region,
            seats: view
                .seats
                .into_iter()
                .map(|seat| SeatResponse {
                    index: seat.index.0,
                    user_id: seat.user.map(|u| u.to_string()),
                    nickname: seat.nickname,
                    avatar_url: seat.avatar_url,
                    locked: seat.locked,
                    muted: seat.muted,
                    publishing: seat.publishing,
                    vip_only: seat.vip_only,
                    held_for: seat.held_for.map(|user| user.to_string()),
                    held_until_ms: seat.held_until.map(|until| until.0),
                })
                .collect(),
            online_count: view.online_count,
            admins: view.admins.iter().map(ToString::to_string).collect(),
            heat: view.heat,
            rocket: RocketResponse {
                level: view.rocket.level,
                fuel: view.rocket.fuel,
                threshold: view.rocket.threshold,
                status: view.rocket.status.to_owned(),
                launch_at: view.rocket.launch_at.map(|t| t.0),
            },
            version: view.version,
            follower_count: None,
        }
    }
}

/// A member present in a room.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OnlineUserResponse {
    /// Who.
    pub user_id: String,
    /// `owner`, `admin` or `member`.
    pub role: String,
    /// VIP level.
    pub vip_level: u8,
    /// When they joined.
    pub joined_at: i64,
    /// Their nickname (`null` when they have none).
    pub nickname: Option<String>,
    /// Their avatar URL (`null` when they have none).
    pub avatar_url: Option<String>,
}

impl From<OnlineUser> for OnlineUserResponse {
    fn from(user: OnlineUser) -> Self {
        OnlineUserResponse {
            role: enum_name(&user.role),
            user_id: user.user_id.to_string(),
            vip_level: user.vip_level,
            joined_at: user.joined_at.0,
            nickname: user.nickname,
            avatar_url: user.avatar_url,
        }
    }
}

/// `GET /v1/rooms/{room_id}/online-users`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OnlineUsersResponse {
    /// Members, by user id.
    pub users: Vec<OnlineUserResponse>,
    /// Pass as `cursor` for the next page; absent on the last page.
    pub next_cursor: Option<String>,
}

/// A ban in force.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BannedUserResponse {
    /// Who.
    pub user_id: String,
    /// Until when.
    pub until: i64,
}

impl From<BannedUser> for BannedUserResponse {
    fn from(ban: BannedUser) -> Self {
        BannedUserResponse {
            user_id: ban.user_id.to_string(),
            until: ban.until.0,
        }
    }
}

/// `GET /v1/rooms/{room_id}/banned-users`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BannedUsersResponse {
    /// Bans in force.
    pub users: Vec<BannedUserResponse>,
}

/// One line of a contribution rank.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RankEntryResponse {
    /// Who.
    pub user_id: String,
    /// Coins given in the period.
    pub coins: i64,
    /// Their nickname (`null` when they have none).
    pub nickname: Option<String>,
    /// Their avatar URL (`null` when they have none).
    pub avatar_url: Option<String>,
}

impl From<RankEntry> for RankEntryResponse {
    fn from(entry: RankEntry) -> Self {
        RankEntryResponse {
            user_id: entry.user_id.to_string(),
            coins: entry.coins.0,
            nickname: entry.nickname,
            avatar_url: entry.avatar_url,
        }
    }
}

/// `GET /v1/rooms/{room_id}/contribution-rank`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RankResponse {
    /// `day` or `week`.
    pub period: String,
    /// Top givers, most coins first.
    pub entries: Vec<RankEntryResponse>,
}

/// A room the caller follows, with its live status.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FollowedRoomItem {
    /// The room id.
    pub room_id: String,
    /// Its name (empty when the room never committed a change).
    pub name: String,
    /// Whether it is open.
    pub open: bool,
    /// Members present.
    pub online_count: u32,
    /// When the caller followed it, in ms since the Unix epoch.
    pub followed_at: i64,
}

/// A page of the rooms the caller follows: open ones first, then newest follow first.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FollowedRoomsResponse {
    /// The rooms.
    pub rooms: Vec<FollowedRoomItem>,
    /// Pass as `cursor` for the next page; absent on the last page.
    pub next_cursor: Option<String>,
}

/// The caller's follow of a room, after a `PUT` or a `DELETE`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FollowResponse {
    /// The room id.
    pub room_id: String,
    /// Whether the caller follows it now.
    pub following: bool,
}
