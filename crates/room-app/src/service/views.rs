//! What clients see of a room: the views the use cases answer with ([`RoomView`] and its
//! parts, the online list, bans, contribution ranks), built from the room's state, and the
//! profile patch they take.

use room_domain::{
    Coins, RocketStatus, Role, RoomId, RoomState, RoomStatus, SeatIndex, Timestamp, UserId,
};
use serde::Serialize;

/// A room as clients see it. Never carries the password or its hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RoomView {
    /// The room.
    pub room_id: RoomId,
    /// Its short numeric id.
    pub short_id: Option<u32>,
    /// `open` or `closed`.
    pub status: RoomStatus,
    /// The owner.
    pub owner: Option<UserId>,
    /// The owner's nickname, from the profile cache when the view is read.
    pub owner_nickname: Option<String>,
    /// The owner's avatar URL, from the profile cache when the view is read.
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
    /// The mic seats.
    pub seats: Vec<SeatView>,
    /// Members present.
    pub online_count: u32,
    /// Appointed admins.
    pub admins: Vec<UserId>,
    /// Popularity.
    pub heat: i64,
    /// The rocket.
    pub rocket: RocketView,
    /// The room's version.
    pub version: u64,
}

/// One seat as clients see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SeatView {
    /// Its index.
    pub index: SeatIndex,
    /// Its holder.
    pub user: Option<UserId>,
    /// The holder's nickname, from the profile cache when the view is read.
    pub nickname: Option<String>,
    /// The holder's avatar URL, from the profile cache when the view is read.
    pub avatar_url: Option<String>,
    /// Whether it is locked.
    pub locked: bool,
    /// Whether it is muted.
    pub muted: bool,
    /// Whether the holder's audio is confirmed by the RTC vendor.
    pub publishing: bool,
    /// Whether it is reserved for VIP (seat priority).
    pub vip_only: bool,
    /// The invitee it is held for, while their invite lasts.
    pub held_for: Option<UserId>,
    /// Until when it is held.
    pub held_until: Option<Timestamp>,
}

/// The rocket as clients see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RocketView {
    /// Level, from 1.
    pub level: u32,
    /// Fuel gathered.
    pub fuel: i64,
    /// Fuel the level needs.
    pub threshold: i64,
    /// `idle`, `ignited` or `launched`.
    pub status: &'static str,
    /// When an ignited rocket launches.
    pub launch_at: Option<Timestamp>,
}

/// A member as the online list shows them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OnlineUser {
    /// Who.
    pub user_id: UserId,
    /// Their role.
    pub role: Role,
    /// Their VIP level.
    pub vip_level: u8,
    /// When they joined.
    pub joined_at: Timestamp,
    /// Their nickname, from the profile cache when the list is read.
    pub nickname: Option<String>,
    /// Their avatar URL, from the profile cache when the list is read.
    pub avatar_url: Option<String>,
}

/// A ban as moderators see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BannedUser {
    /// Who.
    pub user_id: UserId,
    /// Until when.
    pub until: Timestamp,
}

/// One line of a contribution rank.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RankEntry {
    /// Who.
    pub user_id: UserId,
    /// Coins given in the period.
    pub coins: Coins,
    /// Their nickname, from the profile cache when the rank is read.
    pub nickname: Option<String>,
    /// Their avatar URL, from the profile cache when the rank is read.
    pub avatar_url: Option<String>,
}

/// The period of a contribution rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RankPeriod {
    /// Today (in the rules' zone).
    Day,
    /// This week, Monday to Sunday.
    Week,
}

/// What a profile update may change; absent fields stay.
#[derive(Debug, Clone, Default)]
pub struct RoomPatch {
    /// New name.
    pub name: Option<String>,
    /// New notice.
    pub notice: Option<String>,
    /// New cover URL (empty removes).
    pub cover_url: Option<String>,
    /// New background URL (empty removes).
    pub background_url: Option<String>,
    /// Chat on or off.
    pub chat_enabled: Option<bool>,
    /// `Some(Some(p))` locks with password `p`, `Some(None)` unlocks.
    pub password: Option<Option<String>>,
}

/// The hold of `seat` while it lasts at `now`.
fn hold_of(seat: &room_domain::Seat, now: Timestamp) -> Option<&room_domain::SeatHold> {
    seat.hold.as_ref().filter(|hold| hold.until > now)
}

/// The room as clients see it at `now` (which decides whether a seat is still held).
pub(super) fn view_of(
    state: &RoomState,
    rules: &room_domain::RoomRules,
    now: Timestamp,
) -> Option<RoomView> {
    if state.status == RoomStatus::Absent {
        return None;
    }
    let rocket = &state.rocket;
    let (status, launch_at) = match rocket.status {
        RocketStatus::Idle => ("idle", None),
        RocketStatus::Ignited { launch_at, .. } => ("ignited", Some(launch_at)),
        RocketStatus::Launched { .. } => ("launched", None),
    };
    Some(RoomView {
        room_id: state.room_id.clone(),
        short_id: None,
        status: state.status,
        owner: state.owner.clone(),
        owner_nickname: None,
        owner_avatar_url: None,
        name: state.profile.name.clone(),
        notice: state.profile.notice.clone(),
        cover_url: state.profile.cover_url.clone(),
        background_url: state.profile.background_url.clone(),
        chat_enabled: state.settings.chat_enabled,
        locked: state.settings.lock.is_some(),
        region: state.settings.region.clone(),
        seats: state
            .seats
            .iter()
            .enumerate()
            .map(|(i, seat)| SeatView {
                index: SeatIndex(u8::try_from(i).unwrap_or(u8::MAX)),
                user: seat.occupant.as_ref().map(|o| o.user.clone()),
                nickname: None,
                avatar_url: None,
                locked: seat.locked,
                muted: seat.muted,
                publishing: seat
                    .occupant
                    .as_ref()
                    .is_some_and(|o| o.publish_deadline.is_none()),
                vip_only: seat.vip_only,
                held_for: hold_of(seat, now).map(|hold| hold.user.clone()),
                held_until: hold_of(seat, now).map(|hold| hold.until),
            })
            .collect(),
        online_count: u32::try_from(state.members.len()).unwrap_or(u32::MAX),
        admins: state.admins.iter().cloned().collect(),
        heat: state.heat,
        rocket: RocketView {
            level: rocket.level,
            fuel: rocket.fuel,
            threshold: rules.rocket_level(rocket.level).map_or(0, |l| l.fuel),
            status,
            launch_at,
        },
        version: state.version,
    })
}
