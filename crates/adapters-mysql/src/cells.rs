//! [`CellStore`] and [`SnapshotStore`]: the room log, the epoch fence, the group commit that
//! writes everything of a batch in one transaction (or nothing), snapshots, and the pruning
//! of the log behind them.

use async_trait::async_trait;
use room_app::Error;
use room_app::ports::{
    Activation, CellStore, CommandRecord, CommitBatch, SnapshotStore, StoredEvent,
};
use room_domain::{CommandId, RoomId, Snapshot, Timestamp};
use sqlx::{MySql, MySqlConnection, QueryBuilder};

use room_app::stored;

use crate::codec::{
    TxError, body_col, col, id_col, json_col, stored_u64, to_i64, to_json, u64_col,
};
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
    if let Some(first) = c.commands.iter().map(|command| command.applied_at).min() {
        sqlx::query(FIRST_COMMAND_WRITTEN)
            .bind(first)
            .bind(&c.room_id)
            .execute(&mut *conn)
            .await?;
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

/// Rooms whose log's first command expired (applied before the cut-off) and that have a
/// snapshot, in the order of `room_cells_by_first_command`, after a position
/// (first_command_at, room_id), at most a page: the rooms [`MySqlStore::prune`] visits.
/// STRAIGHT_JOIN keeps the rooms the outer table and the index hint its key, so the rows come
/// off the index in order and the scan stops at the limit.
const EXPIRED_ROOMS: &str = "SELECT c.room_id, c.first_command_at, s.version
     FROM room_cells AS c FORCE INDEX (room_cells_by_first_command)
     STRAIGHT_JOIN room_snapshots AS s ON s.room_id = c.room_id
     WHERE c.first_command_at < ?
       AND (c.first_command_at > ? OR (c.first_command_at = ? AND c.room_id > ?))
     ORDER BY c.first_command_at, c.room_id
     LIMIT ?";

/// A room's log has its first command applied at a time, if it had none (the commit holds
/// the cell row).
const FIRST_COMMAND_WRITTEN: &str =
    "UPDATE room_cells SET first_command_at = ? WHERE room_id = ? AND first_command_at IS NULL";

/// A room's first command is the one at the front of its log now (NULL if none is left).
const FIRST_COMMAND_AGAIN: &str = "UPDATE room_cells SET first_command_at = (
         SELECT applied_at FROM room_commands WHERE room_id = ? ORDER BY first_seq LIMIT 1)
     WHERE room_id = ?";

/// The seq of a room's event number `n + 1` (from its first) at or before a seq.
const NTH_EVENT: &str = "SELECT seq FROM room_events
     WHERE room_id = ? AND seq <= ? ORDER BY seq LIMIT 1 OFFSET ?";

/// The first seq of a room's first command at or before a seq that has not expired (applied
/// at or after the cut-off, or ending after the snapshot's version).
const FIRST_KEPT_COMMAND: &str = "SELECT first_seq FROM room_commands
     WHERE room_id = ? AND first_seq <= ? AND (applied_at >= ? OR last_seq > ?)
     ORDER BY first_seq LIMIT 1";

/// Deletes a room's events up to a seq, at most a limit.
const DELETE_EVENTS: &str =
    "DELETE FROM room_events WHERE room_id = ? AND seq <= ? ORDER BY seq LIMIT ?";

/// The seq of a room's first stored event.
const FIRST_EVENT: &str = "SELECT MIN(seq) FROM room_events WHERE room_id = ?";

/// Deletes at most a limit of a room's commands applied before the cut-off whose events all
/// lie at or before a seq, first ones first.
const DELETE_COMMANDS: &str = "DELETE FROM room_commands
     WHERE room_id = ? AND first_seq <= ? AND last_seq <= ? AND applied_at < ?
     ORDER BY first_seq, command_id LIMIT ?";

/// Rooms [`MySqlStore::prune`] reads per page of [`EXPIRED_ROOMS`].
const EXPIRED_PAGE: i64 = 256;

impl MySqlStore {
    /// The one value a query of one column returns, `None` for no row or NULL.
    async fn one(
        &self,
        what: &'static str,
        statement: &'static str,
        room_id: &str,
        args: &[i64],
    ) -> Result<Option<i64>> {
        self.retrying(what, || async move {
            let mut query = sqlx::query_scalar(statement).bind(room_id);
            for arg in args {
                query = query.bind(*arg);
            }
            let value: Option<Option<i64>> = query.fetch_optional(&self.pool).await?;
            Ok(value.flatten())
        })
        .await
    }

    /// Runs a delete of a room's rows; returns how many went.
    async fn delete(
        &self,
        what: &'static str,
        statement: &'static str,
        room_id: &str,
        args: &[i64],
    ) -> Result<i64> {
        self.retrying(what, || async move {
            let mut query = sqlx::query(statement).bind(room_id);
            for arg in args {
                query = query.bind(*arg);
            }
            let done = query.execute(&self.pool).await?;
            // At most the statement's limit, itself an `i64`.
            Ok(i64::try_from(done.rows_affected()).unwrap_or(i64::MAX))
        })
        .await
    }

    /// Deletes at most `budget` (at least 1) rows of room `room_id`'s log, whose newest
    /// snapshot is at `version`, as [`CellStore::prune_log`] says; returns how many went. Each
    /// statement stands alone: [`CellStore::get_command`] stops finding a command as soon as
    /// its first event is gone, so no reader sees a command without its events in between.
    async fn prune_room(
        &self,
        room_id: &str,
        version: i64,
        older_than: i64,
        budget: i64,
    ) -> Result<i64> {
        // The events that may go are a run from the front of the log: at most `budget` of
        // them, up to the snapshot, and before the first command that has not expired.
        let reach = self
            .one("prune_log", NTH_EVENT, room_id, &[version, budget - 1])
            .await?
            .unwrap_or(version);
        let kept = self
            .one(
                "prune_log",
                FIRST_KEPT_COMMAND,
                room_id,
                &[reach, older_than, version],
            )
            .await?;
        let through = kept.map_or(reach, |first| reach.min(first - 1));
        let events = self
            .delete("prune_log", DELETE_EVENTS, room_id, &[through, budget])
            .await?;
        let left = budget - events;
        if left == 0 {
            return Ok(events);
        }
        // An expired command goes once all of its events have.
        let first_left = self.one("prune_log", FIRST_EVENT, room_id, &[]).await?;
        let gone_through = first_left.map_or(version, |first| version.min(first - 1));
        let commands = self
            .delete(
                "prune_log",
                DELETE_COMMANDS,
                room_id,
                &[gone_through, gone_through, older_than, left],
            )
            .await?;
        if commands > 0 {
            self.first_command_again(room_id).await?;
        }
        Ok(events + commands)
    }

    /// Reads room `room_id`'s first command time again from the front of its log, holding
    /// the cell row as a commit does: a commit writing into the log meanwhile either ended
    /// before (and its commands are read, at READ COMMITTED) or waits and sees the new value.
    async fn first_command_again(&self, room_id: &str) -> Result<()> {
        self.retrying("prune_log", || async move {
            let mut conn = self.pool.acquire().await?;
            sqlx::query("SET TRANSACTION ISOLATION LEVEL READ COMMITTED")
                .execute(&mut *conn)
                .await?;
            let mut tx = sqlx::Connection::begin(&mut *conn).await?;
            sqlx::query("SELECT 1 FROM room_cells WHERE room_id = ? FOR UPDATE")
                .bind(room_id)
                .fetch_optional(&mut *tx)
                .await?;
            sqlx::query(FIRST_COMMAND_AGAIN)
                .bind(room_id)
                .bind(room_id)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    /// [`CellStore::prune_log`]: walks the rooms whose first command expired, oldest first,
    /// and prunes each once, until `limit` rows went or no room is left.
    async fn prune(&self, older_than: i64, limit: i64) -> Result<u64> {
        let mut budget = limit;
        let mut after = (i64::MIN, String::new());
        while budget > 0 {
            let position = &after;
            let page: Vec<(String, i64, i64)> = self
                .retrying("prune_log", || async move {
                    Ok(sqlx::query_as(EXPIRED_ROOMS)
                        .bind(older_than)
                        .bind(position.0)
                        .bind(position.0)
                        .bind(&position.1)
                        .bind(EXPIRED_PAGE)
                        .fetch_all(&self.pool)
                        .await?)
                })
                .await?;
            let full = page.len() as i64 == EXPIRED_PAGE;
            for (room_id, first_command_at, version) in page {
                if budget > 0 {
                    budget -= self
                        .prune_room(&room_id, version, older_than, budget)
                        .await?;
                }
                after = (first_command_at, room_id);
            }
            if !full {
                break;
            }
        }
        stored_u64(limit - budget, "pruned rows")
    }
}

#[async_trait]
impl CellStore for MySqlStore {
    #[tracing::instrument(skip_all, fields(room_id = %room_id), err)]
    async fn activate(&self, room_id: &RoomId, node: &str) -> Result<Activation> {
        let room_id = room_id.as_str();
        self.retrying("activate", || activate_once(self, room_id, node))
            .await
    }

    // The cell logs what a failed commit means (a fenced one is expected after a node lost
    // its room): here only at debug.
    #[tracing::instrument(skip_all, fields(room_id = %batch.room_id), err(level = "debug"))]
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
        let row = self
            .retrying("get_command", || async move {
                // A command whose first event was pruned is being pruned itself: absent.
                Ok(sqlx::query(
                    "SELECT command_id, command, actor, applied_at, first_seq, last_seq
                     FROM room_commands AS c WHERE room_id = ? AND command_id = ?
                       AND (last_seq < first_seq OR EXISTS (
                           SELECT 1 FROM room_events AS e
                           WHERE e.room_id = c.room_id AND e.seq = c.first_seq))",
                )
                .bind(room_id.as_str())
                .bind(command_id.as_str())
                .fetch_optional(&self.pool)
                .await?)
            })
            .await?;
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

    #[tracing::instrument(skip_all, err)]
    async fn prune_log(&self, older_than: Timestamp, limit: u32) -> Result<u64> {
        if limit == 0 {
            return Ok(0);
        }
        self.prune(older_than.as_millis(), i64::from(limit)).await
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

#[cfg(test)]
mod tests {
    use room_testkit::mysql as test_server;
    use sqlx::{AssertSqlSafe, Executor};

    use super::*;
    use crate::MySqlSettings;

    /// `statement` with its placeholders filled with `values`, in order.
    fn filled(statement: &str, values: &[&str]) -> String {
        let mut parts = statement.split('?');
        let mut text = parts.next().unwrap_or_default().to_owned();
        for (part, value) in parts.zip(values.iter().chain(std::iter::repeat(&"0"))) {
            text.push_str(value);
            text.push_str(part);
        }
        text
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn pruning_reads_the_log_through_indexes() {
        let Some(server) = test_server::MySqlServer::from_env("cells::pruning_plans").await else {
            return;
        };
        let database = server.database().await;
        let settings = MySqlSettings::new(database.url.clone());
        MySqlStore::migrate(&settings).await.unwrap();
        let mut conn = database.connect().await;
        // Many rooms with long logs, and the statistics a long-running database has, so that
        // the planner weighs the indexes against real tables.
        let rows = |each: &dyn Fn(usize, usize) -> String| {
            (0..4_000)
                .map(|i| each(i % 40, i / 40 + 1))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let events = rows(&|room, seq| format!("('room-{room}', {seq}, {seq}, '{{}}')"));
        let commands = rows(&|room, seq| {
            format!("('room-{room}', 'c{seq}', '{{}}', '{{}}', {seq}, {seq}, {seq})")
        });
        let snapshots: Vec<String> = (0..40)
            .map(|room| format!("('room-{room}', 50, '{{}}')"))
            .collect();
        for insert in [
            format!("INSERT INTO room_events (room_id, seq, occurred_at, event) VALUES {events}"),
            format!(
                "INSERT INTO room_commands
                     (room_id, command_id, command, actor, applied_at, first_seq, last_seq)
                 VALUES {commands}"
            ),
            format!(
                "INSERT INTO room_snapshots (room_id, version, snapshot) VALUES {}",
                snapshots.join(", ")
            ),
            format!(
                "INSERT INTO room_cells (room_id, epoch, version, owner_node, first_command_at)
                 VALUES {}",
                (0..40)
                    .map(|room| format!("('room-{room}', 1, 100, 'node', 1)"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            "ANALYZE TABLE room_events, room_commands, room_snapshots, room_cells".to_owned(),
        ] {
            conn.execute(AssertSqlSafe(insert)).await.unwrap();
        }
        let room = "'room-7'";
        for (statement, values, index) in [
            (
                EXPIRED_ROOMS,
                &["60", "0", "0", "''", "256"][..],
                "room_cells_by_first_command",
            ),
            (NTH_EVENT, &[room, "50", "10"][..], "PRIMARY"),
            (
                FIRST_KEPT_COMMAND,
                &[room, "20", "60", "50"][..],
                "room_commands_by_seq",
            ),
            (DELETE_EVENTS, &[room, "20", "20"][..], "PRIMARY"),
            (FIRST_EVENT, &[room][..], "PRIMARY"),
            (
                DELETE_COMMANDS,
                &[room, "20", "20", "60", "20"][..],
                "room_commands_by_seq",
            ),
        ] {
            let plan: String = sqlx::query_scalar(AssertSqlSafe(format!(
                "EXPLAIN FORMAT=JSON {}",
                filled(statement, values)
            )))
            .fetch_one(&mut conn)
            .await
            .unwrap();
            // A MIN over a key prefix is one look into the key: "optimized away".
            assert!(
                plan.contains(&format!(r#""key": "{index}""#))
                    || (statement == FIRST_EVENT && plan.contains("Select tables optimized away")),
                "{index} serves {statement}\n{plan}"
            );
            assert!(
                !plan.contains(r#""access_type": "ALL""#),
                "no table is scanned whole: {statement}\n{plan}"
            );
            // The walk over the rooms must stop at its page, so must not sort its range
            // (every room whose first command expired); the other statements read a range of
            // at most the call's limit, bounded by seq.
            assert!(
                statement != EXPIRED_ROOMS || !plan.contains("filesort"),
                "the rows come in index order, unsorted: {statement}\n{plan}"
            );
        }
    }
}
