//! Presence ([`Presence`]): who is in which room, by heartbeat, and who stopped sending one.

use std::sync::Arc;

use async_trait::async_trait;
use room_domain::{RoomId, Timestamp, UserId};

use crate::error::Result;

/// The most compare-and-sets [`Presence::move_to`] tries before it answers that the record
/// keeps changing.
pub const MOVE_ROUNDS: usize = 1_000;

/// Who is where, by heartbeat. A user is recorded in one room at most, with the time of their
/// last heartbeat (or join) there: the user's current-room record. Joins, leaves, kicks,
/// closes and heartbeats change the room of the record only through
/// [`Presence::compare_and_set`], so that two changes racing serialise on it.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait Presence: Send + Sync {
    /// Moves `user`'s record to `room_id` at `now` from whatever room it names, by
    /// [`Presence::compare_and_set`] from the room last read (retried with the room each
    /// refusal answers); returns the room it named before, if another. What a join does once
    /// the room let the user in. After [`MOVE_ROUNDS`] refusals in a row (other requests of
    /// the user keep moving the record) it gives up, retryably.
    async fn move_to(
        &self,
        room_id: &RoomId,
        user: &UserId,
        now: Timestamp,
    ) -> Result<Option<RoomId>> {
        let mut expected = self.get_current_room(user).await?;
        for _ in 0..MOVE_ROUNDS {
            let before = self
                .compare_and_set(user, expected.clone(), Some(room_id.clone()), now)
                .await?;
            if before == expected {
                return Ok(before.filter(|before| before != room_id));
            }
            expected = before;
        }
        Err(crate::Error::Unavailable(format!(
            "{user}'s current room kept changing: try the join again"
        )))
    }
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
    /// Sets `user`'s record to `next` (with `now` as their last heartbeat; `None` forgets
    /// them) only if it names `expected` now (`None`: recorded nowhere), in one step. Returns
    /// the room the record named before the call: the change was made if and only if that is
    /// `expected`. With `next` equal to `expected`, a match only renews the heartbeat.
    async fn compare_and_set(
        &self,
        user: &UserId,
        expected: Option<RoomId>,
        next: Option<RoomId>,
        now: Timestamp,
    ) -> Result<Option<RoomId>>;
    /// The room `user` is in.
    async fn get_current_room(&self, user: &UserId) -> Result<Option<RoomId>>;
    /// Users whose last heartbeat is before `before`, oldest first (ties by user id), at most
    /// `limit`; with `after` (the heartbeat and user of the last member of the page before),
    /// only those that come after it in that order, so that a pass pages past members it
    /// could not evict.
    async fn list_stale(
        &self,
        before: Timestamp,
        after: Option<StaleCursor>,
        limit: u32,
    ) -> Result<Vec<StaleMember>>;
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

/// Where a page of [`Presence::list_stale`] ended: the last heartbeat and user of its last
/// member.
pub type StaleCursor = (Timestamp, UserId);

impl StaleMember {
    /// The cursor of a page that ends with this member.
    pub fn cursor(&self) -> StaleCursor {
        (self.seen, self.user.clone())
    }
}

/// Shared handle to [`Presence`].
pub type PresenceRef = Arc<dyn Presence>;
