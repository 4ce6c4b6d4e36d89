//! Robot room configurations ([`RobotRooms`]): how a robot room is run, the rules a
//! configuration must keep ([`RobotRoomConfig::validate`]), and their storage.

use std::sync::Arc;

use async_trait::async_trait;
use room_domain::{Field, GiftId, Rejection, RoomId, Timestamp, UserId, check_image_url};
use serde::{Deserialize, Serialize};

use crate::error::Result;

/// The most robots one robot room's pool may hold.
pub const MAX_ROBOTS: usize = 200;

/// The most gifts one robot room's gift mix may name.
pub const MAX_GIFT_MIX: usize = 20;

/// The most robot gifts a robot room may send per minute.
pub const MAX_ROBOT_GIFTS_PER_MINUTE: u32 = 600;

/// The greatest weight of one gift in a robot room's gift mix.
pub const MAX_GIFT_WEIGHT: u32 = 10_000;

/// The most configurations one [`RobotRooms::list`] call returns, whatever the limit asked.
pub const MAX_ROBOT_ROOM_PAGE: u32 = 500;

/// What a robot room shows: its profile, as the room API has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RobotProfile {
    /// The room's name, within the room's rule ([`Field::Name`]).
    pub name: String,
    /// The notice board, within the room's rule ([`Field::Notice`]).
    pub notice: String,
    /// The cover image, within the room's rule ([`Field::CoverUrl`]).
    pub cover_url: Option<String>,
}

/// One gift of a robot room's gift mix: robots send `gift_id` with a chance in proportion to
/// `weight` among the mix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GiftShare {
    /// The catalog gift.
    pub gift_id: GiftId,
    /// Its weight, 1 to [`MAX_GIFT_WEIGHT`].
    pub weight: u32,
}

/// How a robot room is run: which robots, how many listeners over the day, how many seats
/// they hold, and which gifts they send how often. Robots are users whose ids carry the
/// configured robot prefix; they act through the room's ordinary commands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RobotRoomConfig {
    /// The room (an ordinary room, owned by the pool's first robot at creation).
    pub room_id: RoomId,
    /// What the room shows.
    pub profile: RobotProfile,
    /// The room's seat count, fixed when the room was created.
    pub seat_count: u8,
    /// The robot pool: 1 to [`MAX_ROBOTS`] distinct robot user ids.
    pub robots: Vec<UserId>,
    /// Target robot listeners for each hour of the day (UTC), 24 numbers, each from 0 to the
    /// pool's size.
    pub audience: Vec<u32>,
    /// Target seats robots occupy, from 0 to `seat_count - 1`: robots never take the last
    /// free seat.
    pub seats: u8,
    /// Robot gifts per minute, 0 to [`MAX_ROBOT_GIFTS_PER_MINUTE`].
    pub gift_rate_per_minute: u32,
    /// Which gifts robots send: 1 to [`MAX_GIFT_MIX`] distinct gifts with their weights.
    pub gift_mix: Vec<GiftShare>,
    /// Whether the room is run at all.
    pub enabled: bool,
    /// Rises by one with every update, from 1: the condition of [`RobotRooms::update`].
    pub version: u64,
    /// When the configuration was created.
    pub created_at: Timestamp,
    /// When it was last changed.
    pub updated_at: Timestamp,
}

/// Why a [`RobotRoomConfig`] cannot be stored: the field (`robots[3]`, `audience[7]`,
/// `profile.name`) and the rule it breaks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct RobotRoomProblem {
    /// The field, as the API names it.
    pub field: String,
    /// The rule it breaks.
    pub reason: String,
}

impl RobotRoomProblem {
    fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        RobotRoomProblem {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

/// Checks `text` by the room's own rule for `kind` ([`Field::check`]), as `field` of a robot
/// room configuration.
fn check_text(field: &str, kind: Field, text: &str) -> Result<(), RobotRoomProblem> {
    kind.check(text).map_err(|rejection| {
        let reason = match rejection {
            Rejection::FieldTooLong { max, .. } => format!("must have at most {max} characters"),
            Rejection::FieldInvalidCharacter { character, .. } => {
                format!("must not contain U+{character:04X}")
            }
            other => other.to_string(),
        };
        RobotRoomProblem::new(field, reason)
    })
}

/// Checks a profile's cover URL by the room's image URL rule ([`check_image_url`]), as
/// `profile.cover_url`.
pub fn check_cover_url(profile: &RobotProfile) -> Result<(), RobotRoomProblem> {
    match &profile.cover_url {
        Some(url) => check_image_url(Field::CoverUrl, url).map_err(|rejection| {
            let reason = rejection.to_string();
            let reason = reason.strip_prefix("cover_url ").unwrap_or(&reason);
            RobotRoomProblem::new("profile.cover_url", reason)
        }),
        None => Ok(()),
    }
}

/// Whether `robot` is a robot id of `id_prefix`: the prefix, then 1 or more ASCII letters,
/// digits, `-`, `_` or `.` (no letter that looks like another, as a Cyrillic `а` beside a
/// Latin `a` would in an operator's list).
pub fn is_robot_id(robot: &str, id_prefix: &str) -> bool {
    robot.strip_prefix(id_prefix).is_some_and(|name| {
        !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    })
}

impl RobotRoomConfig {
    /// Checks every rule of a robot room configuration, the first broken one answered as a
    /// [`RobotRoomProblem`]:
    ///
    /// - `profile`: the room's own rules for its texts ([`Field::check`], with the limits of
    ///   [`Field::max_chars`]): a name that is not blank and a notice, each within its length
    ///   and without the characters the room refuses; a cover URL by the image URL rule
    ///   ([`check_cover_url`]);
    /// - `seat_count`: 1 to [`room_domain::MAX_SEATS`];
    /// - `robots`: 1 to [`MAX_ROBOTS`] distinct robot ids of `id_prefix` ([`is_robot_id`]),
    ///   none with `{id_prefix}visitor-` (the visitors of human rooms);
    /// - `audience`: 24 numbers, each from 0 to the pool's size;
    /// - `seats`: 0 to `seat_count - 1`, and no more than the pool's size;
    /// - `gift_rate_per_minute`: 0 to [`MAX_ROBOT_GIFTS_PER_MINUTE`];
    /// - `gift_mix`: 1 to [`MAX_GIFT_MIX`] distinct gifts, each weighing 1 to
    ///   [`MAX_GIFT_WEIGHT`].
    pub fn validate(&self, id_prefix: &str) -> Result<(), RobotRoomProblem> {
        let profile = &self.profile;
        if profile.name.trim().is_empty() {
            return Err(RobotRoomProblem::new("profile.name", "must not be blank"));
        }
        check_text("profile.name", Field::Name, &profile.name)?;
        check_text("profile.notice", Field::Notice, &profile.notice)?;
        check_cover_url(profile)?;
        if !(1..=room_domain::MAX_SEATS).contains(&self.seat_count) {
            return Err(RobotRoomProblem::new(
                "seat_count",
                format!("must be 1 to {}", room_domain::MAX_SEATS),
            ));
        }
        let pool = self.robots.len();
        if !(1..=MAX_ROBOTS).contains(&pool) {
            return Err(RobotRoomProblem::new(
                "robots",
                format!("must hold 1 to {MAX_ROBOTS} robots"),
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for (i, robot) in self.robots.iter().enumerate() {
            if !is_robot_id(robot.as_str(), id_prefix) {
                return Err(RobotRoomProblem::new(
                    format!("robots[{i}]"),
                    format!(
                        "{robot} is not a robot id (robot ids are {id_prefix:?} then ASCII \
                         letters, digits, '-', '_' or '.')"
                    ),
                ));
            }
            if robot.as_str().starts_with(&format!("{id_prefix}visitor-")) {
                return Err(RobotRoomProblem::new(
                    format!("robots[{i}]"),
                    format!("{robot} is a visitor robot of human rooms ({id_prefix}visitor-...)"),
                ));
            }
            if !seen.insert(robot) {
                return Err(RobotRoomProblem::new(
                    format!("robots[{i}]"),
                    format!("{robot} is in the pool twice"),
                ));
            }
        }
        if self.audience.len() != 24 {
            return Err(RobotRoomProblem::new(
                "audience",
                "must hold 24 numbers, one for each hour of the day (UTC)",
            ));
        }
        if let Some((hour, listeners)) = self
            .audience
            .iter()
            .enumerate()
            .find(|(_, listeners)| **listeners as usize > pool)
        {
            return Err(RobotRoomProblem::new(
                format!("audience[{hour}]"),
                format!("{listeners} listeners is more than the pool's {pool} robots"),
            ));
        }
        if self.seats >= self.seat_count {
            return Err(RobotRoomProblem::new(
                "seats",
                format!(
                    "must be 0 to {} (the room's {} seats less one, left for people)",
                    self.seat_count - 1,
                    self.seat_count
                ),
            ));
        }
        if usize::from(self.seats) > pool {
            return Err(RobotRoomProblem::new(
                "seats",
                format!("{} seats is more than the pool's {pool} robots", self.seats),
            ));
        }
        if self.gift_rate_per_minute > MAX_ROBOT_GIFTS_PER_MINUTE {
            return Err(RobotRoomProblem::new(
                "gift_rate_per_minute",
                format!("must be 0 to {MAX_ROBOT_GIFTS_PER_MINUTE}"),
            ));
        }
        if !(1..=MAX_GIFT_MIX).contains(&self.gift_mix.len()) {
            return Err(RobotRoomProblem::new(
                "gift_mix",
                format!("must name 1 to {MAX_GIFT_MIX} gifts"),
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for (i, share) in self.gift_mix.iter().enumerate() {
            if !(1..=MAX_GIFT_WEIGHT).contains(&share.weight) {
                return Err(RobotRoomProblem::new(
                    format!("gift_mix[{i}].weight"),
                    format!("must be 1 to {MAX_GIFT_WEIGHT}"),
                ));
            }
            if !seen.insert(&share.gift_id) {
                return Err(RobotRoomProblem::new(
                    format!("gift_mix[{i}].gift_id"),
                    format!("{} is in the mix twice", share.gift_id),
                ));
            }
        }
        Ok(())
    }
}

/// Robot room configurations, one per room, keyed by room id, and the pools they hold: a
/// robot is in at most one robot room's pool, a rule the store keeps with a unique key on the
/// robot, written in the same transaction as the configuration, so that two writes at once
/// cannot both claim a robot.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait RobotRooms: Send + Sync {
    /// Stores a new configuration as given and claims its pool's robots for its room, in one
    /// transaction: [`Error::AlreadyExists`](crate::Error::AlreadyExists) if the room has one,
    /// [`Error::RobotTaken`](crate::Error::RobotTaken) if another room's pool holds one of
    /// its robots (the first of the pool that is). Nothing is written on an error.
    async fn create(&self, config: &RobotRoomConfig) -> Result<()>;
    /// The configuration of a room.
    async fn get(&self, room_id: &RoomId) -> Result<Option<RobotRoomConfig>>;
    /// Configurations by room id (byte order), after `after` when given, at most `limit` and
    /// never more than [`MAX_ROBOT_ROOM_PAGE`].
    async fn list(&self, after: Option<RoomId>, limit: u32) -> Result<Vec<RobotRoomConfig>>;
    /// The robots of `robots` that a pool holds, each with the room whose pool it is, in the
    /// order of `robots` (at most [`MAX_ROBOTS`] are asked for).
    async fn list_by_robots(&self, robots: &[UserId]) -> Result<Vec<(UserId, RoomId)>>;
    /// Replaces the room's configuration with `config` as given, and its pool's claims with
    /// `config`'s robots, if the stored one is at version `expected_version`:
    /// [`Error::NotFound`](crate::Error::NotFound) if the room has none,
    /// [`Error::Conflict`](crate::Error::Conflict) if its version moved,
    /// [`Error::RobotTaken`](crate::Error::RobotTaken) if another room's pool holds one of the
    /// new robots. Nothing is written on an error.
    async fn update(&self, config: &RobotRoomConfig, expected_version: u64) -> Result<()>;
    /// Deletes the room's configuration and frees its robots; answers whether it had one.
    async fn delete(&self, room_id: &RoomId) -> Result<bool>;
}

/// Shared handle to [`RobotRooms`].
pub type RobotRoomsRef = Arc<dyn RobotRooms>;
