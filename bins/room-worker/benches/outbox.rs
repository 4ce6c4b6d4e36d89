//! The outbox publisher's throughput and lag, from MariaDB to a Kafka broker, through the
//! same pass `room-worker` runs ([`workers::publish_outbox`]) with the production adapters
//! (`MySqlStore`, `KafkaPublisher`).
//!
//! - drain: `--events` outbox rows (default 200,000, written by commits of 100 events to 200
//!   rooms) are published from a standing start: events per second;
//! - steady: commits write `--rate` events per second (default 10,000) for `--seconds`
//!   (default 10) while the publisher runs as the worker runs it; the commit-to-ack lag of
//!   every row (the time its row was marked delivered minus the time its commit returned),
//!   p50 / p99 / max.
//!
//! Usage: `cargo bench -p room-worker --bench outbox -- [--mysql URL] [--kafka BROKERS]
//! [--events N] [--rate N] [--seconds N]` (defaults `mysql://root@127.0.0.1:3306`,
//! `127.0.0.1:9092`). It creates, and afterwards drops, a database and a topic of its own.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use adapters_mq::{KafkaPublisher, KafkaSettings};
use adapters_mysql::{MySqlSettings, MySqlStore};
use anyhow::{Context, Result};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use room_app::ports::{
    CellStore, ClockRef, CommandRecord, CommitBatch, EventPublisherRef, OutboxRef, StoredEvent,
};
use room_app::{SystemClock, workers};
use room_domain::{
    Actor, Command, CommandId, CommandKind, Event, EventEnvelope, RoomId, Timestamp, UserId,
};
use sqlx::{AssertSqlSafe, Connection, MySqlConnection};

const ROOMS: usize = 200;
const EVENTS_PER_COMMIT: u64 = 100;
const BATCH: u32 = 1000;
const PARTITIONS: i32 = 6;

struct Options {
    mysql: String,
    kafka: String,
    events: usize,
    rate: usize,
    seconds: u64,
}

fn options() -> Result<Options> {
    let mut options = Options {
        mysql: "mysql://root@127.0.0.1:3306".into(),
        kafka: "127.0.0.1:9092".into(),
        events: 200_000,
        rate: 10_000,
        seconds: 10,
    };
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    while let Some(arg) = args.next() {
        let value = args
            .next()
            .with_context(|| format!("{arg} needs a value"))?;
        match arg.as_str() {
            "--mysql" => options.mysql = value,
            "--kafka" => options.kafka = value,
            "--events" => options.events = value.parse()?,
            "--rate" => options.rate = value.parse()?,
            "--seconds" => options.seconds = value.parse()?,
            _ => anyhow::bail!("unknown option {arg}"),
        }
    }
    Ok(options)
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// One room's writer: its epoch and version.
struct Writer {
    room: RoomId,
    epoch: u64,
    version: u64,
}

impl Writer {
    /// The next commit of `count` durable events.
    fn batch(&mut self, count: u64) -> CommitBatch {
        let at = Timestamp(now_ms());
        let first = self.version + 1;
        let mut events = Vec::new();
        let mut outbox = Vec::new();
        for seq in first..first + count {
            let event = Event::RoomChatEnabledChanged {
                enabled: seq % 2 == 0,
                by: Some(UserId::new("owner").unwrap()),
            };
            outbox.push(EventEnvelope::new(self.room.clone(), seq, at, &event));
            events.push(StoredEvent {
                seq,
                occurred_at: at,
                event,
            });
        }
        let id = CommandId::new(format!("bench-{first}")).unwrap();
        let batch = CommitBatch {
            room_id: self.room.clone(),
            epoch: self.epoch,
            expected_version: self.version,
            commands: vec![CommandRecord {
                command_id: id.clone(),
                command: Command::new(id, CommandKind::SetChatEnabled { enabled: true }),
                actor: Actor::System,
                applied_at: at,
                first_seq: first,
                last_seq: first + count - 1,
            }],
            events,
            outbox,
            orders: Vec::new(),
            timers: Vec::new(),
            payouts: Vec::new(),
            summary: None,
        };
        self.version += count;
        batch
    }
}

fn percentile(sorted: &[i64], p: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<()> {
    let options = options()?;
    let unique = format!("{}_{}", std::process::id(), now_ms());
    let database = format!("room_bench_outbox_{unique}");
    let mut server = MySqlConnection::connect(&options.mysql)
        .await
        .context("cannot reach MySQL (--mysql)")?;
    sqlx::raw_sql(AssertSqlSafe(format!("CREATE DATABASE {database}")))
        .execute(&mut server)
        .await?;
    let url = format!("{}/{database}", options.mysql.trim_end_matches('/'));
    let mut settings = MySqlSettings::new(&url);
    settings.max_connections = 8;
    MySqlStore::migrate(&settings).await?;
    let store = Arc::new(MySqlStore::open(&settings).await?);

    let topic = format!("room.events.bench.{unique}");
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", &options.kafka)
        .create()?;
    for result in admin
        .create_topics(
            &[NewTopic::new(
                &topic,
                PARTITIONS,
                TopicReplication::Fixed(1),
            )],
            &AdminOptions::new().operation_timeout(Some(Duration::from_secs(10))),
        )
        .await?
    {
        result.map_err(|(name, code)| anyhow::anyhow!("cannot create {name}: {code}"))?;
    }
    let mut kafka = KafkaSettings::new(&options.kafka);
    kafka.topic = topic.clone();
    let publisher: EventPublisherRef = Arc::new(KafkaPublisher::connect(&kafka).await?);
    let outbox: OutboxRef = store.clone();
    let clock: ClockRef = Arc::new(SystemClock);

    let mut writers = Vec::new();
    for n in 0..ROOMS {
        let room = RoomId::new(format!("bench-room-{n}")).unwrap();
        let activation = store.activate(&room, "bench").await?;
        writers.push(Writer {
            room,
            epoch: activation.epoch,
            version: activation.version,
        });
    }

    // Drain: a standing backlog.
    let commits = options.events.div_ceil(EVENTS_PER_COMMIT as usize);
    let filled = Instant::now();
    for n in 0..commits {
        let batch = writers[n % ROOMS].batch(EVENTS_PER_COMMIT);
        store.commit(&batch).await?;
    }
    let total = commits as u64 * EVENTS_PER_COMMIT;
    eprintln!(
        "filled {total} outbox rows in {:.1} s",
        filled.elapsed().as_secs_f64()
    );
    let started = Instant::now();
    let mut published = 0;
    while published < total {
        published += workers::publish_outbox(&outbox, &publisher, &clock, BATCH, 10).await?;
    }
    let drain = started.elapsed().as_secs_f64();
    eprintln!(
        "drain: {published} events in {drain:.2} s = {:.0} events/s (batches of {BATCH}, {PARTITIONS} partitions)",
        published as f64 / drain
    );

    // Steady: commits at a rate while the publisher runs as the worker runs it.
    let mut committed: HashMap<(String, u64), i64> = HashMap::new();
    let stop = tokio_util::sync::CancellationToken::new();
    let publishing = tokio::spawn({
        let (outbox, publisher, clock, stop) = (
            outbox.clone(),
            publisher.clone(),
            clock.clone(),
            stop.clone(),
        );
        async move {
            loop {
                let done = workers::publish_outbox(&outbox, &publisher, &clock, BATCH, 10)
                    .await
                    .expect("publish");
                if done == 0 {
                    if stop.is_cancelled() {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    });
    let per_tick = (options.rate / 100).max(1) as u64; // one commit of this many events per 10 ms
    let mut ticker = tokio::time::interval(Duration::from_millis(10));
    let end = Instant::now() + Duration::from_secs(options.seconds);
    let mut n = 0;
    while Instant::now() < end {
        ticker.tick().await;
        let writer = &mut writers[n % ROOMS];
        n += 1;
        let batch = writer.batch(per_tick);
        store.commit(&batch).await?;
        let at = now_ms();
        for event in &batch.events {
            committed.insert((writer.room.to_string(), event.seq), at);
        }
    }
    stop.cancel();
    publishing.await?;
    let rows: Vec<(String, i64, Option<i64>)> =
        sqlx::query_as("SELECT room_id, seq, delivered_at FROM room_outbox")
            .fetch_all(&mut MySqlConnection::connect(&url).await?)
            .await?;
    let mut lags: Vec<i64> = rows
        .iter()
        .filter_map(|(room, seq, delivered)| {
            let at = committed.get(&(room.clone(), u64::try_from(*seq).ok()?))?;
            Some(delivered.expect("every row delivered") - at)
        })
        .collect();
    lags.sort_unstable();
    eprintln!(
        "steady: {} events at {} events/s offered; commit-to-ack lag p50 {} ms, p99 {} ms, max {} ms",
        lags.len(),
        per_tick * 100,
        percentile(&lags, 0.5),
        percentile(&lags, 0.99),
        lags.last().copied().unwrap_or(0)
    );

    store.close().await;
    sqlx::raw_sql(AssertSqlSafe(format!("DROP DATABASE {database}")))
        .execute(&mut server)
        .await?;
    let _ = admin.delete_topics(&[&topic], &AdminOptions::new()).await;
    Ok(())
}
