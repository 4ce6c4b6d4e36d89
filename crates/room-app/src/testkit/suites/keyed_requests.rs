//! The conformance suite of [`KeyedRequests`]: a key is claimed once, its record keeps the
//! first request's fingerprint and then its answer; a released claim frees the key, a stale
//! one is taken over; only the claim's own token finishes or releases it; pruning deletes
//! old records only, at most a limit; and of claims at once, exactly one wins.

use std::future::Future;
use std::sync::Arc;

use super::fixtures::{at, ok, same};
use crate::ports::{KeyClaim, KeyedAnswer, KeyedRecord, KeyedRequests};

/// Runs every [`KeyedRequests`] check, each against a fresh store from `fresh`.
pub async fn keyed_requests_suite<S, F, Fut>(fresh: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<S>>,
    S: KeyedRequests + 'static,
{
    a_key_is_claimed_once_and_keeps_its_answer(fresh().await).await;
    released_and_stale_claims_free_the_key(fresh().await).await;
    pruning_deletes_old_records_up_to_the_limit(fresh().await).await;
    of_claims_at_once_one_wins(fresh().await).await;
}

fn answer(status: u16, body: &str) -> KeyedAnswer {
    KeyedAnswer {
        status,
        body: body.to_owned(),
    }
}

async fn claim<S: KeyedRequests>(
    store: &S,
    key: &str,
    fingerprint: &str,
    token: &str,
    now: i64,
) -> KeyClaim {
    ok(
        store
            .claim(key, fingerprint, token, at(now), at(now - 60_000))
            .await,
        "claim",
    )
}

async fn a_key_is_claimed_once_and_keeps_its_answer<S: KeyedRequests>(store: Arc<S>) {
    same(
        claim(&*store, "k1", "fp-a", "t1", 1_000).await,
        KeyClaim::Claimed,
        "a new key is the claimer's",
    );
    let running = KeyedRecord {
        fingerprint: "fp-a".into(),
        token: "t1".into(),
        claimed_at: at(1_000),
        answer: None,
    };
    same(
        claim(&*store, "k1", "fp-a", "t2", 2_000).await,
        KeyClaim::Held(running.clone()),
        "a repeat while it runs sees the running claim",
    );
    same(
        claim(&*store, "k1", "fp-b", "t3", 2_000).await,
        KeyClaim::Held(running.clone()),
        "another request with the key sees the first one's fingerprint",
    );
    ok(
        store.finish("k1", "t2", &answer(500, "{}")).await,
        "finish by another token",
    );
    same(
        claim(&*store, "k1", "fp-a", "t4", 3_000).await,
        KeyClaim::Held(running.clone()),
        "only the claim's token finishes it",
    );
    let body = format!("{{\"room_id\":\"r1\",\"name\":\"{}\"}}", "é".repeat(1000));
    ok(
        store.finish("k1", "t1", &answer(201, &body)).await,
        "finish",
    );
    same(
        claim(&*store, "k1", "fp-a", "t5", 4_000).await,
        KeyClaim::Held(KeyedRecord {
            answer: Some(answer(201, &body)),
            ..running.clone()
        }),
        "a repeat after the answer sees it, whole",
    );
    ok(store.release("k1", "t1").await, "release after the answer");
    same(
        claim(&*store, "k1", "fp-a", "t6", 90_000).await,
        KeyClaim::Held(KeyedRecord {
            answer: Some(answer(201, &body)),
            ..running
        }),
        "an answered record is neither released nor taken over, however old",
    );
    same(
        claim(&*store, "k2", "fp-a", "t7", 5_000).await,
        KeyClaim::Claimed,
        "another key is another record",
    );
}

async fn released_and_stale_claims_free_the_key<S: KeyedRequests>(store: Arc<S>) {
    same(
        claim(&*store, "k", "fp", "t1", 1_000).await,
        KeyClaim::Claimed,
        "claim",
    );
    ok(
        store.release("k", "t-other").await,
        "release by another token",
    );
    assert!(
        matches!(
            claim(&*store, "k", "fp", "t2", 2_000).await,
            KeyClaim::Held(_)
        ),
        "only the claim's token releases it"
    );
    ok(store.release("k", "t1").await, "release");
    same(
        claim(&*store, "k", "fp-other", "t3", 3_000).await,
        KeyClaim::Claimed,
        "a released key is free, for any request",
    );
    // Claimed at 3 s; 63 s later (the claim 60 s stale) it is taken over.
    assert!(
        matches!(
            claim(&*store, "k", "fp", "t4", 62_999).await,
            KeyClaim::Held(_)
        ),
        "a claim younger than the stale bound holds"
    );
    same(
        claim(&*store, "k", "fp", "t5", 63_001).await,
        KeyClaim::Claimed,
        "a stale claim is taken over",
    );
    ok(
        store.finish("k", "t3", &answer(200, "{}")).await,
        "late finish",
    );
    same(
        claim(&*store, "k", "fp", "t6", 63_002).await,
        KeyClaim::Held(KeyedRecord {
            fingerprint: "fp".into(),
            token: "t5".into(),
            claimed_at: at(63_001),
            answer: None,
        }),
        "the claim taken over cannot finish the new one's record",
    );
}

async fn pruning_deletes_old_records_up_to_the_limit<S: KeyedRequests>(store: Arc<S>) {
    for i in 0..5 {
        same(
            claim(&*store, &format!("old-{i}"), "fp", "t", 1_000 + i).await,
            KeyClaim::Claimed,
            "claim",
        );
        ok(
            store
                .finish(&format!("old-{i}"), "t", &answer(200, "{}"))
                .await,
            "finish",
        );
    }
    same(
        claim(&*store, "new", "fp", "t", 10_000).await,
        KeyClaim::Claimed,
        "claim",
    );
    same(
        ok(store.prune(at(5_000), 3).await, "prune"),
        3,
        "at most the limit",
    );
    same(
        ok(store.prune(at(5_000), 10).await, "prune"),
        2,
        "the rest of the old ones",
    );
    same(
        ok(store.prune(at(5_000), 10).await, "prune"),
        0,
        "nothing old is left",
    );
    for i in 0..5 {
        same(
            claim(&*store, &format!("old-{i}"), "fp", "t2", 20_000).await,
            KeyClaim::Claimed,
            "a pruned key is free",
        );
    }
    assert!(
        matches!(
            claim(&*store, "new", "fp", "t2", 20_000).await,
            KeyClaim::Held(_)
        ),
        "a younger record is kept"
    );
}

async fn of_claims_at_once_one_wins<S: KeyedRequests + 'static>(store: Arc<S>) {
    for round in 0..10 {
        let key = format!("race-{round}");
        let (a, b, c, d) = tokio::join!(
            claim(&*store, &key, "fp", "t0", 1_000),
            claim(&*store, &key, "fp", "t1", 1_000),
            claim(&*store, &key, "fp", "t2", 1_000),
            claim(&*store, &key, "fp", "t3", 1_000),
        );
        let won = [a, b, c, d]
            .iter()
            .filter(|claim| **claim == KeyClaim::Claimed)
            .count();
        same(won, 1, "exactly one of the claims at once wins");
    }
}
