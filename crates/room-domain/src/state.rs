//! The state of one room, as the Room Cell holds it in memory and writes it in snapshots.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::actor::UserActor;
use crate::ids::{RocketId, RoomId, SeatIndex, SeatSessionId, UserId};
use crate::money::Coins;
use crate::time::{DayKey, Timestamp, WeekKey};

/// Whether a room exists and takes commands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoomStatus {
    /// Not created yet: only `CreateRoom` is accepted.
    #[default]
    Absent,
    /// Open: takes every command.
    Open,
    /// Closed for good: accepts nothing but reads.
    Closed,
}

/// A member's standing in the room: owner > admin > member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// An ordinary member.
    Member,
    /// Appointed by the owner; moderates members.
    Admin,
    /// Created the room; moderates everyone but themselves.
    Owner,
}

/// A salted password hash, computed outside the domain. The plain password never enters the
/// domain; `Debug` hides even the hash.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PasswordHash(pub String);

impl fmt::Debug for PasswordHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PasswordHash(<redacted>)")
    }
}

/// What people see of a room.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoomProfile {
    /// 1 to 30 characters.
    pub name: String,
    /// The notice board, up to 500 characters.
    pub notice: String,
    /// Cover image URL, if any.
    pub cover_url: Option<String>,
    /// Background image URL, if any.
    pub background_url: Option<String>,
}

/// How a room behaves.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoomSettings {
    /// Whether members may chat on the public screen.
    pub chat_enabled: bool,
    /// Set when the room is locked: joining needs the password (owner and admins excepted).
    pub lock: Option<PasswordHash>,
    /// Mic seats, 1 to 20.
    pub seat_count: u8,
    /// Where the room is served (a region code chosen at creation).
    pub region: String,
}

/// A user present in the room.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    /// Owner, admin or member; kept in step with [`RoomState::admins`].
    pub role: Role,
    /// VIP level when they joined.
    pub vip_level: u8,
    /// When they joined.
    pub joined_at: Timestamp,
    /// Whether a robot joined ([`Actor::Robot`]): its leave is marked as a robot's. Absent in
    /// snapshots of human members.
    ///
    /// [`Actor::Robot`]: crate::Actor::Robot
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub robot: bool,
}

/// Who sits on a seat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Occupant {
    /// The seat holder.
    pub user: UserId,
    /// This stay on the seat.
    pub session: SeatSessionId,
    /// Since when.
    pub since: Timestamp,
    /// Until when the holder must start publishing audio; `None` once the RTC vendor confirmed it.
    pub publish_deadline: Option<Timestamp>,
}

/// One mic seat.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seat {
    /// The holder, if any.
    pub occupant: Option<Occupant>,
    /// A locked seat cannot be taken.
    pub locked: bool,
    /// A muted seat's audio is off.
    pub muted: bool,
    /// Set when a moderator muted the seat: then only a moderator may unmute it.
    pub muted_by_moderator: bool,
    /// The moderator who muted it (with `muted_by_moderator`): only an admin's mute is lifted
    /// by an admin; any other (the owner's, a platform admin's, an unknown muter's) only by
    /// the owner or a platform admin, whoever holds the seat then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub muted_by: Option<UserId>,
    /// Reserved for VIP: only a user whose VIP level gives
    /// [`seat_priority`](crate::VipPrivileges::seat_priority) may take it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub vip_only: bool,
    /// Held for an invited user until the invite expires
    /// ([`CommandKind::Invite`](crate::CommandKind::Invite)): nobody else may take it
    /// meanwhile. A hold in the past holds nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold: Option<SeatHold>,
}

/// A seat held for an invited user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeatHold {
    /// The invitee.
    pub user: UserId,
    /// Until when (exclusive).
    pub until: Timestamp,
}

impl Seat {
    /// Whom the seat is held for at `now`, if anyone.
    pub fn held_for(&self, now: Timestamp) -> Option<&UserId> {
        self.hold
            .as_ref()
            .filter(|hold| hold.until > now)
            .map(|hold| &hold.user)
    }
}

/// Coins given in the room per user, for the current day and week.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Contribution {
    /// The day `day` counts.
    pub day_key: DayKey,
    /// The week `week` counts.
    pub week_key: WeekKey,
    /// Coins given per user on `day_key`.
    pub day: BTreeMap<UserId, Coins>,
    /// Coins given per user in `week_key`.
    pub week: BTreeMap<UserId, Coins>,
}

/// Where the rocket is in its cycle.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum RocketStatus {
    /// Taking fuel.
    #[default]
    Idle,
    /// Counting down to launch; gifts add no fuel meanwhile.
    Ignited {
        /// This ignition.
        rocket_id: RocketId,
        /// When it ignited.
        ignited_at: Timestamp,
        /// When it launches.
        launch_at: Timestamp,
        /// What its launch gives away ([`RoomRocketIgnited`](crate::Event::RoomRocketIgnited)'s
        /// prize); none for an ignition recorded before prizes were.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prize: Option<crate::rules::RocketPrize>,
    },
    /// The top level launched today; nothing more until the day resets.
    Launched {
        /// The last launched ignition.
        rocket_id: RocketId,
    },
}

/// The room rocket: gifts fill it, it ignites at a level's threshold, launches after a countdown
/// and rewards members present; it returns to level 1 every day (after its launch, if it is
/// ignited at midnight).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rocket {
    /// The current level, from 1.
    pub level: u32,
    /// Fuel gathered toward the current level's threshold.
    pub fuel: i64,
    /// Idle, ignited or launched.
    pub status: RocketStatus,
    /// The day this cycle belongs to; a gift on a later day resets the rocket first (an
    /// ignited rocket launches first, then resets; see [`Rocket::awaits_launch`]).
    pub day_key: DayKey,
    /// The id the next ignition gets.
    pub next_rocket_id: RocketId,
}

/// How long after its launch time an ignited rocket is still waited for. Its launch timer
/// normally fires within a second; past this (a timer lost to a fault), the day's reset no
/// longer waits for it, so the rocket cannot stay ignited for good.
pub const LAUNCH_WAIT_MS: i64 = 24 * 60 * 60 * 1000;

impl Rocket {
    /// Whether the day's reset waits for its launch at `now`: it is ignited, and its launch
    /// time is less than [`LAUNCH_WAIT_MS`] ago.
    pub fn awaits_launch(&self, now: Timestamp) -> bool {
        matches!(self.status, RocketStatus::Ignited { launch_at, .. }
            if now.0 < launch_at.0.saturating_add(LAUNCH_WAIT_MS))
    }
}

impl Default for Rocket {
    fn default() -> Self {
        Rocket {
            level: 1,
            fuel: 0,
            status: RocketStatus::Idle,
            day_key: DayKey(0),
            next_rocket_id: RocketId(1),
        }
    }
}

/// Everything the Room Cell knows about one room. Built only by [`evolve`](crate::evolve) from
/// events, so replaying a room's events onto [`RoomState::new`] gives the same value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoomState {
    /// The room.
    pub room_id: RoomId,
    /// Absent, open or closed.
    pub status: RoomStatus,
    /// The owner, once created.
    pub owner: Option<UserId>,
    /// When it was created.
    pub created_at: Timestamp,
    /// Name, notice, images.
    pub profile: RoomProfile,
    /// Chat, lock, seats, region.
    pub settings: RoomSettings,
    /// Users present, by id.
    pub members: BTreeMap<UserId, Member>,
    /// Appointed admins, present or not.
    pub admins: BTreeSet<UserId>,
    /// Banned users and until when. An entry in the past no longer bans; it is dropped when the
    /// user next joins.
    pub bans: BTreeMap<UserId, Timestamp>,
    /// Users muted on the public screen and until when.
    pub chat_mutes: BTreeMap<UserId, Timestamp>,
    /// Users invited to the room and until when: they join without the password meanwhile
    /// (also again, after leaving). Expired entries are dropped when the next invite is made;
    /// a ban drops its user's entry.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub invites: BTreeMap<UserId, Timestamp>,
    /// The mic seats, by index.
    pub seats: Vec<Seat>,
    /// Popularity: grows with the heat of gifts.
    pub heat: i64,
    /// Coins given per user, today and this week.
    pub contribution: Contribution,
    /// The room rocket.
    pub rocket: Rocket,
    /// The session id the next seat taker gets.
    pub next_seat_session: SeatSessionId,
    /// Events applied so far; the `seq` of the newest event.
    pub version: u64,
}

/// What of a room's profile a platform admin can reset to its default
/// ([`CommandKind::RevokeResources`](crate::CommandKind::RevokeResources)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoomResource {
    /// The name: the rules' `default_room_name`.
    Name,
    /// The notice: empty.
    Notice,
    /// The cover: none.
    Cover,
    /// The background: none.
    Background,
}

/// Whom a batch gift goes to, resolved by the room ([`RoomState::batch_recipients`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GiftScope {
    /// Every seat holder but the sender.
    AllMic,
    /// Every member but the sender, seat holders first.
    AllRoom,
}

impl GiftScope {
    /// The scope as clients name it: `"all_mic"`, `"all_room"`.
    pub fn as_str(self) -> &'static str {
        match self {
            GiftScope::AllMic => "all_mic",
            GiftScope::AllRoom => "all_room",
        }
    }
}

impl RoomState {
    /// The state of a room before its creation.
    pub fn new(room_id: RoomId) -> Self {
        RoomState {
            room_id,
            status: RoomStatus::Absent,
            owner: None,
            created_at: Timestamp(0),
            profile: RoomProfile::default(),
            settings: RoomSettings::default(),
            members: BTreeMap::new(),
            admins: BTreeSet::new(),
            bans: BTreeMap::new(),
            invites: BTreeMap::new(),
            chat_mutes: BTreeMap::new(),
            seats: Vec::new(),
            heat: 0,
            contribution: Contribution::default(),
            rocket: Rocket::default(),
            next_seat_session: SeatSessionId(1),
            version: 0,
        }
    }

    /// Whom a batch gift from `sender` reaches, at most `most` of them, in this order: the
    /// seat holders by seat index (both scopes), then, for [`GiftScope::AllRoom`], the other
    /// members by when they joined, the earliest first (ties by user id). Never the sender.
    pub fn batch_recipients(&self, scope: GiftScope, sender: &UserId, most: usize) -> Vec<UserId> {
        let mut chosen: Vec<UserId> = self
            .seats
            .iter()
            .filter_map(|seat| seat.occupant.as_ref().map(|o| &o.user))
            .filter(|user| *user != sender && self.members.contains_key(*user))
            .take(most)
            .cloned()
            .collect();
        if scope == GiftScope::AllRoom && chosen.len() < most {
            let mut others: Vec<(&Timestamp, &UserId)> = self
                .members
                .iter()
                .filter(|(user, _)| *user != sender && !chosen.contains(user))
                .map(|(user, member)| (&member.joined_at, user))
                .collect();
            // Only the first `room` are needed: select them, then sort those alone (a room of
            // 10,000 members is not sorted whole for a gift to 200).
            let room = most - chosen.len();
            if others.len() > room {
                others.select_nth_unstable(room);
                others.truncate(room);
            }
            others.sort_unstable();
            chosen.extend(others.into_iter().map(|(_, user)| user.clone()));
        }
        chosen
    }

    /// Whether `actor` must give the room's password to join it at `now`: the room is locked,
    /// and they are neither its owner, one of its admins, a platform admin, nor invited
    /// ([`RoomState::invite_of`]).
    pub fn join_needs_password(&self, actor: &UserActor, now: Timestamp) -> bool {
        self.settings.lock.is_some()
            && !actor.platform_admin
            && self.role_of(&actor.user_id) == Role::Member
            && self.invite_of(&actor.user_id, now).is_none()
    }

    /// Until when `user` is invited to the room at `now`, if they are.
    pub fn invite_of(&self, user: &UserId, now: Timestamp) -> Option<Timestamp> {
        self.invites.get(user).copied().filter(|until| *until > now)
    }

    /// The role `user` has in this room, whether present or not.
    pub fn role_of(&self, user: &UserId) -> Role {
        if self.owner.as_ref() == Some(user) {
            Role::Owner
        } else if self.admins.contains(user) {
            Role::Admin
        } else {
            Role::Member
        }
    }

    /// Whether `user` is banned at `now`.
    pub fn ban_of(&self, user: &UserId, now: Timestamp) -> Option<Timestamp> {
        self.bans.get(user).copied().filter(|until| *until > now)
    }

    /// Whether `user` is muted on the public screen at `now`, and until when.
    pub fn chat_mute_of(&self, user: &UserId, now: Timestamp) -> Option<Timestamp> {
        self.chat_mutes
            .get(user)
            .copied()
            .filter(|until| *until > now)
    }

    /// The seat `user` sits on, if any.
    pub fn seat_of(&self, user: &UserId) -> Option<SeatIndex> {
        self.seats.iter().enumerate().find_map(|(i, seat)| {
            let occupant = seat.occupant.as_ref()?;
            // Seat counts are at most 20, so the index always fits.
            (occupant.user == *user).then_some(SeatIndex(i as u8))
        })
    }

    /// The seat at `index`, if the room has it.
    pub fn seat(&self, index: SeatIndex) -> Option<&Seat> {
        self.seats.get(usize::from(index.0))
    }

    /// Coins `user` gave today (`DayKey`) per the stored day, or zero if the stored day is older.
    pub fn day_contribution(&self, user: &UserId, day: DayKey) -> Coins {
        if self.contribution.day_key == day {
            self.contribution.day.get(user).copied().unwrap_or_default()
        } else {
            Coins::ZERO
        }
    }

    /// Coins `user` gave in `week`, or zero if the stored week is another one.
    pub fn week_contribution(&self, user: &UserId, week: WeekKey) -> Coins {
        if self.contribution.week_key == week {
            self.contribution
                .week
                .get(user)
                .copied()
                .unwrap_or_default()
        } else {
            Coins::ZERO
        }
    }

    /// Checks the invariants that hold after every command: one seat per user, every occupant
    /// is a member, no member is banned at `now`, roles match the owner and admin set, no
    /// negative heat, fuel or contribution. Returns the first violation found.
    pub fn check_invariants(&self, now: Timestamp) -> Result<(), String> {
        let mut seated = BTreeSet::new();
        for (i, seat) in self.seats.iter().enumerate() {
            if let Some(occupant) = &seat.occupant {
                if !seated.insert(&occupant.user) {
                    return Err(format!("{:?} sits on two seats", occupant.user));
                }
                if !self.members.contains_key(&occupant.user) {
                    return Err(format!(
                        "seat {i} holder {:?} is not a member",
                        occupant.user
                    ));
                }
                if seat.locked {
                    return Err(format!("locked seat {i} is occupied"));
                }
            }
        }
        if self.status == RoomStatus::Open
            && self.seats.len() != usize::from(self.settings.seat_count)
        {
            return Err("seat list does not match the seat count".into());
        }
        for (user, member) in &self.members {
            if self.ban_of(user, now).is_some() {
                return Err(format!("{user:?} is a member and banned"));
            }
            if member.role != self.role_of(user) {
                return Err(format!("{user:?} has a stale role"));
            }
        }
        if self.status == RoomStatus::Closed && !self.members.is_empty() {
            return Err("a closed room has members".into());
        }
        if self.heat < 0 || self.rocket.fuel < 0 {
            return Err("negative heat or fuel".into());
        }
        let contributions = self
            .contribution
            .day
            .values()
            .chain(self.contribution.week.values());
        if contributions.into_iter().any(|c| c.is_negative()) {
            return Err("negative contribution".into());
        }
        Ok(())
    }
}
