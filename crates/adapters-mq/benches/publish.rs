//! How fast [`KafkaPublisher`] moves the outbox: 200,000 envelopes (1,000 rooms, gifts and
//! joins) published to librdkafka's mock cluster in batches of 1,000, as the outbox worker
//! sends them. Reports events per second and the per-batch acknowledgement latency (one
//! `publish` call, enqueue to last delivery report) at p50, p99 and max.
//!
//! ```text
//! cargo bench -p adapters-mq --bench publish [-- EVENTS [BATCH]]
//! ```
//!
//! The mock broker runs in this process, on the same cores, so the figures are the
//! publisher's and librdkafka's own cost plus loopback, not a real cluster's.

#![allow(clippy::print_stdout, reason = "a benchmark reports by printing")]

use std::time::{Duration, Instant};

use adapters_mq::{KafkaPublisher, KafkaSettings};
use rdkafka::mocking::MockCluster;
use room_app::ports::{EventPublisher, OutboxMessage};
use room_domain::{
    Coins, Event, EventEnvelope, GiftId, GiftSent, OrderId, Role, RoomId, Timestamp, UserId,
};

const ROOMS: usize = 1_000;
const PARTITIONS: i32 = 12;

fn envelope(n: usize) -> OutboxMessage {
    let room = RoomId::new(format!("room-{}", n % ROOMS)).unwrap();
    let seq = (n / ROOMS) as u64 + 1;
    let user = UserId::new(format!("user-{}", n % 5_000)).unwrap();
    let event = if n.is_multiple_of(4) {
        Event::RoomUserJoined {
            user,
            role: Role::Member,
            vip_level: 3,
            joined_at: Timestamp(1_764_460_800_000),
            robot: false,
            nickname: None,
            avatar_url: None,
            entry_effect_id: None,
            vehicle_id: None,
        }
    } else {
        Event::RoomGiftSent(GiftSent {
            order_id: OrderId::new(format!("order-{n}")).unwrap(),
            sender: user,
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
    };
    OutboxMessage {
        id: n as i64 + 1,
        envelope: EventEnvelope::new(room, seq, Timestamp(1_764_460_800_000), &event),
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn main() {
    // `cargo bench` passes `--bench`; numbers after it are ours.
    let numbers: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let events = numbers.first().copied().unwrap_or(200_000);
    let batch = numbers.get(1).copied().unwrap_or(1_000).max(1);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let cluster = MockCluster::new(1).unwrap();
    let topic = "bench.room.events";
    cluster.create_topic(topic, PARTITIONS, 1).unwrap();
    let mut settings = KafkaSettings::new(cluster.bootstrap_servers());
    settings.topic = topic.to_owned();

    let messages: Vec<OutboxMessage> = (0..events).map(envelope).collect();
    let bytes: usize = messages
        .iter()
        .map(|m| serde_json::to_vec(&m.envelope).unwrap().len())
        .sum();

    runtime.block_on(async {
        let publisher = KafkaPublisher::connect(&settings).await.unwrap();
        // Warm up: connections, producer id, metadata.
        assert!(publisher.publish(&messages[..batch.min(events)]).await.error.is_none());

        let mut latencies = Vec::with_capacity(events / batch + 1);
        let started = Instant::now();
        for chunk in messages.chunks(batch) {
            let t = Instant::now();
            let published = publisher.publish(chunk).await;
            latencies.push(t.elapsed());
            assert!(published.error.is_none(), "{:?}", published.error);
            assert_eq!(published.delivered.len(), chunk.len());
        }
        let elapsed = started.elapsed();
        latencies.sort();
        let rate = events as f64 / elapsed.as_secs_f64();
        println!(
            "published {events} envelopes ({:.1} MB of JSON, {ROOMS} rooms, {PARTITIONS} partitions) \
             in batches of {batch}: {:.2} s, {rate:.0} events/s",
            bytes as f64 / 1e6,
            elapsed.as_secs_f64()
        );
        println!(
            "per-batch ack latency: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} batches)",
            percentile(&latencies, 0.50).as_secs_f64() * 1e3,
            percentile(&latencies, 0.99).as_secs_f64() * 1e3,
            latencies.last().unwrap().as_secs_f64() * 1e3,
            latencies.len()
        );
    });
    drop(cluster);
}
