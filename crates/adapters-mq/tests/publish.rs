//! [`KafkaPublisher`] against librdkafka's mock cluster: what reaches the topic (key,
//! headers, value), per-room order over many rooms and partitions, and what a publish
//! answers while a broker is down and after it is back.

mod support {
    pub mod kafka;
}

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use adapters_mq::{Error, EventConsumer, EventConsumerSettings, KafkaPublisher, KafkaSettings};
use room_app::ports::{EventPublisher, OutboxMessage};
use room_domain::{Event, EventEnvelope};
use support::kafka::{
    Mock, checked_envelope, consume_until, group_name, messages, read_raw, seqs_by_room,
};

/// Per room, the seqs of the first arrival of each event, in arrival order.
fn first_arrivals(envelopes: &[EventEnvelope]) -> BTreeMap<String, Vec<u64>> {
    let mut seen = HashSet::new();
    let firsts: Vec<EventEnvelope> = envelopes
        .iter()
        .filter(|e| seen.insert(e.event_id.clone()))
        .cloned()
        .collect();
    seqs_by_room(&firsts)
}

/// Publishes `pending` again and again, as the outbox worker does (what was delivered is
/// marked and not sent again), until all are delivered; fails the test after a minute.
async fn publish_until_delivered(publisher: &KafkaPublisher, mut pending: Vec<OutboxMessage>) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while !pending.is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{} messages were never delivered",
            pending.len()
        );
        let published = publisher.publish(&pending).await;
        let delivered: HashSet<i64> = published.delivered.into_iter().collect();
        pending.retain(|m| !delivered.contains(&m.id));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_message_arrives_once_with_its_key_headers_and_typed_value() {
    let mock = Mock::new(1, 3);
    let publisher = KafkaPublisher::connect(&mock.settings()).await.unwrap();
    let batch = messages(5, 6, 100);
    let published = publisher.publish(&batch).await;
    assert!(published.error.is_none(), "{:?}", published.error);
    assert_eq!(
        published.delivered,
        batch.iter().map(|m| m.id).collect::<Vec<_>>()
    );

    let raw = read_raw(
        &mock.brokers(),
        &mock.topic,
        &mock.all_partitions(),
        batch.len(),
    )
    .await;
    let mut arrived: Vec<EventEnvelope> = raw.iter().map(checked_envelope).collect();
    arrived.sort_by_key(|e| (e.room_id.to_string(), e.seq));
    let mut sent: Vec<EventEnvelope> = batch.iter().map(|m| m.envelope.clone()).collect();
    sent.sort_by_key(|e| (e.room_id.to_string(), e.seq));
    assert_eq!(arrived, sent);
    assert!(
        arrived
            .iter()
            .any(|e| matches!(e.event, Event::RoomGiftSent(_))),
        "the batch has gifts"
    );

    // The consumer helper hands over the same envelopes, typed.
    let mut settings = EventConsumerSettings::new(mock.brokers(), group_name("typed"));
    settings.topic = mock.topic.clone();
    let consumer = EventConsumer::assign(&settings, &mock.all_partitions()).unwrap();
    let (mut typed, _) = consume_until(consumer, |seen| seen.len() >= batch.len()).await;
    typed.sort_by_key(|e| (e.room_id.to_string(), e.seq));
    assert_eq!(typed, sent);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_room_keeps_its_order_over_many_rooms_and_partitions() {
    let mock = Mock::new(3, 6);
    let publisher = KafkaPublisher::connect(&mock.settings()).await.unwrap();
    let all = messages(120, 25, 1);
    for batch in all.chunks(700) {
        let published = publisher.publish(batch).await;
        assert!(published.error.is_none(), "{:?}", published.error);
        assert_eq!(published.delivered.len(), batch.len());
    }

    let raw = read_raw(
        &mock.brokers(),
        &mock.topic,
        &mock.all_partitions(),
        all.len(),
    )
    .await;
    let mut partition_of: BTreeMap<String, i32> = BTreeMap::new();
    let mut by_partition: BTreeMap<i32, Vec<&support::kafka::Raw>> = BTreeMap::new();
    for message in &raw {
        by_partition
            .entry(message.partition)
            .or_default()
            .push(message);
    }
    let mut ordered = Vec::new();
    for (partition, mut messages) in by_partition {
        messages.sort_by_key(|m| m.offset);
        for message in messages {
            let envelope = checked_envelope(message);
            let first = *partition_of
                .entry(envelope.room_id.to_string())
                .or_insert(partition);
            assert_eq!(
                first, partition,
                "room {} spans partitions",
                envelope.room_id
            );
            ordered.push(envelope);
        }
    }
    assert!(
        partition_of.values().collect::<HashSet<_>>().len() > 1,
        "the rooms spread over partitions"
    );
    let rooms = seqs_by_room(&ordered);
    assert_eq!(rooms.len(), 120);
    for (room, seqs) in rooms {
        assert_eq!(seqs, (1..=25).collect::<Vec<_>>(), "room {room}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_that_is_down_fails_its_rooms_messages_and_nothing_is_lost_once_it_is_back() {
    let mock = Mock::new(3, 6);
    let mut settings = mock.settings();
    settings.message_timeout_ms = 1_500;
    // Reconnect soon after the broker is back, rather than after up to 10 s.
    settings
        .properties
        .insert("reconnect.backoff.max.ms".into(), "200".into());
    let publisher = KafkaPublisher::connect(&settings).await.unwrap();
    let first = messages(30, 2, 1);
    assert!(publisher.publish(&first).await.error.is_none());

    // Broker 2 leads partitions 1 and 4; it no longer answers.
    mock.cluster.broker_down(2).unwrap();
    let second = messages(30, 4, 1_000)
        .into_iter()
        .filter(|m| m.envelope.seq > 2)
        .collect::<Vec<_>>();
    let published = publisher.publish(&second).await;
    let error = published
        .error
        .expect("some rooms are on the broker that is down");
    assert!(error.is_retryable(), "{error}");
    assert!(matches!(error, room_app::Error::Unavailable(_)), "{error}");
    assert!(
        !published.delivered.is_empty() && published.delivered.len() < second.len(),
        "only the rooms of the broker that is down fail: {} of {} delivered",
        published.delivered.len(),
        second.len()
    );
    // The delivered ids are in the order given, and per room a prefix of its messages.
    let position: BTreeMap<i64, usize> =
        second.iter().enumerate().map(|(i, m)| (m.id, i)).collect();
    assert!(
        published
            .delivered
            .windows(2)
            .all(|w| position[&w[0]] < position[&w[1]])
    );
    let delivered: HashSet<i64> = published.delivered.iter().copied().collect();
    let mut rooms: BTreeMap<String, Vec<bool>> = BTreeMap::new();
    for message in &second {
        rooms
            .entry(message.envelope.room_id.to_string())
            .or_default()
            .push(delivered.contains(&message.id));
    }
    for (room, taken) in &rooms {
        let prefix = taken.iter().take_while(|t| **t).count();
        assert!(
            taken[prefix..].iter().all(|t| !t),
            "room {room}: delivered {taken:?} is not a prefix"
        );
    }

    // Back up: what was not delivered is published again and gets through.
    mock.cluster.broker_up(2).unwrap();
    let pending: Vec<OutboxMessage> = second
        .iter()
        .filter(|m| !delivered.contains(&m.id))
        .cloned()
        .collect();
    publish_until_delivered(&publisher, pending).await;

    let mut consumer_settings = EventConsumerSettings::new(mock.brokers(), group_name("down"));
    consumer_settings.topic = mock.topic.clone();
    consumer_settings.dedup_capacity = 0;
    let consumer = EventConsumer::assign(&consumer_settings, &mock.all_partitions()).unwrap();
    let expected = first.len() + second.len();
    let (arrived, _) = consume_until(consumer, |seen| {
        seen.iter()
            .map(|e| &e.event_id)
            .collect::<HashSet<_>>()
            .len()
            >= expected
    })
    .await;
    for (room, seqs) in first_arrivals(&arrived) {
        assert_eq!(seqs, vec![1, 2, 3, 4], "room {room}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_publish_during_an_outage_shorter_than_the_timeout_delivers_everything() {
    let mock = Mock::new(1, 3);
    let mut settings = mock.settings();
    settings.message_timeout_ms = 20_000;
    settings
        .properties
        .insert("reconnect.backoff.max.ms".into(), "200".into());
    let publisher = KafkaPublisher::connect(&settings).await.unwrap();
    let batch = messages(10, 10, 1);

    mock.cluster.broker_down(-1).unwrap();
    let publish = tokio::spawn(async move {
        let published = publisher.publish(&batch).await;
        (published, batch)
    });
    // The outage itself (not a wait for a condition): the broker stays away this long, well
    // inside the message timeout, and the publish cannot end while it is away.
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(!publish.is_finished(), "the publish waits for the broker");
    mock.cluster.broker_up(-1).unwrap();
    let (published, batch) = publish.await.unwrap();
    assert!(published.error.is_none(), "{:?}", published.error);
    assert_eq!(
        published.delivered,
        batch.iter().map(|m| m.id).collect::<Vec<_>>()
    );

    let raw = read_raw(
        &mock.brokers(),
        &mock.topic,
        &mock.all_partitions(),
        batch.len(),
    )
    .await;
    let mut by_partition: BTreeMap<i32, Vec<&support::kafka::Raw>> = BTreeMap::new();
    for message in &raw {
        by_partition
            .entry(message.partition)
            .or_default()
            .push(message);
    }
    let mut ordered = Vec::new();
    for (_, mut messages) in by_partition {
        messages.sort_by_key(|m| m.offset);
        ordered.extend(messages.into_iter().map(checked_envelope));
    }
    for (room, seqs) in seqs_by_room(&ordered) {
        assert_eq!(seqs, (1..=10).collect::<Vec<_>>(), "room {room}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_fails_clearly_when_no_broker_answers() {
    // Nothing listens on port 1; the connect timeout ends the wait.
    let mut settings = KafkaSettings::new("127.0.0.1:1");
    settings.connect_timeout_ms = 1_000;
    let error = KafkaPublisher::connect(&settings).await.unwrap_err();
    assert!(matches!(error, Error::Unavailable(_)), "{error}");
    assert!(error.is_retryable());
    assert!(error.to_string().contains("127.0.0.1:1"), "{error}");
}

#[test]
fn settings_that_contradict_the_publisher_are_refused_when_it_is_built() {
    let mut settings = KafkaSettings::new("127.0.0.1:9092");
    settings.properties.insert("acks".into(), "1".into());
    let error = KafkaPublisher::new(&settings).unwrap_err();
    assert!(matches!(error, Error::Settings(_)), "{error}");
    assert!(error.to_string().contains("acks"), "{error}");

    let mut settings = KafkaSettings::new("127.0.0.1:9092");
    settings
        .properties
        .insert("no.such.property".into(), "1".into());
    let error = KafkaPublisher::new(&settings).unwrap_err();
    assert!(matches!(error, Error::Settings(_)), "{error}");

    let error = KafkaPublisher::new(&KafkaSettings::default()).unwrap_err();
    assert!(error.to_string().contains("kafka.brokers"), "{error}");
}
