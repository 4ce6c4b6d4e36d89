//! Kafka for the tests: librdkafka's mock cluster (always there; keep the [`Mock`] alive for
//! the whole test), the real broker of `ROOM_TEST_KAFKA_BROKERS`, topic names no other test
//! or run uses, outbox messages, and readers that look at what reached the topic.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use adapters_mq::{EVENT_ID_HEADER, EVENT_TYPE_HEADER, EventConsumer, KafkaSettings};
use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::message::{Headers, Message};
use rdkafka::mocking::MockCluster;
use rdkafka::producer::DefaultProducerContext;
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use room_app::ports::OutboxMessage;
use room_app::testkit;
use room_domain::{
    Coins, Event, EventEnvelope, GiftId, GiftSent, OrderId, Role, RoomId, Timestamp, UserId,
};
use tokio_util::sync::CancellationToken;

/// The variable naming a real broker.
pub const KAFKA_BROKERS: &str = "ROOM_TEST_KAFKA_BROKERS";

/// How long a test waits for Kafka to show what it expects.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// The real broker's address; `None` when the test skips (see [`testkit::service_url`]).
pub fn real_brokers() -> Option<String> {
    testkit::service_url(KAFKA_BROKERS)
}

/// A mock cluster with one topic.
pub struct Mock {
    /// The cluster: it stops when dropped.
    pub cluster: MockCluster<'static, DefaultProducerContext>,
    /// The topic, with `partitions` partitions.
    pub topic: String,
    /// How many.
    pub partitions: i32,
}

impl Mock {
    /// A cluster of `brokers` brokers with a fresh topic of `partitions` partitions, led in
    /// turn by broker 1, 2, ...
    pub fn new(brokers: i32, partitions: i32) -> Mock {
        let cluster = MockCluster::new(brokers).expect("mock cluster");
        let topic = topic_name("mock");
        cluster.create_topic(&topic, partitions, 1).expect("topic");
        for partition in 0..partitions {
            cluster
                .partition_leader(&topic, partition, Some(partition % brokers + 1))
                .expect("leader");
        }
        Mock {
            cluster,
            topic,
            partitions,
        }
    }

    /// The bootstrap servers.
    pub fn brokers(&self) -> String {
        self.cluster.bootstrap_servers()
    }

    /// Publisher settings for the topic.
    pub fn settings(&self) -> KafkaSettings {
        let mut settings = KafkaSettings::new(self.brokers());
        settings.topic = self.topic.clone();
        settings
    }

    /// Every partition of the topic.
    pub fn all_partitions(&self) -> Vec<i32> {
        (0..self.partitions).collect()
    }
}

/// A topic name no other test or run uses.
pub fn topic_name(tag: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "test.{tag}.{}.{nanos}.{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// A consumer group name no other test or run uses.
pub fn group_name(tag: &str) -> String {
    topic_name(&format!("group.{tag}"))
}

fn user(name: &str) -> UserId {
    UserId::new(name).unwrap()
}

/// Event `seq` of a room: gifts, joins and chat switches in turn, so that values differ.
pub fn event(seq: u64) -> Event {
    match seq % 3 {
        0 => Event::RoomGiftSent(GiftSent {
            order_id: OrderId::new(format!("o-{seq}")).unwrap(),
            sender: user("alice"),
            recipients: vec![user("bob"), user("carol")],
            gift_id: GiftId::new("rose").unwrap(),
            count: 2,
            unit_price: Coins(10),
            total_value: Coins(40),
            heat_added: 40,
            fuel_added: 40,
            lucky: None,
            robot: false,
            billing_version: None,
            sender_nickname: None,
            sender_avatar_url: None,
        }),
        1 => Event::RoomUserJoined {
            user: user(&format!("u-{seq}")),
            role: Role::Member,
            vip_level: 1,
            joined_at: Timestamp(1_764_460_800_000 + seq as i64),
            robot: false,
            nickname: None,
            avatar_url: None,
            entry_effect_id: None,
            vehicle_id: None,
        },
        _ => Event::RoomChatEnabledChanged {
            enabled: seq.is_multiple_of(2),
            by: Some(user("alice")),
        },
    }
}

/// `per_room` events of each of `rooms` rooms (`r-0`, `r-1`, ...), interleaved as commits
/// of several rooms fill the outbox, with ids rising from `first_id`.
pub fn messages(rooms: usize, per_room: u64, first_id: i64) -> Vec<OutboxMessage> {
    let mut out = Vec::new();
    for seq in 1..=per_room {
        for room in 0..rooms {
            let room_id = RoomId::new(format!("r-{room}")).unwrap();
            out.push(OutboxMessage {
                id: first_id + out.len() as i64,
                envelope: EventEnvelope::new(
                    room_id,
                    seq,
                    Timestamp(1_764_460_800_000 + seq as i64),
                    &event(seq),
                ),
            });
        }
    }
    out
}

/// A message as it sits in the topic.
#[derive(Debug, Clone)]
pub struct Raw {
    /// Where.
    pub partition: i32,
    /// Where.
    pub offset: i64,
    /// The key.
    pub key: Option<String>,
    /// The headers.
    pub headers: BTreeMap<String, String>,
    /// The value.
    pub value: Option<Vec<u8>>,
}

/// A plain consumer of `partitions` of `topic` from their beginning, in no group's name.
pub fn plain_consumer(brokers: &str, topic: &str, partitions: &[i32]) -> StreamConsumer {
    let consumer: StreamConsumer = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("group.id", group_name("plain"))
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    let mut assignment = TopicPartitionList::new();
    for &partition in partitions {
        assignment
            .add_partition_offset(topic, partition, Offset::Beginning)
            .unwrap();
    }
    consumer.assign(&assignment).unwrap();
    consumer
}

/// Reads `count` messages of `partitions` of `topic`, as they are; fails the test when they
/// do not arrive within [`PATIENCE`], or when the partitions hold more than `count`.
pub async fn read_raw(brokers: &str, topic: &str, partitions: &[i32], count: usize) -> Vec<Raw> {
    let consumer = plain_consumer(brokers, topic, partitions);
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        let message = tokio::time::timeout_at(deadline, consumer.recv())
            .await
            .unwrap_or_else(|_| panic!("only {} of {count} messages arrived", out.len()))
            .expect("message");
        let headers = message
            .headers()
            .map(|headers| {
                headers
                    .iter()
                    .map(|h| {
                        (
                            h.key.to_owned(),
                            String::from_utf8(h.value.unwrap_or_default().to_vec()).unwrap(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        out.push(Raw {
            partition: message.partition(),
            offset: message.offset(),
            key: message
                .key()
                .map(|k| String::from_utf8(k.to_vec()).unwrap()),
            headers,
            value: message.payload().map(<[u8]>::to_vec),
        });
    }
    assert_eq!(
        high_watermarks(&consumer, topic, partitions)
            .values()
            .sum::<i64>(),
        count as i64,
        "the topic holds more messages than expected"
    );
    out
}

/// The next offset to be written, per partition.
pub fn high_watermarks(
    consumer: &StreamConsumer,
    topic: &str,
    partitions: &[i32],
) -> BTreeMap<i32, i64> {
    partitions
        .iter()
        .map(|&p| {
            let (_, high) = consumer
                .fetch_watermarks(topic, p, Duration::from_secs(10))
                .expect("watermarks");
            (p, high)
        })
        .collect()
}

/// The envelope of a raw message, checked against its key and headers.
pub fn checked_envelope(raw: &Raw) -> EventEnvelope {
    let envelope: EventEnvelope =
        serde_json::from_slice(raw.value.as_deref().expect("a value")).expect("an envelope");
    assert_eq!(raw.key.as_deref(), Some(envelope.room_id.as_str()));
    assert_eq!(
        raw.headers.get(EVENT_TYPE_HEADER).map(String::as_str),
        Some(envelope.event.type_name())
    );
    assert_eq!(raw.headers.get(EVENT_ID_HEADER), Some(&envelope.event_id));
    envelope
}

/// What a handler saw, shared with the test.
pub type Seen = Arc<Mutex<Vec<EventEnvelope>>>;

/// Runs `consumer` with a handler that records every event it is given, until `done` holds
/// for them (fails the test after [`PATIENCE`]); returns them and the consumer (stopped,
/// its offsets committed).
pub async fn consume_until(
    consumer: EventConsumer,
    done: impl Fn(&[EventEnvelope]) -> bool,
) -> (Vec<EventEnvelope>, EventConsumer) {
    let seen: Seen = Arc::default();
    let cancel = CancellationToken::new();
    let consumer = Arc::new(consumer);
    let task = tokio::spawn({
        let consumer = Arc::clone(&consumer);
        let seen = Arc::clone(&seen);
        let cancel = cancel.clone();
        async move {
            consumer
                .run(
                    move |envelope| {
                        seen.lock().unwrap().push(envelope);
                        async { Ok::<(), Infallible>(()) }
                    },
                    cancel,
                )
                .await
        }
    });
    testkit::eventually("the consumer has seen what the test waits for", || {
        let ready = done(&seen.lock().unwrap());
        async move { ready }
    })
    .await;
    cancel.cancel();
    task.await.unwrap().unwrap();
    let consumer = Arc::into_inner(consumer).expect("the task is over");
    let seen = seen.lock().unwrap().clone();
    (seen, consumer)
}

/// Per room, the seqs in the order they came.
pub fn seqs_by_room(envelopes: &[EventEnvelope]) -> BTreeMap<String, Vec<u64>> {
    let mut rooms: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for envelope in envelopes {
        rooms
            .entry(envelope.room_id.to_string())
            .or_default()
            .push(envelope.seq);
    }
    rooms
}
