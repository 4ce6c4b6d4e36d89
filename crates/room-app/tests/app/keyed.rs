//! The `Idempotency-Key` rule ([`KeyedGate`]) over the in-memory records: the first request
//! runs, the same request again gets its answer, another request with the key is reused, a
//! repeat while the first runs is in use; a request that failed frees the key; a claim gone
//! stale is taken over; and records older than the retention are pruned, which bounds them.

use std::sync::Arc;
use std::time::Duration;

use room_app::IdempotencyKey;
use room_app::keyed::{Admission, KeyedGate, fingerprint};
use room_app::ports::{ClockRef, KeyedAnswer, KeyedRequestsRef};
use room_app::testkit::InMemoryStore;
use room_app::workers::prune_keyed_requests;
use room_domain::Timestamp;
use room_testkit::ManualClock;

use crate::support::uid;

const T0: Timestamp = Timestamp(1_764_460_800_000);

fn gate(store: &Arc<InMemoryStore>, clock: &Arc<ManualClock>) -> Arc<KeyedGate> {
    let records: KeyedRequestsRef = store.clone();
    let clock: ClockRef = clock.clone();
    KeyedGate::new(records, clock, "node-a", Duration::from_secs(20))
}

fn answer(status: u16) -> KeyedAnswer {
    KeyedAnswer {
        status,
        body: format!("{{\"status\":{status}}}"),
    }
}

#[tokio::test]
async fn a_key_runs_once_replays_its_answer_and_refuses_another_request() {
    let (store, clock) = (Arc::new(InMemoryStore::new()), ManualClock::at(T0));
    let gate = gate(&store, &clock);
    let key = IdempotencyKey::new("POST /v1/rooms", "k").unwrap();
    let alice = uid("alice");
    let request = fingerprint("POST", "/v1/rooms", br#"{"name":"a"}"#);
    let other = fingerprint("POST", "/v1/rooms", br#"{"name":"b"}"#);

    let Admission::Run(ticket) = gate.admit(&key, &alice, &request).await.unwrap() else {
        panic!("the first request runs");
    };
    assert_eq!(
        gate.admit(&key, &alice, &request).await.unwrap(),
        Admission::InUse
    );
    assert_eq!(
        gate.admit(&key, &alice, &other).await.unwrap(),
        Admission::Reused
    );
    gate.answered(ticket, Some(answer(201))).await.unwrap();
    assert_eq!(
        gate.admit(&key, &alice, &request).await.unwrap(),
        Admission::Replay(answer(201))
    );
    assert_eq!(
        gate.admit(&key, &alice, &other).await.unwrap(),
        Admission::Reused
    );
    // The key is the user's, on the route.
    assert!(matches!(
        gate.admit(&key, &uid("bob"), &other).await.unwrap(),
        Admission::Run(_)
    ));
    let elsewhere = IdempotencyKey::new("POST /v1/rooms/{room_id}/join", "k").unwrap();
    assert!(matches!(
        gate.admit(&elsewhere, &alice, &other).await.unwrap(),
        Admission::Run(_)
    ));
}

#[tokio::test]
async fn a_failed_request_frees_its_key_and_a_stale_claim_is_taken_over() {
    let (store, clock) = (Arc::new(InMemoryStore::new()), ManualClock::at(T0));
    let gate = gate(&store, &clock);
    let key = IdempotencyKey::new("POST /v1/rooms/{room_id}/join", "k").unwrap();
    let alice = uid("alice");
    let request = fingerprint("POST", "/v1/rooms/r1/join", b"");
    let Admission::Run(ticket) = gate.admit(&key, &alice, &request).await.unwrap() else {
        panic!("runs");
    };
    gate.answered(ticket, None).await.unwrap();
    let Admission::Run(_abandoned) = gate.admit(&key, &alice, &request).await.unwrap() else {
        panic!("a released key runs again");
    };
    clock.set(Timestamp(T0.0 + 19_000));
    assert_eq!(
        gate.admit(&key, &alice, &request).await.unwrap(),
        Admission::InUse
    );
    clock.set(Timestamp(T0.0 + 21_000));
    assert!(
        matches!(
            gate.admit(&key, &alice, &request).await.unwrap(),
            Admission::Run(_)
        ),
        "a claim older than the stale bound is a dead node's: taken over"
    );
}

#[tokio::test]
async fn records_older_than_the_retention_are_pruned() {
    let (store, clock) = (Arc::new(InMemoryStore::new()), ManualClock::at(T0));
    let gate = gate(&store, &clock);
    let alice = uid("alice");
    let request = fingerprint("POST", "/v1/rooms", b"{}");
    for i in 0..25 {
        let key = IdempotencyKey::new("POST /v1/rooms", &format!("k{i}")).unwrap();
        let Admission::Run(ticket) = gate.admit(&key, &alice, &request).await.unwrap() else {
            panic!("runs");
        };
        gate.answered(ticket, Some(answer(201))).await.unwrap();
    }
    clock.set(Timestamp(T0.0 + 3_600_000));
    let fresh = IdempotencyKey::new("POST /v1/rooms", "fresh").unwrap();
    let Admission::Run(ticket) = gate.admit(&fresh, &alice, &request).await.unwrap() else {
        panic!("runs");
    };
    gate.answered(ticket, Some(answer(201))).await.unwrap();

    let records: KeyedRequestsRef = store.clone();
    let clock_ref: ClockRef = clock.clone();
    let retention = Duration::from_secs(1_800);
    assert_eq!(
        prune_keyed_requests(&records, &clock_ref, retention, 10, 10)
            .await
            .unwrap(),
        25,
        "every record older than the retention, in batches"
    );
    assert_eq!(
        prune_keyed_requests(&records, &clock_ref, retention, 10, 10)
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        gate.admit(&fresh, &alice, &request).await.unwrap(),
        Admission::Replay(answer(201)),
        "a younger record is kept"
    );
    let old = IdempotencyKey::new("POST /v1/rooms", "k0").unwrap();
    assert!(
        matches!(
            gate.admit(&old, &alice, &fingerprint("POST", "/v1/rooms", b"[]"))
                .await
                .unwrap(),
            Admission::Run(_)
        ),
        "a pruned key is free"
    );
}
