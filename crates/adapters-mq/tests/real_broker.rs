//! [`KafkaPublisher`] and [`EventConsumer`] against the real broker of
//! `ROOM_TEST_KAFKA_BROKERS` (as `127.0.0.1:9092`): a topic of the test's own, created with
//! the admin API, then publish, read back in order by a
//! consumer group member, and a later member resuming from its committed offsets.
//! Unset, the test says it skipped; with `ROOM_TEST_REQUIRE_SERVICES=1` it fails instead.

mod support {
    pub mod kafka;
}

use std::time::Duration;

use adapters_mq::{EventConsumer, EventConsumerSettings, KafkaPublisher, KafkaSettings};
use rdkafka::ClientConfig;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use room_app::ports::EventPublisher;
use room_app::testkit;
use support::kafka::{consume_until, group_name, messages, seqs_by_room, topic_name};

const PARTITIONS: i32 = 3;

/// A fresh topic on the broker, or `None` when the test skips.
async fn topic(brokers: &str) -> Option<String> {
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .create()
        .expect("admin client");
    let name = topic_name("real");
    let options = AdminOptions::new().request_timeout(Some(Duration::from_secs(10)));
    let created = admin
        .create_topics(
            &[NewTopic::new(&name, PARTITIONS, TopicReplication::Fixed(1))],
            &options,
        )
        .await;
    match created {
        Ok(results) => {
            for result in results {
                if let Err((topic, code)) = result {
                    panic!("cannot create topic {topic}: {code}");
                }
            }
            Some(name)
        }
        Err(error) => {
            testkit::service_unreachable(brokers, error);
            None
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_go_through_a_real_broker_in_order_and_the_group_resumes_after_them() {
    let Some(brokers) = support::kafka::real_brokers() else {
        return;
    };
    let Some(topic) = topic(&brokers).await else {
        return;
    };
    let mut settings = KafkaSettings::new(&brokers);
    settings.topic = topic.clone();
    let publisher = KafkaPublisher::connect(&settings)
        .await
        .expect("the broker serves the new topic");
    let first = messages(8, 6, 1);
    let published = publisher.publish(&first).await;
    assert!(published.error.is_none(), "{:?}", published.error);
    assert_eq!(published.delivered.len(), first.len());

    let mut consumer_settings = EventConsumerSettings::new(&brokers, group_name("real"));
    consumer_settings.topic = topic.clone();
    let consumer = EventConsumer::subscribe(&consumer_settings).unwrap();
    let (seen, _) = consume_until(consumer, |seen| seen.len() >= first.len()).await;
    assert_eq!(seen.len(), first.len());
    for (room, seqs) in seqs_by_room(&seen) {
        assert_eq!(seqs, (1..=6).collect::<Vec<_>>(), "room {room}");
    }

    // The member committed its offsets and left: the next member starts after them.
    let later: Vec<_> = messages(8, 7, 100)
        .into_iter()
        .filter(|m| m.envelope.seq == 7)
        .collect();
    assert!(publisher.publish(&later).await.error.is_none());
    let consumer = EventConsumer::subscribe(&consumer_settings).unwrap();
    let (seen, _) = consume_until(consumer, |seen| seen.len() >= later.len()).await;
    assert!(seen.iter().all(|e| e.seq == 7), "{seen:?}");
    assert_eq!(seen.len(), later.len());
}
