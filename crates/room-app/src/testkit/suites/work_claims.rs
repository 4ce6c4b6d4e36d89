//! The conformance suite of [`WorkClaims`]: one holder per name at a time, extension by the
//! holder, expiry hands the work to the next claimer, release by the holder only.

use std::future::Future;
use std::sync::Arc;

use super::fixtures::{at, ok, same};
use crate::ports::WorkClaims;

/// Runs every [`WorkClaims`] check, each against a fresh store from `fresh`.
pub async fn work_claims_suite<S, F, Fut>(fresh: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<S>>,
    S: WorkClaims + 'static,
{
    one_holder_at_a_time(fresh().await).await;
    expiry_hands_the_work_on(fresh().await).await;
    release_by_the_holder_only(fresh().await).await;
}

async fn one_holder_at_a_time<S: WorkClaims>(store: Arc<S>) {
    same(
        ok(store.claim("outbox", "w1", at(0), at(100)).await, "claim"),
        true,
        "a free name is claimed",
    );
    same(
        ok(store.claim("outbox", "w2", at(50), at(150)).await, "claim"),
        false,
        "a live claim keeps others out",
    );
    same(
        ok(store.claim("timers", "w2", at(50), at(150)).await, "claim"),
        true,
        "names are independent",
    );
    same(
        ok(store.claim("outbox", "w1", at(90), at(190)).await, "claim"),
        true,
        "the holder extends its claim",
    );
    same(
        ok(store.claim("outbox", "w2", at(150), at(250)).await, "claim"),
        false,
        "the extension holds past the first expiry",
    );
}

async fn expiry_hands_the_work_on<S: WorkClaims>(store: Arc<S>) {
    ok(store.claim("outbox", "w1", at(0), at(100)).await, "claim");
    same(
        ok(store.claim("outbox", "w2", at(100), at(200)).await, "claim"),
        false,
        "a claim still holds at its expiry instant",
    );
    same(
        ok(store.claim("outbox", "w2", at(101), at(200)).await, "claim"),
        true,
        "an expired claim goes to the next claimer",
    );
    same(
        ok(store.claim("outbox", "w1", at(150), at(250)).await, "claim"),
        false,
        "the old holder does not get it back while the new claim lives",
    );
}

async fn release_by_the_holder_only<S: WorkClaims>(store: Arc<S>) {
    ok(store.claim("outbox", "w1", at(0), at(1000)).await, "claim");
    ok(store.release("outbox", "w2").await, "release by another");
    same(
        ok(store.claim("outbox", "w2", at(10), at(1000)).await, "claim"),
        false,
        "another owner's release leaves the claim alone",
    );
    ok(store.release("outbox", "w1").await, "release by the holder");
    same(
        ok(store.claim("outbox", "w2", at(20), at(1000)).await, "claim"),
        true,
        "a released name is free at once",
    );
    ok(
        store.release("unknown", "w1").await,
        "releasing an unknown name",
    );
}
