//! The `Idempotency-Key` rule ([`KeyedGate`]) over the in-memory records: the first request
//! runs, the same request again gets its answer, another request with the key is reused, a
//! repeat while the first runs is in use; a request that failed frees the key; a claim gone
//! stale (by the store's clock, when the gate is on it) is taken over; and records older than
//! the retention are pruned, which bounds them.

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

/// Two nodes whose clocks disagree share claims dated by the store's clock: a claim goes
/// stale when the store's clock says so, whatever either node's clock reads.
#[tokio::test]
async fn claims_on_the_store_clock_go_stale_by_the_store_clock() {
    let store_clock = ManualClock::at(T0);
    let store = Arc::new(InMemoryStore::with_clock(store_clock.clone()));
    // Node a's clock is an hour ahead of the store's, node b's an hour behind.
    let gate_on = |node: &str, offset_secs: i64| {
        let records: KeyedRequestsRef = store.clone();
        let clock: ClockRef = ManualClock::at(Timestamp(T0.0 + offset_secs * 1000));
        KeyedGate::on_store_clock(records, clock, store.clone(), node, Duration::from_secs(20))
    };
    let (a, b) = (gate_on("node-a", 3_600), gate_on("node-b", -3_600));
    let key = IdempotencyKey::new("POST /v1/rooms", "k").unwrap();
    let alice = uid("alice");
    let request = fingerprint("POST", "/v1/rooms", br#"{"name":"a"}"#);

    let Admission::Run(_) = a.admit(&key, &alice, &request).await.unwrap() else {
        panic!("the first request runs");
    };
    // Node b's clock is two hours behind node a's: by it the claim is not even made yet,
    // by node a's it would be long stale; by the store's it is fresh.
    assert_eq!(
        b.admit(&key, &alice, &request).await.unwrap(),
        Admission::InUse
    );
    store_clock.advance_secs(19);
    assert_eq!(
        b.admit(&key, &alice, &request).await.unwrap(),
        Admission::InUse,
        "19 s by the store's clock: still running"
    );
    store_clock.advance_secs(2);
    assert!(
        matches!(
            b.admit(&key, &alice, &request).await.unwrap(),
            Admission::Run(_)
        ),
        "21 s by the store's clock: stale, taken over"
    );
}
