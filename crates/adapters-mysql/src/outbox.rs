//! [`Outbox`]: durable facts written by commits, read in id order by the publisher, marked
//! delivered, and deleted by the retention job in bounded batches.

use async_trait::async_trait;
use room_app::ports::{DeadLetter, Outbox, OutboxMessage};
use room_domain::{RoomId, Timestamp};
use sqlx::{MySql, QueryBuilder};

use room_app::stored;
use sqlx::mysql::MySqlRow;

use crate::cells::ENVELOPE_COLUMNS;
use crate::codec::col;
use crate::{MySqlStore, Result};

/// The most ids one `UPDATE ... IN (...)` carries.
const IDS_PER_UPDATE: usize = 1_000;

#[async_trait]
impl Outbox for MySqlStore {
    async fn list_pending(
        &self,
        after: i64,
        skip: &[RoomId],
        limit: u32,
    ) -> Result<Vec<OutboxMessage>> {
        let rows = self
            .retrying("list_outbox", || async move {
                let mut select = QueryBuilder::<MySql>::new(
                    "SELECT id, room_id, seq, envelope FROM room_outbox WHERE delivered_at IS NULL AND id > ",
                );
                select.push_bind(after);
                if !skip.is_empty() {
                    select.push(" AND room_id NOT IN (");
                    let mut list = select.separated(", ");
                    for room in skip {
                        list.push_bind(room.as_str());
                    }
                    list.push_unseparated(")");
                }
                select
                    .push(" ORDER BY id LIMIT ")
                    .push_bind(i64::from(limit));
                Ok(select.build().fetch_all(&self.pool).await?)
            })
            .await?;
        rows.iter().map(message).collect()
    }

    async fn mark_delivered(&self, ids: &[i64], at: Timestamp) -> Result<()> {
        for chunk in ids.chunks(IDS_PER_UPDATE) {
            self.retrying("mark_outbox_delivered", || async move {
                let mut update =
                    QueryBuilder::<MySql>::new("UPDATE room_outbox SET delivered_at = ");
                update
                    .push_bind(at.as_millis())
                    .push(" WHERE delivered_at IS NULL AND id IN (");
                let mut list = update.separated(", ");
                for id in chunk {
                    list.push_bind(*id);
                }
                list.push_unseparated(")");
                update.build().execute(&self.pool).await?;
                Ok(())
            })
            .await?;
        }
        Ok(())
    }

    async fn delete_delivered_before(&self, before: Timestamp, limit: u32) -> Result<u64> {
        self.retrying("delete_delivered_outbox", || async move {
            let deleted = sqlx::query(
                "DELETE FROM room_outbox
                 WHERE delivered_at IS NOT NULL AND delivered_at < ?
                 ORDER BY delivered_at LIMIT ?",
            )
            .bind(before.as_millis())
            .bind(i64::from(limit))
            .execute(&self.pool)
            .await?;
            Ok(deleted.rows_affected())
        })
        .await
    }

    async fn list_after(&self, after: i64, limit: u32) -> Result<Vec<OutboxMessage>> {
        let rows = self
            .retrying("list_outbox_after", || async move {
                // A locking read: it waits for the transactions that inserted rows in the
                // range it scans to end, so that a row committed after a higher one (ids are
                // allotted at insert, transactions commit in any order) is not skipped. Under
                // READ COMMITTED it takes no gap locks and blocks no insert.
                Ok(sqlx::query(
                    "SELECT id, room_id, seq, envelope FROM room_outbox WHERE id > ?
                     ORDER BY id LIMIT ? LOCK IN SHARE MODE",
                )
                .bind(after)
                .bind(i64::from(limit))
                .fetch_all(&self.background)
                .await?)
            })
            .await?;
        rows.iter().map(message).collect()
    }

    async fn mark_passed(&self, through: i64, at: Timestamp, limit: u32) -> Result<u64> {
        self.retrying("mark_outbox_passed", || async move {
            let marked = sqlx::query(
                "UPDATE room_outbox SET delivered_at = ?
                 WHERE delivered_at IS NULL AND id <= ? ORDER BY id LIMIT ?",
            )
            .bind(at.as_millis())
            .bind(through)
            .bind(i64::from(limit))
            .execute(&self.background)
            .await?;
            Ok(marked.rows_affected())
        })
        .await
    }

    async fn dead_letter(&self, id: i64, reason: &str, at: Timestamp) -> Result<bool> {
        self.retrying("dead_letter_outbox", || async move {
            let mut tx = self.pool.begin().await?;
            let moved = sqlx::query(
                "INSERT INTO room_outbox_dead (id, room_id, seq, envelope, reason, dead_at)
                 SELECT id, room_id, seq, envelope, ?, ? FROM room_outbox
                 WHERE id = ? AND delivered_at IS NULL",
            )
            .bind(reason)
            .bind(at.as_millis())
            .bind(id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if moved == 0 {
                return Ok(false);
            }
            sqlx::query("DELETE FROM room_outbox WHERE id = ?")
                .bind(id)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(true)
        })
        .await
    }

    async fn list_dead_letters(&self, after: i64, limit: u32) -> Result<Vec<DeadLetter>> {
        let rows = self
            .retrying("list_outbox_dead", || async move {
                Ok(sqlx::query(
                    "SELECT id, room_id, seq, envelope, reason, dead_at FROM room_outbox_dead WHERE id > ?
                     ORDER BY id LIMIT ?",
                )
                .bind(after)
                .bind(i64::from(limit))
                .fetch_all(&self.pool)
                .await?)
            })
            .await?;
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
        self.retrying("replay_outbox_dead", || async move {
            let mut tx = self.pool.begin().await?;
            let moved = sqlx::query(
                "INSERT INTO room_outbox (id, room_id, seq, envelope, delivered_at)
                 SELECT id, room_id, seq, envelope, NULL FROM room_outbox_dead WHERE id = ?",
            )
            .bind(id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if moved == 0 {
                return Ok(false);
            }
            sqlx::query("DELETE FROM room_outbox_dead WHERE id = ?")
                .bind(id)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(true)
        })
        .await
    }
}

/// An outbox row as a message: its envelope with the room, seq and event id of its columns.
fn message(row: &MySqlRow) -> Result<OutboxMessage> {
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
