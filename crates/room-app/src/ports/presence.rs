//! Presence ([`Presence`]): who is in which room, by heartbeat, and who stopped sending one.

use std::sync::Arc;

use async_trait::async_trait;
use room_domain::{RoomId, Timestamp, UserId};

use crate::error::Result;

/// Who is where, by heartbeat. A user is recorded in one room at most, with the time of their
/// last heartbeat (or join) there.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait Presence: Send + Sync {
    /// Records that `user` is in `room_id` at `now`; returns the room they were in before, if
    /// another.
    async fn heartbeat(
        &self,
        room_id: &RoomId,
        user: &UserId,
        now: Timestamp,
    ) -> Result<Option<RoomId>>;
    /// Records `user` in `room_id` at `now` unless they are recorded anywhere already: a room
    /// loaded from storage restores its members this way, so that members whose clients are
    /// gone are evicted after the timeout like any other.
    async fn restore(&self, room_id: &RoomId, user: &UserId, now: Timestamp) -> Result<()>;
    /// Forgets `user` in `room_id` (a later heartbeat in another room is kept).
    async fn remove(&self, room_id: &RoomId, user: &UserId) -> Result<()>;
    /// Forgets `user` in `room_id` only if their last heartbeat there is still `seen` (as
    /// [`Presence::list_stale`] reported it), in one step: `Ok(false)`, changing nothing, when
    /// they heartbeat or joined anywhere since.
    async fn remove_if_seen(
        &self,
        room_id: &RoomId,
        user: &UserId,
        seen: Timestamp,
    ) -> Result<bool>;
    /// The room `user` is in.
    async fn get_current_room(&self, user: &UserId) -> Result<Option<RoomId>>;
    /// Users whose last heartbeat is before `before`, at most `limit`.
    async fn list_stale(&self, before: Timestamp, limit: u32) -> Result<Vec<StaleMember>>;
}

/// A user whose heartbeat stopped, as [`Presence::list_stale`] finds them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaleMember {
    /// The room they were last seen in.
    pub room_id: RoomId,
    /// Who.
    pub user: UserId,
    /// Their last heartbeat (or join).
    pub seen: Timestamp,
}

/// Shared handle to [`Presence`].
pub type PresenceRef = Arc<dyn Presence>;
