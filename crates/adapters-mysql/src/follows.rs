//! [`RoomFollows`]: one row per (user, room), and each user's number of follows in a row of
//! its own that a follow and an unfollow lock first (`SELECT ... FOR UPDATE`): one user's
//! follows run one at a time, and a follow past the maximum is refused in the transaction
//! that would write it.

use async_trait::async_trait;
use room_app::Error;
use room_app::ports::{FollowOutcome, FollowedRoom, MAX_FOLLOW_PAGE, RoomFollows};
use room_domain::{RoomId, Timestamp, UserId};

use crate::codec::{TxError, col};
use crate::{MySqlStore, Result};

#[async_trait]
impl RoomFollows for MySqlStore {
    async fn follow(
        &self,
        user: &UserId,
        room_id: &RoomId,
        at: Timestamp,
        max_follows: u32,
    ) -> Result<FollowOutcome> {
        let (user, room_id) = (user.as_str(), room_id.as_str());
        self.retrying("follow_room", || async move {
            // The user's counter row exists before the transaction locks it: inserting it
            // there would let racing follows of a new user deadlock on the insert. A no-op
            // upsert, not INSERT IGNORE, which would turn other errors into warnings.
            sqlx::query(
                "INSERT INTO room_follow_counts (user_id, follows) VALUES (?, 0)
                 ON DUPLICATE KEY UPDATE user_id = user_id",
            )
            .bind(user)
            .execute(&self.pool)
            .await?;
            let mut tx = self.pool.begin().await?;
            let follows: i64 = sqlx::query_scalar(
                "SELECT follows FROM room_follow_counts WHERE user_id = ? FOR UPDATE",
            )
            .bind(user)
            .fetch_one(&mut *tx)
            .await?;
            let followed: Option<i64> = sqlx::query_scalar(
                "SELECT seq FROM room_follows WHERE user_id = ? AND room_id = ?",
            )
            .bind(user)
            .bind(room_id)
            .fetch_optional(&mut *tx)
            .await?;
            if followed.is_some() {
                return Ok(FollowOutcome::AlreadyFollowing);
            }
            if follows >= i64::from(max_follows) {
                return Ok(FollowOutcome::LimitReached);
            }
            sqlx::query(
                "INSERT INTO room_follows (user_id, room_id, followed_at) VALUES (?, ?, ?)",
            )
            .bind(user)
            .bind(room_id)
            .bind(at.0)
            .execute(&mut *tx)
            .await?;
            sqlx::query("UPDATE room_follow_counts SET follows = follows + 1 WHERE user_id = ?")
                .bind(user)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok::<_, TxError>(FollowOutcome::Followed)
        })
        .await
    }

    async fn unfollow(&self, user: &UserId, room_id: &RoomId) -> Result<bool> {
        let (user, room_id) = (user.as_str(), room_id.as_str());
        self.retrying("unfollow_room", || async move {
            let mut tx = self.pool.begin().await?;
            let counted: Option<i64> = sqlx::query_scalar(
                "SELECT follows FROM room_follow_counts WHERE user_id = ? FOR UPDATE",
            )
            .bind(user)
            .fetch_optional(&mut *tx)
            .await?;
            if counted.is_none() {
                return Ok(false);
            }
            let deleted = sqlx::query("DELETE FROM room_follows WHERE user_id = ? AND room_id = ?")
                .bind(user)
                .bind(room_id)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            if deleted == 0 {
                return Ok(false);
            }
            sqlx::query(
                "UPDATE room_follow_counts SET follows = GREATEST(follows - 1, 0) WHERE user_id = ?",
            )
            .bind(user)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok::<_, TxError>(true)
        })
        .await
    }

    async fn list_followed(
        &self,
        user: &UserId,
        before: Option<i64>,
        limit: u32,
    ) -> Result<Vec<FollowedRoom>> {
        let rows = self
            .retrying("list_followed_rooms", || async move {
                Ok(sqlx::query(
                    "SELECT seq, room_id, followed_at FROM room_follows
                     WHERE user_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?",
                )
                .bind(user.as_str())
                .bind(before.unwrap_or(i64::MAX))
                .bind(i64::from(limit.min(MAX_FOLLOW_PAGE)))
                .fetch_all(&self.pool)
                .await?)
            })
            .await?;
        rows.iter()
            .map(|row| {
                let room_id: String = col(row, "room_id")?;
                Ok(FollowedRoom {
                    room_id: RoomId::new(&room_id).map_err(Error::corrupt)?,
                    followed_at: Timestamp(col(row, "followed_at")?),
                    seq: col(row, "seq")?,
                })
            })
            .collect()
    }

    async fn is_following(&self, user: &UserId, room_id: &RoomId) -> Result<bool> {
        self.retrying("is_following_room", || async move {
            let row: Option<i64> = sqlx::query_scalar(
                "SELECT seq FROM room_follows WHERE user_id = ? AND room_id = ?",
            )
            .bind(user.as_str())
            .bind(room_id.as_str())
            .fetch_optional(&self.pool)
            .await?;
            Ok(row.is_some())
        })
        .await
    }

    async fn follower_count(&self, room_id: &RoomId) -> Result<u64> {
        self.retrying("room_follower_count", || async move {
            let count: i64 =
                sqlx::query_scalar("SELECT COUNT(*) FROM room_follows WHERE room_id = ?")
                    .bind(room_id.as_str())
                    .fetch_one(&self.pool)
                    .await?;
            Ok(u64::try_from(count).unwrap_or(0))
        })
        .await
    }
}
