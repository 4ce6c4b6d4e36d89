//! The conformance suites that every adapter of a storage port runs, and the in-memory store
//! they are first checked against (feature `testkit`).
//!
//! A backend's test calls each suite with a factory of fresh, empty instances:
//! `testkit::cell_store_suite(|| async { Arc::new(MyStore::new().await) }).await`.
//! Run the suites on a multi-threaded runtime: some checks race spawned tasks against each
//! other.

mod suites;

pub use crate::memory::InMemoryStore;
pub use suites::{
    cell_store_suite, gift_catalog_suite, gift_orders_suite, outbox_suite, payouts_suite,
    room_directory_suite, snapshot_store_suite, timers_suite, wallet_suite,
};

use std::future::Future;
use std::time::Duration;

/// Waits until `check` holds, asking every 5 ms; fails the test, naming `what`, after 30 s
/// of tokio time (virtual when the test pauses time).
pub async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !check().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting until {what}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
