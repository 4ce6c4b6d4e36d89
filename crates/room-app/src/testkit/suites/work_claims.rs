//! The conformance suite of [`WorkClaims`]: one holder per name at a time, extension by the
//! holder, expiry hands the work to the next claimer, release by the holder only.

use std::future::Future;
use std::sync::Arc;

use std::time::Duration;

use super::fixtures::{ok, same};
use crate::ports::WorkClaims;
use crate::testkit::eventually;

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

const LONG: Duration = Duration::from_secs(3_600);

async fn one_holder_at_a_time<S: WorkClaims>(store: Arc<S>) {
    same(
        ok(store.claim("outbox", "w1", LONG).await, "claim"),
        true,
        "a free name is claimed",
    );
    same(
        ok(store.claim("outbox", "w2", LONG).await, "claim"),
        false,
        "a live claim keeps others out",
    );
    same(
        ok(store.claim("timers", "w2", LONG).await, "claim"),
        true,
        "names are independent",
    );
    same(
        ok(store.claim("outbox", "w1", LONG).await, "claim"),
        true,
        "the holder extends its claim",
    );
    same(
        ok(store.claim("outbox", "w2", LONG).await, "claim"),
        false,
        "the extension holds",
    );
}

async fn expiry_hands_the_work_on<S: WorkClaims + 'static>(store: Arc<S>) {
    let before = ok(store.now().await, "now");
    ok(store.claim("outbox", "w1", LONG).await, "claim");
    // The holder shortens its claim to a millisecond: it expires by the store's clock.
    same(
        ok(
            store.claim("outbox", "w1", Duration::from_millis(1)).await,
            "claim",
        ),
        true,
        "the holder may shorten its claim",
    );
    let claimer = store.clone();
    eventually("the expired claim goes to the next claimer", || {
        let claimer = claimer.clone();
        async move { ok(claimer.claim("outbox", "w2", LONG).await, "claim") }
    })
    .await;
    same(
        ok(store.claim("outbox", "w1", LONG).await, "claim"),
        false,
        "the old holder does not get it back while the new claim lives",
    );
    let after = ok(store.now().await, "now");
    assert!(
        after.0 > before.0,
        "the store's clock moved on past the short claim: {before:?} -> {after:?}"
    );
}

async fn release_by_the_holder_only<S: WorkClaims>(store: Arc<S>) {
    ok(store.claim("outbox", "w1", LONG).await, "claim");
    ok(store.release("outbox", "w2").await, "release by another");
    same(
        ok(store.claim("outbox", "w2", LONG).await, "claim"),
        false,
        "another owner's release leaves the claim alone",
    );
    ok(store.release("outbox", "w1").await, "release by the holder");
    same(
        ok(store.claim("outbox", "w2", LONG).await, "claim"),
        true,
        "a released name is free at once",
    );
    ok(
        store.release("unknown", "w1").await,
        "releasing an unknown name",
    );
}
