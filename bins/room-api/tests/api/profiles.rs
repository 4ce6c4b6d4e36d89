//! The user directory through the API: admins write and read profiles (one, or a batch in one
//! transaction), users change their own nickname and avatar, and the rooms' views and display
//! events carry the display fields.

use axum::http::{Method, StatusCode};
use room_domain::{Event, MicChange, RoomId};
use serde_json::{Value, json};

use crate::support::{TestApp, error_code};

async fn put_user(t: &TestApp, user: &str, body: Value) -> (StatusCode, Value) {
    t.call(
        Method::PUT,
        &format!("/v1/admin/users/{user}"),
        Some(&t.admin_token()),
        Some(body),
    )
    .await
}

async fn get_user(t: &TestApp, user: &str) -> (StatusCode, Value) {
    t.get(&format!("/v1/admin/users/{user}"), &t.admin_token())
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_writes_and_reads_a_profile_field_by_field() {
    let t = TestApp::new().await;
    let (status, body) = get_user(&t, "carol").await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::NOT_FOUND, "NOT_FOUND")
    );

    let (status, written) = put_user(
        &t,
        "carol",
        json!({
            "nickname": "Carol ✨",
            "avatar_url": "https://img.example/carol.png",
            "region": "mena",
            "country": "SA",
            "agency": "agency-7",
        }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{written}");
    let (status, read) = get_user(&t, "carol").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(read, written);
    assert_eq!(read["agency"], "agency-7");

    // Absent fields stay, null clears, "" clears the avatar.
    let (status, changed) = put_user(
        &t,
        "carol",
        json!({ "country": "EG", "agency": null, "avatar_url": "" }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{changed}");
    assert_eq!(
        changed,
        json!({
            "user_id": "carol",
            "nickname": "Carol ✨",
            "avatar_url": null,
            "region": "mena",
            "country": "EG",
            "agency": null,
        })
    );

    // Not an admin.
    let (status, body) = t
        .call(
            Method::PUT,
            "/v1/admin/users/carol",
            Some(&t.token("carol")),
            Some(json!({ "agency": "mine" })),
        )
        .await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::FORBIDDEN, "FORBIDDEN")
    );
    let (status, _) = t.get("/v1/admin/users/carol", &t.token("carol")).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_value_that_breaks_its_rule_is_refused_and_writes_nothing() {
    let t = TestApp::new().await;
    put_user(&t, "dave", json!({ "nickname": "Dave" })).await;
    for (body, field) in [
        (json!({ "nickname": "   " }), "nickname"),
        (json!({ "nickname": "n".repeat(31) }), "nickname"),
        (json!({ "nickname": "a\u{202e}b" }), "nickname"),
        (json!({ "avatar_url": "javascript:alert(1)" }), "avatar_url"),
        (json!({ "region": "eu west" }), "region"),
        (json!({ "country": "sa" }), "country"),
        (json!({ "country": "SAU" }), "country"),
        (json!({ "agency": "a/b" }), "agency"),
        (json!({ "agency": "a".repeat(65) }), "agency"),
    ] {
        let (status, answer) = put_user(&t, "dave", body.clone()).await;
        assert_eq!(
            (status, error_code(&answer)),
            (StatusCode::BAD_REQUEST, "INVALID_PROFILE"),
            "{body}"
        );
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.starts_with(field), "{body}: {message}");
    }
    let (status, answer) = put_user(&t, "dave", json!({ "vip": 3 })).await;
    assert_eq!(
        (status, error_code(&answer)),
        (StatusCode::BAD_REQUEST, "INVALID_BODY")
    );
    let (_, read) = get_user(&t, "dave").await;
    assert_eq!(read["nickname"], "Dave");
    assert_eq!(read["region"], Value::Null);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_is_written_whole_or_not_at_all_and_is_bounded() {
    let t = TestApp::new().await;
    let admin = t.admin_token();
    let batch = |users: Vec<Value>| json!({ "users": users });
    let (status, body) = t
        .call(
            Method::PUT,
            "/v1/admin/users",
            Some(&admin),
            Some(batch(vec![
                json!({ "user_id": "u1", "country": "SA", "agency": "ag-1" }),
                json!({ "user_id": "u2", "nickname": "Two" }),
                json!({ "user_id": "u1", "nickname": "One" }),
            ])),
        )
        .await;
    assert_eq!((status, &body), (StatusCode::OK, &json!({ "written": 3 })));
    let (_, u1) = get_user(&t, "u1").await;
    assert_eq!(
        (&u1["nickname"], &u1["agency"]),
        (&json!("One"), &json!("ag-1"))
    );

    // One bad entry: nothing of the batch is written.
    let (status, body) = t
        .call(
            Method::PUT,
            "/v1/admin/users",
            Some(&admin),
            Some(batch(vec![
                json!({ "user_id": "u3", "nickname": "Three" }),
                json!({ "user_id": "u1", "country": "Saudi" }),
            ])),
        )
        .await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::BAD_REQUEST, "INVALID_PROFILE")
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("users[1].country"),
        "{body}"
    );
    assert_eq!(get_user(&t, "u3").await.0, StatusCode::NOT_FOUND);
    let (status, body) = t
        .call(
            Method::PUT,
            "/v1/admin/users",
            Some(&admin),
            Some(batch(vec![json!({ "user_id": "bad/id" })])),
        )
        .await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::BAD_REQUEST, "INVALID_ID")
    );

    // The bound: 500 entries pass, 501 do not, and none is empty.
    let entries = |n: usize| {
        (0..n)
            .map(|i| json!({ "user_id": format!("b{i}") }))
            .collect()
    };
    let (status, body) = t
        .call(
            Method::PUT,
            "/v1/admin/users",
            Some(&admin),
            Some(batch(entries(500))),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    for n in [0, 501] {
        let (status, body) = t
            .call(
                Method::PUT,
                "/v1/admin/users",
                Some(&admin),
                Some(batch(entries(n))),
            )
            .await;
        assert_eq!(
            (status, error_code(&body)),
            (StatusCode::BAD_REQUEST, "INVALID_PROFILE"),
            "{n} entries"
        );
    }
    assert_eq!(get_user(&t, "b500").await.0, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_changes_their_own_nickname_and_avatar_only() {
    let t = TestApp::new().await;
    put_user(&t, "erin", json!({ "agency": "ag-9" })).await;
    let erin = t.token("erin");
    let (status, body) = t
        .call(
            Method::PATCH,
            "/v1/me/profile",
            Some(&erin),
            Some(json!({ "nickname": "Erin", "avatar_url": "https://img.example/e.png" })),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        (&body["nickname"], &body["agency"]),
        (&json!("Erin"), &json!("ag-9"))
    );
    for forbidden in [
        json!({ "agency": "ag-1" }),
        json!({ "country": "SA" }),
        // The fields in order, as an array: not an object.
        json!([null, null]),
    ] {
        let (status, body) = t
            .call(
                Method::PATCH,
                "/v1/me/profile",
                Some(&erin),
                Some(forbidden),
            )
            .await;
        assert_eq!(
            (status, error_code(&body)),
            (StatusCode::BAD_REQUEST, "INVALID_BODY")
        );
    }
    let (status, body) = t
        .call(
            Method::PATCH,
            "/v1/me/profile",
            Some(&erin),
            Some(json!({ "nickname": "\u{0007}" })),
        )
        .await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::BAD_REQUEST, "INVALID_PROFILE")
    );
    let (_, read) = get_user(&t, "erin").await;
    assert_eq!(read["nickname"], "Erin");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn views_and_display_events_carry_nicknames_and_avatars() {
    let t = TestApp::new().await;
    for (user, nickname) in [("alice", "Alice A."), ("bob", "Bobby")] {
        let (status, body) = put_user(
            &t,
            user,
            json!({ "nickname": nickname, "avatar_url": format!("https://img.example/{user}.png") }),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let room_id = t.create_room("alice").await;
    let mut watch = t.app.messenger().subscribe(&RoomId::new(&room_id).unwrap());
    t.join(&room_id, "alice").await;
    t.join(&room_id, "bob").await;
    t.join(&room_id, "carol").await; // no profile
    t.credit("alice", 100).await;
    let room = t.seat(&room_id, "bob", 1, "take").await;
    let (status, _) = t
        .gift(&room_id, "alice", "o-shown", "rose", 1, &["bob"])
        .await;
    assert_eq!(status, StatusCode::OK);

    // The views, at read time.
    assert_eq!(room["owner_nickname"], "Alice A.");
    assert_eq!(room["owner_avatar_url"], "https://img.example/alice.png");
    assert_eq!(room["seats"][1]["nickname"], "Bobby");
    assert_eq!(room["seats"][0]["nickname"], Value::Null);
    let (status, online) = t
        .get(
            &format!("/v1/rooms/{room_id}/online-users"),
            &t.token("carol"),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{online}");
    let shown: Vec<(String, Value)> = online["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u["user_id"].as_str().unwrap().to_owned(),
                u["nickname"].clone(),
            )
        })
        .collect();
    assert_eq!(
        shown,
        vec![
            ("alice".to_owned(), json!("Alice A.")),
            ("bob".to_owned(), json!("Bobby")),
            ("carol".to_owned(), Value::Null),
        ]
    );

    let rank = t
        .rank_when(&room_id, "?period=day", "carol", |rank| {
            rank["entries"][0]["user_id"].is_string()
        })
        .await;
    assert_eq!(rank["entries"][0]["user_id"], "alice");
    assert_eq!(rank["entries"][0]["nickname"], "Alice A.");

    // The display events, as of the event.
    let (mut joins, mut seat, mut gift) = (Vec::new(), None, None);
    while gift.is_none() {
        let message = watch.recv().await.expect("a display event");
        match message.envelope.event {
            Event::RoomUserJoined { user, nickname, .. } => {
                joins.push((user.to_string(), nickname));
            }
            Event::RoomMicChanged {
                change:
                    MicChange::Up {
                        nickname,
                        avatar_url,
                        ..
                    },
                ..
            } => seat = Some((nickname, avatar_url)),
            Event::RoomGiftSent(sent) => {
                gift = Some((sent.sender_nickname, sent.sender_avatar_url))
            }
            _ => {}
        }
    }
    assert_eq!(
        joins,
        vec![
            ("alice".to_owned(), Some("Alice A.".to_owned())),
            ("bob".to_owned(), Some("Bobby".to_owned())),
            ("carol".to_owned(), None),
        ]
    );
    assert_eq!(
        seat,
        Some((
            Some("Bobby".to_owned()),
            Some("https://img.example/bob.png".to_owned())
        ))
    );
    assert_eq!(
        gift,
        Some((
            Some("Alice A.".to_owned()),
            Some("https://img.example/alice.png".to_owned())
        ))
    );

    // A change through this node shows at once in the next view.
    let (status, _) = t
        .call(
            Method::PATCH,
            "/v1/me/profile",
            Some(&t.token("alice")),
            Some(json!({ "nickname": "Alice B." })),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(t.room(&room_id).await["owner_nickname"], "Alice B.");
}
