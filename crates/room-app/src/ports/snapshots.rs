//! Snapshots of room state ([`SnapshotStore`]): a cell writes one every so many commands and
//! on orderly deactivation, and starts from the newest when it activates.

use std::sync::Arc;

use async_trait::async_trait;
use room_domain::{RoomId, Snapshot};

use crate::error::Result;

/// Snapshots of room state.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait SnapshotStore: Send + Sync {
    /// Stores a snapshot; an older one may be discarded. A snapshot older than the stored one is
    /// ignored.
    async fn put(&self, snapshot: &Snapshot) -> Result<()>;
    /// The newest snapshot of the room.
    async fn get_latest(&self, room_id: &RoomId) -> Result<Option<Snapshot>>;
}

/// Shared handle to a [`SnapshotStore`].
pub type SnapshotStoreRef = Arc<dyn SnapshotStore>;
