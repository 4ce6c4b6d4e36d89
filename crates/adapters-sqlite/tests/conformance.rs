//! Runs every conformance suite of `room_app::testkit` against [`SqliteStore`], each instance
//! on a real database file in its own temporary directory.

use std::sync::{Arc, Mutex};

use adapters_sqlite::{SqliteSettings, SqliteStore};
use room_app::testkit;
use tempfile::TempDir;

/// Opens fresh stores and keeps their directories until the test is done.
#[derive(Default)]
struct Fresh {
    dirs: Mutex<Vec<TempDir>>,
}

impl Fresh {
    async fn store(&self) -> Arc<SqliteStore> {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let url = format!("sqlite://{}", dir.path().join("room.db").display());
        let store = SqliteStore::open(&SqliteSettings::new(url))
            .await
            .expect("the store opens");
        self.dirs.lock().unwrap().push(dir);
        Arc::new(store)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cell_store() {
    let fresh = Fresh::default();
    testkit::cell_store_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn snapshot_store() {
    let fresh = Fresh::default();
    testkit::snapshot_store_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn outbox() {
    let fresh = Fresh::default();
    testkit::outbox_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn gift_orders() {
    let fresh = Fresh::default();
    testkit::gift_orders_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn wallet() {
    let fresh = Fresh::default();
    testkit::wallet_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn gift_catalog() {
    let fresh = Fresh::default();
    testkit::gift_catalog_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn timers() {
    let fresh = Fresh::default();
    testkit::timers_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn payouts() {
    let fresh = Fresh::default();
    testkit::payouts_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn room_directory() {
    let fresh = Fresh::default();
    testkit::room_directory_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn work_claims() {
    let fresh = Fresh::default();
    testkit::work_claims_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn robot_rooms() {
    let fresh = Fresh::default();
    testkit::robot_rooms_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn room_follows() {
    let fresh = Fresh::default();
    testkit::room_follows_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn room_pins() {
    let fresh = Fresh::default();
    testkit::room_pins_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn consumer_positions() {
    let fresh = Fresh::default();
    testkit::consumer_positions_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn keyed_requests() {
    let fresh = Fresh::default();
    testkit::keyed_requests_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn billing_policies() {
    let fresh = Fresh::default();
    testkit::billing_policies_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn income_ledger() {
    let fresh = Fresh::default();
    testkit::income_ledger_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn gift_tallies() {
    let fresh = Fresh::default();
    testkit::gift_tallies_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn boards() {
    let fresh = Fresh::default();
    testkit::boards_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn board_rewards() {
    let fresh = Fresh::default();
    testkit::board_rewards_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rocket_settings() {
    let fresh = Fresh::default();
    testkit::rocket_settings_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn user_directory() {
    let fresh = Fresh::default();
    testkit::user_directory_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn vip_grants() {
    let fresh = Fresh::default();
    testkit::vip_grants_suite(|| fresh.store()).await;
}
