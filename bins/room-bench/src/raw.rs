//! The raw capacity of the MySQL server for what the service's gifts write (`--storage
//! mysql`): after a closed loop, the rows one gift of it wrote are read back from the
//! service's database, and a plain sqlx loop writes rows like them into a fresh database of
//! the same server, in the same transactions, with the same number of concurrent senders
//! and the batch size the service's cells committed on average. The service's rate over
//! this one says what the service costs above its database.
//!
//! What one gift writes, in the service and here:
//! - its order, `INSERT` on its own (the order is PENDING);
//! - its debit, one transaction: the conditional `UPDATE` of the balance, the balance read
//!   back, the wallet entry;
//! - its share of a room commit, one transaction per batch of the room's gifts: the cell row
//!   locked and its version moved, the commands, events and outbox rows in multi-row
//!   `INSERT`s, each order's conditional `UPDATE` to its final state, the room summary, and
//!   a snapshot every [`SNAPSHOT_EVERY`] events (when the service's room had written one).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use sqlx::mysql::{MySqlPool, MySqlPoolOptions};
use sqlx::{MySql, QueryBuilder};
use tokio::sync::{mpsc, oneshot};

use crate::load::SENDERS;
use crate::report::report;

/// Events between two snapshots of a room, as `room_app::CellConfig` has it by default.
const SNAPSHOT_EVERY: u64 = 1_000;

/// The rows one gift of the service wrote, read back from its database.
pub struct GiftRows {
    command: Vec<u8>,
    actor: Vec<u8>,
    /// (occurred_at, event) of each event of the gift's command.
    events: Vec<(i64, Vec<u8>)>,
    envelopes: Vec<Vec<u8>>,
    order_body: Vec<u8>,
    order_status: String,
    /// The room's snapshot, if the service wrote one.
    snapshot: Option<String>,
    summary_name: String,
}

impl GiftRows {
    /// The last command of `room_id` (a gift: the closed loop ends with gifts) and what it
    /// wrote, in the database at `url`.
    pub async fn sample(url: &str, room_id: &str) -> Result<GiftRows> {
        let pool = MySqlPoolOptions::new()
            .max_connections(1)
            .connect(url)
            .await?;
        let (command, actor, first, last): (Vec<u8>, Vec<u8>, i64, i64) = sqlx::query_as(
            "SELECT command, actor, first_seq, last_seq FROM room_commands
             WHERE room_id = ? ORDER BY last_seq DESC LIMIT 1",
        )
        .bind(room_id)
        .fetch_one(&pool)
        .await
        .context("the room's last command")?;
        let kind: serde_json::Value = room_app::stored::decode(&command, "command")?;
        if kind["type"] != "apply_gift" {
            bail!("the room's last command is not a gift: {kind}");
        }
        let events: Vec<(i64, Vec<u8>)> = sqlx::query_as(
            "SELECT occurred_at, event FROM room_events
             WHERE room_id = ? AND seq BETWEEN ? AND ? ORDER BY seq",
        )
        .bind(room_id)
        .bind(first)
        .bind(last)
        .fetch_all(&pool)
        .await?;
        let envelopes: Vec<Vec<u8>> = sqlx::query_scalar(
            "SELECT envelope FROM room_outbox WHERE room_id = ? AND seq BETWEEN ? AND ?
             ORDER BY seq",
        )
        .bind(room_id)
        .bind(first)
        .bind(last)
        .fetch_all(&pool)
        .await?;
        let (order_status, order_body): (String, Vec<u8>) = sqlx::query_as(
            "SELECT status, body FROM gift_orders WHERE room_id = ?
             ORDER BY created_at DESC LIMIT 1",
        )
        .bind(room_id)
        .fetch_one(&pool)
        .await
        .context("the room's last order")?;
        // A room of the spread gets fewer than a snapshot's worth of events in a run.
        let snapshot: Option<String> =
            sqlx::query_scalar("SELECT snapshot FROM room_snapshots WHERE room_id = ?")
                .bind(room_id)
                .fetch_optional(&pool)
                .await?;
        let summary_name: String =
            sqlx::query_scalar("SELECT name FROM room_summaries WHERE room_id = ?")
                .bind(room_id)
                .fetch_one(&pool)
                .await?;
        pool.close().await;
        Ok(GiftRows {
            command,
            actor,
            events,
            envelopes,
            order_body,
            order_status,
            snapshot,
            summary_name,
        })
    }
}

/// One gift waiting for its room's commit.
struct Pending {
    order_id: String,
    sender: String,
    done: oneshot::Sender<()>,
}

/// Writes gifts like `rows` into the fresh, migrated database at `url` for `duration`:
/// [`SENDERS`] senders over `rooms` rooms, each room's commits at most `batch` gifts, over a
/// pool of `connections`. Answers gifts per second.
pub async fn capacity(
    url: &str,
    rows: Arc<GiftRows>,
    rooms: usize,
    batch: usize,
    connections: u32,
    duration: Duration,
) -> Result<f64> {
    let pool = MySqlPoolOptions::new()
        .max_connections(connections)
        .connect(url)
        .await?;
    for s in 0..SENDERS {
        sqlx::query("INSERT INTO wallet_accounts (user_id, balance) VALUES (?, ?)")
            .bind(format!("raw-sender-{s}"))
            .bind(1_000_000_000_000i64)
            .execute(&pool)
            .await?;
    }
    let mut writers = Vec::new();
    let mut queues = Vec::new();
    for r in 0..rooms {
        let room_id = format!("raw-room-{r}");
        sqlx::query(
            "INSERT INTO room_cells (room_id, epoch, version, owner_node) VALUES (?, 1, 0, 'raw')",
        )
        .bind(&room_id)
        .execute(&pool)
        .await?;
        let (queue, receiver) = mpsc::unbounded_channel();
        queues.push(queue);
        writers.push(tokio::spawn(room_writer(
            pool.clone(),
            rows.clone(),
            room_id,
            receiver,
            batch.max(1),
        )));
    }
    let done = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let deadline = started + duration;
    let mut senders = Vec::new();
    for s in 0..SENDERS {
        let (pool, rows, done) = (pool.clone(), rows.clone(), done.clone());
        let queue = queues[s % rooms].clone();
        let room_id = format!("raw-room-{}", s % rooms);
        senders.push(tokio::spawn(async move {
            let sender = format!("raw-sender-{s}");
            let mut n = 0u64;
            while Instant::now() < deadline {
                let order_id = format!("raw-{s}-{n}");
                n += 1;
                place_and_debit(&pool, &rows, &room_id, &sender, &order_id).await?;
                let (tx, rx) = oneshot::channel();
                queue
                    .send(Pending {
                        order_id,
                        sender: sender.clone(),
                        done: tx,
                    })
                    .context("a room writer stopped")?;
                rx.await.context("a room writer dropped a gift")?;
                done.fetch_add(1, Ordering::Relaxed);
            }
            anyhow::Ok(())
        }));
    }
    for sender in senders {
        sender.await??;
    }
    let elapsed = started.elapsed().as_secs_f64();
    drop(queues);
    for writer in writers {
        writer.await??;
    }
    pool.close().await;
    Ok(done.load(Ordering::Relaxed) as f64 / elapsed)
}

/// The order's insert and the debit's transaction.
async fn place_and_debit(
    pool: &MySqlPool,
    rows: &GiftRows,
    room_id: &str,
    sender: &str,
    order_id: &str,
) -> Result<()> {
    let now = millis_now();
    sqlx::query(
        "INSERT INTO gift_orders (order_id, room_id, sender, status, created_at, body)
         VALUES (?, ?, ?, 'PENDING', ?, ?)",
    )
    .bind(order_id)
    .bind(room_id)
    .bind(sender)
    .bind(now)
    .bind(&rows.order_body)
    .execute(pool)
    .await?;
    let mut tx = pool.begin().await?;
    let amount = 10i64;
    let taken = sqlx::query(
        "UPDATE wallet_accounts SET balance = balance - ? WHERE user_id = ? AND balance >= ?",
    )
    .bind(amount)
    .bind(sender)
    .bind(amount)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if taken != 1 {
        bail!("the debit of {sender} moved nothing");
    }
    let balance: i64 = sqlx::query_scalar("SELECT balance FROM wallet_accounts WHERE user_id = ?")
        .bind(sender)
        .fetch_one(&mut *tx)
        .await?;
    sqlx::query(
        "INSERT INTO wallet_entries (kind, op_id, state, user_id, amount, balance_after)
         VALUES ('debit', ?, 'done', ?, ?, ?)",
    )
    .bind(format!("gift:{order_id} {sender}"))
    .bind(sender)
    .bind(amount)
    .bind(balance)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(())
}

/// A room's commits: what is queued, up to `batch` gifts, one transaction at a time.
async fn room_writer(
    pool: MySqlPool,
    rows: Arc<GiftRows>,
    room_id: String,
    mut queue: mpsc::UnboundedReceiver<Pending>,
    batch: usize,
) -> Result<()> {
    let (mut version, mut seq, mut since_snapshot) = (0i64, 0i64, 0u64);
    let mut gifts = Vec::with_capacity(batch);
    while queue.recv_many(&mut gifts, batch).await > 0 {
        let mut tx = pool.begin().await?;
        let (epoch, stored): (i64, i64) =
            sqlx::query_as("SELECT epoch, version FROM room_cells WHERE room_id = ? FOR UPDATE")
                .bind(&room_id)
                .fetch_one(&mut *tx)
                .await?;
        if epoch != 1 || stored != version {
            bail!("room {room_id} moved under its writer");
        }
        version += gifts.len() as i64;
        sqlx::query("UPDATE room_cells SET version = ? WHERE room_id = ?")
            .bind(version)
            .bind(&room_id)
            .execute(&mut *tx)
            .await?;
        let per_gift = rows.events.len() as i64;
        let mut commands = QueryBuilder::<MySql>::new(
            "INSERT INTO room_commands
                 (room_id, command_id, command, actor, applied_at, first_seq, last_seq) ",
        );
        commands.push_values(gifts.iter().enumerate(), |mut values, (i, gift)| {
            let first = seq + 1 + i as i64 * per_gift;
            values
                .push_bind(&room_id)
                .push_bind(&gift.order_id)
                .push_bind(&rows.command)
                .push_bind(&rows.actor)
                .push_bind(millis_now())
                .push_bind(first)
                .push_bind(first + per_gift - 1);
        });
        commands.build().execute(&mut *tx).await?;
        let sample = &rows.events;
        let events = (0..gifts.len()).flat_map(|i| {
            sample
                .iter()
                .enumerate()
                .map(move |(j, event)| (i * sample.len() + j, event))
        });
        let mut insert = QueryBuilder::<MySql>::new(
            "INSERT INTO room_events (room_id, seq, occurred_at, event) ",
        );
        insert.push_values(events, |mut values, (k, (occurred_at, event))| {
            values
                .push_bind(&room_id)
                .push_bind(seq + 1 + k as i64)
                .push_bind(*occurred_at)
                .push_bind(event);
        });
        insert.build().execute(&mut *tx).await?;
        if !rows.envelopes.is_empty() {
            let sample = &rows.envelopes;
            let envelopes = (0..gifts.len()).flat_map(|i| {
                sample
                    .iter()
                    .enumerate()
                    .map(move |(j, envelope)| (i as i64 * per_gift + j as i64, envelope))
            });
            let mut outbox =
                QueryBuilder::<MySql>::new("INSERT INTO room_outbox (room_id, seq, envelope) ");
            outbox.push_values(envelopes, |mut values, (k, envelope)| {
                values
                    .push_bind(&room_id)
                    .push_bind(seq + 1 + k)
                    .push_bind(envelope);
            });
            outbox.build().execute(&mut *tx).await?;
        }
        for gift in &gifts {
            let updated = sqlx::query(
                "UPDATE gift_orders
                 SET room_id = ?, sender = ?, status = ?, created_at = ?, body = ?
                 WHERE sender = ? AND order_id = ?
                   AND (status = 'PENDING'
                        OR (status = 'DEBITED'
                            AND COALESCE(JSON_TYPE(JSON_EXTRACT(body, '$.rejection')), 'NULL') = 'NULL'))",
            )
            .bind(&room_id)
            .bind(&gift.sender)
            .bind(&rows.order_status)
            .bind(millis_now())
            .bind(&rows.order_body)
            .bind(&gift.sender)
            .bind(&gift.order_id)
            .execute(&mut *tx)
            .await?;
            if updated.rows_affected() != 1 {
                bail!("order {} was not pending", gift.order_id);
            }
        }
        sqlx::query(
            "INSERT INTO room_summaries (room_id, owner, name, open, heat, online, locked, version)
             VALUES (?, 'raw-owner', ?, TRUE, ?, 66, FALSE, ?)
             ON DUPLICATE KEY UPDATE owner = 'raw-owner', name = ?, open = TRUE, heat = ?,
                 online = 66, locked = FALSE, version = ?",
        )
        .bind(&room_id)
        .bind(&rows.summary_name)
        .bind(version)
        .bind(version)
        .bind(&rows.summary_name)
        .bind(version)
        .bind(version)
        .execute(&mut *tx)
        .await?;
        seq += gifts.len() as i64 * per_gift;
        since_snapshot += gifts.len() as u64 * per_gift as u64;
        if let Some(snapshot) = rows
            .snapshot
            .as_ref()
            .filter(|_| since_snapshot >= SNAPSHOT_EVERY)
        {
            since_snapshot = 0;
            sqlx::query(
                "INSERT INTO room_snapshots (room_id, version, snapshot) VALUES (?, ?, ?)
                 ON DUPLICATE KEY UPDATE version = VALUES(version), snapshot = VALUES(snapshot)",
            )
            .bind(&room_id)
            .bind(version)
            .bind(snapshot)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        for gift in gifts.drain(..) {
            let _ = gift.done.send(());
        }
    }
    Ok(())
}

fn millis_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Reports the raw capacity beside the service's `service_rate` for a phase of `rooms`
/// rooms whose commits averaged `batch` gifts; `rows` come from the service's database.
pub async fn compare(
    phase: &str,
    fresh_url: &str,
    rows: Arc<GiftRows>,
    rooms: usize,
    batch: f64,
    service_rate: f64,
    duration: Duration,
) -> Result<()> {
    let connections = adapters_mysql::MySqlSettings::default().max_connections;
    let batch = batch.round().max(1.0) as usize;
    let raw = capacity(fresh_url, rows, rooms, batch, connections, duration).await?;
    report(
        &format!("{phase}: raw MySQL, same rows, batch {batch} (gifts/s)"),
        &format!("{raw:.0}"),
    );
    report(
        &format!("{phase}: service / raw MySQL"),
        &format!("{:.0} %", 100.0 * service_rate / raw.max(1.0)),
    );
    Ok(())
}
