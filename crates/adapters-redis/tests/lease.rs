//! [`RedisLease`] against the real Redis of `ROOM_TEST_REDIS_URL`: the lease conformance
//! suite, then what only a real server shows (its scripts and keys lost, as in a restart).
//! Each backend uses its own key prefix, so tests run in parallel on one server.

use std::time::Duration;

use adapters_redis::{RedisLease, RedisLeaseSettings};
use room_app::ports::{Lease, LeaseRef};
use room_app::testkit::{self, LeaseBackend};
use room_domain::RoomId;
use room_testkit::redis::{keys, prefix, raw};

struct Backend(RedisLease);

impl LeaseBackend for Backend {
    fn node(&self, node_id: &str, url: &str) -> LeaseRef {
        std::sync::Arc::new(self.0.for_node(node_id, url))
    }
}

/// A lease of node `node-a` with `ttl` under a fresh prefix, or `None` when the test skips.
async fn lease(ttl: Duration) -> Option<(RedisLease, String)> {
    let url = room_testkit::redis::url()?;
    let prefix = prefix();
    let mut settings = RedisLeaseSettings::new(&url, "node-a", "http://a");
    settings.ttl = ttl;
    // Under half the TTL, as the adapter requires; generous for a busy machine otherwise.
    settings.op_timeout = (ttl / 3).min(Duration::from_secs(5));
    settings.key_prefix = prefix.clone();
    match RedisLease::connect(&settings).await {
        Ok(lease) => Some((lease, prefix)),
        Err(error) => {
            testkit::service_unreachable(&url, error);
            None
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_leases_pass_the_lease_suite() {
    if lease(Duration::from_secs(1)).await.is_none() {
        return;
    }
    testkit::lease_suite(|ttl| async move {
        Backend(lease(ttl).await.expect("Redis answered a moment ago").0)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn leases_lost_with_the_server_state_are_not_renewed_and_can_be_taken_again() {
    let Some((a, prefix)) = lease(Duration::from_secs(30)).await else {
        return;
    };
    let b = a.for_node("node-b", "http://b");
    let rooms: Vec<RoomId> = (0..3)
        .map(|i| RoomId::new(format!("r{i}")).unwrap())
        .collect();
    for room in &rooms {
        assert!(a.acquire(room).await.unwrap());
    }
    assert_eq!(a.renew_all(&rooms).await.unwrap(), vec![true; 3]);

    // What a Redis restart without persistence does: the scripts and the keys are gone.
    let mut conn = raw(&room_testkit::redis::url().unwrap()).await;
    let keys = keys(&mut conn, &prefix).await;
    assert_eq!(keys.len(), 4, "three leases and one registration: {keys:?}");
    let _: () = redis::cmd("DEL")
        .arg(&keys)
        .query_async(&mut conn)
        .await
        .unwrap();
    let _: () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async(&mut conn)
        .await
        .unwrap();

    // The former holder learns it lost every room (the scripts are loaded again on the way);
    // another node can take them; the holder's registration comes back with its next tick.
    assert_eq!(a.renew_all(&rooms).await.unwrap(), vec![false; 3]);
    assert!(b.acquire(&rooms[0]).await.unwrap());
    assert!(!a.acquire(&rooms[0]).await.unwrap());
    assert!(a.acquire(&rooms[1]).await.unwrap());
    let holder = b.get_holder(&rooms[1]).await.unwrap().unwrap();
    assert_eq!(
        (holder.node_id.as_str(), holder.url.as_deref()),
        ("node-a", Some("http://a"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_tick_renews_ten_thousand_rooms() {
    let Some((a, _)) = lease(Duration::from_secs(30)).await else {
        return;
    };
    let rooms: Vec<RoomId> = (0..10_000)
        .map(|i| RoomId::new(format!("room-{i}")).unwrap())
        .collect();
    for room in rooms.iter().step_by(2) {
        assert!(a.acquire(room).await.unwrap());
    }
    let held = a.renew_all(&rooms).await.unwrap();
    assert_eq!(held.len(), rooms.len());
    assert!(held.iter().step_by(2).all(|h| *h));
    assert!(held.iter().skip(1).step_by(2).all(|h| !*h));
}

#[tokio::test]
async fn an_unreachable_server_is_unavailable_not_a_hang() {
    let mut settings = RedisLeaseSettings::new("redis://127.0.0.1:1/0", "node-a", "http://a");
    settings.op_timeout = Duration::from_millis(500);
    let error = tokio::time::timeout(Duration::from_secs(5), RedisLease::connect(&settings))
        .await
        .expect("an unreachable server is answered within the call timeout")
        .unwrap_err();
    assert!(error.is_retryable(), "{error:?}");
}
