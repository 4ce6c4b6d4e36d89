//! [`RoomFollows`]: one row per (user, room), written by the one writer, which counts the
//! user's follows and inserts the new one in the same transaction, so that the maximum holds
//! however follows race.

use async_trait::async_trait;
use room_app::Error;
use room_app::ports::{FollowOutcome, FollowedRoom, MAX_FOLLOW_PAGE, RoomFollows};
use room_domain::{RoomId, Timestamp, UserId};
use rusqlite::{OptionalExtension, params};

use crate::codec::{col, db, sql};
use crate::{Result, SqliteStore};

#[async_trait]
impl RoomFollows for SqliteStore {
    async fn follow(
        &self,
        user: &UserId,
        room_id: &RoomId,
        at: Timestamp,
        max_follows: u32,
    ) -> Result<FollowOutcome> {
        let (user, room_id) = (user.to_string(), room_id.to_string());
        self.write(move |conn| {
            let followed: Option<i64> = conn
                .prepare_cached("SELECT seq FROM room_follows WHERE user_id = ?1 AND room_id = ?2")
                .and_then(|mut select| {
                    select
                        .query_row(params![user, room_id], |row| row.get(0))
                        .optional()
                })
                .map_err(sql)?;
            if followed.is_some() {
                return Ok(FollowOutcome::AlreadyFollowing);
            }
            let count: i64 = conn
                .prepare_cached("SELECT COUNT(*) FROM room_follows WHERE user_id = ?1")
                .and_then(|mut select| select.query_row([&user], |row| row.get(0)))
                .map_err(sql)?;
            if count >= i64::from(max_follows) {
                return Ok(FollowOutcome::LimitReached);
            }
            conn.prepare_cached(
                "INSERT INTO room_follows (user_id, room_id, followed_at) VALUES (?1, ?2, ?3)",
            )
            .and_then(|mut insert| insert.execute(params![user, room_id, at.0]))
            .map_err(sql)?;
            Ok(FollowOutcome::Followed)
        })
        .await
    }

    async fn unfollow(&self, user: &UserId, room_id: &RoomId) -> Result<bool> {
        let deleted = self
            .execute(
                "DELETE FROM room_follows WHERE user_id = ?1 AND room_id = ?2",
                (user.to_string(), room_id.to_string()),
            )
            .await?;
        Ok(deleted > 0)
    }

    async fn list_followed(
        &self,
        user: &UserId,
        before: Option<i64>,
        limit: u32,
    ) -> Result<Vec<FollowedRoom>> {
        let rows = sqlx::query(
            "SELECT seq, room_id, followed_at FROM room_follows
             WHERE user_id = ?1 AND seq < ?2 ORDER BY seq DESC LIMIT ?3",
        )
        .bind(user.as_str())
        .bind(before.unwrap_or(i64::MAX))
        .bind(i64::from(limit.min(MAX_FOLLOW_PAGE)))
        .fetch_all(&self.readers)
        .await
        .map_err(db)?;
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
        let row: Option<(i64,)> =
            sqlx::query_as("SELECT 1 FROM room_follows WHERE user_id = ?1 AND room_id = ?2")
                .bind(user.as_str())
                .bind(room_id.as_str())
                .fetch_optional(&self.readers)
                .await
                .map_err(db)?;
        Ok(row.is_some())
    }

    async fn follower_count(&self, room_id: &RoomId) -> Result<u64> {
        let (count,): (i64,) =
            sqlx::query_as("SELECT COUNT(*) FROM room_follows WHERE room_id = ?1")
                .bind(room_id.as_str())
                .fetch_one(&self.readers)
                .await
                .map_err(db)?;
        Ok(u64::try_from(count).unwrap_or(0))
    }
}
