//! `[cell]`: tuning of the Room Cell runtime.

use serde::Deserialize;

/// `[cell]`: tuning of the Room Cell runtime.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CellSettings {
    /// This node's id, recorded as the owner of the rooms it activates.
    pub node_id: String,
    /// Queued requests per room; beyond that a request is answered 429 at once.
    pub mailbox: usize,
    /// Most commands per group commit (1 turns group commit off).
    pub max_batch: usize,
    /// A snapshot is written after this many events (and when a room deactivates).
    pub snapshot_every: u64,
    /// A room with no request for this many seconds deactivates.
    pub idle_secs: u64,
    /// Command ids each active room remembers for idempotent answers without a storage read.
    pub recent_commands: usize,
    /// The most bytes (estimated) the replies each active room remembers may take.
    pub recent_commands_bytes: usize,
}

impl Default for CellSettings {
    fn default() -> Self {
        let defaults = room_app::CellConfig::default();
        CellSettings {
            node_id: defaults.node_id,
            mailbox: defaults.mailbox,
            max_batch: defaults.max_batch,
            snapshot_every: defaults.snapshot_every,
            idle_secs: defaults.idle_after.as_secs(),
            recent_commands: defaults.recent_commands,
            recent_commands_bytes: defaults.recent_commands_bytes,
        }
    }
}
