//! [`Timers`]: durable timers, armed in commits (re-arming an id replaces it; see the
//! `room_commit` trigger), listed by due time and deleted only while their due time is still
//! the one that fired.

use async_trait::async_trait;
use room_app::ports::{Timer, Timers};
use room_domain::Timestamp;
use serde::Serialize;

use crate::codec::{col, db, id_col, json_col, to_json};
use crate::{Result, SqliteStore};

/// A timer as the `room_commit` view takes it.
#[derive(Serialize)]
pub(crate) struct TimerRow {
    timer_id: String,
    room_id: String,
    due_at: i64,
    command: String,
}

impl TimerRow {
    pub(crate) fn new(timer: &Timer) -> Result<Self> {
        Ok(TimerRow {
            timer_id: timer.timer_id.clone(),
            room_id: timer.room_id.to_string(),
            due_at: timer.due_at.as_millis(),
            command: to_json(&timer.command)?,
        })
    }
}

#[async_trait]
impl Timers for SqliteStore {
    async fn list_due(&self, now: Timestamp, limit: u32) -> Result<Vec<Timer>> {
        let rows = sqlx::query(
            "SELECT timer_id, room_id, due_at, command FROM room_timers
             WHERE due_at <= ?1 ORDER BY due_at, timer_id LIMIT ?2",
        )
        .bind(now.as_millis())
        .bind(i64::from(limit))
        .fetch_all(&self.readers)
        .await
        .map_err(db)?;
        rows.iter()
            .map(|row| {
                Ok(Timer {
                    timer_id: col(row, "timer_id")?,
                    room_id: id_col(row, "room_id")?,
                    due_at: Timestamp(col(row, "due_at")?),
                    command: json_col(row, "command")?,
                })
            })
            .collect()
    }

    async fn delete(&self, timer_id: &str, due_at: Timestamp) -> Result<()> {
        let timer_id = timer_id.to_owned();
        self.write_statement(move |conn| {
            Box::pin(async move {
                sqlx::query("DELETE FROM room_timers WHERE timer_id = ?1 AND due_at = ?2")
                    .bind(timer_id)
                    .bind(due_at.as_millis())
                    .execute(&mut *conn)
                    .await
                    .map_err(db)?;
                Ok(())
            })
        })
        .await
    }
}
