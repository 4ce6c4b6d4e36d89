//! The background passes of the embedded service: durable timers launch the rocket, payouts
//! credit its rewards, and members without heartbeat are evicted.

use axum::http::{Method, StatusCode};
use tempfile::TempDir;

use crate::support::{TestApp, eventually};

/// A catalog whose rocket launches one second after 100 fuel, sharing 100 coins among two.
const FAST_ROCKET: &str = r#"
[[gifts]]
gift_id = "rose"
name = "Rose"
price = 10
heat = 10
fuel = 10

[rules]
[[rules.rocket_levels]]
fuel = 100
countdown_secs = 4
reward_pool = 100
winners = 2
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rocket_launches_on_its_timer_and_its_rewards_are_paid() {
    let dir = TempDir::new().unwrap();
    let catalog = dir.path().join("gifts.toml");
    std::fs::write(&catalog, FAST_ROCKET).unwrap();
    let t = TestApp::with(|settings| {
        settings.catalog.path = catalog.clone();
        settings.workers.timers_every_ms = 50;
        settings.workers.payouts_every_secs = 1;
    })
    .await;
    let room_id = t.room_with_members(1000).await;

    let (status, body) = t
        .gift(&room_id, "alice", "ignite", "rose", 10, &["bob"])
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(t.room(&room_id).await["rocket"]["status"], "ignited");

    // Both members present share the pool: 50 each, once the timer and the payout ran.
    // A pass pays the rewards one by one: wait for both.
    eventually("the rocket rewards are paid", || async {
        t.balance("bob").await >= 50 && t.balance("alice").await >= 1000 - 100 + 50
    })
    .await;
    assert_eq!(t.balance("bob").await, 50);
    assert_eq!(t.balance("alice").await, 1000 - 100 + 50);
    assert_ne!(t.room(&room_id).await["rocket"]["status"], "ignited");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_without_heartbeat_are_evicted() {
    let t = TestApp::with(|settings| {
        settings.presence.timeout_secs = 4;
        settings.workers.presence_every_secs = 1;
    })
    .await;
    let room_id = t.room_with_members(0).await;
    assert_eq!(t.room(&room_id).await["online_count"], 2);

    // alice keeps sending heartbeats; bob does not.
    eventually("bob is evicted", || async {
        let (status, _) = t
            .call(
                Method::POST,
                &format!("/v1/rooms/{room_id}/heartbeat"),
                Some(&t.token("alice")),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::NO_CONTENT);
        t.room(&room_id).await["online_count"] == 1
    })
    .await;
    let (_, online) = t
        .get(
            &format!("/v1/rooms/{room_id}/online-users"),
            &t.token("alice"),
        )
        .await;
    assert_eq!(online["users"][0]["user_id"], "alice");
    // The room commits the eviction first, then the pass forgets bob's presence: his current
    // room clears a moment after the room's count drops.
    eventually("bob's current room clears", || async {
        let (_, current) = t.get("/v1/me/current-room", &t.token("bob")).await;
        current["room_id"].is_null()
    })
    .await;
}
