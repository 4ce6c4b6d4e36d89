//! `[vip]`: the node's cache of VIP grants and the level table (the levels, shields, entry
//! effects and vehicles the rooms apply).

use std::time::Duration;

use room_app::vip::VipCacheConfig;
use serde::{Deserialize, Serialize};

use super::reference::Section;

/// The longest cache TTL, in milliseconds (1 minute): a grant, a revocation or a level table
/// change must count on every node within it.
pub const MAX_VIP_CACHE_TTL_MS: u64 = 60_000;

/// The most users a node's VIP cache may be configured to hold.
pub const MAX_VIP_CACHE_CAPACITY: usize = 10_000_000;

/// `[vip]`: the node's cache of VIP grants.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct VipSettings {
    /// The most users whose grant (or its absence) the node keeps; 0 reads the store every
    /// time.
    pub cache_capacity: usize,
    /// How long a kept grant, and the level table, are served, in milliseconds: a change made
    /// through another node counts on this node within it.
    pub cache_ttl_ms: u64,
}

impl Default for VipSettings {
    fn default() -> Self {
        let defaults = VipCacheConfig::default();
        VipSettings {
            cache_capacity: defaults.capacity,
            cache_ttl_ms: u64::try_from(defaults.ttl.as_millis()).unwrap_or(u64::MAX),
        }
    }
}

impl VipSettings {
    /// The cache these settings describe.
    pub fn cache(&self) -> VipCacheConfig {
        VipCacheConfig {
            capacity: self.cache_capacity,
            ttl: Duration::from_millis(self.cache_ttl_ms),
        }
    }

    /// Refuses a capacity or TTL over its bound.
    pub fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.cache_capacity <= MAX_VIP_CACHE_CAPACITY,
            "ROOM__VIP__CACHE_CAPACITY is {}: at most {MAX_VIP_CACHE_CAPACITY}",
            self.cache_capacity
        );
        anyhow::ensure!(
            self.cache_ttl_ms <= MAX_VIP_CACHE_TTL_MS,
            "ROOM__VIP__CACHE_TTL_MS is {}: at most {MAX_VIP_CACHE_TTL_MS} (a VIP change must \
             count on every node within it)",
            self.cache_ttl_ms
        );
        Ok(())
    }
}

/// What `[vip]` and each of its keys are for, in the reference (`docs/configuration.md`).
pub(super) const SECTION: Section = Section {
    name: "vip",
    about: "The node's cache of VIP grants and the VIP level table, which the rooms read on a \
            join (the level, the entry effect and vehicle of `RoomUserJoined`) and on a kick or \
            chat mute (the target's shields against room admins). A grant's expiry counts at \
            its instant, cached or not. A grant, revocation or table change made through this \
            node counts here at once; one made through another node within \
            `ROOM__VIP__CACHE_TTL_MS`. A member already in a room shows a new level from their \
            next join; shields count from the next kick or mute. The metric \
            `room_vip_cache_lookups_total` (label `result`: `hit`, `miss`) counts the lookups.",
    keys: &[
        (
            "cache_capacity",
            "The most users whose grant (or its absence) one node keeps, at most 10,000,000; \
             when full, expired entries go first, then the oldest read. 0 reads the store on \
             every lookup.",
        ),
        (
            "cache_ttl_ms",
            "How long a kept grant, and the level table, are served, in milliseconds, at most \
             60,000: the longest a change made through another node takes to count on this \
             node.",
        ),
    ],
};
