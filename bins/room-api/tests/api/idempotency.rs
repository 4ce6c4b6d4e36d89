//! The `Idempotency-Key` header: a repeated mutating request with the same key gets the first
//! answer and changes nothing more; the same key from another user is another request.

use axum::body::Body;
use axum::http::{HeaderValue, Method, Request, StatusCode, header};
use serde_json::{Value, json};

use crate::support::{TestApp, error_code, parse};

/// Sends `body` (if any) as `user`, with `key` as the `Idempotency-Key` header.
async fn keyed(
    t: &TestApp,
    method: Method,
    path: &str,
    user: &str,
    key: HeaderValue,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header(header::AUTHORIZATION, format!("Bearer {}", t.token(user)))
        .header("idempotency-key", key);
    let request = match body {
        Some(body) => request
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_string())),
        None => request.body(Body::empty()),
    }
    .unwrap();
    let (status, _, body) = t.send(request).await;
    (status, parse(&body))
}

fn key(text: &str) -> HeaderValue {
    HeaderValue::from_str(text).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_room_created_twice_with_one_key_is_one_room() {
    let t = TestApp::new().await;
    let create = |user: &'static str| {
        keyed(
            &t,
            Method::POST,
            "/v1/rooms",
            user,
            key("create-1"),
            Some(json!({"name": "Night talk"})),
        )
    };
    let (status, first) = create("alice").await;
    assert_eq!(status, StatusCode::CREATED, "{first}");
    let (status, again) = create("alice").await;
    assert_eq!(status, StatusCode::CREATED, "{again}");
    assert_eq!(again["room_id"], first["room_id"]);
    assert_eq!(again["short_id"], first["short_id"]);
    assert_eq!(again["version"], first["version"]);

    t.refresh_lists().await;
    let (status, page) = t.get("/v1/rooms", &t.token("reader")).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let rooms = page["rooms"].as_array().expect("a list of rooms");
    assert_eq!(rooms.len(), 1, "{page}");

    // The same key from bob is his own request: his own room.
    let (status, bobs) = create("bob").await;
    assert_eq!(status, StatusCode::CREATED, "{bobs}");
    assert_ne!(bobs["room_id"], first["room_id"]);
    assert_eq!(bobs["owner"], "bob");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kick_with_ban_sent_twice_with_one_key_kicks_once() {
    let t = TestApp::new().await;
    let room_id = t.room_with_members(0).await;
    let kick = format!("/v1/rooms/{room_id}/kick");
    let send = || {
        keyed(
            &t,
            Method::POST,
            &kick,
            "alice",
            key("kick-bob"),
            Some(json!({"user_id": "bob", "ban_seconds": 600})),
        )
    };
    let (status, body) = send().await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    let version = t.room(&room_id).await["version"].clone();
    // Without a key the repeat is refused: bob is no longer a member.
    let (status, body) = send().await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    assert_eq!(t.room(&room_id).await["version"], version);

    // Bob is let back in; a late repeat of the kick changes nothing.
    let (status, body) = t
        .post(
            &format!("/v1/rooms/{room_id}/unban"),
            &t.token("alice"),
            json!({"user_id": "bob"}),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    t.join(&room_id, "bob").await;
    let (status, body) = send().await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    let (status, online) = t
        .get(
            &format!("/v1/rooms/{room_id}/online-users"),
            &t.token("alice"),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{online}");
    assert!(online.to_string().contains("\"bob\""), "{online}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seat_taken_twice_with_one_key_is_taken_once_and_other_users_keys_are_their_own() {
    let t = TestApp::new().await;
    let room_id = t.room_with_members(0).await;
    t.join(&room_id, "carol").await;
    let take = format!("/v1/rooms/{room_id}/seats/1/take");
    let (status, room) = keyed(&t, Method::POST, &take, "bob", key("seat"), None).await;
    assert_eq!(status, StatusCode::OK, "{room}");
    assert_eq!(room["seats"][1]["user_id"], "bob");
    t.seat(&room_id, "bob", 1, "leave").await;

    // The repeat answers as the first time and does not seat bob again.
    let (status, body) = keyed(&t, Method::POST, &take, "bob", key("seat"), None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(t.room(&room_id).await["seats"][1]["user_id"], Value::Null);

    // Carol's request under the same key is hers.
    let (status, room) = keyed(&t, Method::POST, &take, "carol", key("seat"), None).await;
    assert_eq!(status, StatusCode::OK, "{room}");
    assert_eq!(room["seats"][1]["user_id"], "carol");

    // Bob's key on another route is another request too (the same route template, for
    // another seat, would be a repeat).
    let leave = format!("/v1/rooms/{room_id}/leave");
    let (status, body) = keyed(&t, Method::POST, &leave, "bob", key("seat"), None).await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    let (status, online) = t
        .get(
            &format!("/v1/rooms/{room_id}/online-users"),
            &t.token("alice"),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{online}");
    assert!(!online.to_string().contains("\"bob\""), "{online}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_idempotency_keys_are_refused() {
    let t = TestApp::new().await;
    let room_id = t.room_with_members(0).await;
    let bad = [
        key(""),
        key(&"k".repeat(65)),
        key("tab\there"),
        HeaderValue::from_bytes("clé".as_bytes()).unwrap(),
    ];
    for value in bad {
        for (method, path) in [
            (Method::POST, "/v1/rooms".to_owned()),
            (Method::POST, format!("/v1/rooms/{room_id}/seats/1/take")),
            (Method::POST, format!("/v1/rooms/{room_id}/heartbeat")),
            (Method::DELETE, format!("/v1/rooms/{room_id}/admins/bob")),
        ] {
            let (status, body) = keyed(
                &t,
                method,
                &path,
                "alice",
                value.clone(),
                Some(json!({"name": "x"})),
            )
            .await;
            assert_eq!(
                (status, error_code(&body)),
                (StatusCode::BAD_REQUEST, "INVALID_IDEMPOTENCY_KEY"),
                "{path} {value:?}"
            );
        }
    }
    // 64 printable characters, space included, are fine.
    let fine = format!("a b~{}", "z".repeat(60));
    let take = format!("/v1/rooms/{room_id}/seats/1/take");
    let (status, body) = keyed(&t, Method::POST, &take, "bob", key(&fine), None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

/// Sends a keyed request and answers its status, headers and body.
async fn keyed_with_headers(
    t: &TestApp,
    method: Method,
    path: &str,
    user: &str,
    key_text: &str,
    body: &str,
) -> (StatusCode, axum::http::HeaderMap, Value) {
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header(header::AUTHORIZATION, format!("Bearer {}", t.token(user)))
        .header("idempotency-key", key_text)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_owned()))
        .unwrap();
    let (status, headers, body) = t.send(request).await;
    (status, headers, parse(&body))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_with_the_same_request_replays_its_answer_and_with_another_is_refused() {
    let t = TestApp::new().await;
    let (status, headers, first) = keyed_with_headers(
        &t,
        Method::POST,
        "/v1/rooms",
        "alice",
        "k-1",
        r#"{"name":"Night talk","seat_count":8}"#,
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{first}");
    assert!(headers.get("idempotency-replayed").is_none());
    // The same request, its JSON written otherwise: the first answer, marked as given again.
    let (status, headers, again) = keyed_with_headers(
        &t,
        Method::POST,
        "/v1/rooms",
        "alice",
        "k-1",
        r#" { "seat_count": 8, "name": "Night talk" } "#,
    )
    .await;
    assert_eq!((status, &again), (StatusCode::CREATED, &first));
    assert_eq!(headers["idempotency-replayed"], "true");
    // Another request with the key: refused, and nothing made.
    let (status, _, reused) = keyed_with_headers(
        &t,
        Method::POST,
        "/v1/rooms",
        "alice",
        "k-1",
        r#"{"name":"Day talk","seat_count":8}"#,
    )
    .await;
    assert_eq!(
        (status, error_code(&reused)),
        (StatusCode::UNPROCESSABLE_ENTITY, "IDEMPOTENCY_KEY_REUSED"),
        "{reused}"
    );
    t.refresh_lists().await;
    let (_, page) = t.get("/v1/rooms", &t.token("reader")).await;
    assert_eq!(page["rooms"].as_array().unwrap().len(), 1, "{page}");

    // A room command: another path (another seat) with the key is another request.
    let room_id = first["room_id"].as_str().unwrap();
    t.join(room_id, "alice").await;
    let take = |seat: u8| {
        let path = format!("/v1/rooms/{room_id}/seats/{seat}/take");
        let t = &t;
        async move { keyed_with_headers(t, Method::POST, &path, "alice", "take-1", "{}").await }
    };
    let (status, _, taken) = take(1).await;
    assert_eq!(status, StatusCode::OK, "{taken}");
    let (status, _, reused) = take(2).await;
    assert_eq!(
        (status, error_code(&reused)),
        (StatusCode::UNPROCESSABLE_ENTITY, "IDEMPOTENCY_KEY_REUSED")
    );
    assert_eq!(t.room(room_id).await["seats"][2]["user_id"], Value::Null);

    // A request refused as invalid (400) claims nothing: fixed, it goes with the same key.
    let (status, _, invalid) = keyed_with_headers(
        &t,
        Method::POST,
        "/v1/rooms",
        "alice",
        "k-2",
        r#"{"name":"Night talk","seat_count":99}"#,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{invalid}");
    let (status, _, fixed) = keyed_with_headers(
        &t,
        Method::POST,
        "/v1/rooms",
        "alice",
        "k-2",
        r#"{"name":"Night talk","seat_count":9}"#,
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{fixed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_robot_room_key_repeated_with_another_configuration_makes_no_second_room() {
    let t = TestApp::new().await;
    let body = |robots: std::ops::Range<u32>| {
        let mut config = crate::robot_rooms::fixtures::config();
        config["robots"] = json!(robots.map(|i| format!("robot-{i}")).collect::<Vec<_>>());
        config.to_string()
    };
    let (status, _, first) = admin_keyed(&t, "night", &body(0..5)).await;
    assert_eq!(status, StatusCode::CREATED, "{first}");
    // Another pool, another first robot: the room the key names would be another.
    let (status, _, again) = admin_keyed(&t, "night", &body(10..15)).await;
    assert_eq!(
        (status, error_code(&again)),
        (StatusCode::CONFLICT, "ROBOT_ROOM_EXISTS"),
        "{again}"
    );
    let (_, list) = t.get("/v1/admin/robot-rooms", &t.admin_token()).await;
    assert_eq!(list["robot_rooms"].as_array().unwrap().len(), 1, "{list}");
}

/// Creates a robot room as the platform admin, with `key_text` as the `Idempotency-Key`.
async fn admin_keyed(
    t: &TestApp,
    key_text: &str,
    body: &str,
) -> (StatusCode, axum::http::HeaderMap, Value) {
    let request = Request::builder()
        .method(Method::POST)
        .uri("/v1/admin/robot-rooms")
        .header(header::AUTHORIZATION, format!("Bearer {}", t.admin_token()))
        .header("idempotency-key", key_text)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_owned()))
        .unwrap();
    let (status, headers, body) = t.send(request).await;
    (status, headers, parse(&body))
}

/// A keyed request refused for its form (not JSON: 415) claims nothing: the same key then
/// runs the request sent as JSON, with the same body.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_refused_for_its_form_leaves_its_key_free() {
    let t = TestApp::new().await;
    let body = json!({"name": "Night talk"}).to_string();
    let request = Request::builder()
        .method(Method::POST)
        .uri("/v1/rooms")
        .header(
            header::AUTHORIZATION,
            format!("Bearer {}", t.token("alice")),
        )
        .header("idempotency-key", key("form-1"))
        .header(header::CONTENT_TYPE, "text/plain")
        .body(Body::from(body))
        .unwrap();
    let (status, _, answer) = t.send(request).await;
    assert_eq!(
        status,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "{}",
        parse(&answer)
    );
    let (status, created) = keyed(
        &t,
        Method::POST,
        "/v1/rooms",
        "alice",
        key("form-1"),
        Some(json!({"name": "Night talk"})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
}

/// Sends `body` to `PUT /v1/admin/billing` as the platform admin with `key_text` as the key.
async fn put_billing_keyed(
    t: &TestApp,
    key_text: &str,
    body: &Value,
) -> (StatusCode, axum::http::HeaderMap, Value) {
    let request = Request::builder()
        .method(Method::PUT)
        .uri("/v1/admin/billing")
        .header(header::AUTHORIZATION, format!("Bearer {}", t.admin_token()))
        .header("idempotency-key", key_text)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    let (status, headers, body) = t.send(request).await;
    (status, headers, parse(&body))
}

/// A mutating route not idempotent its own way keeps the key's record, as the API document
/// says of it: the billing policy's change, repeated with its key, is answered again rather
/// than refused as stale.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_change_repeated_with_its_key_gets_its_first_answer() {
    let t = TestApp::new().await;
    let change = json!({"expected_version": 1, "recipient_bp": 6_000, "owner_bp": 0,
                        "agency_bp": 0});
    let (status, headers, first) = put_billing_keyed(&t, "billing-1", &change).await;
    assert_eq!(status, StatusCode::OK, "{first}");
    assert!(headers.get("idempotency-replayed").is_none());
    let (status, headers, again) = put_billing_keyed(&t, "billing-1", &change).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(headers["idempotency-replayed"], "true");
    assert_eq!(again, first);
    let other = json!({"expected_version": 2, "recipient_bp": 1_000, "owner_bp": 0,
                       "agency_bp": 0});
    let (status, _, reused) = put_billing_keyed(&t, "billing-1", &other).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{reused}");
    assert_eq!(error_code(&reused), "IDEMPOTENCY_KEY_REUSED");
    let (_, current) = t.get("/v1/admin/billing", &t.admin_token()).await;
    assert_eq!(current["version"], 2, "{current}");
}
