//! `[lists]`: the room lists users read (scores, tabs, the refresher), and the rooms they
//! follow.

use std::collections::HashSet;
use std::time::Duration;

use room_app::lists::{ListsConfig, ScoreRules, Tab};
use serde::{Deserialize, Serialize};

use super::reference::Section;

/// `[lists]`: the room lists users read, and the rooms they follow.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ListSettings {
    /// The most rooms one user may follow; one more follow is answered 409 `FOLLOW_LIMIT`
    /// (`ROOM__LISTS__MAX_FOLLOWS_PER_USER`).
    pub max_follows_per_user: u32,
    /// How often the lists are ranked again, in ms (`ROOM__LISTS__REFRESH_MS`): a list is at
    /// most this old.
    pub refresh_ms: u64,
    /// The half-life of a room's recent heat, in seconds
    /// (`ROOM__LISTS__HEAT_HALF_LIFE_SECS`).
    pub heat_half_life_secs: u64,
    /// Heat points added to the score of a room with someone on a seat
    /// (`ROOM__LISTS__ON_MIC_BOOST`).
    pub on_mic_boost: f64,
    /// Heat points added to the score of a room created within `new_room_secs`
    /// (`ROOM__LISTS__NEW_ROOM_BOOST`).
    pub new_room_boost: f64,
    /// How long a room counts as new, in seconds (`ROOM__LISTS__NEW_ROOM_SECS`).
    pub new_room_secs: u64,
    /// The tabs robot rooms are left out of (`ROOM__LISTS__ROBOTS_LEFT_OUT`, a list of tab
    /// names).
    pub robots_left_out: Vec<String>,
    /// The most open rooms one refresh ranks (`ROOM__LISTS__MAX_ROOMS`); the lists end there.
    pub max_rooms: u32,
}

impl Default for ListSettings {
    fn default() -> Self {
        ListSettings {
            max_follows_per_user: 1000,
            refresh_ms: 2000,
            heat_half_life_secs: 1800,
            on_mic_boost: 100.0,
            new_room_boost: 100.0,
            new_room_secs: 3600,
            robots_left_out: Vec::new(),
            max_rooms: 50_000,
        }
    }
}

/// The largest [`ListSettings::max_follows_per_user`]: the followed-rooms list reads every
/// follow of the caller.
pub const MAX_FOLLOWS_PER_USER: u32 = 10_000;

/// The largest [`ListSettings::max_rooms`]: a ranking is held whole by every node.
pub const MAX_LIST_ROOMS: u32 = 500_000;

/// The largest boost, in heat points.
pub const MAX_BOOST: f64 = 1e12;

impl ListSettings {
    /// The lists these settings describe.
    pub fn lists(&self) -> ListsConfig {
        ListsConfig {
            score: ScoreRules {
                half_life: self.heat_half_life(),
                on_mic_boost: self.on_mic_boost,
                new_room_boost: self.new_room_boost,
                new_room_for: Duration::from_secs(self.new_room_secs),
            },
            robots_left_out: self
                .robots_left_out
                .iter()
                .filter_map(|name| Tab::from_name(name))
                .collect::<HashSet<_>>(),
            max_rooms: self.max_rooms,
        }
    }

    /// The half-life of recent heat.
    pub fn heat_half_life(&self) -> Duration {
        Duration::from_secs(self.heat_half_life_secs.max(1))
    }

    /// How often the lists are ranked again.
    pub fn refresh_every(&self) -> Duration {
        Duration::from_millis(self.refresh_ms.max(1))
    }

    /// Refuses a value out of its range.
    pub fn validate(&self) -> anyhow::Result<()> {
        let follows = self.max_follows_per_user;
        anyhow::ensure!(
            (1..=MAX_FOLLOWS_PER_USER).contains(&follows),
            "ROOM__LISTS__MAX_FOLLOWS_PER_USER is {follows}: it must be 1 to \
             {MAX_FOLLOWS_PER_USER}"
        );
        anyhow::ensure!(
            (100..=600_000).contains(&self.refresh_ms),
            "ROOM__LISTS__REFRESH_MS is {}: it must be 100 to 600000",
            self.refresh_ms
        );
        anyhow::ensure!(
            (1..=30 * 86_400).contains(&self.heat_half_life_secs),
            "ROOM__LISTS__HEAT_HALF_LIFE_SECS is {}: it must be 1 to 2592000 (30 days)",
            self.heat_half_life_secs
        );
        for (name, boost) in [
            ("ON_MIC_BOOST", self.on_mic_boost),
            ("NEW_ROOM_BOOST", self.new_room_boost),
        ] {
            anyhow::ensure!(
                boost.is_finite() && (0.0..=MAX_BOOST).contains(&boost),
                "ROOM__LISTS__{name} is {boost}: it must be 0 to {MAX_BOOST}"
            );
        }
        anyhow::ensure!(
            self.new_room_secs <= 30 * 86_400,
            "ROOM__LISTS__NEW_ROOM_SECS is {}: at most 2592000 (30 days)",
            self.new_room_secs
        );
        for name in &self.robots_left_out {
            anyhow::ensure!(
                Tab::from_name(name).is_some_and(|tab| tab != Tab::Following),
                "ROOM__LISTS__ROBOTS_LEFT_OUT names {name:?}: tabs are hot, new, region, \
                 country and agency"
            );
        }
        anyhow::ensure!(
            (1..=MAX_LIST_ROOMS).contains(&self.max_rooms),
            "ROOM__LISTS__MAX_ROOMS is {}: it must be 1 to {MAX_LIST_ROOMS}",
            self.max_rooms
        );
        Ok(())
    }
}

/// What `[lists]` and each of its keys are for, in the reference (`docs/configuration.md`).
pub(super) const SECTION: Section = Section {
    name: "lists",
    about: "The room lists users read (`GET /v1/rooms`: scores, tabs, the refresher) and the \
            rooms they follow (`PUT /v1/rooms/{room_id}/follow`, `GET /v1/me/followed-rooms`).",
    keys: &[
        (
            "max_follows_per_user",
            "The most rooms one user may follow, 1 to 10000; one more follow is answered 409 \
             `FOLLOW_LIMIT`. `GET /v1/me/followed-rooms` reads at most this many follows of \
             the caller.",
        ),
        (
            "refresh_ms",
            "How often every list is ranked again, 100 to 600000 ms: a list is at most this \
             old (on one node; in a cluster one node ranks, under a claim, and the others \
             take its ranking from Redis within a quarter of this). Each refresh reads every \
             open room once.",
        ),
        (
            "heat_half_life_secs",
            "The half-life of a room's recent heat, 1 to 2592000 s: each gift's heat counts \
             half after this long. Each commit of a room decays its recent heat to its own \
             time; the lists decay it to theirs.",
        ),
        (
            "on_mic_boost",
            "Heat points added to the `hot` score of a room with someone on a seat, 0 to 1e12.",
        ),
        (
            "new_room_boost",
            "Heat points added to the `hot` score of a room created within `new_room_secs`, \
             0 to 1e12.",
        ),
        (
            "new_room_secs",
            "How long a room counts as new for `new_room_boost`, at most 2592000 s.",
        ),
        (
            "robots_left_out",
            "The tabs robot rooms are left out of, a list of `hot`, `new`, `region`, \
             `country`, `agency` (empty: robot rooms take part in every list).",
        ),
        (
            "max_rooms",
            "The most open rooms one refresh ranks, 1 to 500000; the lists end there (a \
             warning and `room_lists_truncated_total` say when they do). Every node holds \
             the ranking whole.",
        ),
    ],
};
