//! Following rooms through the API: idempotent follows and unfollows, the cap, the followed
//! rooms open first with their live status, and the follower count in the room's snapshot.

use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::support::{TestApp, error_code};

async fn follow(t: &TestApp, method: Method, room_id: &str, user: &str) -> (StatusCode, Value) {
    t.call(
        method,
        &format!("/v1/rooms/{room_id}/follow"),
        Some(&t.token(user)),
        None,
    )
    .await
}

fn ids(page: &Value) -> Vec<String> {
    page["rooms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|room| room["room_id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follows_are_idempotent_and_counted_in_the_snapshot() {
    let t = TestApp::new().await;
    let room_id = t.create_room("alice").await;
    let snapshot = format!("/v1/rooms/{room_id}");

    let (status, room) = t.get(&snapshot, &t.token("bob")).await;
    assert_eq!(status, StatusCode::OK, "{room}");
    assert_eq!(room["follower_count"], 0);

    for _ in 0..2 {
        let (status, body) = follow(&t, Method::PUT, &room_id, "bob").await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["following"], true);
    }
    follow(&t, Method::PUT, &room_id, "carol").await;
    let (_, room) = t.get(&snapshot, &t.token("bob")).await;
    assert_eq!(room["follower_count"], 2, "following twice counts once");

    for _ in 0..2 {
        let (status, body) = follow(&t, Method::DELETE, &room_id, "bob").await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["following"], false);
    }
    let (_, room) = t.get(&snapshot, &t.token("bob")).await;
    assert_eq!(room["follower_count"], 1);

    let (status, body) = follow(&t, Method::DELETE, &room_id, "dave").await;
    assert_eq!(
        status,
        StatusCode::OK,
        "unfollowing a room not followed: {body}"
    );

    for method in [Method::PUT, Method::DELETE] {
        let (status, body) = follow(&t, method, "no-such-room", "bob").await;
        assert_eq!(
            (status, error_code(&body)),
            (StatusCode::NOT_FOUND, "ROOM_NOT_FOUND")
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_follows_at_most_the_configured_number_of_rooms() {
    let t = TestApp::with(|s| s.lists.max_follows_per_user = 2).await;
    let rooms = [
        t.create_room("alice").await,
        t.create_room("alice").await,
        t.create_room("alice").await,
    ];
    for room_id in &rooms[..2] {
        let (status, body) = follow(&t, Method::PUT, room_id, "bob").await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let (status, body) = follow(&t, Method::PUT, &rooms[2], "bob").await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::CONFLICT, "FOLLOW_LIMIT"),
        "{body}"
    );
    let (status, _) = follow(&t, Method::PUT, &rooms[1], "bob").await;
    assert_eq!(
        status,
        StatusCode::OK,
        "a room followed already, at the cap"
    );
    let (status, _) = follow(&t, Method::PUT, &rooms[2], "carol").await;
    assert_eq!(status, StatusCode::OK, "the cap is per user");

    follow(&t, Method::DELETE, &rooms[0], "bob").await;
    let (status, body) = follow(&t, Method::PUT, &rooms[2], "bob").await;
    assert_eq!(status, StatusCode::OK, "an unfollow makes room: {body}");
    let (_, page) = t.get("/v1/me/followed-rooms", &t.token("bob")).await;
    assert_eq!(ids(&page), [rooms[2].clone(), rooms[1].clone()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn followed_rooms_come_open_first_with_their_live_status_in_pages() {
    let t = TestApp::new().await;
    let mut rooms = Vec::new();
    for _ in 0..4 {
        let room_id = t.create_room("alice").await;
        follow(&t, Method::PUT, &room_id, "bob").await;
        rooms.push(room_id);
    }
    t.join(&rooms[2], "carol").await;
    // The oldest follow's room closes.
    let (status, body) = t
        .post(
            &format!("/v1/rooms/{}/close", rooms[0]),
            &t.token("alice"),
            json!({}),
        )
        .await;
    assert!(status.is_success(), "{body}");
    let bob = t.token("bob");

    let (status, first) = t.get("/v1/me/followed-rooms?limit=2", &bob).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    assert_eq!(ids(&first), [rooms[3].clone(), rooms[2].clone()]);
    assert_eq!(first["rooms"][0]["open"], true);
    assert_eq!(first["rooms"][1]["online_count"], 1, "carol is in it");
    assert!(first["rooms"][0]["name"].is_string());
    let cursor = first["next_cursor"].as_str().unwrap().to_owned();

    let (_, second) = t
        .get(
            &format!("/v1/me/followed-rooms?limit=2&cursor={cursor}"),
            &bob,
        )
        .await;
    assert_eq!(ids(&second), [rooms[1].clone(), rooms[0].clone()]);
    assert_eq!(
        second["rooms"][1]["open"], false,
        "the closed room comes last"
    );
    let cursor = second["next_cursor"].as_str().unwrap().to_owned();
    let (_, third) = t
        .get(
            &format!("/v1/me/followed-rooms?limit=2&cursor={cursor}"),
            &bob,
        )
        .await;
    assert_eq!(ids(&third), Vec::<String>::new());
    assert!(third["next_cursor"].is_null());

    let (_, none) = t.get("/v1/me/followed-rooms", &t.token("dave")).await;
    assert_eq!(ids(&none), Vec::<String>::new());

    for bad in ["x", "2.5", "1.-3", "1.x"] {
        let (status, body) = t
            .get(&format!("/v1/me/followed-rooms?cursor={bad}"), &bob)
            .await;
        assert_eq!(
            (status, error_code(&body)),
            (StatusCode::BAD_REQUEST, "INVALID_CURSOR"),
            "{bad}"
        );
    }
    let (status, body) = t.get("/v1/me/followed-rooms?limit=101", &bob).await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::BAD_REQUEST, "INVALID_LIMIT")
    );
}
