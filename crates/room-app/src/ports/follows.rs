//! Users following rooms ([`RoomFollows`]): who follows which room, since when, and how many
//! rooms a user may follow.

use std::sync::Arc;

use async_trait::async_trait;
use room_domain::{RoomId, Timestamp, UserId};

use crate::error::Result;

/// The most follows one call of [`RoomFollows::list_followed`] returns, whatever it asks.
pub const MAX_FOLLOW_PAGE: u32 = 200;

/// A room a user follows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FollowedRoom {
    /// The room.
    pub room_id: RoomId,
    /// When the user followed it (the first follow; following again changes nothing).
    pub followed_at: Timestamp,
    /// The follow's place in the store's order: later follows have larger numbers. It is the
    /// cursor of [`RoomFollows::list_followed`].
    pub seq: i64,
}

/// What [`RoomFollows::follow`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FollowOutcome {
    /// The user follows the room now.
    Followed,
    /// The user followed the room already; nothing changed.
    AlreadyFollowing,
    /// The user follows the maximum number of rooms already; nothing changed.
    LimitReached,
}

/// Which rooms users follow. The maximum a user may follow is enforced by the store itself
/// (in the transaction, or under the lock, that writes the follow), so that follows racing
/// each other never take a user past it.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait RoomFollows: Send + Sync {
    /// Makes `user` follow `room_id` (at `at`), unless they follow it already or follow
    /// `max_follows` rooms already.
    async fn follow(
        &self,
        user: &UserId,
        room_id: &RoomId,
        at: Timestamp,
        max_follows: u32,
    ) -> Result<FollowOutcome>;
    /// Makes `user` stop following `room_id`; answers whether they followed it.
    async fn unfollow(&self, user: &UserId, room_id: &RoomId) -> Result<bool>;
    /// The rooms `user` follows, newest follow first, those with a
    /// [`seq`](FollowedRoom::seq) below `before` (all without it), at most `limit` (and at most
    /// [`MAX_FOLLOW_PAGE`]).
    async fn list_followed(
        &self,
        user: &UserId,
        before: Option<i64>,
        limit: u32,
    ) -> Result<Vec<FollowedRoom>>;
    /// Whether `user` follows `room_id`.
    async fn is_following(&self, user: &UserId, room_id: &RoomId) -> Result<bool>;
    /// How many users follow `room_id`.
    async fn follower_count(&self, room_id: &RoomId) -> Result<u64>;
}

/// Shared handle to [`RoomFollows`].
pub type RoomFollowsRef = Arc<dyn RoomFollows>;
