//! [`CellStore`] and [`SnapshotStore`]: the room log, the epoch fence, the group commit that
//! writes everything of a batch (in the job's savepoint, so all or nothing), snapshots, and
//! the pruning of the log behind them.

use async_trait::async_trait;
use room_app::Error;
use room_app::ports::{
    Activation, CellStore, CommandRecord, CommitBatch, SnapshotStore, StoredEvent,
};
use room_domain::{CommandId, RoomId, Snapshot, Timestamp};
use rusqlite::{Connection, OptionalExtension, params};

use room_app::stored;

use crate::codec::{
    body_col, col, db, id_col, json_col, sql, stored_u64, to_i64, to_json, u64_col,
};
use crate::directory::SummaryRow;
use crate::orders::OrderRow;
use crate::payouts::PayoutRow;
use crate::timers::TimerRow;
use crate::{Result, SqliteStore};

struct CommandRow {
    command_id: String,
    /// The command without its id (a column of its own).
    command: Vec<u8>,
    actor: Vec<u8>,
    applied_at: i64,
    first_seq: i64,
    last_seq: i64,
}

struct EventRow {
    seq: i64,
    occurred_at: i64,
    event: Vec<u8>,
}

struct OutboxRow {
    room_id: String,
    seq: i64,
    /// The envelope without what its columns hold ([`ENVELOPE_COLUMNS`]).
    envelope: Vec<u8>,
}

/// The fields of a stored command that its row has in columns.
pub(crate) const COMMAND_COLUMNS: &[&str] = &["command_id"];

/// The fields of an outbox envelope that its row has in columns (the event id is the room id
/// and the seq).
pub(crate) const ENVELOPE_COLUMNS: &[&str] = &["event_id", "room_id", "seq"];

/// A [`CommitBatch`] encoded for SQL in the caller's task (the encoding happens there, in
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
                        command: stored::encode_without(&c.command, COMMAND_COLUMNS)?,
                        actor: stored::encode(&c.actor)?,
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
                        event: stored::encode(&e.event)?,
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
                        envelope: stored::encode_without(envelope, ENVELOPE_COLUMNS)?,
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
    if let Some(first) = c.commands.iter().map(|command| command.applied_at).min() {
        conn.prepare_cached(FIRST_COMMAND_WRITTEN)
            .and_then(|mut update| update.execute(params![c.room_id, first]))
            .map_err(sql)?;
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

/// Rooms whose log's first command expired (applied before `?1`) and that have a snapshot,
/// in the order of `room_cells_by_first_command`, after the position `(?2, ?3)`, at most `?4`:
/// the rooms [`prune_log`] visits. CROSS JOIN keeps the rooms the outer loop, so the rows come
/// off the index in order and the scan stops at the limit.
const EXPIRED_ROOMS: &str = "SELECT c.room_id, c.first_command_at, s.version
     FROM room_cells AS c CROSS JOIN room_snapshots AS s ON s.room_id = c.room_id
     WHERE c.first_command_at < ?1 AND (c.first_command_at, c.room_id) > (?2, ?3)
     ORDER BY c.first_command_at, c.room_id
     LIMIT ?4";

/// Room `?1`'s log has its first command applied at `?2`, if it had none.
const FIRST_COMMAND_WRITTEN: &str =
    "UPDATE room_cells SET first_command_at = ?2 WHERE room_id = ?1 AND first_command_at IS NULL";

/// Room `?1`'s first command is the one at the front of its log now (NULL if none is left).
const FIRST_COMMAND_AGAIN: &str = "UPDATE room_cells SET first_command_at = (
         SELECT applied_at FROM room_commands WHERE room_id = ?1 ORDER BY first_seq LIMIT 1)
     WHERE room_id = ?1";

/// The seq of room `?1`'s event number `?3 + 1` (from its first) at or before seq `?2`.
const NTH_EVENT: &str = "SELECT seq FROM room_events
     WHERE room_id = ?1 AND seq <= ?2 ORDER BY seq LIMIT 1 OFFSET ?3";

/// The first seq of room `?1`'s first command at or before seq `?2` that has not expired
/// (applied at or after `?3`, or ending after the snapshot's version `?4`).
const FIRST_KEPT_COMMAND: &str = "SELECT first_seq FROM room_commands
     WHERE room_id = ?1 AND first_seq <= ?2 AND (applied_at >= ?3 OR last_seq > ?4)
     ORDER BY first_seq LIMIT 1";

/// Deletes room `?1`'s events up to seq `?2`.
const DELETE_EVENTS: &str = "DELETE FROM room_events WHERE room_id = ?1 AND seq <= ?2";

/// The seq of room `?1`'s first stored event.
const FIRST_EVENT: &str = "SELECT MIN(seq) FROM room_events WHERE room_id = ?1";

/// Deletes at most `?4` of room `?1`'s commands applied before `?3` whose events all lie at
/// or before seq `?2`, first ones first.
const DELETE_COMMANDS: &str = "DELETE FROM room_commands WHERE room_id = ?1 AND command_id IN (
         SELECT command_id FROM room_commands
         WHERE room_id = ?1 AND first_seq <= ?2 AND last_seq <= ?2 AND applied_at < ?3
         ORDER BY first_seq LIMIT ?4)";

/// Room `?1`'s command `?2`, unless its first event was pruned (it is being pruned itself),
/// through the primary key.
const GET_COMMAND: &str = "SELECT command_id, command, actor, applied_at, first_seq, last_seq
     FROM room_commands AS c WHERE room_id = ?1 AND command_id = ?2
       AND (last_seq < first_seq OR EXISTS (
           SELECT 1 FROM room_events AS e
           WHERE e.room_id = c.room_id AND e.seq = c.first_seq))";

/// Rooms [`prune_log`] reads per page of [`EXPIRED_ROOMS`].
const EXPIRED_PAGE: i64 = 256;

/// Deletes at most `budget` (at least 1) rows of room `room_id`'s log, whose newest snapshot
/// is at `version`, as [`CellStore::prune_log`] says; returns how many went.
fn prune_room(
    conn: &Connection,
    room_id: &str,
    version: i64,
    older_than: i64,
    budget: i64,
) -> Result<i64> {
    let one = |statement: &str, params: &[&dyn rusqlite::ToSql]| -> Result<Option<i64>> {
        conn.prepare_cached(statement)
            .and_then(|mut query| query.query_row(params, |row| row.get(0)).optional())
            .map(Option::flatten)
            .map_err(sql)
    };
    // The events that may go are a run from the front of the log: at most `budget` of them,
    // up to the snapshot, and before the first command that has not expired.
    let reach = one(NTH_EVENT, &[&room_id, &version, &(budget - 1)])?.unwrap_or(version);
    let kept = one(
        FIRST_KEPT_COMMAND,
        &[&room_id, &reach, &older_than, &version],
    )?;
    let through = kept.map_or(reach, |first| reach.min(first - 1));
    let events = conn
        .prepare_cached(DELETE_EVENTS)
        .and_then(|mut delete| delete.execute(params![room_id, through]))
        .map_err(sql)? as i64;
    let left = budget - events;
    if left == 0 {
        return Ok(events);
    }
    // An expired command goes once all of its events have.
    let first_left = one(FIRST_EVENT, &[&room_id])?;
    let gone_through = first_left.map_or(version, |first| version.min(first - 1));
    let commands = conn
        .prepare_cached(DELETE_COMMANDS)
        .and_then(|mut delete| delete.execute(params![room_id, gone_through, older_than, left]))
        .map_err(sql)? as i64;
    if commands > 0 {
        conn.prepare_cached(FIRST_COMMAND_AGAIN)
            .and_then(|mut update| update.execute([room_id]))
            .map_err(sql)?;
    }
    Ok(events + commands)
}

/// [`CellStore::prune_log`] in one write job: walks the rooms whose first command expired,
/// oldest first, and prunes each once, until `limit` rows went or no room is left.
fn prune_log(conn: &Connection, older_than: i64, limit: i64) -> Result<u64> {
    let mut budget = limit;
    let mut after = (i64::MIN, String::new());
    while budget > 0 {
        let page: Vec<(String, i64, i64)> = conn
            .prepare_cached(EXPIRED_ROOMS)
            .and_then(|mut query| {
                query
                    .query_map(params![older_than, after.0, after.1, EXPIRED_PAGE], |row| {
                        Ok((row.get(0)?, row.get(1)?, row.get(2)?))
                    })?
                    .collect()
            })
            .map_err(sql)?;
        let full = page.len() as i64 == EXPIRED_PAGE;
        for (room_id, first_command_at, version) in page {
            if budget > 0 {
                budget -= prune_room(conn, &room_id, version, older_than, budget)?;
            }
            after = (first_command_at, room_id);
        }
        if !full {
            break;
        }
    }
    stored_u64(limit - budget, "pruned rows")
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
                    occurred_at: Timestamp(col(row, "occurred_at")?),
                    event: body_col(row, "event")?,
                })
            })
            .collect()
    }

    async fn get_command(
        &self,
        room_id: &RoomId,
        command_id: &CommandId,
    ) -> Result<Option<CommandRecord>> {
        // A command whose first event was pruned is being pruned itself: absent.
        let row = sqlx::query(GET_COMMAND)
            .bind(room_id.as_str())
            .bind(command_id.as_str())
            .fetch_optional(&self.readers)
            .await
            .map_err(db)?;
        row.map(|row| {
            let command: &[u8] = col(&row, "command")?;
            Ok(CommandRecord {
                command_id: id_col(&row, "command_id")?,
                command: stored::decode_with(
                    command,
                    "command",
                    [("command_id", command_id.as_str().into())],
                )?,
                actor: body_col(&row, "actor")?,
                applied_at: Timestamp(col(&row, "applied_at")?),
                first_seq: u64_col(&row, "first_seq")?,
                last_seq: u64_col(&row, "last_seq")?,
            })
        })
        .transpose()
    }

    async fn prune_log(&self, older_than: Timestamp, limit: u32) -> Result<u64> {
        if limit == 0 {
            return Ok(0);
        }
        let older_than = older_than.as_millis();
        self.write(move |conn| prune_log(conn, older_than, i64::from(limit)))
            .await
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SqliteSettings;
    use crate::plans::query_plan as plan;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn pruning_and_lookups_read_the_log_through_indexes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("room.db");
        let url = format!("sqlite://{}", path.display());
        let store = SqliteStore::open(&SqliteSettings::new(url)).await.unwrap();
        store.close().await;
        // Many rooms with long logs, and the statistics a long-running database has, so that
        // the planner weighs the indexes against real tables.
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 39)
             INSERT INTO room_cells (room_id, epoch, version, owner_node)
                 SELECT 'room-' || i, 1, 100, 'node' FROM n;
             WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 3999)
             INSERT INTO room_events (room_id, seq, occurred_at, event)
                 SELECT 'room-' || (i % 40), i / 40 + 1, i, X'00' FROM n;
             INSERT INTO room_commands
                 (room_id, command_id, command, actor, applied_at, first_seq, last_seq)
                 SELECT room_id, 'c' || seq, X'00', X'00', occurred_at, seq, seq FROM room_events;
             INSERT INTO room_snapshots (room_id, version, snapshot)
                 SELECT room_id, 50, '{}' FROM room_cells;
             UPDATE room_cells SET first_command_at = (
                 SELECT MIN(applied_at) FROM room_commands AS c
                 WHERE c.room_id = room_cells.room_id);
             ANALYZE;",
        )
        .unwrap();
        for (statement, index) in [
            (EXPIRED_ROOMS, "room_cells_by_first_command"),
            (FIRST_COMMAND_AGAIN, "room_commands_by_seq"),
            (GET_COMMAND, "PRIMARY KEY"),
            (NTH_EVENT, "PRIMARY KEY"),
            (FIRST_KEPT_COMMAND, "room_commands_by_seq"),
            (DELETE_EVENTS, "PRIMARY KEY"),
            (FIRST_EVENT, "PRIMARY KEY"),
            (DELETE_COMMANDS, "room_commands_by_seq"),
        ] {
            let steps = plan(&conn, statement);
            assert!(
                steps.iter().all(|step| !step.starts_with("SCAN")),
                "no table is scanned whole: {statement}\n{steps:#?}"
            );
            assert!(
                steps.iter().all(|step| !step.contains("TEMP B-TREE")),
                "the rows come in index order, unsorted: {statement}\n{steps:#?}"
            );
            assert!(
                steps.iter().any(|step| step.contains(index)),
                "{index} serves {statement}\n{steps:#?}"
            );
        }
    }
}
