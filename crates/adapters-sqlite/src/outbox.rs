//! [`Outbox`]: durable facts written by commits, read in id (commit) order by the publisher,
//! marked delivered, and deleted by the retention job in bounded batches.

use async_trait::async_trait;
use room_app::ports::{DeadLetter, Outbox, OutboxMessage};
use room_domain::{RoomId, Timestamp};
use rusqlite::params;

use room_app::stored;
use sqlx::sqlite::SqliteRow;

use crate::cells::ENVELOPE_COLUMNS;
use crate::codec::{col, db, sql, to_json};
use crate::{Result, SqliteStore};

#[async_trait]
impl Outbox for SqliteStore {
    async fn list_pending(
        &self,
        after: i64,
        skip: &[RoomId],
        limit: u32,
    ) -> Result<Vec<OutboxMessage>> {
        // Any number of rooms to skip in one statement: they travel as one JSON array.
        let skip = to_json(&skip.iter().map(RoomId::as_str).collect::<Vec<_>>())?;
        let rows = sqlx::query(
            "SELECT id, room_id, seq, envelope FROM room_outbox
             WHERE delivered_at IS NULL AND id > ?1
               AND room_id NOT IN (SELECT value FROM json_each(?2))
             ORDER BY id LIMIT ?3",
        )
        .bind(after)
        .bind(skip)
        .bind(i64::from(limit))
        .fetch_all(&self.readers)
        .await
        .map_err(db)?;
        rows.iter().map(message).collect()
    }

    async fn mark_delivered(&self, ids: &[i64], at: Timestamp) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        // One statement for any number of ids: they travel as one JSON array.
        let ids = to_json(ids)?;
        self.execute(
            "UPDATE room_outbox SET delivered_at = ?1
             WHERE delivered_at IS NULL AND id IN (SELECT value FROM json_each(?2))",
            (at.as_millis(), ids),
        )
        .await?;
        Ok(())
    }

    async fn delete_delivered_before(&self, before: Timestamp, limit: u32) -> Result<u64> {
        let deleted = self
            .execute(
                "DELETE FROM room_outbox WHERE id IN (
                     SELECT id FROM room_outbox
                     WHERE delivered_at IS NOT NULL AND delivered_at < ?1
                     ORDER BY delivered_at LIMIT ?2)",
                (before.as_millis(), i64::from(limit)),
            )
            .await?;
        Ok(deleted as u64)
    }

    async fn list_after(&self, after: i64, limit: u32) -> Result<Vec<OutboxMessage>> {
        // One writer commits in id order: a reader's snapshot never lacks a row below one it
        // sees.
        let rows = sqlx::query(
            "SELECT id, room_id, seq, envelope FROM room_outbox WHERE id > ?1 ORDER BY id LIMIT ?2",
        )
        .bind(after)
        .bind(i64::from(limit))
        .fetch_all(&self.readers)
        .await
        .map_err(db)?;
        rows.iter().map(message).collect()
    }

    async fn mark_passed(&self, through: i64, at: Timestamp, limit: u32) -> Result<u64> {
        let marked = self
            .execute(
                "UPDATE room_outbox SET delivered_at = ?1 WHERE id IN (
                     SELECT id FROM room_outbox
                     WHERE delivered_at IS NULL AND id <= ?2
                     ORDER BY id LIMIT ?3)",
                (at.as_millis(), through, i64::from(limit)),
            )
            .await?;
        Ok(marked as u64)
    }

    async fn dead_letter(&self, id: i64, reason: &str, at: Timestamp) -> Result<bool> {
        let reason = reason.to_owned();
        self.write(move |conn| {
            let moved = conn
                .prepare_cached(
                    "INSERT INTO room_outbox_dead (id, room_id, seq, envelope, reason, dead_at)
                     SELECT id, room_id, seq, envelope, ?2, ?3 FROM room_outbox
                     WHERE id = ?1 AND delivered_at IS NULL",
                )
                .and_then(|mut insert| insert.execute(params![id, reason, at.as_millis()]))
                .map_err(sql)?;
            if moved == 0 {
                return Ok(false);
            }
            conn.prepare_cached("DELETE FROM room_outbox WHERE id = ?1")
                .and_then(|mut delete| delete.execute(params![id]))
                .map_err(sql)?;
            Ok(true)
        })
        .await
    }

    async fn list_dead_letters(&self, after: i64, limit: u32) -> Result<Vec<DeadLetter>> {
        let rows = sqlx::query(
            "SELECT id, room_id, seq, envelope, reason, dead_at FROM room_outbox_dead WHERE id > ?1
             ORDER BY id LIMIT ?2",
        )
        .bind(after)
        .bind(i64::from(limit))
        .fetch_all(&self.readers)
        .await
        .map_err(db)?;
        rows.iter()
            .map(|row| {
                let OutboxMessage { id, envelope } = message(row)?;
                Ok(DeadLetter {
                    id,
                    envelope,
                    reason: col(row, "reason")?,
                    dead_at: Timestamp(col(row, "dead_at")?),
                })
            })
            .collect()
    }

    async fn replay_dead_letter(&self, id: i64) -> Result<bool> {
        self.write(move |conn| {
            let moved = conn
                .prepare_cached(
                    "INSERT INTO room_outbox (id, room_id, seq, envelope, delivered_at)
                     SELECT id, room_id, seq, envelope, NULL FROM room_outbox_dead WHERE id = ?1",
                )
                .and_then(|mut insert| insert.execute(params![id]))
                .map_err(sql)?;
            if moved == 0 {
                return Ok(false);
            }
            conn.prepare_cached("DELETE FROM room_outbox_dead WHERE id = ?1")
                .and_then(|mut delete| delete.execute(params![id]))
                .map_err(sql)?;
            Ok(true)
        })
        .await
    }
}

/// An outbox row as a message: its envelope with the room, seq and event id of its columns.
fn message(row: &SqliteRow) -> Result<OutboxMessage> {
    let room_id: String = col(row, "room_id")?;
    let seq: i64 = col(row, "seq")?;
    let envelope: &[u8] = col(row, "envelope")?;
    debug_assert_eq!(ENVELOPE_COLUMNS, ["event_id", "room_id", "seq"]);
    Ok(OutboxMessage {
        id: col(row, "id")?,
        envelope: stored::decode_with(
            envelope,
            "envelope",
            [
                ("event_id", format!("{room_id}:{seq}").into()),
                ("room_id", room_id.into()),
                ("seq", seq.into()),
            ],
        )?,
    })
}
