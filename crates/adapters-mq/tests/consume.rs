//! [`EventConsumer`] against librdkafka's mock cluster: at least once (a failed handler sees
//! the event again; offsets move only past handled events), repeats dropped by `event_id`,
//! messages that are not room events skipped, and a consumer group member.

mod support {
    pub mod kafka;
}

use std::sync::{Arc, Mutex};
use std::time::Duration;

use adapters_mq::{EventConsumer, EventConsumerSettings, KafkaPublisher, OffsetReset};
use rdkafka::ClientConfig;
use rdkafka::producer::{FutureProducer, FutureRecord};
use room_app::ports::{EventPublisher, OutboxMessage};
use room_app::testkit;
use room_domain::EventEnvelope;
use support::kafka::{Mock, consume_until, group_name, messages, plain_consumer, seqs_by_room};
use tokio_util::sync::CancellationToken;

fn consumer_settings(mock: &Mock, group: &str) -> EventConsumerSettings {
    let mut settings = EventConsumerSettings::new(mock.brokers(), group_name(group));
    settings.topic = mock.topic.clone();
    settings.retry_initial_ms = 10;
    settings.retry_max_ms = 50;
    settings
}

async fn publish(mock: &Mock, batch: Vec<OutboxMessage>) -> Vec<EventEnvelope> {
    let publisher = KafkaPublisher::connect(&mock.settings()).await.unwrap();
    let published = publisher.publish(&batch).await;
    assert!(published.error.is_none(), "{:?}", published.error);
    batch.into_iter().map(|m| m.envelope).collect()
}

/// The high watermark of every partition of the mock's topic that holds messages.
fn ends(mock: &Mock) -> std::collections::BTreeMap<i32, i64> {
    let consumer = plain_consumer(&mock.brokers(), &mock.topic, &mock.all_partitions());
    let mut ends = support::kafka::high_watermarks(&consumer, &mock.topic, &mock.all_partitions());
    ends.retain(|_, end| *end > 0);
    ends
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_that_fails_once_sees_the_event_again_and_offsets_reach_the_end() {
    let mock = Mock::new(1, 2);
    let sent = publish(&mock, messages(4, 5, 1)).await;
    let unlucky = sent[7].event_id.clone();

    let consumer = EventConsumer::assign(&consumer_settings(&mock, "once"), &[0, 1]).unwrap();
    let calls: Arc<Mutex<Vec<String>>> = Arc::default();
    let handled: Arc<Mutex<Vec<EventEnvelope>>> = Arc::default();
    let cancel = CancellationToken::new();
    let consumer = Arc::new(consumer);
    let task = tokio::spawn({
        let (consumer, calls, handled, cancel) = (
            Arc::clone(&consumer),
            Arc::clone(&calls),
            Arc::clone(&handled),
            cancel.clone(),
        );
        let unlucky = unlucky.clone();
        async move {
            consumer
                .run(
                    move |envelope: EventEnvelope| {
                        let mut calls = calls.lock().unwrap();
                        let first_try = !calls.contains(&envelope.event_id);
                        calls.push(envelope.event_id.clone());
                        let outcome = if envelope.event_id == unlucky && first_try {
                            Err("the handler's store is down")
                        } else {
                            handled.lock().unwrap().push(envelope);
                            Ok(())
                        };
                        async move { outcome }
                    },
                    cancel,
                )
                .await
        }
    });
    testkit::eventually("every event is handled", || {
        let done = handled.lock().unwrap().len() >= sent.len();
        async move { done }
    })
    .await;
    cancel.cancel();
    task.await.unwrap().unwrap();

    let calls = calls.lock().unwrap().clone();
    assert_eq!(calls.iter().filter(|id| **id == unlucky).count(), 2);
    assert_eq!(calls.len(), sent.len() + 1);
    let handled = handled.lock().unwrap().clone();
    assert_eq!(handled.len(), sent.len(), "each event handled once");
    for (room, seqs) in seqs_by_room(&handled) {
        assert_eq!(seqs, (1..=5).collect::<Vec<_>>(), "room {room}");
    }
    let committed = consumer
        .committed_offsets(Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(committed, ends(&mock));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_move_only_past_handled_events_so_a_failing_event_is_read_again_later() {
    let mock = Mock::new(1, 1);
    let sent = publish(&mock, messages(1, 10, 1)).await;
    let stuck = sent[4].event_id.clone();
    let settings = consumer_settings(&mock, "stuck");

    let consumer = EventConsumer::assign(&settings, &[0]).unwrap();
    let tries: Arc<Mutex<Vec<String>>> = Arc::default();
    let cancel = CancellationToken::new();
    let consumer = Arc::new(consumer);
    let task = tokio::spawn({
        let (consumer, tries, cancel) = (Arc::clone(&consumer), Arc::clone(&tries), cancel.clone());
        let stuck = stuck.clone();
        async move {
            consumer
                .run(
                    move |envelope: EventEnvelope| {
                        tries.lock().unwrap().push(envelope.event_id.clone());
                        let outcome = if envelope.event_id == stuck {
                            Err("cannot handle it yet")
                        } else {
                            Ok(())
                        };
                        async move { outcome }
                    },
                    cancel,
                )
                .await
        }
    });
    testkit::eventually("the failing event was tried three times", || {
        let n = tries
            .lock()
            .unwrap()
            .iter()
            .filter(|id| **id == stuck)
            .count();
        async move { n >= 3 }
    })
    .await;
    cancel.cancel();
    task.await.unwrap().unwrap();
    let tries = tries.lock().unwrap().clone();
    assert!(
        tries
            .iter()
            .all(|id| sent[..5].iter().any(|e| e.event_id == *id)),
        "nothing after the failing event was handled: {tries:?}"
    );
    // Events 1..4 are stored; the failing fifth (offset 4) is where the group resumes.
    let committed = consumer
        .committed_offsets(Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(committed.get(&0), Some(&4));
    drop(consumer);

    let again = EventConsumer::assign(&settings, &[0]).unwrap();
    let (seen, _) = consume_until(again, |seen| seen.len() >= 6).await;
    assert_eq!(seen.first().map(|e| &e.event_id), Some(&stuck));
    assert_eq!(seen, sent[4..].to_vec());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeats_are_dropped_by_event_id_when_dedup_is_on() {
    let mock = Mock::new(1, 1);
    let publisher = KafkaPublisher::connect(&mock.settings()).await.unwrap();
    let batch = messages(3, 4, 1);
    // Published twice, as after a lost acknowledgement; then one more event, last.
    for _ in 0..2 {
        assert!(publisher.publish(&batch).await.error.is_none());
    }
    let last = messages(3, 5, 100).pop().unwrap();
    assert!(
        publisher
            .publish(std::slice::from_ref(&last))
            .await
            .error
            .is_none()
    );
    let last_id = last.envelope.event_id.clone();

    let deduplicating = EventConsumer::assign(&consumer_settings(&mock, "dedup"), &[0]).unwrap();
    let (seen, _) = consume_until(deduplicating, |seen| {
        seen.iter().any(|e| e.event_id == last_id)
    })
    .await;
    let mut expected: Vec<EventEnvelope> = batch.iter().map(|m| m.envelope.clone()).collect();
    expected.push(last.envelope.clone());
    assert_eq!(seen, expected);

    let mut settings = consumer_settings(&mock, "no-dedup");
    settings.dedup_capacity = 0;
    let plain = EventConsumer::assign(&settings, &[0]).unwrap();
    let (seen, _) = consume_until(plain, |seen| seen.iter().any(|e| e.event_id == last_id)).await;
    assert_eq!(seen.len(), batch.len() * 2 + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_that_is_not_a_room_event_is_skipped_and_its_offset_stored() {
    let mock = Mock::new(1, 1);
    let producer: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", mock.brokers())
        .create()
        .unwrap();
    let good = messages(1, 2, 1);
    let send = |value: Vec<u8>| {
        let producer = producer.clone();
        let topic = mock.topic.clone();
        async move {
            producer
                .send(
                    FutureRecord::<str, [u8]>::to(&topic)
                        .key("r-0")
                        .payload(&value),
                    Duration::from_secs(5),
                )
                .await
                .unwrap();
        }
    };
    send(serde_json::to_vec(&good[0].envelope).unwrap()).await;
    send(b"not json".to_vec()).await;
    send(br#"{"event_id":"r-0:9","room_id":"r-0","seq":9,"v":1,"occurred_at":0,"type":"RoomFromTheFuture","payload":{}}"#.to_vec()).await;
    send(serde_json::to_vec(&good[1].envelope).unwrap()).await;

    let consumer = EventConsumer::assign(&consumer_settings(&mock, "bad"), &[0]).unwrap();
    let (seen, consumer) = consume_until(consumer, |seen| seen.len() >= 2).await;
    assert_eq!(
        seen,
        vec![good[0].envelope.clone(), good[1].envelope.clone()]
    );
    let committed = consumer
        .committed_offsets(Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(committed.get(&0), Some(&4));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_member_gets_the_partitions_and_the_group_resumes_after_its_commits() {
    let mock = Mock::new(1, 3);
    let sent = publish(&mock, messages(6, 3, 1)).await;
    let settings = consumer_settings(&mock, "group");

    let member = EventConsumer::subscribe(&settings).unwrap();
    let (seen, _) = consume_until(member, |seen| seen.len() >= sent.len()).await;
    assert_eq!(seen.len(), sent.len());
    for (room, seqs) in seqs_by_room(&seen) {
        assert_eq!(seqs, vec![1, 2, 3], "room {room}");
    }

    // Later events are all the group reads next: the member committed what it handled. (The
    // next reader is assigned the partitions: the mock cluster lets a new member join the
    // group only after the old one's session timed out, 45 s.)
    let fourth: Vec<OutboxMessage> = messages(6, 4, 100)
        .into_iter()
        .filter(|m| m.envelope.seq == 4)
        .collect();
    let mut later = publish(&mock, fourth).await;
    assert_eq!(settings.auto_offset_reset, OffsetReset::Earliest);
    let next = EventConsumer::assign(&settings, &mock.all_partitions()).unwrap();
    let (mut seen, _) = consume_until(next, |seen| seen.len() >= later.len()).await;
    seen.sort_by_key(|e| e.room_id.to_string());
    later.sort_by_key(|e| e.room_id.to_string());
    assert_eq!(seen, later);
}
