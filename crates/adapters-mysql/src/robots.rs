//! [`RobotRooms`]: robot room configurations, one row per room, as JSON with the version the
//! updates are conditional on in a column; and the robots their pools hold, one row per robot
//! (`robot_pool_members`, keyed by the robot), written in the same transaction.

use async_trait::async_trait;
use room_app::Error;
use room_app::ports::{MAX_ROBOT_ROOM_PAGE, RobotRoomConfig, RobotRooms};
use room_domain::{RoomId, UserId};

use crate::codec::{TxError, is_duplicate_key, json_col, to_i64, to_json};
use crate::{MySqlStore, Result};

/// Claims `robots` for `room_id` in `tx`, in one statement (in byte order, so that two claims
/// at once take their rows' locks in the same order): the unique key on the robot refuses a
/// robot another room's pool holds, answered as [`Error::RobotTaken`] for the first such
/// robot of `robots` (the caller then rolls back).
async fn claim(
    tx: &mut sqlx::MySqlConnection,
    room_id: &str,
    robots: &[UserId],
) -> Result<(), TxError> {
    if robots.is_empty() {
        return Ok(());
    }
    let mut sorted: Vec<&str> = robots.iter().map(UserId::as_str).collect();
    sorted.sort_unstable();
    let mut insert = sqlx::QueryBuilder::new("INSERT INTO robot_pool_members (robot_id, room_id) ");
    insert.push_values(&sorted, |mut row, robot| {
        row.push_bind(*robot).push_bind(room_id);
    });
    match insert.build().execute(&mut *tx).await {
        Ok(_) => Ok(()),
        Err(error) if is_duplicate_key(&error) => {
            // The duplicate's row is locked by the failed insert: it is there to be read.
            let mut select = sqlx::QueryBuilder::new(
                "SELECT robot_id, room_id FROM robot_pool_members WHERE room_id <> ",
            );
            select.push_bind(room_id).push(" AND robot_id IN (");
            let mut list = select.separated(", ");
            for robot in &sorted {
                list.push_bind(*robot);
            }
            select.push(") FOR UPDATE");
            let held: Vec<(String, String)> = select.build_query_as().fetch_all(&mut *tx).await?;
            let taken = robots.iter().find_map(|robot| {
                held.iter()
                    .find(|(r, _)| r == robot.as_str())
                    .map(|(_, room)| (robot.clone(), room.clone()))
            });
            match taken {
                Some((robot, room)) => Err(TxError::Port(Error::RobotTaken {
                    robot,
                    room_id: RoomId::new(&room).map_err(Error::corrupt)?,
                })),
                // Only this room's own rows can clash with themselves: a pool named twice.
                None => Err(TxError::Port(Error::Invalid(format!(
                    "robot room {room_id} names a robot twice"
                )))),
            }
        }
        Err(error) => Err(error.into()),
    }
}

#[async_trait]
impl RobotRooms for MySqlStore {
    async fn create(&self, config: &RobotRoomConfig) -> Result<()> {
        let body = to_json(config)?;
        let version = to_i64(config.version, "version")?;
        let (body, room_id) = (body.as_str(), config.room_id.as_str());
        self.retrying("create_robot_room", || async move {
            let mut tx = self.pool.begin().await?;
            let inserted = sqlx::query(
                "INSERT INTO robot_rooms (room_id, version, enabled, body) VALUES (?, ?, ?, ?)",
            )
            .bind(room_id)
            .bind(version)
            .bind(config.enabled)
            .bind(body)
            .execute(&mut *tx)
            .await;
            match inserted {
                Ok(_) => {}
                Err(error) if is_duplicate_key(&error) => {
                    return Err(TxError::Port(Error::AlreadyExists(format!(
                        "robot room {room_id}"
                    ))));
                }
                Err(error) => return Err(error.into()),
            }
            claim(&mut tx, room_id, &config.robots).await?;
            tx.commit().await?;
            Ok(())
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

    async fn list_by_robots(&self, robots: &[UserId]) -> Result<Vec<(UserId, RoomId)>> {
        if robots.is_empty() {
            return Ok(Vec::new());
        }
        let rows: Vec<(String, String)> = self
            .retrying("list_robot_pool_members", || async move {
                let mut select = sqlx::QueryBuilder::new(
                    "SELECT robot_id, room_id FROM robot_pool_members WHERE robot_id IN (",
                );
                let mut list = select.separated(", ");
                for robot in robots {
                    list.push_bind(robot.as_str());
                }
                select.push(")");
                Ok(select.build_query_as().fetch_all(&self.pool).await?)
            })
            .await?;
        robots
            .iter()
            .filter_map(|robot| {
                rows.iter()
                    .find(|(r, _)| r == robot.as_str())
                    .map(|(_, room)| {
                        Ok((robot.clone(), RoomId::new(room).map_err(Error::corrupt)?))
                    })
            })
            .collect()
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
            sqlx::query("DELETE FROM robot_pool_members WHERE room_id = ?")
                .bind(room_id)
                .execute(&mut *tx)
                .await?;
            claim(&mut tx, room_id, &config.robots).await?;
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    async fn delete(&self, room_id: &RoomId) -> Result<bool> {
        self.retrying("delete_robot_room", || async move {
            let mut tx = self.pool.begin().await?;
            sqlx::query("DELETE FROM robot_pool_members WHERE room_id = ?")
                .bind(room_id.as_str())
                .execute(&mut *tx)
                .await?;
            let deleted = sqlx::query("DELETE FROM robot_rooms WHERE room_id = ?")
                .bind(room_id.as_str())
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(deleted.rows_affected() > 0)
        })
        .await
    }
}
