//! [`RoomFollows`] of the [`InMemoryStore`]: each user's follows by sequence number, counted
//! and written under the store's one lock, so that the maximum holds however follows race.

use std::collections::BTreeMap;

use async_trait::async_trait;
use room_domain::{RoomId, Timestamp, UserId};

use super::InMemoryStore;
use crate::error::Result;
use crate::ports::{FollowOutcome, FollowedRoom, MAX_FOLLOW_PAGE, RoomFollows};

#[async_trait]
impl RoomFollows for InMemoryStore {
    async fn follow(
        &self,
        user: &UserId,
        room_id: &RoomId,
        at: Timestamp,
        max_follows: u32,
    ) -> Result<FollowOutcome> {
        let mut t = self.lock();
        let f = &mut t.follows;
        let key = (user.clone(), room_id.clone());
        if f.seqs.contains_key(&key) {
            return Ok(FollowOutcome::AlreadyFollowing);
        }
        let count = f.by_user.get(user).map_or(0, BTreeMap::len);
        if count >= max_follows as usize {
            return Ok(FollowOutcome::LimitReached);
        }
        f.last_seq += 1;
        let seq = f.last_seq;
        f.seqs.insert(key, seq);
        f.by_user
            .entry(user.clone())
            .or_default()
            .insert(seq, (room_id.clone(), at));
        *f.followers.entry(room_id.clone()).or_default() += 1;
        Ok(FollowOutcome::Followed)
    }

    async fn unfollow(&self, user: &UserId, room_id: &RoomId) -> Result<bool> {
        let mut t = self.lock();
        let f = &mut t.follows;
        let Some(seq) = f.seqs.remove(&(user.clone(), room_id.clone())) else {
            return Ok(false);
        };
        if let Some(follows) = f.by_user.get_mut(user) {
            follows.remove(&seq);
            if follows.is_empty() {
                f.by_user.remove(user);
            }
        }
        if let Some(count) = f.followers.get_mut(room_id) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                f.followers.remove(room_id);
            }
        }
        Ok(true)
    }

    async fn list_followed(
        &self,
        user: &UserId,
        before: Option<i64>,
        limit: u32,
    ) -> Result<Vec<FollowedRoom>> {
        let t = self.lock();
        let Some(follows) = t.follows.by_user.get(user) else {
            return Ok(Vec::new());
        };
        Ok(follows
            .range(..before.unwrap_or(i64::MAX))
            .rev()
            .take(limit.min(MAX_FOLLOW_PAGE) as usize)
            .map(|(seq, (room_id, at))| FollowedRoom {
                room_id: room_id.clone(),
                followed_at: *at,
                seq: *seq,
            })
            .collect())
    }

    async fn is_following(&self, user: &UserId, room_id: &RoomId) -> Result<bool> {
        Ok(self
            .lock()
            .follows
            .seqs
            .contains_key(&(user.clone(), room_id.clone())))
    }

    async fn follower_count(&self, room_id: &RoomId) -> Result<u64> {
        Ok(self
            .lock()
            .follows
            .followers
            .get(room_id)
            .copied()
            .unwrap_or(0))
    }
}
