//! [`KafkaFacts`] against librdkafka's mock cluster: a named consumer of the durable facts
//! reads the topic as the consumer group of its name, gets each room's facts in order, sees
//! a fact that failed retryably again, passes one refused for good, and commits the offsets of
//! what it handled.

mod support {
    pub mod kafka;
}

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use adapters_mq::{EventConsumer, EventConsumerSettings, KafkaFacts, KafkaPublisher};
use async_trait::async_trait;
use room_app::SystemClock;
use room_app::consumers::{FactConsumer, FactError, FactHandler, FactSource};
use room_app::ports::EventPublisher;
use room_app::testkit;
use room_domain::EventEnvelope;
use support::kafka::{Mock, messages, plain_consumer, seqs_by_room};
use tokio_util::sync::CancellationToken;

/// Records what it handled; fails one fact retryably once and refuses another for good.
struct Recorder {
    handled: Mutex<Vec<EventEnvelope>>,
    tries: Mutex<Vec<String>>,
    flaky: String,
    refused: String,
}

#[async_trait]
impl FactHandler for Recorder {
    async fn handle(&self, envelope: &EventEnvelope) -> Result<(), FactError> {
        let id = envelope.event_id.clone();
        let first_try = {
            let mut tries = self.tries.lock().unwrap();
            let first = !tries.contains(&id);
            tries.push(id.clone());
            first
        };
        if id == self.flaky && first_try {
            return Err(FactError::retryable("the projection's store is down"));
        }
        if id == self.refused {
            return Err(FactError::permanent("refused for good"));
        }
        self.handled.lock().unwrap().push(envelope.clone());
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_named_consumer_reads_the_topic_as_its_group_and_commits_what_it_handled() {
    let mock = Mock::new(1, 2);
    let batch = messages(3, 4, 1);
    let publisher = KafkaPublisher::connect(&mock.settings()).await.unwrap();
    let published = publisher.publish(&batch).await;
    assert!(published.error.is_none(), "{:?}", published.error);
    let sent: Vec<EventEnvelope> = batch.into_iter().map(|m| m.envelope).collect();

    let recorder = Arc::new(Recorder {
        handled: Mutex::default(),
        tries: Mutex::default(),
        flaky: sent[5].event_id.clone(),
        refused: sent[9].event_id.clone(),
    });
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let name = format!("facts-{nanos}");
    let consumer =
        Arc::new(FactConsumer::new(&name, recorder.clone(), Arc::new(SystemClock)).unwrap());
    let source = KafkaFacts::new(&mock.settings()).unwrap();
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let cancel = cancel.clone();
        async move { source.run(consumer, cancel).await }
    });
    testkit::eventually("every fact but the refused one is handled", || {
        let done = recorder.handled.lock().unwrap().len() >= sent.len() - 1;
        async move { done }
    })
    .await;
    cancel.cancel();
    task.await.unwrap().unwrap();

    let handled = recorder.handled.lock().unwrap().clone();
    assert_eq!(handled.len(), sent.len() - 1, "each fact handled once");
    assert!(!handled.iter().any(|e| e.event_id == recorder.refused));
    let tries = recorder.tries.lock().unwrap().clone();
    assert_eq!(
        tries.iter().filter(|id| **id == recorder.flaky).count(),
        2,
        "the fact that failed retryably came again"
    );
    for (room, seqs) in seqs_by_room(&handled) {
        let expected: Vec<u64> = (1..=4)
            .filter(|seq| {
                let id = format!("{room}:{seq}");
                id != recorder.refused
            })
            .collect();
        assert_eq!(seqs, expected, "room {room}: in order");
    }

    // The group of the consumer's name committed the end of every partition.
    let mut settings = EventConsumerSettings::new(mock.brokers(), &name);
    settings.topic = mock.topic.clone();
    let reader = EventConsumer::assign(&settings, &mock.all_partitions()).unwrap();
    let committed = reader
        .committed_offsets(Duration::from_secs(10))
        .await
        .unwrap();
    let plain = plain_consumer(&mock.brokers(), &mock.topic, &mock.all_partitions());
    let mut ends: BTreeMap<i32, i64> =
        support::kafka::high_watermarks(&plain, &mock.topic, &mock.all_partitions());
    ends.retain(|_, end| *end > 0);
    assert_eq!(committed, ends);
}
