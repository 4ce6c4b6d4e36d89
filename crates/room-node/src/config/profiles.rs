//! `[profiles]`: the node's cache of the user directory (nicknames and avatars in the rooms'
//! views and display events).

use std::time::Duration;

use room_app::profiles::ProfileCacheConfig;
use serde::{Deserialize, Serialize};

use super::reference::Section;

/// The longest cache TTL, in milliseconds (10 minutes): a change must reach every node's
/// views within it.
pub const MAX_PROFILE_CACHE_TTL_MS: u64 = 600_000;

/// The most users a node's profile cache may be configured to hold.
pub const MAX_PROFILE_CACHE_CAPACITY: usize = 10_000_000;

/// `[profiles]`: the node's cache of profiles.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProfileSettings {
    /// The most users whose profile (or its absence) the node keeps; 0 reads the directory
    /// every time.
    pub cache_capacity: usize,
    /// How long a kept profile is served, in milliseconds: a change made through another node
    /// shows in this node's views and events within it.
    pub cache_ttl_ms: u64,
}

impl Default for ProfileSettings {
    fn default() -> Self {
        let defaults = ProfileCacheConfig::default();
        ProfileSettings {
            cache_capacity: defaults.capacity,
            cache_ttl_ms: u64::try_from(defaults.ttl.as_millis()).unwrap_or(u64::MAX),
        }
    }
}

impl ProfileSettings {
    /// The cache these settings describe.
    pub fn cache(&self) -> ProfileCacheConfig {
        ProfileCacheConfig {
            capacity: self.cache_capacity,
            ttl: Duration::from_millis(self.cache_ttl_ms),
        }
    }

    /// Refuses a capacity or TTL over its bound.
    pub fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.cache_capacity <= MAX_PROFILE_CACHE_CAPACITY,
            "ROOM__PROFILES__CACHE_CAPACITY is {}: at most {MAX_PROFILE_CACHE_CAPACITY}",
            self.cache_capacity
        );
        anyhow::ensure!(
            self.cache_ttl_ms <= MAX_PROFILE_CACHE_TTL_MS,
            "ROOM__PROFILES__CACHE_TTL_MS is {}: at most {MAX_PROFILE_CACHE_TTL_MS} (a profile \
             change must reach every node within it)",
            self.cache_ttl_ms
        );
        Ok(())
    }
}

/// What `[profiles]` and each of its keys are for, in the reference (`docs/configuration.md`).
pub(super) const SECTION: Section = Section {
    name: "profiles",
    about: "The node's cache of the user directory: the nicknames and avatars the rooms' \
            views (online list, seats, owner) and display events carry. A profile change made \
            through this node shows here at once; one made through another node shows within \
            `ROOM__PROFILES__CACHE_TTL_MS`. The metric `room_profile_cache_lookups_total` \
            (label `result`: `hit`, `miss`) counts the lookups.",
    keys: &[
        (
            "cache_capacity",
            "The most users whose profile (or its absence) one node keeps, at most 10,000,000; \
             when full, expired entries go first, then the oldest read. 0 reads the directory \
             on every lookup.",
        ),
        (
            "cache_ttl_ms",
            "How long a kept profile is served, in milliseconds, at most 600,000: the longest \
             a change made through another node takes to reach this node's views and events.",
        ),
    ],
};
