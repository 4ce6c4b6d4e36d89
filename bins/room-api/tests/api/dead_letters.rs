//! The outbox's dead letters through the admin routes: listed with their reason, replayed
//! back into the outbox once, refused to anyone but a platform admin.

use axum::http::{Method, StatusCode};
use room_domain::Timestamp;

use crate::support::{TestApp, error_code};

#[tokio::test]
async fn an_admin_lists_and_replays_dead_letters() {
    // The node's own consumers of the facts read the outbox once at start and then hourly:
    // a row committed after that first read stays pending (only pending rows can be set
    // aside) for the whole test.
    let app = TestApp::with(|s| s.outbox.consume_every_ms = 3_600_000).await;
    let outbox = app.app.storage().outbox.clone();
    let mut dead = None;
    for owner in ["alice", "carol", "dave"] {
        app.create_room(owner).await;
        let newest = outbox.list_after(0, 1_000).await.unwrap().pop().unwrap();
        // The publisher sets the row aside (a broker refused it for good).
        if outbox
            .dead_letter(newest.id, "MessageSizeTooLarge", Timestamp(1_000))
            .await
            .unwrap()
        {
            dead = Some(newest);
            break;
        }
    }
    let dead = dead.expect("a row committed after the consumers' first read stays pending");
    let rows = [dead];
    let admin = app.admin_token();

    let (status, body) = app.get("/v1/admin/outbox/dead-letters", &admin).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let dead = body["dead_letters"].as_array().unwrap();
    assert_eq!(dead.len(), 1, "{body}");
    assert_eq!(dead[0]["id"], rows[0].id.to_string());
    assert_eq!(dead[0]["reason"], "MessageSizeTooLarge");
    assert_eq!(dead[0]["event_id"], rows[0].envelope.event_id.as_str());
    assert_eq!(dead[0]["dead_at"], 1_000);
    assert!(body["next_cursor"].is_null());

    let user = app.token("bob");
    let (status, body) = app.get("/v1/admin/outbox/dead-letters", &user).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, body) = app
        .get("/v1/admin/outbox/dead-letters?cursor=x", &admin)
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error_code(&body), "INVALID_CURSOR");
    let (status, body) = app
        .get("/v1/admin/outbox/dead-letters?limit=1000", &admin)
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error_code(&body), "INVALID_LIMIT");

    let replay = format!("/v1/admin/outbox/dead-letters/{}/replay", rows[0].id);
    let (status, body) = app.call(Method::POST, &replay, Some(&user), None).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, body) = app.call(Method::POST, &replay, Some(&admin), None).await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    let (status, body) = app.call(Method::POST, &replay, Some(&admin), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(error_code(&body), "NOT_FOUND");
    let (status, body) = app
        .call(
            Method::POST,
            "/v1/admin/outbox/dead-letters/-3/replay",
            Some(&admin),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error_code(&body), "INVALID_ID");

    let (_, body) = app.get("/v1/admin/outbox/dead-letters", &admin).await;
    assert!(body["dead_letters"].as_array().unwrap().is_empty());
    let back = outbox.list_after(0, 1_000).await.unwrap();
    assert_eq!(
        back.iter().find(|row| row.id == rows[0].id),
        Some(&rows[0]),
        "the row is back in the outbox under its id"
    );
}
