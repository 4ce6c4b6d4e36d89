//! The display messenger against the fake Tencent IM, on this machine's cores:
//!
//! 1. capacity: 1,000 rooms each sent 40 events a second, more than their budgets carry, so
//!    the figure is what the adapter (and the fake, sharing the cores) sustains;
//! 2. lag: 200 rooms each sent 10 events a second, within budget: commit-to-send lag from
//!    `publish` to the fake's receipt, p50 / p99 / max;
//! 3. a hot room sent 1,000 gifts a second (each with its heat, rank and fuel): every gift
//!    must arrive, at most 40 messages in any second, and no message dropped by the fake.
//!
//! Run: `cargo bench -p adapters-tencent-im --features fake --bench display`.

// A benchmark's report is its output.
#![allow(clippy::print_stdout)]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use adapters_tencent_im::{DisplaySettings, FakeIm, FakeMessage, ImClient, ImMessenger, group_id};
use room_app::ports::{DisplayMessage, Messenger};
use room_domain::{
    Coins, DayKey, Event, EventEnvelope, GiftId, GiftSent, LeaveReason, OrderId, RoomId, Timestamp,
    UserId, WeekKey,
};
use tokio_util::sync::CancellationToken;

const PHASE: Duration = Duration::from_secs(5);
const TICK: Duration = Duration::from_millis(25);

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        capacity().await;
        lag().await;
        hot_room().await;
    });
}

struct Bench {
    fake: FakeIm,
    messenger: Arc<ImMessenger>,
    cancel: CancellationToken,
    rooms: Vec<RoomId>,
}

impl Bench {
    async fn new(rooms: usize) -> Bench {
        let fake = FakeIm::start().await;
        let rooms: Vec<RoomId> = (0..rooms)
            .map(|i| RoomId::new(format!("room-{i}")).unwrap())
            .collect();
        for room in &rooms {
            fake.add_group(&group_id(room));
        }
        let client = ImClient::new(&fake.settings()).unwrap();
        let cancel = CancellationToken::new();
        let (messenger, _handle) =
            ImMessenger::start(client, &DisplaySettings::default(), cancel.clone());
        Bench {
            fake,
            messenger: Arc::new(messenger),
            cancel,
            rooms,
        }
    }
}

fn display(room: &RoomId, seq: u64, event: &Event) -> DisplayMessage {
    let delivery = event.delivery();
    DisplayMessage {
        envelope: EventEnvelope::new(room.clone(), seq, Timestamp(1_764_460_800_000), event),
        priority: delivery.im.expect("a display event"),
        coalesce_key: delivery.coalesce_key,
    }
}

fn left(n: u64) -> Event {
    Event::RoomUserLeft {
        user: UserId::new(format!("u-{}", n % 1000)).unwrap(),
        reason: LeaveReason::Left,
        robot: false,
    }
}

fn gift(n: u64) -> Event {
    Event::RoomGiftSent(GiftSent {
        order_id: OrderId::new(format!("o-{n}")).unwrap(),
        sender: UserId::new(format!("u-{}", n % 50)).unwrap(),
        recipients: vec![UserId::new("host").unwrap()],
        gift_id: GiftId::new("rose").unwrap(),
        count: 1,
        unit_price: Coins(10),
        total_value: Coins(10),
        heat_added: 10,
        fuel_added: 10,
        lucky: None,
        robot: false,
        billing_version: None,
        sender_nickname: None,
        sender_avatar_url: None,
    })
}

/// Sends each room `per_room_per_sec` events a second for [`PHASE`], in ticks of [`TICK`],
/// the rooms spread over the second; returns when each (room, seq) was published.
async fn drive(bench: &Bench, per_room_per_sec: u64) -> HashMap<(String, u64), Instant> {
    let rooms = bench.rooms.len() as u64;
    let tick_ms = TICK.as_millis() as u64;
    let mut published = HashMap::new();
    let mut seqs = vec![0u64; bench.rooms.len()];
    let mut ticker = tokio::time::interval(TICK);
    let end = Instant::now() + PHASE;
    let mut tick = 0u64;
    while Instant::now() < end {
        ticker.tick().await;
        tick += 1;
        for (index, room) in bench.rooms.iter().enumerate() {
            // Events due by this tick, the rooms' first events spread over one interval.
            let offset_ms = index as u64 * 1000 / (rooms * per_room_per_sec);
            let due = (tick * tick_ms + offset_ms) * per_room_per_sec / 1000;
            if due <= seqs[index] {
                continue;
            }
            let mut batch = Vec::with_capacity((due - seqs[index]) as usize);
            while seqs[index] < due {
                seqs[index] += 1;
                batch.push(display(room, seqs[index], &left(seqs[index])));
            }
            let at = Instant::now();
            for message in &batch {
                published.insert((room.to_string(), message.envelope.seq), at);
            }
            bench.messenger.publish(room, batch).await;
        }
    }
    published
}

/// Lags of every received event, from publish to the fake's receipt, sorted.
fn lags(messages: &[FakeMessage], published: &HashMap<(String, u64), Instant>) -> Vec<Duration> {
    let mut lags: Vec<Duration> = messages
        .iter()
        .flat_map(|m| {
            m.events().into_iter().filter_map(|e| {
                let key = (e["room_id"].as_str()?.to_owned(), e["seq"].as_u64()?);
                published
                    .get(&key)
                    .map(|at| m.received_at.saturating_duration_since(*at))
            })
        })
        .collect();
    lags.sort();
    lags
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

async fn capacity() {
    let bench = Bench::new(1_000).await;
    let started = Instant::now();
    let published = drive(&bench, 40).await;
    let elapsed = started.elapsed().as_secs_f64();
    let messages = bench.fake.take_messages();
    let events: usize = messages.iter().map(|m| m.events().len()).sum();
    let lags = lags(&messages, &published);
    let stats = bench.messenger.stats();
    println!(
        "capacity: 1,000 rooms x 40 events/s offered ({} events) for {elapsed:.1} s",
        published.len()
    );
    println!(
        "  sustained: {:.0} messages/s, {:.0} events/s to the fake; shed {} \
         (low/normal/high {}/{}/{}), dropped by IM {}, send failures {}",
        messages.len() as f64 / elapsed,
        events as f64 / elapsed,
        stats.dropped_shed,
        stats.shed_low,
        stats.shed_normal,
        stats.shed_high,
        stats.dropped_by_im,
        stats.dropped_send_failed,
    );
    println!(
        "  lag at this load: p50 {}, p99 {}",
        ms(quantile(&lags, 0.5)),
        ms(quantile(&lags, 0.99))
    );
    bench.cancel.cancel();
}

async fn lag() {
    let bench = Bench::new(200).await;
    let started = Instant::now();
    let published = drive(&bench, 10).await;
    // Let the last events arrive.
    let deadline = Instant::now() + Duration::from_secs(5);
    while bench.messenger.stats().events_sent < published.len() as u64 && Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let messages = bench.fake.take_messages();
    let lags = lags(&messages, &published);
    println!(
        "lag: 200 rooms x 10 events/s ({} events) for {elapsed:.1} s",
        published.len()
    );
    println!(
        "  commit-to-send lag (publish to the fake's receipt): p50 {}, p99 {}, max {}; \
         {} of {} events delivered, {} messages",
        ms(quantile(&lags, 0.5)),
        ms(quantile(&lags, 0.99)),
        ms(quantile(&lags, 1.0)),
        lags.len(),
        published.len(),
        messages.len(),
    );
    bench.cancel.cancel();
}

async fn hot_room() {
    let bench = Bench::new(1).await;
    let room = bench.rooms[0].clone();
    let group = group_id(&room);
    let seconds = PHASE.as_secs();
    let gifts = 1_000 * seconds;
    let mut ticker = tokio::time::interval(Duration::from_millis(10));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let started = Instant::now();
    let mut seq = 0;
    for n in 0..gifts {
        if n % 10 == 0 {
            ticker.tick().await;
        }
        let base = seq;
        seq += 4;
        let batch = vec![
            display(&room, base + 1, &gift(n)),
            display(
                &room,
                base + 2,
                &Event::RoomHeatChanged {
                    heat: n as i64 * 10,
                    delta: 10,
                },
            ),
            display(
                &room,
                base + 3,
                &Event::RoomRankChanged {
                    user: UserId::new(format!("u-{}", n % 50)).unwrap(),
                    day_key: DayKey(20_422),
                    week_key: WeekKey(2_917),
                    day_total: Coins(n as i64),
                    week_total: Coins(n as i64),
                },
            ),
            display(
                &room,
                base + 4,
                &Event::RoomRocketFuelChanged {
                    level: 1,
                    fuel: n as i64,
                    threshold: 1 << 40,
                },
            ),
        ];
        bench.messenger.publish(&room, batch).await;
    }
    let publishing = started.elapsed().as_secs_f64();
    let count_gifts = |messages: &[FakeMessage]| {
        messages
            .iter()
            .flat_map(FakeMessage::events)
            .filter(|e| e["type"] == "RoomGiftSent")
            .count()
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while count_gifts(&bench.fake.messages(&group)) < gifts as usize && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let messages = bench.fake.messages(&group);
    let delivered = count_gifts(&messages);
    let times: Vec<Instant> = messages.iter().map(|m| m.received_at).collect();
    let busiest = (0..times.len())
        .map(|i| {
            times[i..]
                .iter()
                .take_while(|t| t.duration_since(times[i]) < Duration::from_secs(1))
                .count()
        })
        .max()
        .unwrap_or(0);
    let span = match (times.first(), times.last()) {
        (Some(first), Some(last)) => last.duration_since(*first).as_secs_f64().max(1e-3),
        _ => 1.0,
    };
    let stats = bench.messenger.stats();
    println!(
        "hot room: {gifts} gifts (with heat, rank, fuel: {} events) in {publishing:.1} s",
        seq
    );
    println!(
        "  High events delivered: {delivered} of {gifts}; messages to the group: {} \
         ({:.1}/s on average, {busiest} in the busiest second); dropped by the fake: {}; \
         shed high {}",
        messages.len(),
        messages.len() as f64 / span,
        bench.fake.dropped_count(&group),
        stats.shed_high,
    );
    bench.cancel.cancel();
}
