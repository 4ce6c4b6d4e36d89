//! The rules a deployment configures: limits, the rocket levels, the lucky-gift table.

use serde::{Deserialize, Serialize};

use crate::money::Coins;

/// Everything about a room's behaviour that an operator may tune. Handed to
/// [`decide`](crate::decide) through [`Ctx`](crate::Ctx); `evolve` never needs it, because events
/// carry the outcome of every rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RoomRules {
    /// Most members present at once.
    pub max_members: u32,
    /// Most admins a room may appoint.
    pub max_admins: u32,
    /// Seats of a room created without a seat count.
    pub default_seat_count: u8,
    /// The name a room gets when a platform admin revokes its name (1 to 30 characters).
    pub default_room_name: String,
    /// Most recipients of one gift order that lists them.
    pub max_recipients: u32,
    /// Most recipients of one batch gift (`all_mic`, `all_room`): the room gives it to the
    /// first this many of whom its scope names.
    pub max_batch_recipients: u32,
    /// Most units of one gift in one order.
    pub max_gift_count: u32,
    /// How long an invite lasts, in seconds (1 to 3,600): the invitee joins without the
    /// password, and an invited seat is held for them, until it expires.
    pub invite_ttl_secs: u32,
    /// Most open invites of one room (1 to [`MAX_INVITES`]).
    pub max_invites: u32,
    /// For a kick the service sent without the target's VIP standing (a command built
    /// without the lookup, or forwarded by an older node): members who joined with at least
    /// this VIP level cannot be kicked by admins (the owner and platform admins still can).
    /// `None` turns this fallback off. The service sends the standing with every kick, and
    /// then the level table's kick shield decides.
    pub vip_kick_protection_level: Option<u8>,
    /// How long a new seat holder has to start publishing audio before the seat is freed.
    pub mic_publish_timeout_secs: u32,
    /// The zone, in seconds east of UTC, whose midnight resets the rocket and the daily rank.
    pub day_utc_offset_secs: i32,
    /// Rocket levels, from level 1 upwards.
    pub rocket_levels: Vec<RocketLevel>,
    /// The lucky-gift multiplier table.
    pub lucky: LuckyTable,
}

impl Default for RoomRules {
    fn default() -> Self {
        RoomRules {
            max_members: 10_000,
            max_admins: 10,
            default_seat_count: 8,
            default_room_name: "Voice room".to_owned(),
            max_recipients: 20,
            max_batch_recipients: 200,
            max_gift_count: 9_999,
            invite_ttl_secs: 120,
            max_invites: 50,
            vip_kick_protection_level: Some(5),
            mic_publish_timeout_secs: 30,
            day_utc_offset_secs: 0,
            rocket_levels: vec![
                RocketLevel {
                    fuel: 10_000,
                    countdown_secs: 60,
                    reward_pool: Coins(1_000),
                    winners: 5,
                    reward_cap: None,
                },
                RocketLevel {
                    fuel: 50_000,
                    countdown_secs: 60,
                    reward_pool: Coins(6_000),
                    winners: 10,
                    reward_cap: None,
                },
                RocketLevel {
                    fuel: 200_000,
                    countdown_secs: 90,
                    reward_pool: Coins(30_000),
                    winners: 20,
                    reward_cap: None,
                },
            ],
            lucky: LuckyTable::default(),
        }
    }
}

/// Why a set of rules cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RulesError {
    /// A limit is zero or out of its range.
    #[error("{field} is out of range")]
    OutOfRange {
        /// The offending setting.
        field: &'static str,
    },
    /// A rocket level is not well formed or not above the one before.
    #[error("rocket level {level} is invalid: {reason}")]
    RocketLevel {
        /// The level, from 1.
        level: usize,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The lucky table is empty or has a zero total weight.
    #[error("the lucky table needs at least one entry with a positive weight")]
    LuckyTableEmpty,
    /// The lucky table does not return what it says it returns.
    #[error(
        "the lucky table returns {actual_bp_x1000}/1000 basis points, \
         but its expected return says {expected_bp} basis points"
    )]
    LuckyReturnMismatch {
        /// The configured expected return.
        expected_bp: u32,
        /// What the weights and multipliers return, in thousandths of a basis point.
        actual_bp_x1000: u64,
    },
}

impl RoomRules {
    /// Checks that the rules make sense: limits in range, rocket levels rising, the lucky table
    /// returning exactly its configured expected return.
    pub fn validate(&self) -> Result<(), RulesError> {
        let ranges: [(&'static str, bool); 8] = [
            (
                "invite_ttl_secs",
                (1..=3_600).contains(&self.invite_ttl_secs),
            ),
            ("max_invites", (1..=MAX_INVITES).contains(&self.max_invites)),
            ("max_members", self.max_members > 0),
            ("max_admins", self.max_admins > 0),
            (
                "default_seat_count",
                (1..=MAX_SEATS).contains(&self.default_seat_count),
            ),
            (
                "max_recipients",
                (1..=MAX_RECIPIENTS).contains(&self.max_recipients),
            ),
            (
                "max_batch_recipients",
                (1..=MAX_BATCH_RECIPIENTS).contains(&self.max_batch_recipients),
            ),
            (
                "max_gift_count",
                (1..=MAX_GIFT_COUNT).contains(&self.max_gift_count),
            ),
        ];
        if let Some((field, _)) = ranges.iter().find(|(_, ok)| !ok) {
            return Err(RulesError::OutOfRange { field });
        }
        // A revoked name becomes this one: it keeps the rule of names.
        let name = self.default_room_name.trim();
        if name.is_empty()
            || name != self.default_room_name
            || crate::rejection::Field::Name.check(name).is_err()
        {
            return Err(RulesError::OutOfRange {
                field: "default_room_name",
            });
        }
        if !(-14 * 3600..=14 * 3600).contains(&self.day_utc_offset_secs) {
            return Err(RulesError::OutOfRange {
                field: "day_utc_offset_secs",
            });
        }
        validate_rocket_levels(&self.rocket_levels)?;
        self.lucky.validate()
    }

    /// The rocket level `level` (from 1), if configured.
    pub fn rocket_level(&self, level: u32) -> Option<&RocketLevel> {
        let index = usize::try_from(level).ok()?.checked_sub(1)?;
        self.rocket_levels.get(index)
    }
}

/// The hard upper bound of [`RoomRules::max_invites`].
pub const MAX_INVITES: u32 = 200;
/// The most seats a room can have.
pub const MAX_SEATS: u8 = 20;
/// The hard upper bound of [`RoomRules::max_recipients`].
pub const MAX_RECIPIENTS: u32 = 20;
/// The hard upper bound of [`RoomRules::max_batch_recipients`]: a batch gift's order names
/// whom it paid for, and its event whom it reached (shown in the room, within the size of one
/// IM message for ids of common length).
pub const MAX_BATCH_RECIPIENTS: u32 = 200;
/// The hard upper bound of [`RoomRules::max_gift_count`].
pub const MAX_GIFT_COUNT: u32 = 9_999;

/// One level of the room rocket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RocketLevel {
    /// Fuel needed to ignite at this level.
    pub fuel: i64,
    /// Seconds between ignition and launch.
    pub countdown_secs: u32,
    /// Coins shared among the winners at launch.
    pub reward_pool: Coins,
    /// How many members present at launch share the pool (fewer if fewer are present).
    pub winners: u32,
    /// The most one winner is given at one launch; what the cap keeps from the pool is not
    /// paid. None: no cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reward_cap: Option<Coins>,
}

impl RocketLevel {
    /// What a launch of this level gives away.
    pub fn prize(&self) -> RocketPrize {
        RocketPrize {
            reward_pool: self.reward_pool,
            winners: self.winners,
            reward_cap: self.reward_cap,
        }
    }
}

/// What a rocket launch gives away: taken from its level when it ignites, so that a change of
/// the levels made while it counts down does not change its launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RocketPrize {
    /// Coins shared among the winners.
    pub reward_pool: Coins,
    /// How many members present share them.
    pub winners: u32,
    /// The most one winner is given; none: no cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reward_cap: Option<Coins>,
}

/// A version of the rocket's levels, as operators change them at run time: a room takes the
/// current version's levels from its next fuel and ignition; a rocket counting down launches
/// with the prize it ignited with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RocketSettings {
    /// 1 for the first, one more for each change.
    pub version: u64,
    /// The levels, from level 1 upwards.
    pub levels: Vec<RocketLevel>,
}

/// The most rocket levels a deployment may configure.
pub const MAX_ROCKET_LEVELS: usize = 50;

/// The longest countdown from ignition to launch, in seconds (an hour).
pub const MAX_ROCKET_COUNTDOWN_SECS: u32 = 3_600;

/// The most winners one launch may have.
pub const MAX_ROCKET_WINNERS: u32 = 10_000;

/// Checks rocket levels: at least one and at most [`MAX_ROCKET_LEVELS`], fuel positive and
/// rising, countdowns at most [`MAX_ROCKET_COUNTDOWN_SECS`], pools not negative and shared by
/// at least one winner, at most [`MAX_ROCKET_WINNERS`] winners, caps at least one coin.
pub fn validate_rocket_levels(levels: &[RocketLevel]) -> Result<(), RulesError> {
    if levels.is_empty() || levels.len() > MAX_ROCKET_LEVELS {
        return Err(RulesError::OutOfRange {
            field: "rocket_levels",
        });
    }
    let mut previous_fuel = 0;
    for (i, level) in levels.iter().enumerate() {
        let err = |reason| RulesError::RocketLevel {
            level: i + 1,
            reason,
        };
        if level.fuel <= previous_fuel && i > 0 {
            return Err(err("fuel must rise from level to level"));
        }
        if level.fuel <= 0 {
            return Err(err("fuel must be positive"));
        }
        if level.reward_pool.is_negative() {
            return Err(err("reward pool must not be negative"));
        }
        if level.winners == 0 && level.reward_pool > Coins::ZERO {
            return Err(err("a reward pool needs at least one winner"));
        }
        if level.countdown_secs > MAX_ROCKET_COUNTDOWN_SECS {
            return Err(err("a countdown is at most 3600 seconds"));
        }
        if level.winners > MAX_ROCKET_WINNERS {
            return Err(err("at most 10000 winners"));
        }
        if level.reward_cap.is_some_and(|cap| cap <= Coins::ZERO) {
            return Err(err("a reward cap must be at least one coin"));
        }
        previous_fuel = level.fuel;
    }
    Ok(())
}

/// The lucky-gift table: each entry is a multiplier of the order's value with a weight. A
/// draw picks an entry with probability `weight / total weight`; the sender wins
/// `order value × multiplier` coins.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LuckyTable {
    /// The entries, in draw order.
    pub entries: Vec<LuckyEntry>,
    /// What the table returns on average, in basis points of the order value (9500 = 95 %).
    /// [`LuckyTable::validate`] checks the entries against it exactly.
    pub expected_return_bp: u32,
}

/// One row of the [`LuckyTable`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LuckyEntry {
    /// Whole multiples of the order value won.
    pub multiplier: u32,
    /// Relative weight of this entry.
    pub weight: u32,
}

impl Default for LuckyTable {
    /// A table returning exactly 95 %: about two sends in three win nothing, one in five wins
    /// its value back, a few win several times their value, rarely 100 or 500 times.
    fn default() -> Self {
        let entries = [
            (0, 6_907),
            (1, 2_000),
            (2, 750),
            (5, 200),
            (10, 100),
            (50, 30),
            (100, 10),
            (500, 3),
        ]
        .into_iter()
        .map(|(multiplier, weight)| LuckyEntry { multiplier, weight })
        .collect();
        LuckyTable {
            entries,
            expected_return_bp: 9_500,
        }
    }
}

impl LuckyTable {
    /// The sum of the weights.
    pub fn total_weight(&self) -> u64 {
        self.entries.iter().map(|e| u64::from(e.weight)).sum()
    }

    /// The exact expected return, in thousandths of a basis point (rounded down).
    pub fn actual_return_bp_x1000(&self) -> u64 {
        let total = self.total_weight();
        if total == 0 {
            return 0;
        }
        let weighted: u128 = self
            .entries
            .iter()
            .map(|e| u128::from(e.multiplier) * u128::from(e.weight))
            .sum();
        u64::try_from(weighted * 10_000_000 / u128::from(total)).unwrap_or(u64::MAX)
    }

    /// Checks that the table has weight and that its entries return exactly
    /// [`LuckyTable::expected_return_bp`].
    pub fn validate(&self) -> Result<(), RulesError> {
        let total = self.total_weight();
        if total == 0 {
            return Err(RulesError::LuckyTableEmpty);
        }
        let weighted: u128 = self
            .entries
            .iter()
            .map(|e| u128::from(e.multiplier) * u128::from(e.weight))
            .sum();
        if weighted * 10_000 != u128::from(self.expected_return_bp) * u128::from(total) {
            return Err(RulesError::LuckyReturnMismatch {
                expected_bp: self.expected_return_bp,
                actual_bp_x1000: self.actual_return_bp_x1000(),
            });
        }
        Ok(())
    }

    /// The multiplier that the random input `draw` picks. Uniform over the weights for a
    /// uniformly random `draw` (the modulo bias is below 2^-40 for any realistic total weight).
    pub fn draw(&self, draw: u64) -> u32 {
        let total = self.total_weight();
        if total == 0 {
            return 0;
        }
        let mut point = draw % total;
        for entry in &self.entries {
            let weight = u64::from(entry.weight);
            if point < weight {
                return entry.multiplier;
            }
            point -= weight;
        }
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_rules_are_valid() {
        RoomRules::default().validate().unwrap();
    }

    #[test]
    fn default_lucky_table_returns_its_expected_return() {
        let table = LuckyTable::default();
        assert_eq!(table.actual_return_bp_x1000(), 9_500_000);
        // Every draw point maps to an entry; counting them over one full cycle of the weights
        // reproduces the expected return exactly.
        let total = table.total_weight();
        let sum: u64 = (0..total).map(|d| u64::from(table.draw(d))).sum();
        assert_eq!(sum * 10_000, 9_500 * total);
    }

    #[test]
    fn a_table_that_lies_about_its_return_is_rejected() {
        let mut table = LuckyTable {
            expected_return_bp: 9_600,
            ..LuckyTable::default()
        };
        assert!(matches!(
            table.validate(),
            Err(RulesError::LuckyReturnMismatch {
                expected_bp: 9_600,
                actual_bp_x1000: 9_500_000
            })
        ));
        table.entries.clear();
        assert_eq!(table.validate(), Err(RulesError::LuckyTableEmpty));
    }

    #[test]
    fn rocket_levels_must_rise() {
        let mut rules = RoomRules::default();
        rules.rocket_levels[1].fuel = rules.rocket_levels[0].fuel;
        assert!(matches!(
            rules.validate(),
            Err(RulesError::RocketLevel { level: 2, .. })
        ));
        let rules = RoomRules {
            max_recipients: 21,
            ..RoomRules::default()
        };
        assert_eq!(
            rules.validate(),
            Err(RulesError::OutOfRange {
                field: "max_recipients"
            })
        );
    }
}
