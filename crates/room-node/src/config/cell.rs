//! `[cell]`: tuning of the Room Cell runtime.

use serde::{Deserialize, Serialize};

use super::reference::Section;

/// `[cell]`: tuning of the Room Cell runtime.
#[derive(Debug, Clone, Deserialize, Serialize)]
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

/// What `[cell]` and each of its keys are for, in the reference (`docs/configuration.md`).
pub(super) const SECTION: Section = Section {
    name: "cell",
    about: "The Room Cell runtime: one task per loaded room, which commits its commands in groups.",
    keys: &[
        (
            "node_id",
            "This node's id, recorded as the owner of the rooms it runs; with \
             `ROOM__LEASE__REDIS_URL`, one of its own among the nodes (not `local`).",
        ),
        (
            "mailbox",
            "Requests queued per room; a request beyond that is answered 429 `ROOM_OVERLOADED` at \
             once.",
        ),
        (
            "max_batch",
            "The most commands one storage transaction commits (group commit); 1 turns batching \
             off.",
        ),
        (
            "snapshot_every",
            "A room snapshot is written after this many events (and when the room is unloaded).",
        ),
        (
            "idle_secs",
            "A room without requests for this many seconds is unloaded from memory.",
        ),
        (
            "recent_commands",
            "Command ids each loaded room remembers, to answer repeats without reading storage.",
        ),
        (
            "recent_commands_bytes",
            "The most bytes (estimated) the replies each loaded room remembers may take; the \
             oldest go first, and a repeat of a forgotten command is answered from storage.",
        ),
    ],
};
