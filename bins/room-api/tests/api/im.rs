//! Tencent IM in a node, against the fake IM server: `GET /v1/me/im-credentials` answers a
//! UserSig the IM server accepts for the caller (404 `IM_DISABLED` without IM), and each
//! commit's display events reach the room's IM group as well as its event stream.

use adapters_tencent_im::{FakeIm, group_id};
use axum::http::StatusCode;
use serde_json::json;

use crate::support::{TestApp, error_code, eventually};

/// A node with IM on. Its background work is off: these tests need no group effects but the
/// group's creation, which the node does as it creates a room.
async fn with_im(im: &FakeIm) -> TestApp {
    let settings = im.settings();
    TestApp::with(move |s| {
        s.storage.url = "memory://".into();
        s.workers.in_process = false;
        s.im = settings;
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_are_a_user_sig_the_im_server_accepts_for_the_caller() {
    let im = FakeIm::start().await;
    let app = with_im(&im).await;
    let (status, body) = app.get("/v1/me/im-credentials", &app.token("alice")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["sdk_app_id"], json!(FakeIm::SDK_APP_ID));
    assert_eq!(body["user_id"], json!("alice"));
    let sig = body["user_sig"].as_str().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let claims = im
        .signer()
        .verify(sig, now)
        .expect("the IM server accepts it");
    assert_eq!(
        claims.identifier, "alice",
        "signed for the caller, nobody else"
    );
    assert_eq!(
        body["expires_at"].as_i64().unwrap(),
        i64::try_from(claims.expires_at()).unwrap() * 1000,
        "expires_at is the UserSig's own expiry, in ms"
    );
    let (status, _) = app.get("/v1/me/im-credentials", "not-a-token").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_im_the_credentials_are_404_im_disabled() {
    let app = TestApp::new().await;
    let (status, body) = app.get("/v1/me/im-credentials", &app.token("alice")).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(error_code(&body), "IM_DISABLED");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn display_events_reach_the_rooms_im_group() {
    let im = FakeIm::start().await;
    let app = with_im(&im).await;
    let room_id = app.create_room("alice").await;
    let group = group_id(&room_id.parse().unwrap());
    app.join(&room_id, "alice").await;
    app.join(&room_id, "bob").await;
    eventually("the joins shown in the room's IM group", || {
        let joined: Vec<String> = im
            .messages(&group)
            .iter()
            .flat_map(|m| m.events())
            .filter(|e| e["type"] == json!("RoomUserJoined"))
            .map(|e| e["payload"]["user"].as_str().unwrap_or_default().to_owned())
            .collect();
        std::future::ready(joined == ["alice", "bob"])
    })
    .await;
}
