//! [`Timers`]: durable timers, armed in commits (re-arming an id replaces it), listed by due
//! time and deleted only while their due time is still the one that fired.

use async_trait::async_trait;
use room_app::ports::{Timer, TimerCursor, Timers};
use room_domain::Timestamp;
use rusqlite::{Connection, params};

use crate::codec::{col, db, id_col, json_col, sql, to_json};
use crate::{Result, SqliteStore};

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
}

impl TimerRow {
    /// Arms the timer, replacing one with the same id. Runs inside a commit.
    pub(crate) fn arm(&self, conn: &Connection) -> Result<()> {
        conn.prepare_cached(
            "INSERT INTO room_timers (timer_id, room_id, due_at, command) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (timer_id) DO UPDATE
             SET room_id = excluded.room_id, due_at = excluded.due_at, command = excluded.command",
        )
        .and_then(|mut upsert| {
            upsert.execute(params![
                self.timer_id,
                self.room_id,
                self.due_at,
                self.command
            ])
        })
        .map_err(sql)?;
        Ok(())
    }
}

#[async_trait]
impl Timers for SqliteStore {
    async fn list_due(
        &self,
        now: Timestamp,
        after: Option<TimerCursor>,
        limit: u32,
    ) -> Result<Vec<Timer>> {
        // Without a cursor, one before every timer: no timer id is smaller than "".
        let (after_due, after_id) = after.unwrap_or((Timestamp(i64::MIN), String::new()));
        let rows = sqlx::query(
            "SELECT timer_id, room_id, due_at, command FROM room_timers
             WHERE due_at <= ?1 AND (due_at > ?2 OR (due_at = ?2 AND timer_id > ?3))
             ORDER BY due_at, timer_id LIMIT ?4",
        )
        .bind(now.as_millis())
        .bind(after_due.as_millis())
        .bind(after_id)
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
        self.execute(
            "DELETE FROM room_timers WHERE timer_id = ?1 AND due_at = ?2",
            (timer_id.to_owned(), due_at.as_millis()),
        )
        .await?;
        Ok(())
    }
}
