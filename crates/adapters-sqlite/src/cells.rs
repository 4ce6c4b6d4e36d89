//! [`CellStore`] and [`SnapshotStore`]: the room log, the epoch fence, the group commit that
//! writes everything of a batch (in the job's savepoint, so all or nothing), and snapshots.

use async_trait::async_trait;
use room_app::Error;
use room_app::ports::{
    Activation, CellStore, CommandRecord, CommitBatch, SnapshotStore, StoredEvent,
};
use room_domain::{CommandId, RoomId, Snapshot};
use rusqlite::{Connection, OptionalExtension, params};

use crate::codec::{col, db, id_col, json_col, sql, stored_u64, to_i64, to_json, u64_col};
use crate::directory::SummaryRow;
use crate::orders::OrderRow;
use crate::payouts::PayoutRow;
use crate::timers::TimerRow;
use crate::{Result, SqliteStore};

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

/// A [`CommitBatch`] encoded for SQL in the caller's task (the JSON work happens there, in
/// parallel), so that the writer thread only runs statements.
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

fn activate(conn: &Connection, room_id: &str, node: &str) -> Result<Activation> {
    let (epoch, version) = conn
        .prepare_cached(
            "INSERT INTO room_cells (room_id, epoch, version, owner_node) VALUES (?1, 1, 0, ?2)
             ON CONFLICT (room_id) DO UPDATE
             SET epoch = epoch + 1, owner_node = excluded.owner_node
             RETURNING epoch, version",
        )
        .and_then(|mut insert| {
            insert.query_row(params![room_id, node], |row| {
                Ok((row.get::<_, i64>(0)?, row.get::<_, i64>(1)?))
            })
        })
        .map_err(sql)?;
    Ok(Activation {
        epoch: stored_u64(epoch, "epoch")?,
        version: stored_u64(version, "version")?,
    })
}

/// Writes the batch; the job's savepoint undoes everything if any step fails. The checks come
/// in the in-memory store's order: epoch, version, command ids, seqs, orders.
fn commit(conn: &Connection, c: &PreparedCommit) -> Result<()> {
    // The fence: one conditional update decides ownership and version at once.
    let fenced = conn
        .prepare_cached(
            "UPDATE room_cells SET version = ?1 WHERE room_id = ?2 AND epoch = ?3 AND version = ?4",
        )
        .and_then(|mut update| {
            update.execute(params![
                c.new_version,
                c.room_id,
                c.epoch,
                c.expected_version
            ])
        })
        .map_err(sql)?;
    if fenced == 0 {
        let cell: Option<(i64, i64)> = conn
            .prepare_cached("SELECT epoch, version FROM room_cells WHERE room_id = ?1")
            .and_then(|mut select| {
                select
                    .query_row([&c.room_id], |row| Ok((row.get(0)?, row.get(1)?)))
                    .optional()
            })
            .map_err(sql)?;
        return Err(match cell {
            Some((epoch, version)) if epoch == c.epoch => Error::Conflict(format!(
                "room {} is at version {version}, not {}",
                c.room_id, c.expected_version
            )),
            // Never activated, or activated again since: this node is fenced out.
            _ => Error::NotOwner(c.room_id.clone()),
        });
    }
    if let Some(id) = &c.repeated_command {
        return Err(Error::AlreadyExists(format!(
            "command {id} twice in one batch"
        )));
    }

    let mut insert = conn
        .prepare_cached(
            "INSERT INTO room_commands
                 (room_id, command_id, command, actor, applied_at, first_seq, last_seq)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )
        .map_err(sql)?;
    for command in &c.commands {
        // A stored command id breaks the primary key: AlreadyExists.
        insert
            .execute(params![
                c.room_id,
                command.command_id,
                command.command,
                command.actor,
                command.applied_at,
                command.first_seq,
                command.last_seq
            ])
            .map_err(sql)?;
    }
    if let Some(problem) = &c.seq_problem {
        return Err(Error::Invalid(problem.clone()));
    }

    let mut insert = conn
        .prepare_cached(
            "INSERT INTO room_events (room_id, seq, occurred_at, event) VALUES (?1, ?2, ?3, ?4)",
        )
        .map_err(sql)?;
    for event in &c.events {
        insert
            .execute(params![
                c.room_id,
                event.seq,
                event.occurred_at,
                event.event
            ])
            .map_err(sql)?;
    }

    // Rows inserted in order get rising ids: commit order.
    let mut insert = conn
        .prepare_cached("INSERT INTO room_outbox (room_id, seq, envelope) VALUES (?1, ?2, ?3)")
        .map_err(sql)?;
    for message in &c.outbox {
        insert
            .execute(params![message.room_id, message.seq, message.envelope])
            .map_err(sql)?;
    }

    for order in &c.orders {
        order.replace_applied(conn)?;
    }
    for timer in &c.timers {
        timer.arm(conn)?;
    }
    for payout in &c.payouts {
        payout.record(conn)?;
    }
    if let Some(summary) = &c.summary {
        summary.upsert(conn)?;
    }
    Ok(())
}

#[async_trait]
impl CellStore for SqliteStore {
    async fn activate(&self, room_id: &RoomId, node: &str) -> Result<Activation> {
        let (room_id, node) = (room_id.to_string(), node.to_owned());
        self.write(move |conn| activate(conn, &room_id, &node))
            .await
    }

    async fn commit(&self, batch: &CommitBatch) -> Result<()> {
        let prepared = PreparedCommit::new(batch)?;
        self.write(move |conn| commit(conn, &prepared)).await
    }

    async fn list_events(
        &self,
        room_id: &RoomId,
        after: u64,
        limit: u32,
    ) -> Result<Vec<StoredEvent>> {
        let rows = sqlx::query(
            "SELECT seq, occurred_at, event FROM room_events
             WHERE room_id = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
        )
        .bind(room_id.as_str())
        .bind(to_i64(after, "seq")?)
        .bind(i64::from(limit))
        .fetch_all(&self.readers)
        .await
        .map_err(db)?;
        rows.iter()
            .map(|row| {
                Ok(StoredEvent {
                    seq: u64_col(row, "seq")?,
                    occurred_at: room_domain::Timestamp(col(row, "occurred_at")?),
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
        let row = sqlx::query(
            "SELECT command_id, command, actor, applied_at, first_seq, last_seq
             FROM room_commands WHERE room_id = ?1 AND command_id = ?2",
        )
        .bind(room_id.as_str())
        .bind(command_id.as_str())
        .fetch_optional(&self.readers)
        .await
        .map_err(db)?;
        row.map(|row| {
            Ok(CommandRecord {
                command_id: id_col(&row, "command_id")?,
                command: json_col(&row, "command")?,
                actor: json_col(&row, "actor")?,
                applied_at: room_domain::Timestamp(col(&row, "applied_at")?),
                first_seq: u64_col(&row, "first_seq")?,
                last_seq: u64_col(&row, "last_seq")?,
            })
        })
        .transpose()
    }
}

#[async_trait]
impl SnapshotStore for SqliteStore {
    async fn put(&self, snapshot: &Snapshot) -> Result<()> {
        let room_id = snapshot.state.room_id.to_string();
        let version = to_i64(snapshot.state.version, "version")?;
        let text = to_json(snapshot)?;
        self.write(move |conn| {
            // An older snapshot than the stored one leaves the stored one in place.
            conn.prepare_cached(
                "INSERT INTO room_snapshots (room_id, version, snapshot) VALUES (?1, ?2, ?3)
                 ON CONFLICT (room_id) DO UPDATE
                 SET version = excluded.version, snapshot = excluded.snapshot
                 WHERE excluded.version >= room_snapshots.version",
            )
            .and_then(|mut upsert| upsert.execute(params![room_id, version, text]))
            .map_err(sql)?;
            Ok(())
        })
        .await
    }

    async fn get_latest(&self, room_id: &RoomId) -> Result<Option<Snapshot>> {
        let row = sqlx::query("SELECT snapshot FROM room_snapshots WHERE room_id = ?1")
            .bind(room_id.as_str())
            .fetch_optional(&self.readers)
            .await
            .map_err(db)?;
        row.map(|row| json_col(&row, "snapshot")).transpose()
    }
}
