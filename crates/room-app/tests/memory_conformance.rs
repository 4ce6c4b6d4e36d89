//! Runs every conformance suite of the testkit against the in-process adapters:
//! [`InMemoryStore`] for storage, [`LocalPresence`], [`LocalPasswordAttempts`] and
//! [`MemoryListCache`] for the state that nodes of a cluster share through Redis instead.
#![cfg(feature = "testkit")]

use std::sync::Arc;

use room_app::testkit::{self, InMemoryStore};
use room_app::{LocalPasswordAttempts, LocalPresence, MemoryListCache};

async fn fresh() -> Arc<InMemoryStore> {
    Arc::new(InMemoryStore::new())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cell_store() {
    testkit::cell_store_suite(fresh).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn snapshot_store() {
    testkit::snapshot_store_suite(fresh).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn outbox() {
    testkit::outbox_suite(fresh).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn gift_orders() {
    testkit::gift_orders_suite(fresh).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn wallet() {
    testkit::wallet_suite(fresh).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn gift_catalog() {
    testkit::gift_catalog_suite(fresh).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn timers() {
    testkit::timers_suite(fresh).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn payouts() {
    testkit::payouts_suite(fresh).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn room_directory() {
    testkit::room_directory_suite(fresh).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn local_presence() {
    testkit::presence_suite(|| async { Arc::new(LocalPresence::new()) }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn local_password_attempts() {
    testkit::password_attempts_suite(|| async { Arc::new(LocalPasswordAttempts::new()) }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn work_claims() {
    testkit::work_claims_suite(fresh).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn robot_rooms() {
    testkit::robot_rooms_suite(fresh).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn consumer_positions() {
    testkit::consumer_positions_suite(fresh).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn user_directory() {
    testkit::user_directory_suite(fresh).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn vip_grants() {
    testkit::vip_grants_suite(fresh).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn room_follows() {
    testkit::room_follows_suite(fresh).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn room_pins() {
    testkit::room_pins_suite(fresh).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn keyed_requests() {
    testkit::keyed_requests_suite(fresh).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rate_budgets() {
    let clock: room_app::ports::ClockRef = Arc::new(room_app::SystemClock);
    let store = Arc::new(room_app::LocalRateBudgets::new(clock));
    testkit::rate_budgets_suite(|| {
        let store = store.clone();
        async move { vec![store] }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn open_streams() {
    let store = Arc::new(room_app::LocalOpenStreams::new());
    testkit::open_streams_suite(|| {
        let store = store.clone();
        async move { vec![store] }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn billing_policies() {
    testkit::billing_policies_suite(fresh).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn income_ledger() {
    testkit::income_ledger_suite(fresh).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn gift_tallies() {
    testkit::gift_tallies_suite(fresh).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn boards() {
    testkit::boards_suite(fresh).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn board_rewards() {
    testkit::board_rewards_suite(fresh).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rocket_settings() {
    testkit::rocket_settings_suite(fresh).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_list_cache() {
    testkit::list_cache_suite(|| async { Arc::new(MemoryListCache::new()) }).await;
}
