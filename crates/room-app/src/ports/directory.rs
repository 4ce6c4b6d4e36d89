//! The room directory ([`RoomDirectory`]): short ids, the summaries of rooms every commit
//! writes, listed open rooms by heat, and which room holds each cover picture.

use std::sync::Arc;

use async_trait::async_trait;
use room_domain::{RoomId, Timestamp, UserId};
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
    /// Its region (the one it was created in; empty for a room summarised before regions
    /// were kept, until its next commit).
    pub region: String,
    /// Its cover picture.
    pub cover_url: Option<String>,
    /// Seats with someone on them.
    pub seats_taken: u32,
    /// When it was created (0 for a room summarised before this was kept, until its next
    /// commit).
    pub created_at: Timestamp,
    /// Its recent heat, in thousandths of a heat point, as of [`RoomSummary::recent_heat_at`]:
    /// the heat its gifts brought, each decayed by the lists' half-life since it came. The
    /// room lists decay it further to the time they rank at; nothing rewrites it on a timer.
    pub recent_heat_milli: i64,
    /// When [`RoomSummary::recent_heat_milli`] was last brought up to date (its last commit).
    pub recent_heat_at: Timestamp,
}

/// An open room as the room lists' refresher reads it: its summary and its short id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenRoom {
    /// The room's summary.
    pub summary: RoomSummary,
    /// Its short id, if it has one.
    pub short_id: Option<u32>,
}

/// The most rooms one [`RoomDirectory::scan_open`] returns, whatever it asks.
pub const MAX_OPEN_SCAN: u32 = 5_000;

/// Which room holds a cover picture, since when ([`RoomDirectory::claim_cover`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoverHolder {
    /// The room.
    pub room_id: RoomId,
    /// When it claimed the cover.
    pub claimed_at: Timestamp,
}

/// The room directory: short ids, the list of open rooms by heat, and cover claims.
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
    /// Open rooms in room id order, after `after` (from the first without it), at most
    /// `limit` (and at most [`MAX_OPEN_SCAN`]), each with its short id: one page of the
    /// refresher's scan of every open room.
    async fn scan_open(&self, after: Option<RoomId>, limit: u32) -> Result<Vec<OpenRoom>>;
    /// Claims the cover picture `cover_url` for `room_id` at `now` if no room holds it, in
    /// one write the store's key on the cover decides: of rooms claiming one cover at once,
    /// one gets it. Answers the cover's holder after: `room_id` when the cover was free or the
    /// room held it already (with its first claim's time), another room otherwise.
    async fn claim_cover(
        &self,
        cover_url: &str,
        room_id: &RoomId,
        now: Timestamp,
    ) -> Result<CoverHolder>;
    /// Moves the cover to `to` at `now` if `from` is its claim still, the same room with the
    /// same claim time (a compare and set): `true` when it moved. A holder's own claim is
    /// renewed the same way (`to` its holder).
    async fn take_over_cover(
        &self,
        cover_url: &str,
        from: &CoverHolder,
        to: &RoomId,
        now: Timestamp,
    ) -> Result<bool>;
    /// The cover's claim, if a room holds it.
    async fn get_cover(&self, cover_url: &str) -> Result<Option<CoverHolder>>;
    /// Lets the cover go if `claim` is its claim still, the same room with the same claim
    /// time (a compare and delete: a renewal since keeps it); nothing otherwise.
    async fn release_cover(&self, cover_url: &str, claim: &CoverHolder) -> Result<()>;
}

/// Shared handle to a [`RoomDirectory`].
pub type RoomDirectoryRef = Arc<dyn RoomDirectory>;
