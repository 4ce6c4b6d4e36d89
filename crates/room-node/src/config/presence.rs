//! `[presence]`: heartbeats.

use serde::Deserialize;

/// `[presence]`: heartbeats.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PresenceSettings {
    /// A member whose last heartbeat (or join) is older than this many seconds is evicted.
    pub timeout_secs: u64,
}

impl Default for PresenceSettings {
    fn default() -> Self {
        PresenceSettings { timeout_secs: 90 }
    }
}
