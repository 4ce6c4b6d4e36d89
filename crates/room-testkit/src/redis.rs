//! The Redis server of the tests, from `ROOM_TEST_REDIS_URL` (as `redis://127.0.0.1:6379`):
//! key prefixes no other test or run uses, so that tests share one server in parallel, and a
//! plain connection to look at what the adapters left there.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use ::redis::aio::MultiplexedConnection;
use room_app::testkit;

/// The variable naming the server.
pub const REDIS_URL: &str = "ROOM_TEST_REDIS_URL";

/// The server's URL; `None` when the test skips (see [`testkit::service_url`]).
pub fn url() -> Option<String> {
    testkit::service_url(REDIS_URL)
}

/// A key prefix no other test or run uses.
pub fn prefix() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "test:{}:{nanos}:{}:",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// A connection of the test's own, beside the adapters' pools. It waits up to 10 s for an
/// answer (the driver's default is 500 ms, which a machine busy with parallel tests can miss).
pub async fn raw(url: &str) -> MultiplexedConnection {
    let config = ::redis::AsyncConnectionConfig::new()
        .set_response_timeout(Some(std::time::Duration::from_secs(10)));
    ::redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .unwrap()
}

/// Every key under `prefix`, sorted.
pub async fn keys(conn: &mut MultiplexedConnection, prefix: &str) -> Vec<String> {
    let mut keys: Vec<String> = ::redis::cmd("KEYS")
        .arg(format!("{prefix}*"))
        .query_async(conn)
        .await
        .unwrap();
    keys.sort();
    keys
}

/// The time `key` has left to live, in milliseconds: -1 without an expiry, -2 when absent.
pub async fn pttl(conn: &mut MultiplexedConnection, key: &str) -> i64 {
    ::redis::cmd("PTTL")
        .arg(key)
        .query_async(conn)
        .await
        .unwrap()
}
