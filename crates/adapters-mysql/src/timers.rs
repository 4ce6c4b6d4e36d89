//! [`Timers`]: durable timers, armed in commits (re-arming an id replaces it), listed by due
//! time and deleted only while their due time is still the one that fired.

use async_trait::async_trait;
use room_app::ports::{Timer, TimerCursor, Timers};
use room_domain::Timestamp;
use sqlx::MySqlConnection;

use crate::codec::{TxError, col, id_col, json_col, to_json};
use crate::{MySqlStore, Result};

/// A timer encoded for its table.
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

    /// Arms the timer, replacing one with the same id. Runs inside a commit.
    pub(crate) async fn arm(&self, conn: &mut MySqlConnection) -> Result<(), TxError> {
        sqlx::query(
            "INSERT INTO room_timers (timer_id, room_id, due_at, command) VALUES (?, ?, ?, ?)
             ON DUPLICATE KEY UPDATE room_id = ?, due_at = ?, command = ?",
        )
        .bind(&self.timer_id)
        .bind(&self.room_id)
        .bind(self.due_at)
        .bind(&self.command)
        .bind(&self.room_id)
        .bind(self.due_at)
        .bind(&self.command)
        .execute(&mut *conn)
        .await?;
        Ok(())
    }
}

#[async_trait]
impl Timers for MySqlStore {
    async fn list_due(
        &self,
        now: Timestamp,
        after: Option<TimerCursor>,
        limit: u32,
    ) -> Result<Vec<Timer>> {
        // Without a cursor, one before every timer: no timer id is smaller than "".
        let (after_due, after_id) = after.unwrap_or((Timestamp(i64::MIN), String::new()));
        let (after_due, after_id) = (after_due.as_millis(), &after_id);
        let rows = self
            .retrying("list_timers", || async move {
                Ok(sqlx::query(
                    "SELECT timer_id, room_id, due_at, command FROM room_timers
                     WHERE due_at <= ? AND (due_at > ? OR (due_at = ? AND timer_id > ?))
                     ORDER BY due_at, timer_id LIMIT ?",
                )
                .bind(now.as_millis())
                .bind(after_due)
                .bind(after_due)
                .bind(after_id)
                .bind(i64::from(limit))
                .fetch_all(&self.pool)
                .await?)
            })
            .await?;
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
        self.retrying("delete_timer", || async move {
            sqlx::query("DELETE FROM room_timers WHERE timer_id = ? AND due_at = ?")
                .bind(timer_id)
                .bind(due_at.as_millis())
                .execute(&self.pool)
                .await?;
            Ok(())
        })
        .await
    }
}
