//! Drives the writes of paid gifts against a SqliteStore and prints the throughput and how
//! well the writer batched them.
//!
//! Each gift is what the gift saga writes: a wallet debit, an order creation and the order's
//! move to DEBITED; then the gift goes to its room's cell, which (like the Room Cell runtime)
//! commits every gift queued for the room in one batch: per gift four events (gift, heat,
//! rank, fuel), one outbox row and the order marked COMPLETED, plus the room's summary.
//!
//! ```text
//! cargo run --release -p adapters-sqlite --example gift_load -- [gifts] [senders] [rooms]
//! ```
//! Defaults: 30000 gifts, 512 concurrent senders, 64 rooms. The database goes to a temporary
//! directory that is deleted afterwards.

#![expect(clippy::print_stdout, reason = "a load tool reports on stdout")]

use std::sync::Arc;
use std::time::Instant;

use adapters_sqlite::{SqliteSettings, SqliteStore};
use room_app::ports::{
    CellStore, CommandRecord, CommitBatch, CreditKind, GiftOrders, RoomSummary, StoredEvent, Wallet,
};
use room_domain::{
    Actor, ApplyGift, Coins, Command, CommandId, CommandKind, DayKey, Event, EventEnvelope, GiftId,
    GiftOrder, GiftSent, GiftSnapshot, OrderId, OrderStatus, RoomId, Timestamp, UserId, WeekKey,
};
use tokio::sync::{mpsc, oneshot};

/// The most gifts a cell commits in one batch.
const MAX_BATCH: usize = 64;

const T0: Timestamp = Timestamp(1_764_460_800_000);

/// A gift on its way to its room's cell, with the channel for the cell's answer.
type Delivery = (GiftOrder, oneshot::Sender<()>);

fn arg(n: usize, default: usize) -> usize {
    std::env::args()
        .nth(n)
        .and_then(|a| a.parse().ok())
        .unwrap_or(default)
}

#[tokio::main]
async fn main() {
    let gifts = arg(1, 30_000);
    let senders = arg(2, 512);
    let rooms = arg(3, 64);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let url = format!("sqlite://{}", dir.path().join("load.db").display());
    let store = Arc::new(SqliteStore::open(&SqliteSettings::new(url)).await.unwrap());

    let mut cells = Vec::new();
    for r in 0..rooms {
        let id = RoomId::new(format!("room-{r}")).unwrap();
        let (sender, receiver) = mpsc::channel(4 * MAX_BATCH);
        tokio::spawn(run_cell(store.clone(), id, receiver));
        cells.push(sender);
    }
    for s in 0..senders {
        let user = UserId::new(format!("sender-{s}")).unwrap();
        store
            .credit(
                &format!("seed-{s}"),
                CreditKind::Admin,
                &user,
                Coins(1 << 40),
            )
            .await
            .unwrap();
    }

    let before = store.write_stats();
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for s in 0..senders {
        let store = store.clone();
        let cell = cells[s % rooms].clone();
        let count = gifts / senders + usize::from(s < gifts % senders);
        tasks.spawn(async move {
            for g in 0..count {
                send_gift(&store, &cell, s, g).await;
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.expect("a sender panicked");
    }
    let elapsed = started.elapsed();
    let stats = store.write_stats();
    let transactions = stats.transactions - before.transactions;
    let jobs = stats.jobs - before.jobs;
    println!(
        "{gifts} gifts in {:.2} s: {:.0} gifts/s; {jobs} write jobs in {transactions} \
         transactions ({:.1} jobs per transaction)",
        elapsed.as_secs_f64(),
        gifts as f64 / elapsed.as_secs_f64(),
        jobs as f64 / transactions.max(1) as f64,
    );
    store.close().await;
}

async fn send_gift(store: &SqliteStore, cell: &mpsc::Sender<Delivery>, sender: usize, n: usize) {
    let sender_id = UserId::new(format!("sender-{sender}")).unwrap();
    let order_id = OrderId::new(format!("o-{sender}-{n}")).unwrap();
    let apply = ApplyGift {
        order_id: order_id.clone(),
        sender: sender_id.clone(),
        recipients: vec![UserId::new("host").unwrap()],
        gift: GiftSnapshot {
            gift_id: GiftId::new("rose").unwrap(),
            price: Coins(10),
            heat: 10,
            fuel: 10,
            lucky: false,
            billing_version: None,
        },
        count: 1,
        lucky_draw: n as u64,
        scope: None,
    };
    let order = GiftOrder::new(RoomId::new("room-0").unwrap(), &apply, T0).unwrap();
    store
        .debit(order_id.as_str(), &sender_id, order.total)
        .await
        .unwrap();
    store.create_or_get(&order).await.unwrap();
    let mut debited = order;
    debited.status = OrderStatus::Debited;
    store.update(&debited, OrderStatus::Pending).await.unwrap();
    let (reply, applied) = oneshot::channel();
    cell.send((debited, reply)).await.unwrap();
    applied.await.unwrap();
}

/// One room's cell: commits every queued gift in one batch, then answers their senders.
async fn run_cell(store: Arc<SqliteStore>, room_id: RoomId, mut gifts: mpsc::Receiver<Delivery>) {
    let activation = store.activate(&room_id, "node-1").await.unwrap();
    let mut version = activation.version;
    let mut queued = Vec::with_capacity(MAX_BATCH);
    while gifts.recv_many(&mut queued, MAX_BATCH).await > 0 {
        let mut batch = CommitBatch {
            room_id: room_id.clone(),
            epoch: activation.epoch,
            expected_version: version,
            commands: Vec::new(),
            events: Vec::new(),
            outbox: Vec::new(),
            orders: Vec::new(),
            timers: Vec::new(),
            payouts: Vec::new(),
            summary: None,
        };
        for (order, _) in &queued {
            let v = version;
            let gift = Event::RoomGiftSent(GiftSent {
                order_id: order.order_id.clone(),
                sender: order.sender.clone(),
                recipients: order.recipients.clone(),
                gift_id: order.gift.gift_id.clone(),
                count: order.count,
                unit_price: order.gift.price,
                total_value: order.total,
                heat_added: 10,
                fuel_added: 10,
                lucky: None,
                robot: false,
                billing_version: None,
                sender_nickname: None,
                sender_avatar_url: None,
            });
            let events = [
                gift.clone(),
                Event::RoomHeatChanged {
                    heat: v as i64 * 10,
                    delta: 10,
                },
                Event::RoomRankChanged {
                    user: order.sender.clone(),
                    day_key: DayKey(20_000),
                    week_key: WeekKey(2_857),
                    day_total: Coins(10),
                    week_total: Coins(10),
                },
                Event::RoomRocketFuelChanged {
                    level: 1,
                    fuel: 10,
                    threshold: 1_000_000,
                },
            ];
            let command_id = CommandId::from(order.order_id.clone());
            batch.commands.push(CommandRecord {
                command_id: command_id.clone(),
                command: Command::new(command_id, CommandKind::ApplyGift(order.apply_command())),
                actor: Actor::System,
                applied_at: T0,
                first_seq: v + 1,
                last_seq: v + 4,
            });
            batch
                .outbox
                .push(EventEnvelope::new(room_id.clone(), v + 1, T0, &gift));
            for (i, event) in events.into_iter().enumerate() {
                batch.events.push(StoredEvent {
                    seq: v + 1 + i as u64,
                    occurred_at: T0,
                    event,
                });
            }
            let mut completed = order.clone();
            completed.status = OrderStatus::Completed;
            batch.orders.push(completed);
            version += 4;
        }
        batch.summary = Some(RoomSummary {
            room_id: room_id.clone(),
            owner: UserId::new("host").unwrap(),
            name: "Load".into(),
            open: true,
            heat: version as i64 * 10,
            online: 50,
            locked: false,
            version,
            region: "load".into(),
            cover_url: None,
            seats_taken: 8,
            created_at: T0,
            recent_heat_milli: version as i64 * 10_000,
            recent_heat_at: T0,
        });
        store.commit(&batch).await.unwrap();
        for (_, reply) in queued.drain(..) {
            let _ = reply.send(());
        }
    }
}
