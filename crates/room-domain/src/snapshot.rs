//! Snapshots: a room's state at a version, in a versioned envelope.

use serde::{Deserialize, Serialize};

use crate::state::RoomState;

/// The version of the snapshot format.
pub const SNAPSHOT_SCHEMA_VERSION: u16 = 1;

/// A room's state as written to the snapshot store: `{"v": 1, "state": {...}}`. The Room Cell
/// loads the newest snapshot and replays the events after `state.version`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// The format version, [`SNAPSHOT_SCHEMA_VERSION`].
    pub v: u16,
    /// The state.
    pub state: RoomState,
}

/// A snapshot written in a format this build does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("snapshot format v{found} is not supported (this build reads v{SNAPSHOT_SCHEMA_VERSION})")]
pub struct SnapshotVersionError {
    /// The version found.
    pub found: u16,
}

impl Snapshot {
    /// A snapshot of `state` in the current format.
    pub fn new(state: RoomState) -> Self {
        Snapshot {
            v: SNAPSHOT_SCHEMA_VERSION,
            state,
        }
    }

    /// The state, if this build reads the snapshot's format.
    pub fn into_state(self) -> Result<RoomState, SnapshotVersionError> {
        if self.v == SNAPSHOT_SCHEMA_VERSION {
            Ok(self.state)
        } else {
            Err(SnapshotVersionError { found: self.v })
        }
    }
}
