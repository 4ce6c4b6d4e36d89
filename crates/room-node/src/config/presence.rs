//! `[presence]`: heartbeats.

use serde::{Deserialize, Serialize};

use super::reference::Section;

/// `[presence]`: heartbeats.
#[derive(Debug, Clone, Deserialize, Serialize)]
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

/// What `[presence]` and each of its keys are for, in the reference (`docs/configuration.md`).
pub(super) const SECTION: Section = Section {
    name: "presence",
    about: "Heartbeats.",
    keys: &[(
        "timeout_secs",
        "A member whose last join or heartbeat is older than this many seconds is evicted.",
    )],
};
