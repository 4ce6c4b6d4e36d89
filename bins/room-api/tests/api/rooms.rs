//! Room management and moderation through the API.

use axum::http::{Method, StatusCode};
use serde_json::json;

use crate::support::{TestApp, error_code, eventually};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owners_lock_rooms_with_a_password_that_is_never_shown() {
    let t = TestApp::new().await;
    let room_id = t.create_room("alice").await;
    let alice = t.token("alice");
    let path = format!("/v1/rooms/{room_id}");

    let (status, body) = t
        .call(
            Method::PATCH,
            &path,
            Some(&t.token("bob")),
            Some(json!({"notice": "hi"})),
        )
        .await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::FORBIDDEN, "FORBIDDEN")
    );

    let (status, room) = t
        .call(
            Method::PATCH,
            &path,
            Some(&alice),
            Some(json!({"notice": "welcome", "chat_enabled": false, "password": "sesame"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{room}");
    assert_eq!(room["notice"], "welcome");
    assert_eq!(room["chat_enabled"], false);
    assert_eq!(room["locked"], true);
    // Not a digit string: ids and timestamps could hold one by chance.
    assert!(!room.to_string().contains("sesame"));

    let join = format!("{path}/join");
    let (status, body) = t.post(&join, &t.token("bob"), json!({})).await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::FORBIDDEN, "WRONG_PASSWORD")
    );
    let (status, body) = t
        .post(&join, &t.token("bob"), json!({"password": "0000"}))
        .await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::FORBIDDEN, "WRONG_PASSWORD")
    );
    let (status, body) = t
        .post(&join, &t.token("bob"), json!({"password": "sesame"}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // `password: null` unlocks; an absent password leaves the lock alone.
    let (_, room) = t
        .call(
            Method::PATCH,
            &path,
            Some(&alice),
            Some(json!({"name": "Renamed"})),
        )
        .await;
    assert_eq!(
        (room["name"].as_str(), room["locked"].as_bool()),
        (Some("Renamed"), Some(true))
    );
    let (_, room) = t
        .call(
            Method::PATCH,
            &path,
            Some(&alice),
            Some(json!({"password": null})),
        )
        .await;
    assert_eq!(room["locked"], false);
    let (status, _) = t.post(&join, &t.token("carol"), json!({})).await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moderators_kick_ban_mute_and_appoint() {
    let t = TestApp::new().await;
    let room_id = t.room_with_members(0).await;
    t.join(&room_id, "carol").await;
    let alice = t.token("alice");
    let base = format!("/v1/rooms/{room_id}");

    // bob may not moderate; alice appoints him admin, then he may see bans.
    let (status, body) = t
        .get(&format!("{base}/banned-users"), &t.token("bob"))
        .await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::FORBIDDEN, "FORBIDDEN")
    );
    let (status, _) = t
        .call(
            Method::PUT,
            &format!("{base}/admins/bob"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(t.room(&room_id).await["admins"], json!(["bob"]));
    let (status, body) = t
        .get(&format!("{base}/banned-users"), &t.token("bob"))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // carol takes seat 2; bob (admin) removes her, then locks it.
    let carol = t.token("carol");
    let (status, _) = t
        .post(&format!("{base}/seats/2/take"), &carol, json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, room) = t
        .post(
            &format!("{base}/seats/2/remove"),
            &t.token("bob"),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{room}");
    assert!(room["seats"][2]["user_id"].is_null());
    let (_, room) = t
        .post(
            &format!("{base}/seats/2/lock"),
            &t.token("bob"),
            json!({"locked": true}),
        )
        .await;
    assert_eq!(room["seats"][2]["locked"], true);
    let (status, body) = t
        .post(&format!("{base}/seats/2/take"), &carol, json!({}))
        .await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::UNPROCESSABLE_ENTITY, "SEAT_LOCKED")
    );

    // A seat holder may mute their own seat.
    let (_, room) = t
        .post(&format!("{base}/seats/3/take"), &carol, json!({}))
        .await;
    assert_eq!(room["seats"][3]["user_id"], "carol");
    let (status, room) = t
        .post(
            &format!("{base}/seats/3/mute"),
            &carol,
            json!({"muted": true}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{room}");
    assert_eq!(room["seats"][3]["muted"], true);

    // Chat mute, kick with a ban, unban.
    let (status, _) = t
        .post(
            &format!("{base}/mute"),
            &alice,
            json!({"user_id": "carol", "seconds": 60}),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = t
        .post(
            &format!("{base}/kick"),
            &alice,
            json!({"user_id": "carol", "ban_seconds": 3600}),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, bans) = t.get(&format!("{base}/banned-users"), &alice).await;
    assert_eq!(bans["users"][0]["user_id"], "carol");
    let (status, body) = t.post(&format!("{base}/join"), &carol, json!({})).await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::FORBIDDEN, "BANNED")
    );
    let (status, _) = t
        .post(
            &format!("{base}/unban"),
            &alice,
            json!({"user_id": "carol"}),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, body) = t
        .post(
            &format!("{base}/unban"),
            &alice,
            json!({"user_id": "carol"}),
        )
        .await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::UNPROCESSABLE_ENTITY, "NOT_BANNED")
    );
    let (status, _) = t.post(&format!("{base}/join"), &carol, json!({})).await;
    assert_eq!(status, StatusCode::OK);

    // The owner cannot be kicked by an admin.
    let (status, body) = t
        .post(
            &format!("{base}/kick"),
            &t.token("bob"),
            json!({"user_id": "alice"}),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");

    let (status, _) = t
        .call(
            Method::DELETE,
            &format!("{base}/admins/bob"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(t.room(&room_id).await["admins"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn joining_a_second_room_leaves_the_first() {
    let t = TestApp::new().await;
    let first = t.room_with_members(0).await;
    let second = t.create_room("dave").await;
    assert_eq!(t.room(&first).await["online_count"], 2);
    t.join(&second, "bob").await;
    assert_eq!(t.room(&first).await["online_count"], 1);
    assert_eq!(t.room(&second).await["online_count"], 1);
    let (_, current) = t.get("/v1/me/current-room", &t.token("bob")).await;
    assert_eq!(current["room_id"], second.as_str());
}

/// A room of `owner`, locked with `password`.
async fn locked_room(t: &TestApp, owner: &str, password: &str) -> String {
    let room_id = t.create_room(owner).await;
    let (status, body) = t
        .call(
            Method::PATCH,
            &format!("/v1/rooms/{room_id}"),
            Some(&t.token(owner)),
            Some(json!({ "password": password })),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    room_id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_join_leaves_the_user_where_they_were() {
    let t = TestApp::new().await;
    let first = t.room_with_members(0).await;
    t.seat(&first, "bob", 0, "take").await;
    let locked = locked_room(&t, "dave", "1234").await;

    let (status, body) = t
        .post(
            &format!("/v1/rooms/{locked}/join"),
            &t.token("bob"),
            json!({"password": "0000"}),
        )
        .await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::FORBIDDEN, "WRONG_PASSWORD")
    );
    let room = t.room(&first).await;
    assert_eq!(room["online_count"], 2);
    assert_eq!(room["seats"][0]["user_id"], "bob");
    let (_, current) = t.get("/v1/me/current-room", &t.token("bob")).await;
    assert_eq!(current["room_id"], first.as_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_passwords_lock_one_user_out_of_one_room_for_a_while() {
    let t = TestApp::new().await;
    let locked = locked_room(&t, "dave", "1234").await;
    let join = format!("/v1/rooms/{locked}/join");
    let try_join = |user: &'static str, password: &'static str| {
        let (t, join) = (&t, join.clone());
        async move {
            let (status, body) = t
                .post(&join, &t.token(user), json!({ "password": password }))
                .await;
            (status, error_code(&body).to_owned())
        }
    };
    for guess in ["0000", "0001", "0002", "0003", "0004"] {
        assert_eq!(
            try_join("bob", guess).await,
            (StatusCode::FORBIDDEN, "WRONG_PASSWORD".to_owned())
        );
    }
    // Locked out, even with the right password; others are not.
    assert_eq!(
        try_join("bob", "1234").await,
        (
            StatusCode::TOO_MANY_REQUESTS,
            "TOO_MANY_ATTEMPTS".to_owned()
        )
    );
    let (status, _) = t
        .post(&join, &t.token("carol"), json!({"password": "1234"}))
        .await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_rooms_refuse_joins_and_leave_the_list() {
    let t = TestApp::new().await;
    let room_id = t.room_with_members(0).await;
    let close = format!("/v1/rooms/{room_id}/close");
    let (status, body) = t
        .call(Method::POST, &close, Some(&t.token("bob")), None)
        .await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::FORBIDDEN, "FORBIDDEN")
    );
    // Platform admins may close any room.
    let (status, _) = t
        .call(Method::POST, &close, Some(&t.admin_token()), None)
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let room = t.room(&room_id).await;
    assert_eq!(
        (room["status"].as_str(), room["online_count"].as_u64()),
        (Some("closed"), Some(0))
    );
    let (status, body) = t
        .post(
            &format!("/v1/rooms/{room_id}/join"),
            &t.token("carol"),
            json!({}),
        )
        .await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::UNPROCESSABLE_ENTITY, "ROOM_CLOSED")
    );
    // The lists are ranked by a refresh: one that ran before the close still shows the room
    // until the next.
    eventually("the closed room leaves the list", || async {
        t.refresh_lists().await;
        let (_, list) = t.get("/v1/rooms", &t.token("carol")).await;
        list["rooms"] == json!([])
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn image_urls_are_absolute_web_addresses_or_refused_naming_the_field() {
    let t = TestApp::new().await;
    let room_id = t.create_room("alice").await;
    let alice = t.token("alice");
    let path = format!("/v1/rooms/{room_id}");
    for (field, url) in [
        ("cover_url", "javascript:alert(1)"),
        ("background_url", "data:image/png;base64,AAAA"),
        ("cover_url", "ftp://img.example/a.png"),
        ("background_url", "https://img.example/a b.png"),
    ] {
        let (status, body) = t
            .call(
                Method::PATCH,
                &path,
                Some(&alice),
                Some(json!({ field: url })),
            )
            .await;
        assert_eq!(
            (status, error_code(&body)),
            (StatusCode::BAD_REQUEST, "INVALID_URL"),
            "{field}: {url}"
        );
        assert!(
            body["error"]["message"].as_str().unwrap().contains(field),
            "{body}"
        );
    }
    let longest = format!("https://img.example/{}", "b".repeat(2048 - 20));
    let (status, room) = t
        .call(
            Method::PATCH,
            &path,
            Some(&alice),
            Some(json!({"cover_url": "https://img.example/c.png", "background_url": longest})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{room}");
    assert_eq!(room["cover_url"], "https://img.example/c.png");
    assert_eq!(room["background_url"], longest.as_str());
    let (status, body) = t
        .call(
            Method::PATCH,
            &path,
            Some(&alice),
            Some(json!({"background_url": format!("{longest}b")})),
        )
        .await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::BAD_REQUEST, "INVALID_URL")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cover_another_open_room_shows_is_refused_as_in_use() {
    let t = TestApp::new().await;
    let first = t.create_room("alice").await;
    let second = t.create_room("bob").await;
    let cover = json!({ "cover_url": "https://img.example/covers/one.png" });
    let (status, room) = t
        .call(
            Method::PATCH,
            &format!("/v1/rooms/{first}"),
            Some(&t.token("alice")),
            Some(cover.clone()),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{room}");
    let (status, body) = t
        .call(
            Method::PATCH,
            &format!("/v1/rooms/{second}"),
            Some(&t.token("bob")),
            Some(cover.clone()),
        )
        .await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::CONFLICT, "COVER_IN_USE"),
        "{body}"
    );
    assert_eq!(body["error"]["retryable"], json!(false), "{body}");
    // Closed, the first room lets it go.
    let (status, _) = t
        .call(
            Method::POST,
            &format!("/v1/rooms/{first}/close"),
            Some(&t.token("alice")),
            None,
        )
        .await;
    assert!(status.is_success(), "{status}");
    let (status, room) = t
        .call(
            Method::PATCH,
            &format!("/v1/rooms/{second}"),
            Some(&t.token("bob")),
            Some(cover),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{room}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_platform_admin_revokes_a_rooms_name_and_cover_with_a_reason() {
    let t = TestApp::new().await;
    let first = t.create_room("alice").await;
    let second = t.create_room("bob").await;
    let cover = "https://img.example/covers/ad.png";
    let (status, room) = t
        .call(
            Method::PATCH,
            &format!("/v1/rooms/{first}"),
            Some(&t.token("alice")),
            Some(json!({"name": "Cheap coins here", "notice": "dm me", "cover_url": cover})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{room}");
    let revoke = |token: String, body: serde_json::Value| {
        let (t, first) = (&t, first.clone());
        async move {
            t.call(
                Method::POST,
                &format!("/v1/admin/rooms/{first}/revoke"),
                Some(&token),
                Some(body),
            )
            .await
        }
    };
    let body = json!({"resources": ["name", "cover", "cover"], "reason": "Advertising."});
    // The owner is no platform admin.
    let (status, answer) = revoke(t.token("alice"), body.clone()).await;
    assert_eq!(
        (status, error_code(&answer)),
        (StatusCode::FORBIDDEN, "FORBIDDEN")
    );
    let (status, room) = revoke(t.admin_token(), body).await;
    assert_eq!(status, StatusCode::OK, "{room}");
    assert_eq!(room["name"], "Voice room");
    assert_eq!(room["cover_url"], serde_json::Value::Null);
    assert_eq!(room["notice"], "dm me");
    // The revoked cover is free for another room.
    let (status, other) = t
        .call(
            Method::PATCH,
            &format!("/v1/rooms/{second}"),
            Some(&t.token("bob")),
            Some(json!({"cover_url": cover})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{other}");

    // Bad input changes nothing.
    for (bad, code) in [
        (json!({"resources": [], "reason": "x"}), "INVALID_BODY"),
        (
            json!({"resources": ["name", "notice", "cover", "background", "name"], "reason": "x"}),
            "INVALID_BODY",
        ),
        (
            json!({"resources": ["owner"], "reason": "x"}),
            "INVALID_BODY",
        ),
        (json!({"resources": ["notice"]}), "INVALID_BODY"),
        (
            json!({"resources": ["notice"], "reason": "  "}),
            "FIELD_EMPTY",
        ),
        (
            json!({"resources": ["notice"], "reason": "x".repeat(201)}),
            "FIELD_TOO_LONG",
        ),
    ] {
        let (status, answer) = revoke(t.admin_token(), bad.clone()).await;
        assert_eq!(
            (status, error_code(&answer)),
            (StatusCode::BAD_REQUEST, code),
            "{bad}: {answer}"
        );
    }
    let room = t.room(&first).await;
    assert_eq!(room["notice"], "dm me");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_platform_admin_sends_system_messages_to_a_room_a_region_or_everyone() {
    let t = TestApp::new().await;
    let room_id = t.create_room("alice").await;
    let send = |token: String, body: serde_json::Value| {
        let t = &t;
        async move {
            t.call(
                Method::POST,
                "/v1/admin/system-messages",
                Some(&token),
                Some(body),
            )
            .await
        }
    };
    let version = t.room(&room_id).await["version"].as_u64().unwrap();
    for (target, sent) in [
        (json!({"room_id": room_id}), 1),
        (json!({"all": true}), 1),
        (json!({"region": "nowhere"}), 0),
    ] {
        let (status, report) = send(
            t.admin_token(),
            json!({"text": "Maintenance at 02:00.\nBack soon.", "target": target}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{target}: {report}");
        assert_eq!(
            report,
            json!({"sent": sent, "closed": 0, "failed": 0}),
            "{target}"
        );
    }
    // Two messages shown: one event each.
    assert_eq!(t.room(&room_id).await["version"], version + 2);

    let (status, answer) = send(
        t.token("alice"),
        json!({"text": "Hi", "target": {"all": true}}),
    )
    .await;
    assert_eq!(
        (status, error_code(&answer)),
        (StatusCode::FORBIDDEN, "FORBIDDEN")
    );
    for (bad, status, code) in [
        (
            json!({"text": "Hi", "target": {"all": false}}),
            StatusCode::BAD_REQUEST,
            "INVALID_BODY",
        ),
        (
            json!({"text": "Hi", "target": {"room_id": "a", "all": true}}),
            StatusCode::BAD_REQUEST,
            "INVALID_BODY",
        ),
        (
            json!({"text": "Hi", "target": "all"}),
            StatusCode::BAD_REQUEST,
            "INVALID_BODY",
        ),
        (
            json!({"text": "Hi"}),
            StatusCode::BAD_REQUEST,
            "INVALID_BODY",
        ),
        (
            json!({"text": " ", "target": {"all": true}}),
            StatusCode::BAD_REQUEST,
            "FIELD_EMPTY",
        ),
        (
            json!({"text": "x".repeat(501), "target": {"all": true}}),
            StatusCode::BAD_REQUEST,
            "FIELD_TOO_LONG",
        ),
        (
            json!({"text": "Hi", "target": {"region": "r".repeat(33)}}),
            StatusCode::BAD_REQUEST,
            "FIELD_TOO_LONG",
        ),
        (
            json!({"text": "Hi", "target": {"room_id": "no-such-room"}}),
            StatusCode::NOT_FOUND,
            "ROOM_NOT_FOUND",
        ),
    ] {
        let (got, answer) = send(t.admin_token(), bad.clone()).await;
        assert_eq!(
            (got, error_code(&answer)),
            (status, code),
            "{bad}: {answer}"
        );
    }
    assert_eq!(t.room(&room_id).await["version"], version + 2);
}
