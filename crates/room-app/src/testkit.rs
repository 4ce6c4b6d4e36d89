//! The conformance suites that every adapter of a storage port runs, and the in-memory store
//! they are first checked against (feature `testkit`).
//!
//! A backend's test calls each suite with a factory of fresh, empty instances:
//! `testkit::cell_store_suite(|| async { Arc::new(MyStore::new().await) }).await`.
//! Run the suites on a multi-threaded runtime: some checks race spawned tasks against each
//! other.

mod leases;
mod suites;

pub use crate::memory::{InMemoryStore, MemoryListCache};
pub use leases::InMemoryLeases;
pub use suites::{
    LeaseBackend, billing_policies_suite, board_rewards_suite, boards_suite, cell_store_suite,
    consumer_positions_suite, covers_claimed_by_the_upgrade, gift_catalog_suite, gift_orders_suite,
    gift_tallies_suite, income_ledger_suite, keyed_requests_suite, lease_suite, list_cache_suite,
    open_streams_suite, outbox_suite, password_attempts_suite, payouts_suite, presence_suite,
    rate_budgets_suite, robot_rooms_suite, rocket_settings_suite, room_directory_suite,
    room_follows_suite, room_pins_suite, snapshot_store_suite, timers_suite, user_directory_suite,
    vip_grants_suite, wallet_suite, work_claims_suite,
};

use std::future::Future;
use std::time::Duration;

/// The variable that makes a missing service fail a test instead of skipping it (CI sets it).
pub const REQUIRE_SERVICES_VAR: &str = "ROOM_TEST_REQUIRE_SERVICES";

/// The URL of a real service for an adapter test, from the environment variable `var`
/// (`ROOM_TEST_MYSQL_URL`, `ROOM_TEST_REDIS_URL`, `ROOM_TEST_KAFKA_BROKERS`). Unset: `None`,
/// and the test says that it skipped; but with `ROOM_TEST_REQUIRE_SERVICES=1` (CI) an unset
/// variable fails the test. A test that cannot reach the service it was given calls
/// [`service_unreachable`].
pub fn service_url(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            assert!(
                !services_required(),
                "{var} is not set, and {REQUIRE_SERVICES_VAR}=1 requires the service"
            );
            #[allow(clippy::print_stderr)] // The test's own word that it did not run.
            {
                eprintln!("skipped: {var} is not set");
            }
            None
        }
    }
}

/// Whether missing services fail the tests (`ROOM_TEST_REQUIRE_SERVICES=1`).
pub fn services_required() -> bool {
    std::env::var(REQUIRE_SERVICES_VAR).is_ok_and(|v| v == "1" || v == "true")
}

/// Fails the test when services are required, else says that it skipped: the service at
/// `url` did not answer (`cause`).
pub fn service_unreachable(url: &str, cause: impl std::fmt::Display) {
    assert!(
        !services_required(),
        "the service at {url} is unreachable ({cause}), and {REQUIRE_SERVICES_VAR}=1 requires it"
    );
    #[allow(clippy::print_stderr)]
    {
        eprintln!("skipped: the service at {url} is unreachable ({cause})");
    }
}

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
