//! [`CellStore`] and [`SnapshotStore`]: the room log, the epoch fence, the group commit that
//! writes everything of a batch in one savepoint, and snapshots.

use std::collections::HashSet;

use async_trait::async_trait;
use room_app::Error;
use room_app::ports::{
    Activation, CellStore, CommandRecord, CommitBatch, SnapshotStore, StoredEvent,
};
use room_domain::{CommandId, RoomId, Snapshot};
use sqlx::{QueryBuilder, Sqlite, SqliteConnection};

use crate::codec::{col, db, id_col, json_col, to_i64, to_json, u64_col};
use crate::directory::SummaryRow;
use crate::orders::OrderRow;
use crate::payouts::PayoutRow;
use crate::timers::TimerRow;
use crate::{Result, SqliteStore};

/// Rows per multi-row INSERT: far below SQLite's limit of bound variables.
const ROWS_PER_INSERT: usize = 200;

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

/// A [`CommitBatch`] encoded for SQL by the caller's task, so that the writer only runs
/// statements.
struct PreparedCommit {
    room_id: String,
    epoch: i64,
    expected_version: i64,
    new_version: i64,
    /// A command id that appears twice in the batch.
    repeated_command: Option<String>,
    /// Events whose seqs do not follow `expected_version` without gaps.
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
        let mut seen = HashSet::new();
        let repeated_command = batch
            .commands
            .iter()
            .find(|c| !seen.insert(&c.command_id))
            .map(|c| c.command_id.to_string());
        let seq_problem = batch
            .events
            .iter()
            .enumerate()
            .find(|(i, e)| e.seq != batch.expected_version + 1 + *i as u64)
            .map(|(_, e)| format!("event seq {} out of order", e.seq));
        let new_version = batch.expected_version + batch.events.len() as u64;
        Ok(PreparedCommit {
            room_id: batch.room_id.to_string(),
            epoch: to_i64(batch.epoch, "epoch")?,
            expected_version: to_i64(batch.expected_version, "version")?,
            new_version: to_i64(new_version, "version")?,
            repeated_command,
            seq_problem,
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
            summary: batch.summary.as_ref().map(SummaryRow::new),
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
    // The fence: one conditional update decides ownership and version at once.
    let fenced = sqlx::query(
        "UPDATE room_cells SET version = ?1 WHERE room_id = ?2 AND epoch = ?3 AND version = ?4",
    )
    .bind(c.new_version)
    .bind(&c.room_id)
    .bind(c.epoch)
    .bind(c.expected_version)
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    if fenced.rows_affected() == 0 {
        let row = sqlx::query("SELECT epoch, version FROM room_cells WHERE room_id = ?1")
            .bind(&c.room_id)
            .fetch_optional(&mut *conn)
            .await
            .map_err(db)?;
        return Err(match row {
            None => Error::NotOwner(c.room_id),
            Some(row) if col::<i64>(&row, "epoch")? != c.epoch => Error::NotOwner(c.room_id),
            Some(row) => Error::Conflict(format!(
                "room {} is at version {}, not {}",
                c.room_id,
                col::<i64>(&row, "version")?,
                c.expected_version
            )),
        });
    }
    if let Some(id) = c.repeated_command {
        return Err(Error::AlreadyExists(format!(
            "command {id} twice in one batch"
        )));
    }

    for chunk in c.commands.chunks(ROWS_PER_INSERT) {
        let mut insert = QueryBuilder::<Sqlite>::new(
            "INSERT INTO room_commands \
             (room_id, command_id, command, actor, applied_at, first_seq, last_seq) ",
        );
        insert.push_values(chunk, |mut row, command| {
            row.push_bind(c.room_id.clone())
                .push_bind(command.command_id.clone())
                .push_bind(command.command.clone())
                .push_bind(command.actor.clone())
                .push_bind(command.applied_at)
                .push_bind(command.first_seq)
                .push_bind(command.last_seq);
        });
        // A stored command id is a primary key violation: AlreadyExists.
        insert.build().execute(&mut *conn).await.map_err(db)?;
    }
    if let Some(problem) = c.seq_problem {
        return Err(Error::Invalid(problem));
    }

    for chunk in c.events.chunks(ROWS_PER_INSERT) {
        let mut insert = QueryBuilder::<Sqlite>::new(
            "INSERT INTO room_events (room_id, seq, occurred_at, event) ",
        );
        insert.push_values(chunk, |mut row, event| {
            row.push_bind(c.room_id.clone())
                .push_bind(event.seq)
                .push_bind(event.occurred_at)
                .push_bind(event.event.clone());
        });
        insert.build().execute(&mut *conn).await.map_err(db)?;
    }

    for chunk in c.outbox.chunks(ROWS_PER_INSERT) {
        // Rows of one INSERT get rising ids in the order given: commit order.
        let mut insert =
            QueryBuilder::<Sqlite>::new("INSERT INTO room_outbox (room_id, seq, envelope) ");
        insert.push_values(chunk, |mut row, message| {
            row.push_bind(message.room_id.clone())
                .push_bind(message.seq)
                .push_bind(message.envelope.clone());
        });
        insert.build().execute(&mut *conn).await.map_err(db)?;
    }

    for order in &c.orders {
        let updated = order.replace(conn, None).await?;
        if !updated {
            return Err(Error::NotFound(format!("order {}", order.order_id)));
        }
    }
    crate::timers::arm(conn, &c.timers).await?;
    crate::payouts::record(conn, &c.payouts).await?;
    if let Some(summary) = &c.summary {
        summary.upsert(conn).await?;
    }
    Ok(())
}

#[async_trait]
impl CellStore for SqliteStore {
    async fn activate(&self, room_id: &RoomId, node: &str) -> Result<Activation> {
        let (room_id, node) = (room_id.to_string(), node.to_owned());
        self.write(move |conn| Box::pin(activate(conn, room_id, node)))
            .await
    }

    async fn commit(&self, batch: &CommitBatch) -> Result<()> {
        let prepared = PreparedCommit::new(batch)?;
        self.write(move |conn| Box::pin(commit(conn, prepared)))
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
        self.write(move |conn| {
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
