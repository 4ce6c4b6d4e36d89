//! [`RobotRooms`]: robot room configurations, one row per room, as JSON with the version the
//! updates are conditional on in a column; and the robots their pools hold, one row per robot
//! (`robot_pool_members`, keyed by the robot), written in the same transaction.

use async_trait::async_trait;
use room_app::Error;
use room_app::ports::{MAX_ROBOT_ROOM_PAGE, RobotRoomConfig, RobotRooms};
use room_domain::{RoomId, UserId};
use rusqlite::{Connection, OptionalExtension, params};

use crate::codec::{db, json_col, sql, to_i64, to_json};
use crate::{Result, SqliteStore};

/// Claims `robots` for `room_id` on the writer's connection: the first robot another room's
/// pool holds is [`Error::RobotTaken`] (the job's savepoint then undoes its other writes).
fn claim(conn: &Connection, room_id: &str, robots: &[String]) -> Result<()> {
    let mut insert = conn
        .prepare_cached(
            "INSERT INTO robot_pool_members (robot_id, room_id) VALUES (?1, ?2)
             ON CONFLICT (robot_id) DO NOTHING",
        )
        .map_err(sql)?;
    for robot in robots {
        if insert.execute(params![robot, room_id]).map_err(sql)? > 0 {
            continue;
        }
        let held: String = conn
            .prepare_cached("SELECT room_id FROM robot_pool_members WHERE robot_id = ?1")
            .and_then(|mut select| select.query_row([robot], |row| row.get(0)))
            .map_err(sql)?;
        return Err(Error::RobotTaken {
            robot: UserId::new(robot).map_err(Error::corrupt)?,
            room_id: RoomId::new(&held).map_err(Error::corrupt)?,
        });
    }
    Ok(())
}

#[async_trait]
impl RobotRooms for SqliteStore {
    async fn create(&self, config: &RobotRoomConfig) -> Result<()> {
        let body = to_json(config)?;
        let version = to_i64(config.version, "version")?;
        let room_id = config.room_id.to_string();
        let robots: Vec<String> = config.robots.iter().map(ToString::to_string).collect();
        let enabled = config.enabled;
        self.write(move |conn| {
            let created = conn
                .prepare_cached(
                    "INSERT INTO robot_rooms (room_id, version, enabled, body)
                     VALUES (?1, ?2, ?3, ?4) ON CONFLICT (room_id) DO NOTHING",
                )
                .and_then(|mut insert| insert.execute(params![room_id, version, enabled, body]))
                .map_err(sql)?;
            if created == 0 {
                return Err(Error::AlreadyExists(format!("robot room {room_id}")));
            }
            claim(conn, &room_id, &robots)
        })
        .await
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

    async fn list_by_robots(&self, robots: &[UserId]) -> Result<Vec<(UserId, RoomId)>> {
        let mut held = Vec::new();
        // One indexed lookup per robot; a pool holds at most `MAX_ROBOTS`.
        for robot in robots {
            let row = sqlx::query("SELECT room_id FROM robot_pool_members WHERE robot_id = ?1")
                .bind(robot.as_str())
                .fetch_optional(&self.readers)
                .await
                .map_err(db)?;
            if let Some(row) = row {
                let room_id: String = sqlx::Row::try_get(&row, "room_id").map_err(db)?;
                held.push((
                    robot.clone(),
                    RoomId::new(&room_id).map_err(Error::corrupt)?,
                ));
            }
        }
        Ok(held)
    }

    async fn update(&self, config: &RobotRoomConfig, expected_version: u64) -> Result<()> {
        let body = to_json(config)?;
        let version = to_i64(config.version, "version")?;
        let expected = to_i64(expected_version, "version")?;
        let room_id = config.room_id.to_string();
        let robots: Vec<String> = config.robots.iter().map(ToString::to_string).collect();
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
                conn.prepare_cached("DELETE FROM robot_pool_members WHERE room_id = ?1")
                    .and_then(|mut delete| delete.execute([&room_id]))
                    .map_err(sql)?;
                return claim(conn, &room_id, &robots);
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
        let room_id = room_id.to_string();
        self.write(move |conn| {
            conn.prepare_cached("DELETE FROM robot_pool_members WHERE room_id = ?1")
                .and_then(|mut delete| delete.execute([&room_id]))
                .map_err(sql)?;
            let deleted = conn
                .prepare_cached("DELETE FROM robot_rooms WHERE room_id = ?1")
                .and_then(|mut delete| delete.execute([&room_id]))
                .map_err(sql)?;
            Ok(deleted > 0)
        })
        .await
    }
}
