//! `[broadcast]`: big gifts shown in the other open rooms of the sender's region.

use std::time::Duration;

use room_app::broadcast::BroadcastConfig;
use serde::{Deserialize, Serialize};

use super::reference::Section;

/// The most rooms one broadcast may be configured to reach.
pub const MAX_BROADCAST_ROOMS: u32 = 1_000;

/// The most open rooms a broadcast may be configured to read to find its rooms.
pub const MAX_BROADCAST_SCAN: u32 = 20_000;

/// The most broadcasts a minute that may be configured.
pub const MAX_BROADCASTS_PER_MINUTE: u32 = 600;

/// The default name of the broadcaster as a consumer of the durable facts.
pub const BROADCAST_CONSUMER_GROUP: &str = "room-service-gift-broadcasts";

/// `[broadcast]`: big-gift broadcasts (off unless `min_value` is set).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct BroadcastSettings {
    /// A paid gift worth at least this many coins is broadcast; 0 (the default) turns
    /// broadcasts off.
    pub min_value: i64,
    /// Most rooms one broadcast is shown in (the hottest of the region).
    pub max_rooms: u32,
    /// Most open rooms read, hottest first, to find them.
    pub scan_rooms: u32,
    /// Most broadcasts a minute per consuming process; the rest are dropped and counted.
    pub per_minute: u32,
    /// A gift older than this many seconds when its fact is read is not broadcast.
    pub max_age_secs: u64,
    /// The broadcaster's name as a consumer of the durable facts: with Kafka its consumer
    /// group, without its stored position in the outbox and its work claim. 1 to 55 ASCII
    /// letters, digits, `.`, `_` or `-`.
    pub group: String,
}

impl Default for BroadcastSettings {
    fn default() -> Self {
        let defaults = BroadcastConfig::default();
        BroadcastSettings {
            min_value: defaults.min_value,
            max_rooms: defaults.max_rooms,
            scan_rooms: defaults.scan_rooms,
            per_minute: defaults.per_minute,
            max_age_secs: defaults.max_age.as_secs(),
            group: BROADCAST_CONSUMER_GROUP.to_owned(),
        }
    }
}

impl BroadcastSettings {
    /// The broadcaster's configuration.
    pub fn config(&self) -> BroadcastConfig {
        BroadcastConfig {
            min_value: self.min_value,
            max_rooms: self.max_rooms,
            scan_rooms: self.scan_rooms,
            per_minute: self.per_minute,
            max_age: Duration::from_secs(self.max_age_secs),
        }
    }

    /// Refuses values out of their bounds, naming the key.
    pub fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.min_value >= 0,
            "ROOM__BROADCAST__MIN_VALUE is {}: 0 (off) or a number of coins",
            self.min_value
        );
        anyhow::ensure!(
            (1..=MAX_BROADCAST_ROOMS).contains(&self.max_rooms),
            "ROOM__BROADCAST__MAX_ROOMS is {}: 1 to {MAX_BROADCAST_ROOMS}",
            self.max_rooms
        );
        anyhow::ensure!(
            (1..=MAX_BROADCAST_SCAN).contains(&self.scan_rooms),
            "ROOM__BROADCAST__SCAN_ROOMS is {}: 1 to {MAX_BROADCAST_SCAN}",
            self.scan_rooms
        );
        anyhow::ensure!(
            (1..=MAX_BROADCASTS_PER_MINUTE).contains(&self.per_minute),
            "ROOM__BROADCAST__PER_MINUTE is {}: 1 to {MAX_BROADCASTS_PER_MINUTE}",
            self.per_minute
        );
        anyhow::ensure!(
            (1..=3_600).contains(&self.max_age_secs),
            "ROOM__BROADCAST__MAX_AGE_SECS is {}: 1 to 3,600",
            self.max_age_secs
        );
        Ok(())
    }
}

/// What `[broadcast]` and each of its keys are for, in the reference (`docs/configuration.md`).
pub(super) const SECTION: Section = Section {
    name: "broadcast",
    about: "Big-gift broadcasts: a paid gift worth at least `min_value` coins is also shown in \
            the hottest open rooms of the sender's region (their profile's, else the gift's \
            room's) as a `RoomGiftBroadcast` display event, on the rooms' event streams and IM \
            groups. Display only: it is a consumer of the durable facts, never part of a \
            gift's commit, and a fact handed over twice shows once per room. Off by default. \
            The metrics `room_gift_broadcasts_total` (label `outcome`: `sent`, `over_budget`, \
            `stale`, `no_rooms`) and `room_gift_broadcast_rooms_total` (`shown`, `failed`) \
            count them.",
    keys: &[
        (
            "min_value",
            "The least total value, in coins, of a gift that is broadcast; 0 turns broadcasts \
             off.",
        ),
        (
            "max_rooms",
            "The most rooms one broadcast is shown in, 1 to 1,000: the hottest open rooms of \
             the region, the gift's own room left out.",
        ),
        (
            "scan_rooms",
            "The most open rooms read, hottest first, to find them, 1 to 20,000.",
        ),
        (
            "per_minute",
            "The most broadcasts a minute per consuming process, 1 to 600 (a token bucket): \
             the IM budget they may take. The rest are dropped and counted as `over_budget`.",
        ),
        (
            "max_age_secs",
            "A gift older than this when its fact is read (a consumer catching up after a \
             stop) is not broadcast, 1 to 3,600.",
        ),
        (
            "group",
            "The broadcaster's name as a consumer of the durable facts: with Kafka, its \
             consumer group; without, its stored position in the outbox and its work claim. \
             1 to 55 ASCII letters, digits, `.`, `_` or `-`.",
        ),
    ],
};
