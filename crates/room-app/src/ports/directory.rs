//! The room directory ([`RoomDirectory`]): short ids, and the summaries of rooms every commit
//! writes, listed open rooms by heat.

use std::sync::Arc;

use async_trait::async_trait;
use room_domain::{RoomId, UserId};
use serde::{Deserialize, Serialize};

use crate::error::Result;

/// The most rooms one [`RoomDirectory::get_summaries`] reads.
pub const MAX_SUMMARIES_READ: usize = 200;

/// Refuses a [`RoomDirectory::get_summaries`] of more than [`MAX_SUMMARIES_READ`] rooms.
pub fn check_summaries_read(room_ids: &[RoomId]) -> Result<()> {
    if room_ids.len() > MAX_SUMMARIES_READ {
        return Err(crate::Error::Invalid(format!(
            "{} room summaries in one read: at most {MAX_SUMMARIES_READ}",
            room_ids.len()
        )));
    }
    Ok(())
}

/// What the room directory shows of a room; written in every commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoomSummary {
    /// The room.
    pub room_id: RoomId,
    /// Its owner.
    pub owner: UserId,
    /// Its name.
    pub name: String,
    /// Whether it is open.
    pub open: bool,
    /// Its heat.
    pub heat: i64,
    /// Members present.
    pub online: u32,
    /// Whether it is locked.
    pub locked: bool,
    /// Its version.
    pub version: u64,
}

/// The room directory: short ids and the list of open rooms by heat.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait RoomDirectory: Send + Sync {
    /// Reserves `short_id` for `room_id`: `Ok(false)` if another room has it.
    async fn reserve_short_id(&self, room_id: &RoomId, short_id: u32) -> Result<bool>;
    /// The short id of a room.
    async fn get_short_id(&self, room_id: &RoomId) -> Result<Option<u32>>;
    /// The room with this short id.
    async fn get_by_short_id(&self, short_id: u32) -> Result<Option<RoomId>>;
    /// The summary of a room.
    async fn get_summary(&self, room_id: &RoomId) -> Result<Option<RoomSummary>>;
    /// The summaries of those of `room_ids` that have one, in one read, in no order; more
    /// than [`MAX_SUMMARIES_READ`] ids: [`Error::Invalid`](crate::Error::Invalid).
    async fn get_summaries(&self, room_ids: &[RoomId]) -> Result<Vec<RoomSummary>>;
    /// Open rooms, hottest first (ties by room id), after `cursor` (heat, room id), at most
    /// `limit`.
    async fn list_open_by_heat(
        &self,
        cursor: Option<(i64, RoomId)>,
        limit: u32,
    ) -> Result<Vec<RoomSummary>>;
}

/// Shared handle to a [`RoomDirectory`].
pub type RoomDirectoryRef = Arc<dyn RoomDirectory>;
