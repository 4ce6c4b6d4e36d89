//! [`RobotRooms`]: robot room configurations, one row per room, as JSON with the version the
//! updates are conditional on in a column.

use async_trait::async_trait;
use room_app::Error;
use room_app::ports::{MAX_ROBOT_ROOM_PAGE, RobotRoomConfig, RobotRooms};
use room_domain::RoomId;

use crate::codec::{TxError, is_duplicate_key, json_col, to_i64, to_json};
use crate::{MySqlStore, Result};

#[async_trait]
impl RobotRooms for MySqlStore {
    async fn create(&self, config: &RobotRoomConfig) -> Result<()> {
        let body = to_json(config)?;
        let version = to_i64(config.version, "version")?;
        let (body, room_id) = (body.as_str(), config.room_id.as_str());
        self.retrying("create_robot_room", || async move {
            let inserted = sqlx::query(
                "INSERT INTO robot_rooms (room_id, version, enabled, body) VALUES (?, ?, ?, ?)",
            )
            .bind(room_id)
            .bind(version)
            .bind(config.enabled)
            .bind(body)
            .execute(&self.pool)
            .await;
            match inserted {
                Ok(_) => Ok(()),
                Err(error) if is_duplicate_key(&error) => Err(TxError::Port(Error::AlreadyExists(
                    format!("robot room {room_id}"),
                ))),
                Err(error) => Err(error.into()),
            }
        })
        .await
    }

    async fn get(&self, room_id: &RoomId) -> Result<Option<RobotRoomConfig>> {
        let row = self
            .retrying("get_robot_room", || async move {
                Ok(
                    sqlx::query("SELECT body FROM robot_rooms WHERE room_id = ?")
                        .bind(room_id.as_str())
                        .fetch_optional(&self.pool)
                        .await?,
                )
            })
            .await?;
        row.map(|row| json_col(&row, "body")).transpose()
    }

    async fn list(&self, after: Option<RoomId>, limit: u32) -> Result<Vec<RobotRoomConfig>> {
        // Room ids are never empty: without a cursor, start after "".
        let after = after.map(|id| id.to_string()).unwrap_or_default();
        let after = after.as_str();
        let limit = i64::from(limit.min(MAX_ROBOT_ROOM_PAGE));
        let rows = self
            .retrying("list_robot_rooms", || async move {
                Ok(sqlx::query(
                    "SELECT body FROM robot_rooms WHERE room_id > ? ORDER BY room_id LIMIT ?",
                )
                .bind(after)
                .bind(limit)
                .fetch_all(&self.pool)
                .await?)
            })
            .await?;
        rows.iter().map(|row| json_col(row, "body")).collect()
    }

    async fn update(&self, config: &RobotRoomConfig, expected_version: u64) -> Result<()> {
        let body = to_json(config)?;
        let version = to_i64(config.version, "version")?;
        let expected = to_i64(expected_version, "version")?;
        let (body, room_id) = (body.as_str(), config.room_id.as_str());
        self.retrying("update_robot_room", || async move {
            let mut tx = self.pool.begin().await?;
            let stored: Option<i64> =
                sqlx::query_scalar("SELECT version FROM robot_rooms WHERE room_id = ? FOR UPDATE")
                    .bind(room_id)
                    .fetch_optional(&mut *tx)
                    .await?;
            match stored {
                None => {
                    return Err(TxError::Port(Error::NotFound(format!(
                        "robot room {room_id}"
                    ))));
                }
                Some(stored) if stored != expected => {
                    return Err(TxError::Port(Error::Conflict(format!(
                        "robot room {room_id} is at version {stored}, not {expected}"
                    ))));
                }
                Some(_) => {}
            }
            sqlx::query(
                "UPDATE robot_rooms SET version = ?, enabled = ?, body = ? WHERE room_id = ?",
            )
            .bind(version)
            .bind(config.enabled)
            .bind(body)
            .bind(room_id)
            .execute(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    async fn delete(&self, room_id: &RoomId) -> Result<bool> {
        self.retrying("delete_robot_room", || async move {
            let deleted = sqlx::query("DELETE FROM robot_rooms WHERE room_id = ?")
                .bind(room_id.as_str())
                .execute(&self.pool)
                .await?;
            Ok(deleted.rows_affected() > 0)
        })
        .await
    }
}
