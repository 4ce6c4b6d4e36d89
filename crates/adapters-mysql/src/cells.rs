//! [`CellStore`] and [`SnapshotStore`]: the room log, the epoch fence, the group commit that
//! writes everything of a batch in one transaction (or nothing), and snapshots.

use async_trait::async_trait;
use room_app::Error;
use room_app::ports::{
    Activation, CellStore, CommandRecord, CommitBatch, SnapshotStore, StoredEvent,
};
use room_domain::{CommandId, RoomId, Snapshot, Timestamp};
use sqlx::{MySql, MySqlConnection, QueryBuilder};

use crate::codec::{TxError, col, id_col, json_col, stored_u64, to_i64, to_json, u64_col};
use crate::directory::SummaryRow;
use crate::orders::OrderRow;
use crate::payouts::PayoutRow;
use crate::timers::TimerRow;
use crate::{MySqlStore, Result};

/// The most rows one multi-row `INSERT` carries, far below the protocol's 65,535
/// placeholders per statement.
const ROWS_PER_INSERT: usize = 500;

struct CommandRow {
    command_id: String,
    command: String,
    actor: String,
    applied_at: i64,
    first_seq: i64,
    last_seq: i64,
}

struct EventRow {
    seq: i64,
    occurred_at: i64,
    event: String,
}

struct OutboxRow {
    room_id: String,
    seq: i64,
    envelope: String,
}

/// A [`CommitBatch`] encoded for SQL once, before the first attempt of its transaction.
struct PreparedCommit {
    room_id: String,
    epoch: i64,
    expected_version: i64,
    new_version: i64,
    /// A command id that appears twice in the batch.
    repeated_command: Option<String>,
    /// Why the events' seqs do not follow `expected_version` without gaps.
    seq_problem: Option<String>,
    commands: Vec<CommandRow>,
    events: Vec<EventRow>,
    outbox: Vec<OutboxRow>,
    orders: Vec<OrderRow>,
    timers: Vec<TimerRow>,
    payouts: Vec<PayoutRow>,
    summary: Option<SummaryRow>,
}

impl PreparedCommit {
    fn new(batch: &CommitBatch) -> Result<Self> {
        Ok(PreparedCommit {
            room_id: batch.room_id.to_string(),
            epoch: to_i64(batch.epoch, "epoch")?,
            expected_version: to_i64(batch.expected_version, "version")?,
            new_version: to_i64(batch.new_version(), "version")?,
            repeated_command: batch.repeated_command().map(ToString::to_string),
            seq_problem: batch.seq_problem(),
            commands: batch
                .commands
                .iter()
                .map(|c| {
                    Ok(CommandRow {
                        command_id: c.command_id.to_string(),
                        command: to_json(&c.command)?,
                        actor: to_json(&c.actor)?,
                        applied_at: c.applied_at.as_millis(),
                        first_seq: to_i64(c.first_seq, "seq")?,
                        last_seq: to_i64(c.last_seq, "seq")?,
                    })
                })
                .collect::<Result<_>>()?,
            events: batch
                .events
                .iter()
                .map(|e| {
                    Ok(EventRow {
                        seq: to_i64(e.seq, "seq")?,
                        occurred_at: e.occurred_at.as_millis(),
                        event: to_json(&e.event)?,
                    })
                })
                .collect::<Result<_>>()?,
            outbox: batch
                .outbox
                .iter()
                .map(|envelope| {
                    Ok(OutboxRow {
                        room_id: envelope.room_id.to_string(),
                        seq: to_i64(envelope.seq, "seq")?,
                        envelope: to_json(envelope)?,
                    })
                })
                .collect::<Result<_>>()?,
            orders: batch
                .orders
                .iter()
                .map(OrderRow::new)
                .collect::<Result<_>>()?,
            timers: batch
                .timers
                .iter()
                .map(TimerRow::new)
                .collect::<Result<_>>()?,
            payouts: batch.payouts.iter().map(PayoutRow::new).collect(),
            summary: batch.summary.as_ref().map(SummaryRow::new).transpose()?,
        })
    }
}

async fn activate_once(
    store: &MySqlStore,
    room_id: &str,
    node: &str,
) -> Result<Activation, TxError> {
    let mut tx = store.pool.begin().await?;
    sqlx::query(
        "INSERT INTO room_cells (room_id, epoch, version, owner_node) VALUES (?, 1, 0, ?)
         ON DUPLICATE KEY UPDATE epoch = epoch + 1, owner_node = ?",
    )
    .bind(room_id)
    .bind(node)
    .bind(node)
    .execute(&mut *tx)
    .await?;
    // The row is locked by the upsert until the commit: this reads what it wrote.
    let (epoch, version): (i64, i64) =
        sqlx::query_as("SELECT epoch, version FROM room_cells WHERE room_id = ?")
            .bind(room_id)
            .fetch_one(&mut *tx)
            .await?;
    tx.commit().await?;
    Ok(Activation {
        epoch: stored_u64(epoch, "epoch")?,
        version: stored_u64(version, "version")?,
    })
}

/// Inserts `rows` with one multi-row statement per [`ROWS_PER_INSERT`] rows, in order (so
/// that auto-increment ids rise in the rows' order).
async fn insert_rows<T>(
    conn: &mut MySqlConnection,
    head: &'static str,
    rows: &[T],
    mut bind: impl FnMut(&mut sqlx::query_builder::Separated<'_, MySql, &'static str>, &T),
) -> Result<(), TxError> {
    for chunk in rows.chunks(ROWS_PER_INSERT) {
        let mut insert = QueryBuilder::<MySql>::new(head);
        insert.push_values(chunk, |mut values, row| bind(&mut values, row));
        insert.build().execute(&mut *conn).await?;
    }
    Ok(())
}

/// Writes the batch inside the caller's transaction; the caller rolls back on any error. The
/// checks come in the in-memory store's order: epoch, version, command ids, seqs, orders.
async fn commit_in(conn: &mut MySqlConnection, c: &PreparedCommit) -> Result<(), TxError> {
    // The fence, first: lock the cell row, so that no other commit or activation of the room
    // can run until this transaction ends, and check it.
    let cell: Option<(i64, i64)> =
        sqlx::query_as("SELECT epoch, version FROM room_cells WHERE room_id = ? FOR UPDATE")
            .bind(&c.room_id)
            .fetch_optional(&mut *conn)
            .await?;
    match cell {
        Some((epoch, version)) if epoch == c.epoch => {
            if version != c.expected_version {
                return Err(Error::Conflict(format!(
                    "room {} is at version {version}, not {}",
                    c.room_id, c.expected_version
                ))
                .into());
            }
        }
        // Never activated, or activated again since: this node is fenced out.
        _ => return Err(Error::NotOwner(c.room_id.clone()).into()),
    }
    if let Some(id) = &c.repeated_command {
        return Err(Error::AlreadyExists(format!("command {id} twice in one batch")).into());
    }
    sqlx::query("UPDATE room_cells SET version = ? WHERE room_id = ?")
        .bind(c.new_version)
        .bind(&c.room_id)
        .execute(&mut *conn)
        .await?;

    // A stored command id breaks the primary key: AlreadyExists.
    insert_rows(
        conn,
        "INSERT INTO room_commands
             (room_id, command_id, command, actor, applied_at, first_seq, last_seq) ",
        &c.commands,
        |values, command| {
            values
                .push_bind(c.room_id.clone())
                .push_bind(command.command_id.clone())
                .push_bind(command.command.clone())
                .push_bind(command.actor.clone())
                .push_bind(command.applied_at)
                .push_bind(command.first_seq)
                .push_bind(command.last_seq);
        },
    )
    .await?;
    if let Some(problem) = &c.seq_problem {
        return Err(Error::Invalid(problem.clone()).into());
    }
    insert_rows(
        conn,
        "INSERT INTO room_events (room_id, seq, occurred_at, event) ",
        &c.events,
        |values, event| {
            values
                .push_bind(c.room_id.clone())
                .push_bind(event.seq)
                .push_bind(event.occurred_at)
                .push_bind(event.event.clone());
        },
    )
    .await?;
    insert_rows(
        conn,
        "INSERT INTO room_outbox (room_id, seq, envelope) ",
        &c.outbox,
        |values, message| {
            values
                .push_bind(message.room_id.clone())
                .push_bind(message.seq)
                .push_bind(message.envelope.clone());
        },
    )
    .await?;

    for order in &c.orders {
        order.replace_applied(conn).await?;
    }
    for timer in &c.timers {
        timer.arm(conn).await?;
    }
    for payout in &c.payouts {
        payout.record(conn).await?;
    }
    if let Some(summary) = &c.summary {
        summary.upsert(conn).await?;
    }
    Ok(())
}

async fn commit_once(store: &MySqlStore, c: &PreparedCommit) -> Result<(), TxError> {
    let mut tx = store.pool.begin().await?;
    // On an error the transaction is dropped, which rolls it back.
    commit_in(&mut tx, c).await?;
    tx.commit().await?;
    Ok(())
}

#[async_trait]
impl CellStore for MySqlStore {
    #[tracing::instrument(skip_all, fields(room_id = %room_id), err)]
    async fn activate(&self, room_id: &RoomId, node: &str) -> Result<Activation> {
        let room_id = room_id.as_str();
        self.retrying("activate", || activate_once(self, room_id, node))
            .await
    }

    #[tracing::instrument(skip_all, fields(room_id = %batch.room_id), err)]
    async fn commit(&self, batch: &CommitBatch) -> Result<()> {
        let prepared = PreparedCommit::new(batch)?;
        self.retrying("commit", || commit_once(self, &prepared))
            .await
    }

    async fn list_events(
        &self,
        room_id: &RoomId,
        after: u64,
        limit: u32,
    ) -> Result<Vec<StoredEvent>> {
        let after = to_i64(after, "seq")?;
        let rows = self
            .retrying("list_events", || async move {
                Ok(sqlx::query(
                    "SELECT seq, occurred_at, event FROM room_events
                     WHERE room_id = ? AND seq > ? ORDER BY seq LIMIT ?",
                )
                .bind(room_id.as_str())
                .bind(after)
                .bind(i64::from(limit))
                .fetch_all(&self.pool)
                .await?)
            })
            .await?;
        rows.iter()
            .map(|row| {
                Ok(StoredEvent {
                    seq: u64_col(row, "seq")?,
                    occurred_at: Timestamp(col(row, "occurred_at")?),
                    event: json_col(row, "event")?,
                })
            })
            .collect()
    }

    async fn get_command(
        &self,
        room_id: &RoomId,
        command_id: &CommandId,
    ) -> Result<Option<CommandRecord>> {
        let row = self
            .retrying("get_command", || async move {
                Ok(sqlx::query(
                    "SELECT command_id, command, actor, applied_at, first_seq, last_seq
                     FROM room_commands WHERE room_id = ? AND command_id = ?",
                )
                .bind(room_id.as_str())
                .bind(command_id.as_str())
                .fetch_optional(&self.pool)
                .await?)
            })
            .await?;
        row.map(|row| {
            Ok(CommandRecord {
                command_id: id_col(&row, "command_id")?,
                command: json_col(&row, "command")?,
                actor: json_col(&row, "actor")?,
                applied_at: Timestamp(col(&row, "applied_at")?),
                first_seq: u64_col(&row, "first_seq")?,
                last_seq: u64_col(&row, "last_seq")?,
            })
        })
        .transpose()
    }
}

#[async_trait]
impl SnapshotStore for MySqlStore {
    #[tracing::instrument(skip_all, fields(room_id = %snapshot.state.room_id), err)]
    async fn put(&self, snapshot: &Snapshot) -> Result<()> {
        let room_id = snapshot.state.room_id.as_str();
        let version = to_i64(snapshot.state.version, "version")?;
        let text = to_json(snapshot)?;
        let text = text.as_str();
        self.retrying("put_snapshot", || async move {
            // An older snapshot than the stored one leaves the stored one in place. The
            // assignments read the row's old version, so `snapshot` is assigned first.
            sqlx::query(
                "INSERT INTO room_snapshots (room_id, version, snapshot) VALUES (?, ?, ?)
                 ON DUPLICATE KEY UPDATE
                     snapshot = IF(? >= version, ?, snapshot),
                     version = GREATEST(version, ?)",
            )
            .bind(room_id)
            .bind(version)
            .bind(text)
            .bind(version)
            .bind(text)
            .bind(version)
            .execute(&self.pool)
            .await?;
            Ok(())
        })
        .await
    }

    async fn get_latest(&self, room_id: &RoomId) -> Result<Option<Snapshot>> {
        let row = self
            .retrying("get_snapshot", || async move {
                Ok(
                    sqlx::query("SELECT snapshot FROM room_snapshots WHERE room_id = ?")
                        .bind(room_id.as_str())
                        .fetch_optional(&self.pool)
                        .await?,
                )
            })
            .await?;
        row.map(|row| json_col(&row, "snapshot")).transpose()
    }
}
