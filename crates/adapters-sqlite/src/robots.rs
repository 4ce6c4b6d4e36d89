//! [`RobotRooms`]: robot room configurations, one row per room, as JSON with the version the
//! updates are conditional on in a column.

use async_trait::async_trait;
use room_app::Error;
use room_app::ports::{MAX_ROBOT_ROOM_PAGE, RobotRoomConfig, RobotRooms};
use room_domain::RoomId;
use rusqlite::{OptionalExtension, params};

use crate::codec::{db, json_col, sql, to_i64, to_json};
use crate::{Result, SqliteStore};

#[async_trait]
impl RobotRooms for SqliteStore {
    async fn create(&self, config: &RobotRoomConfig) -> Result<()> {
        let body = to_json(config)?;
        let version = to_i64(config.version, "version")?;
        let room_id = config.room_id.to_string();
        let created = self
            .execute(
                "INSERT INTO robot_rooms (room_id, version, enabled, body) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (room_id) DO NOTHING",
                (room_id, version, config.enabled, body),
            )
            .await?;
        if created == 0 {
            return Err(Error::AlreadyExists(format!(
                "robot room {}",
                config.room_id
            )));
        }
        Ok(())
    }

    async fn get(&self, room_id: &RoomId) -> Result<Option<RobotRoomConfig>> {
        let row = sqlx::query("SELECT body FROM robot_rooms WHERE room_id = ?1")
            .bind(room_id.as_str())
            .fetch_optional(&self.readers)
            .await
            .map_err(db)?;
        row.map(|row| json_col(&row, "body")).transpose()
    }

    async fn list(&self, after: Option<RoomId>, limit: u32) -> Result<Vec<RobotRoomConfig>> {
        // Room ids are never empty: without a cursor, start after "".
        let after = after.map(|id| id.to_string()).unwrap_or_default();
        let rows = sqlx::query(
            "SELECT body FROM robot_rooms WHERE room_id > ?1 ORDER BY room_id LIMIT ?2",
        )
        .bind(after)
        .bind(i64::from(limit.min(MAX_ROBOT_ROOM_PAGE)))
        .fetch_all(&self.readers)
        .await
        .map_err(db)?;
        rows.iter().map(|row| json_col(row, "body")).collect()
    }

    async fn update(&self, config: &RobotRoomConfig, expected_version: u64) -> Result<()> {
        let body = to_json(config)?;
        let version = to_i64(config.version, "version")?;
        let expected = to_i64(expected_version, "version")?;
        let room_id = config.room_id.to_string();
        let enabled = config.enabled;
        self.write(move |conn| {
            let updated = conn
                .prepare_cached(
                    "UPDATE robot_rooms SET version = ?2, enabled = ?3, body = ?4
                     WHERE room_id = ?1 AND version = ?5",
                )
                .and_then(|mut update| {
                    update.execute(params![room_id, version, enabled, body, expected])
                })
                .map_err(sql)?;
            if updated > 0 {
                return Ok(());
            }
            let stored: Option<i64> = conn
                .prepare_cached("SELECT version FROM robot_rooms WHERE room_id = ?1")
                .and_then(|mut select| select.query_row([&room_id], |row| row.get(0)).optional())
                .map_err(sql)?;
            Err(match stored {
                None => Error::NotFound(format!("robot room {room_id}")),
                Some(stored) => Error::Conflict(format!(
                    "robot room {room_id} is at version {stored}, not {expected}"
                )),
            })
        })
        .await
    }

    async fn delete(&self, room_id: &RoomId) -> Result<bool> {
        let deleted = self
            .execute(
                "DELETE FROM robot_rooms WHERE room_id = ?1",
                (room_id.to_string(),),
            )
            .await?;
        Ok(deleted > 0)
    }
}
