//! What `room_outbox_lag_seconds` says when the outbox does not drain: with a broker that
//! cannot be reached, rows stay past the retention and the lag grows with the oldest of them;
//! without a broker, it is the age of the oldest row some consumer has not passed. Read
//! through a recorder local to the test's thread.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use metrics::{
    Counter, Gauge, GaugeFn, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit,
};
use room_app::consumers::mark_passed;
use room_app::ports::{
    ClockRef, ConsumerPositionsRef, EventPublisherRef, MockEventPublisher, OutboxRef, Published,
};
use room_app::{Error, workers};

use crate::support::World;

/// A gauge's value, as `f64` bits.
#[derive(Default)]
struct Value(AtomicU64);

impl GaugeFn for Value {
    fn increment(&self, value: f64) {
        self.set(f64::from_bits(self.0.load(Ordering::SeqCst)) + value);
    }
    fn decrement(&self, value: f64) {
        self.increment(-value);
    }
    fn set(&self, value: f64) {
        self.0.store(value.to_bits(), Ordering::SeqCst);
    }
}

/// Keeps the gauges by name; counters and histograms go nowhere.
#[derive(Default)]
struct Gauges(Mutex<HashMap<String, Arc<Value>>>);

impl Gauges {
    fn get(&self, name: &str) -> Option<f64> {
        let gauges = self.0.lock().unwrap();
        gauges
            .get(name)
            .map(|value| f64::from_bits(value.0.load(Ordering::SeqCst)))
    }
}

impl Recorder for Gauges {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, _: &Key, _: &Metadata<'_>) -> Counter {
        Counter::noop()
    }
    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        let mut gauges = self.0.lock().unwrap();
        Gauge::from_arc(gauges.entry(key.name().to_owned()).or_default().clone())
    }
    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}

const RETENTION: Duration = Duration::from_secs(3 * 86_400);

#[tokio::test]
async fn an_unreachable_broker_keeps_the_rows_and_the_lag_says_so() {
    let gauges = Gauges::default();
    let _local = metrics::set_default_local_recorder(&gauges);
    let world = World::new().await;
    world.open_room("r1", "alice", &["bob"]).await;
    let outbox: OutboxRef = world.store.clone();
    let clock: ClockRef = world.clock.clone();
    let rows = outbox.list_after(0, 100).await.unwrap();
    assert!(!rows.is_empty());

    let mut broker = MockEventPublisher::new();
    broker.expect_publish().returning(|_| Published {
        delivered: Vec::new(),
        refused: Vec::new(),
        error: Some(Error::Unavailable("the broker cannot be reached".into())),
    });
    let broker: EventPublisherRef = Arc::new(broker);
    world.clock.advance(RETENTION + Duration::from_secs(3600));
    let published = workers::publish_outbox(&outbox, &broker, &clock, 100, 1).await;
    assert!(published.is_err(), "{published:?}");
    let pruned = workers::prune_outbox(&outbox, &clock, RETENTION, 100, 10)
        .await
        .unwrap();
    assert_eq!(pruned, 0, "undelivered rows stay past the retention");
    assert_eq!(outbox.list_after(0, 100).await.unwrap(), rows);
    let lag = gauges
        .get("room_outbox_lag_seconds")
        .expect("the lag is set");
    assert!(
        lag >= (RETENTION + Duration::from_secs(3600)).as_secs_f64(),
        "the lag is the oldest row's age: {lag}"
    );
}

#[tokio::test]
async fn without_a_broker_the_lag_is_the_age_of_the_oldest_row_not_passed_by_every_consumer() {
    let gauges = Gauges::default();
    let _local = metrics::set_default_local_recorder(&gauges);
    let world = World::new().await;
    world.open_room("r1", "alice", &["bob", "carol"]).await;
    let outbox: OutboxRef = world.store.clone();
    let positions: ConsumerPositionsRef = world.store.clone();
    let clock: ClockRef = world.clock.clone();
    let rows = outbox.list_after(0, 100).await.unwrap();
    positions
        .advance_position("im", None, rows[1].id)
        .await
        .unwrap();

    world.clock.advance(Duration::from_secs(600));
    mark_passed(&outbox, &positions, &["im".to_owned()], &clock, 100, 10)
        .await
        .unwrap();
    let age = (clock.now().0 - rows[2].envelope.occurred_at.0) as f64 / 1000.0;
    assert_eq!(gauges.get("room_outbox_lag_seconds"), Some(age));

    positions
        .advance_position("im", Some(rows[1].id), rows.last().unwrap().id)
        .await
        .unwrap();
    mark_passed(&outbox, &positions, &["im".to_owned()], &clock, 100, 10)
        .await
        .unwrap();
    assert_eq!(
        gauges.get("room_outbox_lag_seconds"),
        Some(0.0),
        "caught up"
    );
}
