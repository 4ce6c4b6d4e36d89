//! One id rule everywhere: a user id with an invisible, format or bidirectional character, or
//! a `/`, is refused in a token (401), in a path and in a body (400), so no id can pose as
//! another one.

use axum::http::{Method, StatusCode};
use room_node::Claims;
use serde_json::json;

use crate::support::{TestApp, error_code};

/// Ids that look like `alice` or `admin`, or read as a path.
const LOOKALIKES: [&str; 5] = [
    "ali\u{200B}ce",
    "\u{202E}nimda",
    "alice\u{2066}",
    "\u{FEFF}alice",
    "al/ice",
];

#[tokio::test]
async fn a_token_whose_subject_breaks_the_id_rule_is_unauthenticated() {
    let app = TestApp::new().await;
    for sub in LOOKALIKES {
        let token = app
            .app
            .authenticator()
            .sign(&Claims {
                sub: sub.to_owned(),
                exp: u64::MAX / 2,
                ..Claims::default()
            })
            .unwrap();
        let (status, body) = app.get("/v1/me/wallet", &token).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{sub:?}: {body}");
        assert_eq!(error_code(&body), "INVALID_TOKEN");
    }
}

#[tokio::test]
async fn nobody_signs_in_as_a_robot() {
    let app = TestApp::new().await;
    let (status, body) = app.get("/v1/me/wallet", &app.token("robot-7")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert_eq!(error_code(&body), "INVALID_TOKEN");
    let (status, body) = app.get("/v1/me/wallet", &app.token("robotic")).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "only the prefix `robot-` marks robots: {body}"
    );
    let app = TestApp::with(|s| s.robots.id_prefix = "bot.".into()).await;
    let (status, _) = app.get("/v1/me/wallet", &app.token("robot-7")).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "the configured prefix, not a fixed one"
    );
    let (status, _) = app.get("/v1/me/wallet", &app.token("bot.7")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn ids_that_break_the_rule_are_refused_in_paths_and_bodies() {
    let app = TestApp::new().await;
    let room_id = app.create_room("alice").await;
    app.join(&room_id, "alice").await;
    let owner = app.token("alice");
    let admin = app.admin_token();
    for user in [
        "ali%E2%80%8Bce",
        "%E2%80%AEnimda",
        "al%2Fice",
        "%EF%BB%BFalice",
    ] {
        let (status, body) = app
            .call(
                Method::PUT,
                &format!("/v1/rooms/{room_id}/admins/{user}"),
                Some(&owner),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{user}: {body}");
        assert_eq!(error_code(&body), "INVALID_ID", "{user}");
        let (status, body) = app
            .post(
                &format!("/v1/admin/wallets/{user}/credit"),
                &admin,
                json!({ "op_id": "op-1", "amount": 5 }),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{user}: {body}");
    }
    for user in LOOKALIKES {
        let (status, body) = app
            .post(
                &format!("/v1/rooms/{room_id}/kick"),
                &owner,
                json!({ "user_id": user }),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{user:?}: {body}");
        let (status, body) = app.gift(&room_id, "alice", "o-1", "rose", 1, &[user]).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{user:?}: {body}");
    }
    // Nothing above reached the wallet.
    assert_eq!(app.balance("alice").await, 0);
}
