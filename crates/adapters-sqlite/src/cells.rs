//! [`CellStore`] and [`SnapshotStore`]: the room log, the epoch fence, the commit that writes
//! everything of a batch in one statement (the `room_commit` view of the migration), and
//! snapshots.

use async_trait::async_trait;
use room_app::Error;
use room_app::ports::{
    Activation, CellStore, CommandRecord, CommitBatch, SnapshotStore, StoredEvent,
};
use room_domain::{CommandId, RoomId, Snapshot};
use serde::Serialize;
use sqlx::SqliteConnection;

use crate::codec::{col, db, id_col, json_col, to_i64, to_json, u64_col};
use crate::directory::SummaryRow;
use crate::orders::OrderRow;
use crate::payouts::PayoutRow;
use crate::timers::TimerRow;
use crate::{Result, SqliteStore};

#[derive(Serialize)]
struct CommandRow<'a> {
    command_id: &'a str,
    command: String,
    actor: String,
    applied_at: i64,
    first_seq: i64,
    last_seq: i64,
}

#[derive(Serialize)]
struct EventRow {
    seq: i64,
    occurred_at: i64,
    event: String,
}

#[derive(Serialize)]
struct OutboxRow<'a> {
    room_id: &'a str,
    seq: i64,
    envelope: String,
}

/// A [`CommitBatch`] encoded for the `room_commit` view (see the migration): every part a JSON
/// array, built in the caller's task so that the writer only runs the statement.
struct PreparedCommit {
    room_id: String,
    epoch: i64,
    expected_version: i64,
    commands: String,
    events: String,
    outbox: String,
    orders: String,
    timers: String,
    payouts: String,
    summary: Option<String>,
}

impl PreparedCommit {
    fn new(batch: &CommitBatch) -> Result<Self> {
        let commands = batch
            .commands
            .iter()
            .map(|c| {
                Ok(CommandRow {
                    command_id: c.command_id.as_str(),
                    command: to_json(&c.command)?,
                    actor: to_json(&c.actor)?,
                    applied_at: c.applied_at.as_millis(),
                    first_seq: to_i64(c.first_seq, "seq")?,
                    last_seq: to_i64(c.last_seq, "seq")?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let events = batch
            .events
            .iter()
            .map(|e| {
                Ok(EventRow {
                    seq: to_i64(e.seq, "seq")?,
                    occurred_at: e.occurred_at.as_millis(),
                    event: to_json(&e.event)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let outbox = batch
            .outbox
            .iter()
            .map(|envelope| {
                Ok(OutboxRow {
                    room_id: envelope.room_id.as_str(),
                    seq: to_i64(envelope.seq, "seq")?,
                    envelope: to_json(envelope)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let orders = batch
            .orders
            .iter()
            .map(OrderRow::new)
            .collect::<Result<Vec<_>>>()?;
        let timers = batch
            .timers
            .iter()
            .map(TimerRow::new)
            .collect::<Result<Vec<_>>>()?;
        let payouts: Vec<_> = batch.payouts.iter().map(PayoutRow::new).collect();
        Ok(PreparedCommit {
            room_id: batch.room_id.to_string(),
            epoch: to_i64(batch.epoch, "epoch")?,
            expected_version: to_i64(batch.expected_version, "version")?,
            commands: to_json(&commands)?,
            events: to_json(&events)?,
            outbox: to_json(&outbox)?,
            orders: to_json(&orders)?,
            timers: to_json(&timers)?,
            payouts: to_json(&payouts)?,
            summary: batch
                .summary
                .as_ref()
                .map(|s| SummaryRow::new(s).and_then(|row| to_json(&row)))
                .transpose()?,
        })
    }
}

async fn activate(
    conn: &mut SqliteConnection,
    room_id: String,
    node: String,
) -> Result<Activation> {
    let row = sqlx::query(
        "INSERT INTO room_cells (room_id, epoch, version, owner_node) VALUES (?1, 1, 0, ?2)
         ON CONFLICT (room_id) DO UPDATE SET epoch = epoch + 1, owner_node = excluded.owner_node
         RETURNING epoch, version",
    )
    .bind(room_id)
    .bind(node)
    .fetch_one(&mut *conn)
    .await
    .map_err(db)?;
    Ok(Activation {
        epoch: u64_col(&row, "epoch")?,
        version: u64_col(&row, "version")?,
    })
}

async fn commit(conn: &mut SqliteConnection, c: PreparedCommit) -> Result<()> {
    let result = sqlx::query(
        "INSERT INTO room_commit (room_id, epoch, expected_version, commands, events, outbox,
                                  orders, timers, payouts, summary)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )
    .bind(&c.room_id)
    .bind(c.epoch)
    .bind(c.expected_version)
    .bind(c.commands)
    .bind(c.events)
    .bind(c.outbox)
    .bind(c.orders)
    .bind(c.timers)
    .bind(c.payouts)
    .bind(c.summary)
    .execute(&mut *conn)
    .await;
    match result {
        Ok(_) => Ok(()),
        Err(error) => Err(commit_error(error, &c.room_id, c.expected_version)),
    }
}

/// Translates the `room_commit:` errors the commit trigger raises.
fn commit_error(error: sqlx::Error, room_id: &str, expected_version: i64) -> Error {
    let raised = error
        .as_database_error()
        .and_then(|e| e.message().strip_prefix("room_commit: "))
        .map(str::to_owned);
    match raised.as_deref() {
        Some("not owner") => Error::NotOwner(room_id.to_owned()),
        Some("version moved") => Error::Conflict(format!(
            "room {room_id} is no longer at version {expected_version}"
        )),
        Some("unknown order") => {
            Error::NotFound(format!("an order of the batch for room {room_id}"))
        }
        Some(other) => Error::Invalid(other.to_owned()),
        None => db(error),
    }
}

#[async_trait]
impl CellStore for SqliteStore {
    async fn activate(&self, room_id: &RoomId, node: &str) -> Result<Activation> {
        let (room_id, node) = (room_id.to_string(), node.to_owned());
        self.write_statement(move |conn| Box::pin(activate(conn, room_id, node)))
            .await
    }

    async fn commit(&self, batch: &CommitBatch) -> Result<()> {
        let prepared = PreparedCommit::new(batch)?;
        self.write_statement(move |conn| Box::pin(commit(conn, prepared)))
            .await
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
        self.write_statement(move |conn| {
            Box::pin(async move {
                // An older snapshot than the stored one leaves the stored one in place.
                sqlx::query(
                    "INSERT INTO room_snapshots (room_id, version, snapshot) VALUES (?1, ?2, ?3)
                     ON CONFLICT (room_id) DO UPDATE
                     SET version = excluded.version, snapshot = excluded.snapshot
                     WHERE excluded.version >= room_snapshots.version",
                )
                .bind(room_id)
                .bind(version)
                .bind(text)
                .execute(&mut *conn)
                .await
                .map_err(db)?;
                Ok(())
            })
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
