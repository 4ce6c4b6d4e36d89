//! Runs the conformance suite of every port [`MySqlStore`] implements, each instance on a
//! database of its own, migrated, on the server in `ROOM_TEST_MYSQL_URL` (skipped when unset;
//! a failure when unset or unreachable with `ROOM_TEST_REQUIRE_SERVICES=1`).

use std::sync::{Arc, Mutex};

use adapters_mysql::{MySqlSettings, MySqlStore};
use room_app::testkit;
use room_testkit::mysql::{MySqlServer, TestDatabase};

/// Opens fresh stores, each on a new migrated database, and drops the databases when the
/// test ends.
struct Fresh {
    server: MySqlServer,
    databases: Mutex<Vec<TestDatabase>>,
}

impl Fresh {
    async fn new(test: &str) -> Option<Self> {
        Some(Fresh {
            server: MySqlServer::from_env(test).await?,
            databases: Mutex::new(Vec::new()),
        })
    }

    async fn store(&self) -> Arc<MySqlStore> {
        let database = self.server.database().await;
        let mut settings = MySqlSettings::new(database.url.clone());
        settings.max_connections = 8;
        MySqlStore::migrate(&settings)
            .await
            .expect("the new database migrates");
        let store = MySqlStore::open(&settings).await.expect("the store opens");
        self.databases.lock().unwrap().push(database);
        Arc::new(store)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cell_store() {
    let Some(fresh) = Fresh::new("conformance::cell_store").await else {
        return;
    };
    testkit::cell_store_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn snapshot_store() {
    let Some(fresh) = Fresh::new("conformance::snapshot_store").await else {
        return;
    };
    testkit::snapshot_store_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn outbox() {
    let Some(fresh) = Fresh::new("conformance::outbox").await else {
        return;
    };
    testkit::outbox_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn gift_orders() {
    let Some(fresh) = Fresh::new("conformance::gift_orders").await else {
        return;
    };
    testkit::gift_orders_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn gift_catalog() {
    let Some(fresh) = Fresh::new("conformance::gift_catalog").await else {
        return;
    };
    testkit::gift_catalog_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn timers() {
    let Some(fresh) = Fresh::new("conformance::timers").await else {
        return;
    };
    testkit::timers_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn payouts() {
    let Some(fresh) = Fresh::new("conformance::payouts").await else {
        return;
    };
    testkit::payouts_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn room_directory() {
    let Some(fresh) = Fresh::new("conformance::room_directory").await else {
        return;
    };
    testkit::room_directory_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn wallet() {
    let Some(fresh) = Fresh::new("conformance::wallet").await else {
        return;
    };
    testkit::wallet_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn work_claims() {
    let Some(fresh) = Fresh::new("conformance::work_claims").await else {
        return;
    };
    testkit::work_claims_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn robot_rooms() {
    let Some(fresh) = Fresh::new("conformance::robot_rooms").await else {
        return;
    };
    testkit::robot_rooms_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn room_follows() {
    let Some(fresh) = Fresh::new("conformance::room_follows").await else {
        return;
    };
    testkit::room_follows_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn room_pins() {
    let Some(fresh) = Fresh::new("conformance::room_pins").await else {
        return;
    };
    testkit::room_pins_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn consumer_positions() {
    let Some(fresh) = Fresh::new("conformance::consumer_positions").await else {
        return;
    };
    testkit::consumer_positions_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn keyed_requests() {
    let Some(fresh) = Fresh::new("conformance::keyed_requests").await else {
        return;
    };
    testkit::keyed_requests_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn billing_policies() {
    let Some(fresh) = Fresh::new("conformance::billing_policies").await else {
        return;
    };
    testkit::billing_policies_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn income_ledger() {
    let Some(fresh) = Fresh::new("conformance::income_ledger").await else {
        return;
    };
    testkit::income_ledger_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn gift_tallies() {
    let Some(fresh) = Fresh::new("conformance::gift_tallies").await else {
        return;
    };
    testkit::gift_tallies_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn boards() {
    let Some(fresh) = Fresh::new("conformance::boards").await else {
        return;
    };
    testkit::boards_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn board_rewards() {
    let Some(fresh) = Fresh::new("conformance::board_rewards").await else {
        return;
    };
    testkit::board_rewards_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rocket_settings() {
    let Some(fresh) = Fresh::new("conformance::rocket_settings").await else {
        return;
    };
    testkit::rocket_settings_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn user_directory() {
    let Some(fresh) = Fresh::new("conformance::user_directory").await else {
        return;
    };
    testkit::user_directory_suite(|| fresh.store()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn vip_grants() {
    let Some(fresh) = Fresh::new("conformance::vip_grants").await else {
        return;
    };
    testkit::vip_grants_suite(|| fresh.store()).await;
}
