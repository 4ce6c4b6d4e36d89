//! The rocket's levels at run time through the router: version 1 is the catalog's, an admin
//! changes them by compare-and-set, a room takes the new levels from its next gift without a
//! restart, and bad levels are refused with nothing stored.

use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::support::{TestApp, error_code};

async fn put_rocket(t: &TestApp, token: &str, body: Value) -> (StatusCode, Value) {
    t.call(Method::PUT, "/v1/admin/rocket", Some(token), Some(body))
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_changes_the_rocket_levels_and_rooms_take_them_without_a_restart() {
    let t = TestApp::new().await;
    let admin = t.admin_token();
    let (status, first) = t.get("/v1/admin/rocket", &admin).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    assert_eq!(first["version"], 1);
    assert_eq!(first["levels"][0]["fuel"], 10_000, "the catalog's: {first}");
    let room_id = t.room_with_members(1_000).await;
    // One rose (10 coins) is far from the catalog's first level.
    let (status, body) = t.gift(&room_id, "alice", "o-1", "rose", 1, &["bob"]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let room = t.room(&room_id).await;
    assert_eq!(room["rocket"]["status"], "idle", "{room}");
    assert_eq!(room["rocket"]["threshold"], 10_000);

    let levels = json!([
        {"fuel": 30, "countdown_secs": 60, "reward_pool": 100, "winners": 2, "reward_cap": 40},
        {"fuel": 500, "countdown_secs": 30, "reward_pool": 0, "winners": 0}
    ]);
    let (status, body) = put_rocket(
        &t,
        &t.token("alice"),
        json!({"expected_version": 1, "levels": levels}),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, changed) =
        put_rocket(&t, &admin, json!({"expected_version": 1, "levels": levels})).await;
    assert_eq!(status, StatusCode::OK, "{changed}");
    assert_eq!(changed["version"], 2);
    assert_eq!(changed["levels"][0]["reward_cap"], 40);
    assert!(
        changed["levels"][1].get("reward_cap").is_none(),
        "{changed}"
    );
    let (status, body) =
        put_rocket(&t, &admin, json!({"expected_version": 1, "levels": levels})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(error_code(&body), "ROCKET_VERSION_STALE");

    // The room's next gift fuels by the new first level (30): 10 + 20 ignites it.
    let (status, body) = t.gift(&room_id, "alice", "o-2", "rose", 2, &["bob"]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let room = t.room(&room_id).await;
    assert_eq!(room["rocket"]["status"], "ignited", "{room}");
    assert_eq!(room["rocket"]["threshold"], 30);
    let (_, now) = t.get("/v1/admin/rocket", &admin).await;
    assert_eq!(now, changed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_rocket_levels_are_refused_and_nothing_is_stored() {
    let t = TestApp::new().await;
    let admin = t.admin_token();
    let level =
        |fuel: i64| json!({"fuel": fuel, "countdown_secs": 60, "reward_pool": 10, "winners": 1});
    for (levels, why) in [
        (json!([]), "no levels"),
        (json!([level(100), level(100)]), "fuel not rising"),
        (json!([level(0)]), "fuel not positive"),
        (
            json!([{"fuel": 10, "countdown_secs": 3_601, "reward_pool": 10, "winners": 1}]),
            "countdown",
        ),
        (
            json!([{"fuel": 10, "countdown_secs": 60, "reward_pool": 10, "winners": 0}]),
            "no winners",
        ),
        (
            json!([{"fuel": 10, "countdown_secs": 60, "reward_pool": -1, "winners": 1}]),
            "negative pool",
        ),
        (
            json!([{"fuel": 10, "countdown_secs": 60, "reward_pool": 10, "winners": 1, "reward_cap": 0}]),
            "cap",
        ),
        (
            json!([{"fuel": 10, "countdown_secs": 60, "reward_pool": 10, "winners": 10_001}]),
            "winners",
        ),
        (
            json!((1..=51).map(|i| level(i * 10)).collect::<Vec<_>>()),
            "too many levels",
        ),
    ] {
        let (status, body) =
            put_rocket(&t, &admin, json!({"expected_version": 1, "levels": levels})).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{why}: {body}");
        assert_eq!(
            error_code(&body),
            "INVALID_ROCKET_SETTINGS",
            "{why}: {body}"
        );
    }
    let (status, body) = put_rocket(
        &t,
        &admin,
        json!({"expected_version": 1, "levels": [{"fuel": 10, "countdown_secs": 60, "reward_pool": 10, "winners": 1, "extra": 1}]}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(error_code(&body), "INVALID_BODY");
    let (_, current) = t.get("/v1/admin/rocket", &admin).await;
    assert_eq!(current["version"], 1, "nothing was stored: {current}");
}
