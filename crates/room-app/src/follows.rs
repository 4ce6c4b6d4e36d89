//! Following rooms ([`RoomFollowing`]): a user follows and unfollows rooms, up to a
//! configured number, and lists the rooms they follow with each room's live status from the
//! room directory (no room is activated to answer).

use std::cmp::Reverse;
use std::collections::HashMap;

use room_domain::{RoomId, Timestamp, UserId};

use crate::error::Result;
use crate::ports::{
    ClockRef, FollowOutcome, MAX_FOLLOW_PAGE, MAX_SUMMARIES_READ, RoomDirectoryRef, RoomFollowsRef,
};

/// Where a page of [`RoomFollowing::followed_rooms`] starts: after the room with this key.
/// Rooms come open first, then newest follow first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct FollowedCursor {
    /// Whether the last room of the previous page was open.
    pub open: bool,
    /// The follow's sequence number of that room.
    pub seq: i64,
}

/// A room the caller follows, with its live status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FollowedRoomView {
    /// The room.
    pub room_id: RoomId,
    /// Its name (empty when the directory has no summary of it).
    pub name: String,
    /// Whether it is open.
    pub open: bool,
    /// Members present.
    pub online: u32,
    /// When the user followed it.
    pub followed_at: Timestamp,
    /// Its place in the order: the cursor of the page after it.
    pub cursor: FollowedCursor,
}

/// The follow use cases over [`RoomFollows`](crate::ports::RoomFollows) and the room
/// directory.
pub struct RoomFollowing {
    follows: RoomFollowsRef,
    directory: RoomDirectoryRef,
    clock: ClockRef,
    max_follows: u32,
}

impl RoomFollowing {
    /// Following over `follows`, reading rooms' status from `directory`; a user may follow at
    /// most `max_follows` rooms.
    pub fn new(
        follows: RoomFollowsRef,
        directory: RoomDirectoryRef,
        clock: ClockRef,
        max_follows: u32,
    ) -> Self {
        RoomFollowing {
            follows,
            directory,
            clock,
            max_follows,
        }
    }

    /// The most rooms one user may follow.
    pub fn max_follows(&self) -> u32 {
        self.max_follows
    }

    /// `user` follows `room_id` (the caller checked that the room exists); idempotent.
    /// [`FollowOutcome::LimitReached`] when they follow the maximum already.
    pub async fn follow(&self, user: &UserId, room_id: &RoomId) -> Result<FollowOutcome> {
        self.follows
            .follow(user, room_id, self.clock.now(), self.max_follows)
            .await
    }

    /// `user` stops following `room_id`; idempotent. Answers whether they followed it.
    pub async fn unfollow(&self, user: &UserId, room_id: &RoomId) -> Result<bool> {
        self.follows.unfollow(user, room_id).await
    }

    /// How many users follow `room_id`.
    pub async fn follower_count(&self, room_id: &RoomId) -> Result<u64> {
        self.follows.follower_count(room_id).await
    }

    /// A page of the rooms `user` follows, open ones first, then newest follow first, after
    /// `after`, at most `limit`. Reads at most [`max_follows`](Self::max_follows) follows,
    /// and their rooms' summaries [`MAX_SUMMARIES_READ`] at a time.
    pub async fn followed_rooms(
        &self,
        user: &UserId,
        after: Option<FollowedCursor>,
        limit: u32,
    ) -> Result<Vec<FollowedRoomView>> {
        let bound = self.max_follows as usize;
        let mut follows = Vec::new();
        let mut before = None;
        while follows.len() < bound {
            let page = self
                .follows
                .list_followed(user, before, MAX_FOLLOW_PAGE)
                .await?;
            let full = page.len() == MAX_FOLLOW_PAGE as usize;
            before = page.last().map(|f| f.seq);
            follows.extend(page);
            if !full {
                break;
            }
        }
        follows.truncate(bound);
        let mut summaries = HashMap::with_capacity(follows.len());
        let ids: Vec<RoomId> = follows.iter().map(|f| f.room_id.clone()).collect();
        for chunk in ids.chunks(MAX_SUMMARIES_READ) {
            for summary in self.directory.get_summaries(chunk).await? {
                summaries.insert(summary.room_id.clone(), summary);
            }
        }
        let mut rooms = Vec::with_capacity(follows.len());
        for follow in follows {
            let summary = summaries.remove(&follow.room_id);
            let (name, open, online) = summary
                .map(|s| (s.name, s.open, s.online))
                .unwrap_or_default();
            rooms.push(FollowedRoomView {
                room_id: follow.room_id,
                name,
                open,
                online,
                followed_at: follow.followed_at,
                cursor: FollowedCursor {
                    open,
                    seq: follow.seq,
                },
            });
        }
        // Open first, then newest follow first: the cursors in descending order.
        rooms.retain(|room| after.is_none_or(|after| room.cursor < after));
        rooms.sort_by_key(|room| Reverse(room.cursor));
        rooms.truncate(limit as usize);
        Ok(rooms)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use room_domain::Timestamp;

    use super::*;
    use crate::InMemoryStore;
    use crate::ports::{MockClock, MockRoomDirectory, RoomSummary};

    fn room(id: &str) -> RoomId {
        RoomId::new(id).unwrap()
    }

    fn following(open: &'static [&'static str], max: u32) -> (RoomFollowing, UserId) {
        let store = Arc::new(InMemoryStore::new());
        let mut directory = MockRoomDirectory::new();
        directory.expect_get_summaries().returning(move |ids| {
            Ok(ids
                .iter()
                .map(|id| RoomSummary {
                    room_id: id.clone(),
                    owner: UserId::new("owner").unwrap(),
                    name: format!("name of {id}"),
                    open: open.contains(&id.as_str()),
                    heat: 0,
                    online: 3,
                    locked: false,
                    version: 1,
                    region: "eu-west".into(),
                    cover_url: None,
                    seats_taken: 1,
                    created_at: Timestamp(500),
                    recent_heat_milli: 0,
                    recent_heat_at: Timestamp(500),
                })
                .collect())
        });
        let mut clock = MockClock::new();
        clock.expect_now().returning(|| Timestamp(1_000));
        let following = RoomFollowing::new(store, Arc::new(directory), Arc::new(clock), max);
        (following, UserId::new("ann").unwrap())
    }

    #[tokio::test]
    async fn open_rooms_come_first_then_newest_follow_across_pages() {
        let (following, ann) = following(&["b", "d"], 10);
        for id in ["a", "b", "c", "d", "e"] {
            assert_eq!(
                following.follow(&ann, &room(id)).await.unwrap(),
                FollowOutcome::Followed
            );
        }
        let first = following.followed_rooms(&ann, None, 3).await.unwrap();
        let ids: Vec<_> = first.iter().map(|r| r.room_id.as_str()).collect();
        assert_eq!(ids, ["d", "b", "e"]);
        assert!(first[0].open && !first[2].open);
        assert_eq!(first[0].name, "name of d");
        let second = following
            .followed_rooms(&ann, Some(first[2].cursor), 3)
            .await
            .unwrap();
        let ids: Vec<_> = second.iter().map(|r| r.room_id.as_str()).collect();
        assert_eq!(ids, ["c", "a"]);
    }

    #[tokio::test]
    async fn the_configured_maximum_is_the_stores_limit() {
        let (following, ann) = following(&[], 2);
        for id in ["a", "b"] {
            following.follow(&ann, &room(id)).await.unwrap();
        }
        assert_eq!(
            following.follow(&ann, &room("c")).await.unwrap(),
            FollowOutcome::LimitReached
        );
        assert_eq!(
            following
                .followed_rooms(&ann, None, 10)
                .await
                .unwrap()
                .len(),
            2
        );
    }
}
