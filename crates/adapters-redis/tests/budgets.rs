//! [`RedisRateBudgets`] against the real Redis of `ROOM_TEST_REDIS_URL`: the rate budgets
//! conformance suite over two nodes (two clients on one key prefix), and what only the server
//! shows: a bucket is one key that expires when the bucket is full again. Each test uses its
//! own key prefix, so tests run in parallel.

use std::sync::Arc;
use std::time::Duration;

use adapters_redis::{RedisOpenStreams, RedisRateBudgets, RedisRateBudgetsSettings};
use room_app::ports::RateBudgets;
use room_app::testkit;
use room_testkit::redis::{keys, prefix, pttl, raw};

/// The budgets under `prefix`, or `None` when the test skips.
async fn budgets(prefix: &str) -> Option<RedisRateBudgets> {
    let url = room_testkit::redis::url()?;
    let mut settings = RedisRateBudgetsSettings::new(&url);
    settings.key_prefix = prefix.to_owned();
    // Generous for a busy machine.
    settings.op_timeout = Duration::from_secs(5);
    match RedisRateBudgets::connect(&settings).await {
        Ok(budgets) => Some(budgets),
        Err(error) => {
            testkit::service_unreachable(&url, error);
            None
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_rate_budgets_on_two_nodes_pass_the_rate_budgets_suite() {
    if budgets(&prefix()).await.is_none() {
        return;
    }
    testkit::rate_budgets_suite(|| async {
        let prefix = prefix();
        let node = || async { Arc::new(budgets(&prefix).await.expect("Redis answered")) };
        vec![node().await, node().await]
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bucket_is_one_key_that_expires_when_full_again() {
    let prefix = prefix();
    let Some(budgets) = budgets(&prefix).await else {
        return;
    };
    let interval = Duration::from_secs(60);
    assert_eq!(
        budgets.take("alice:create", interval, 5).await.unwrap(),
        None
    );
    assert_eq!(
        budgets.take("alice:create", interval, 5).await.unwrap(),
        None
    );
    let mut conn = raw(&room_testkit::redis::url().unwrap()).await;
    let keys = keys(&mut conn, &prefix).await;
    assert_eq!(keys, vec![format!("{prefix}room:budget:alice:create")]);
    // Two requests taken: full again two intervals later.
    let ttl = pttl(&mut conn, &keys[0]).await;
    assert!(
        ttl > 110_000 && ttl <= 120_000,
        "expires when full again: {ttl} ms"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_open_streams_on_two_nodes_pass_the_open_streams_suite() {
    if budgets(&prefix()).await.is_none() {
        return;
    }
    testkit::open_streams_suite(|| async {
        let prefix = prefix();
        let url = room_testkit::redis::url().expect("Redis answered");
        let mut settings = RedisRateBudgetsSettings::new(&url);
        settings.key_prefix = prefix;
        settings.op_timeout = Duration::from_secs(5);
        let node = || async { Arc::new(RedisOpenStreams::connect(&settings).await.unwrap()) };
        vec![node().await, node().await]
    })
    .await;
}
