//! What the robot room route tests share: the routes' path, a valid configuration and its
//! robot pool, and the platform admin's calls (a creation, keyed or not, by this admin or
//! another; a change; the list).

use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use room_domain::UserId;
use serde_json::{Value, json};

use crate::support::{TestApp, parse};

pub(super) const PATH: &str = "/v1/admin/robot-rooms";

pub(super) fn robots(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("robot-{i}")).collect()
}

pub(crate) fn config() -> Value {
    json!({
        "profile": {"name": "Night owls", "notice": "Music all night", "cover_url": "https://img.example/owl.png"},
        "seat_count": 8,
        "robots": robots(5),
        "audience": (0..24).map(|h| h % 6).collect::<Vec<_>>(),
        "seats": 3,
        "gift_rate_per_minute": 30,
        "gift_mix": [{"gift_id": "rose", "weight": 5}],
        "enabled": true
    })
}

pub(super) async fn create(t: &TestApp, body: Value) -> (StatusCode, Value) {
    t.post(PATH, &t.admin_token(), body).await
}

/// A token of another platform admin than [`TestApp::admin_token`]'s.
pub(super) fn other_admin_token(t: &TestApp) -> String {
    t.app
        .authenticator()
        .mint(
            &UserId::new("other-admin").unwrap(),
            true,
            Duration::from_secs(600),
        )
        .unwrap()
}

/// A creation by the admin of `token`, with `key` as its `Idempotency-Key`.
pub(super) async fn create_keyed(
    t: &TestApp,
    token: &str,
    key: &str,
    body: Value,
) -> (StatusCode, Value) {
    let request = Request::builder()
        .method(Method::POST)
        .uri(PATH)
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .header(header::CONTENT_TYPE, "application/json")
        .header("idempotency-key", key)
        .body(Body::from(body.to_string()))
        .unwrap();
    let (status, _, body) = t.send(request).await;
    (status, parse(&body))
}

pub(super) async fn patch(t: &TestApp, room_id: &str, body: Value) -> (StatusCode, Value) {
    t.call(
        Method::PATCH,
        &format!("{PATH}/{room_id}"),
        Some(&t.admin_token()),
        Some(body),
    )
    .await
}

pub(super) async fn listed(t: &TestApp) -> Vec<Value> {
    let (status, body) = t.get(PATH, &t.admin_token()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["robot_rooms"].as_array().unwrap().clone()
}
