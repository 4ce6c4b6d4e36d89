//! What a caller asks of robot-room administration, one plain struct per operation: ids
//! already parsed, numbers as asked (their ranges are the use case's rules to check).

use room_domain::{RoomId, UserId};

use crate::ports::{GiftShare, RobotProfile};

/// What a robot room shows, as a creation asks for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileInput {
    /// The room's name (kept trimmed).
    pub name: String,
    /// The notice board; `None`: empty.
    pub notice: Option<String>,
    /// The cover image URL; `None` or empty: no cover.
    pub cover_url: Option<String>,
}

/// A creation of a robot room ([`RobotRoomAdmin::create`](super::RobotRoomAdmin::create)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateRobotRoom {
    /// The platform admin who asks: a client key is scoped to them.
    pub admin: UserId,
    /// The client's idempotency key, if any: it names the room. Without one, the request's
    /// content names it.
    pub idempotency_key: Option<String>,
    /// What the room shows.
    pub profile: ProfileInput,
    /// The room's seat count, 1 to [`room_domain::MAX_SEATS`]; `None`: the rules' default.
    pub seat_count: Option<i64>,
    /// The room's region code, up to 32 characters; empty: none.
    pub region: String,
    /// The robot pool; its first robot owns the room.
    pub robots: Vec<UserId>,
    /// Target robot listeners for each hour of the day (UTC).
    pub audience: Vec<u32>,
    /// Target seats robots occupy, 0 to the seat count less one.
    pub seats: i64,
    /// Robot gifts per minute.
    pub gift_rate_per_minute: u32,
    /// Which gifts robots send, with their weights.
    pub gift_mix: Vec<GiftShare>,
    /// Whether the room is run.
    pub enabled: bool,
}

/// A change to a robot room's profile: absent fields stay.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProfilePatch {
    /// A new name.
    pub name: Option<String>,
    /// A new notice board text.
    pub notice: Option<String>,
    /// A new cover image URL; empty removes the cover.
    pub cover_url: Option<String>,
}

/// A change to a robot room's configuration
/// ([`RobotRoomAdmin::patch`](super::RobotRoomAdmin::patch)): absent fields stay, and the
/// result is checked as a whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchRobotRoom {
    /// The room.
    pub room_id: RoomId,
    /// Profile changes.
    pub profile: Option<ProfilePatch>,
    /// A new robot pool (the room's owner stays who it is).
    pub robots: Option<Vec<UserId>>,
    /// New hourly audience targets.
    pub audience: Option<Vec<u32>>,
    /// A new seat target.
    pub seats: Option<i64>,
    /// A new gift rate.
    pub gift_rate_per_minute: Option<u32>,
    /// A new gift mix.
    pub gift_mix: Option<Vec<GiftShare>>,
    /// Run the room or not.
    pub enabled: Option<bool>,
    /// The version the change is based on, from 1: given, the change is refused when the
    /// configuration has moved on (unless it already says what the change asks for).
    pub version: Option<u64>,
}

impl PatchRobotRoom {
    /// A change of `room_id` that changes nothing yet.
    pub fn new(room_id: RoomId) -> Self {
        PatchRobotRoom {
            room_id,
            profile: None,
            robots: None,
            audience: None,
            seats: None,
            gift_rate_per_minute: None,
            gift_mix: None,
            enabled: None,
            version: None,
        }
    }
}

/// A profile as stored: the name as the room keeps it (trimmed), an empty cover URL is no
/// cover (a URL is kept as sent, as the room keeps it).
pub(super) fn profile_of(
    name: String,
    notice: Option<String>,
    cover_url: Option<String>,
) -> RobotProfile {
    RobotProfile {
        name: name.trim().to_owned(),
        notice: notice.unwrap_or_default(),
        cover_url: cover_url.filter(|url| !url.is_empty()),
    }
}

/// `current` with `patch` applied.
pub(super) fn patched_profile(current: RobotProfile, patch: ProfilePatch) -> RobotProfile {
    profile_of(
        patch.name.unwrap_or(current.name),
        Some(patch.notice.unwrap_or(current.notice)),
        match patch.cover_url {
            Some(url) => Some(url),
            None => current.cover_url,
        },
    )
}
