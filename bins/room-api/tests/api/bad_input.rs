//! Every kind of bad input is a 4xx with a stable code in the error shape; nothing is a 5xx.

use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use room_node::Claims;
use serde_json::{Value, json};

use crate::support::{TestApp, error_code, parse};

fn long_id() -> String {
    "x".repeat(65)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_gift_requests_get_stable_codes() {
    let t = TestApp::new().await;
    let room_id = t.room_with_members(1000).await;
    let path = format!("/v1/rooms/{room_id}/gifts");
    let alice = t.token("alice");
    let good = json!({"order_id": "o-1", "gift_id": "rose", "count": 1, "recipients": ["bob"]});
    let with = |key: &str, value: Value| {
        let mut body = good.clone();
        body[key] = value;
        body
    };
    let without = |key: &str| {
        let mut body = good.clone();
        body.as_object_mut().unwrap().remove(key);
        body
    };
    let recipients: Vec<String> = (0..21).map(|i| format!("user-{i}")).collect();
    let cases: Vec<(Value, StatusCode, &str)> = vec![
        (
            with("count", json!(0)),
            StatusCode::BAD_REQUEST,
            "INVALID_GIFT_COUNT",
        ),
        (
            with("count", json!(10_000)),
            StatusCode::BAD_REQUEST,
            "INVALID_GIFT_COUNT",
        ),
        (
            with("count", json!(-1)),
            StatusCode::BAD_REQUEST,
            "INVALID_GIFT_COUNT",
        ),
        (
            with("count", json!(i64::MAX)),
            StatusCode::BAD_REQUEST,
            "INVALID_GIFT_COUNT",
        ),
        (
            with("count", json!("three")),
            StatusCode::BAD_REQUEST,
            "INVALID_BODY",
        ),
        (
            with("count", json!(1.5)),
            StatusCode::BAD_REQUEST,
            "INVALID_BODY",
        ),
        (
            with("recipients", json!([])),
            StatusCode::BAD_REQUEST,
            "INVALID_RECIPIENT_COUNT",
        ),
        (
            with("recipients", json!(recipients)),
            StatusCode::BAD_REQUEST,
            "INVALID_RECIPIENT_COUNT",
        ),
        (
            with("recipients", json!("bob")),
            StatusCode::BAD_REQUEST,
            "INVALID_BODY",
        ),
        (
            with("recipients", json!([long_id()])),
            StatusCode::BAD_REQUEST,
            "INVALID_ID",
        ),
        (
            with("recipients", json!([""])),
            StatusCode::BAD_REQUEST,
            "INVALID_ID",
        ),
        (
            with("order_id", json!(long_id())),
            StatusCode::BAD_REQUEST,
            "INVALID_ID",
        ),
        (
            with("order_id", json!("has space")),
            StatusCode::BAD_REQUEST,
            "INVALID_ID",
        ),
        (
            with("gift_id", json!(long_id())),
            StatusCode::BAD_REQUEST,
            "INVALID_ID",
        ),
        (
            with("gift_id", json!(null)),
            StatusCode::BAD_REQUEST,
            "INVALID_BODY",
        ),
        (
            with("extra", json!(1)),
            StatusCode::BAD_REQUEST,
            "INVALID_BODY",
        ),
        (without("gift_id"), StatusCode::BAD_REQUEST, "INVALID_BODY"),
        (without("order_id"), StatusCode::BAD_REQUEST, "INVALID_BODY"),
        (json!([]), StatusCode::BAD_REQUEST, "INVALID_BODY"),
        (json!(null), StatusCode::BAD_REQUEST, "INVALID_BODY"),
    ];
    for (body, status, code) in cases {
        let (got, answer) = t.post(&path, &alice, body.clone()).await;
        assert_eq!((got, error_code(&answer)), (status, code), "{body}");
    }
    // Nothing was debited by any of them.
    assert_eq!(t.balance("alice").await, 1000);

    let long_room = format!("/v1/rooms/{}/gifts", long_id());
    let (status, body) = t.post(&long_room, &alice, good.clone()).await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::BAD_REQUEST, "INVALID_ID")
    );
    let (status, body) = t.post("/v1/rooms/no-such-room/gifts", &alice, good).await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::NOT_FOUND, "ROOM_NOT_FOUND")
    );
}

fn raw(
    path: &str,
    token: &str,
    content_type: Option<&str>,
    body: impl Into<Body>,
) -> Request<Body> {
    let mut request = Request::post(path).header(header::AUTHORIZATION, format!("Bearer {token}"));
    if let Some(content_type) = content_type {
        request = request.header(header::CONTENT_TYPE, content_type);
    }
    request.body(body.into()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_and_oversized_bodies_are_refused() {
    let t = TestApp::new().await;
    let alice = t.token("alice");
    let json = Some("application/json");
    let cases: Vec<(Request<Body>, StatusCode, &str)> = vec![
        (
            raw("/v1/rooms", &alice, json, "{\"name\": "),
            StatusCode::BAD_REQUEST,
            "MALFORMED_JSON",
        ),
        (
            raw("/v1/rooms", &alice, json, "not json"),
            StatusCode::BAD_REQUEST,
            "MALFORMED_JSON",
        ),
        (
            raw("/v1/rooms", &alice, json, ""),
            StatusCode::BAD_REQUEST,
            "MALFORMED_JSON",
        ),
        (
            raw("/v1/rooms", &alice, json, "{\"name\": 5}"),
            StatusCode::BAD_REQUEST,
            "INVALID_BODY",
        ),
        (
            raw("/v1/rooms", &alice, json, "{}"),
            StatusCode::BAD_REQUEST,
            "INVALID_BODY",
        ),
        (
            raw("/v1/rooms", &alice, None, "{\"name\": \"x\"}"),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "UNSUPPORTED_MEDIA_TYPE",
        ),
        (
            raw("/v1/rooms", &alice, Some("text/plain"), "{\"name\": \"x\"}"),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "UNSUPPORTED_MEDIA_TYPE",
        ),
        (
            raw(
                "/v1/rooms",
                &alice,
                json,
                "{\"name\": \"x\", \"seat_count\": 300}",
            ),
            StatusCode::BAD_REQUEST,
            "INVALID_SEAT_COUNT",
        ),
        (
            raw(
                "/v1/rooms",
                &alice,
                json,
                "{\"name\": \"x\", \"seat_count\": 0}",
            ),
            StatusCode::BAD_REQUEST,
            "INVALID_SEAT_COUNT",
        ),
        (
            raw("/v1/rooms", &alice, json, "{\"name\": \"\"}"),
            StatusCode::BAD_REQUEST,
            "FIELD_EMPTY",
        ),
        (
            raw(
                "/v1/rooms",
                &alice,
                json,
                format!("{{\"name\": \"{}\"}}", "n".repeat(31)),
            ),
            StatusCode::BAD_REQUEST,
            "FIELD_TOO_LONG",
        ),
        (
            raw(
                "/v1/rooms",
                &alice,
                json,
                r#"{"name": "evil\u202etxt.exe"}"#.to_owned(),
            ),
            StatusCode::BAD_REQUEST,
            "FIELD_INVALID_CHARACTER",
        ),
        (
            raw(
                "/v1/rooms",
                &alice,
                json,
                r#"{"name": "a\u0000b"}"#.to_owned(),
            ),
            StatusCode::BAD_REQUEST,
            "FIELD_INVALID_CHARACTER",
        ),
        // Deeply nested JSON is refused, not a stack overflow.
        (
            raw("/v1/rooms", &alice, json, "[".repeat(10_000)),
            StatusCode::BAD_REQUEST,
            "INVALID_BODY",
        ),
        (
            raw(
                "/v1/rooms/x/join",
                &alice,
                json,
                format!("{{\"password\": {}", "[".repeat(10_000)),
            ),
            StatusCode::BAD_REQUEST,
            "INVALID_BODY",
        ),
    ];
    for (request, status, code) in cases {
        let (got, _, body) = t.send(request).await;
        let body = parse(&body);
        assert_eq!((got, error_code(&body)), (status, code), "{body}");
    }

    // Over 64 KiB: refused whether the length is announced or not.
    let big = format!("{{\"name\": \"{}\"}}", "n".repeat(70 * 1024));
    let mut announced = raw("/v1/rooms", &alice, json, big.clone());
    announced
        .headers_mut()
        .insert(header::CONTENT_LENGTH, big.len().into());
    let streamed = raw(
        "/v1/rooms",
        &alice,
        json,
        Body::from_stream(futures_util::stream::iter(
            big.into_bytes()
                .chunks(8 * 1024)
                .map(|chunk| Ok::<_, std::io::Error>(chunk.to_vec()))
                .collect::<Vec<_>>(),
        )),
    );
    for request in [announced, streamed] {
        let (status, _, body) = t.send(request).await;
        let body = parse(&body);
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
        assert_eq!(error_code(&body), "PAYLOAD_TOO_LARGE");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_or_bad_tokens_are_refused() {
    let t = TestApp::new().await;
    let expired = t
        .app
        .authenticator()
        .sign(&Claims {
            sub: "alice".into(),
            exp: 1_000_000,
            ..Claims::default()
        })
        .unwrap();
    let foreign = room_node::Authenticator::new(&secrecy::SecretString::from("other"))
        .unwrap()
        .mint(
            &room_domain::UserId::new("alice").unwrap(),
            true,
            std::time::Duration::from_secs(60),
        )
        .unwrap();
    let cases: Vec<(Option<String>, &str)> = vec![
        (None, "UNAUTHENTICATED"),
        (Some("Basic YWxpY2U6cHc=".into()), "UNAUTHENTICATED"),
        (Some("Bearer".into()), "UNAUTHENTICATED"),
        (Some("Bearer not-a-jwt".into()), "INVALID_TOKEN"),
        (Some(format!("Bearer {foreign}")), "INVALID_TOKEN"),
        (Some(format!("Bearer {expired}")), "TOKEN_EXPIRED"),
    ];
    for path in ["/v1/me/wallet", "/v1/rooms", "/v1/gifts"] {
        for (authorization, code) in &cases {
            let mut request = Request::get(path);
            if let Some(value) = authorization {
                request = request.header(header::AUTHORIZATION, value);
            }
            let (status, headers, body) = t.send(request.body(Body::empty()).unwrap()).await;
            let body = parse(&body);
            assert_eq!(
                (status, error_code(&body)),
                (StatusCode::UNAUTHORIZED, *code),
                "{path} {authorization:?}"
            );
            assert_eq!(headers[header::WWW_AUTHENTICATE], "Bearer");
        }
    }
    // Platform admin routes refuse ordinary users.
    let (status, body) = t
        .post(
            "/v1/admin/wallets/bob/credit",
            &t.token("bob"),
            json!({"op_id": "x", "amount": 1}),
        )
        .await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::FORBIDDEN, "FORBIDDEN")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_paths_queries_and_amounts_get_stable_codes() {
    let t = TestApp::new().await;
    let room_id = t.room_with_members(0).await;
    let bob = t.token("bob");
    let admin = t.admin_token();
    let get_cases: Vec<(String, StatusCode, &str)> = vec![
        (
            format!("/v1/rooms/{}", long_id()),
            StatusCode::BAD_REQUEST,
            "INVALID_ID",
        ),
        (
            "/v1/rooms/unknown-room".into(),
            StatusCode::NOT_FOUND,
            "ROOM_NOT_FOUND",
        ),
        (
            "/v1/rooms/by-short-id/12".into(),
            StatusCode::BAD_REQUEST,
            "INVALID_ID",
        ),
        (
            "/v1/rooms/by-short-id/abc".into(),
            StatusCode::BAD_REQUEST,
            "INVALID_ID",
        ),
        (
            "/v1/rooms/by-short-id/12345678".into(),
            StatusCode::NOT_FOUND,
            "ROOM_NOT_FOUND",
        ),
        (
            "/v1/rooms?limit=0".into(),
            StatusCode::BAD_REQUEST,
            "INVALID_LIMIT",
        ),
        (
            "/v1/rooms?limit=101".into(),
            StatusCode::BAD_REQUEST,
            "INVALID_LIMIT",
        ),
        (
            "/v1/rooms?limit=abc".into(),
            StatusCode::BAD_REQUEST,
            "INVALID_QUERY",
        ),
        (
            "/v1/rooms?limit=-1".into(),
            StatusCode::BAD_REQUEST,
            "INVALID_QUERY",
        ),
        (
            "/v1/rooms?cursor=garbage".into(),
            StatusCode::BAD_REQUEST,
            "INVALID_CURSOR",
        ),
        (
            format!("/v1/rooms/{room_id}/contribution-rank?period=month"),
            StatusCode::BAD_REQUEST,
            "INVALID_QUERY",
        ),
        (
            format!("/v1/rooms/{room_id}/online-users?cursor={}", long_id()),
            StatusCode::BAD_REQUEST,
            "INVALID_CURSOR",
        ),
        (
            "/v1/nothing-here".into(),
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
        ),
    ];
    for (path, status, code) in get_cases {
        let (got, body) = t.get(&path, &bob).await;
        assert_eq!((got, error_code(&body)), (status, code), "{path}");
    }
    let post_cases: Vec<(String, &str, Value, StatusCode, &str)> = vec![
        (
            format!("/v1/rooms/{room_id}/seats/abc/take"),
            "bob",
            json!({}),
            StatusCode::BAD_REQUEST,
            "INVALID_SEAT",
        ),
        (
            format!("/v1/rooms/{room_id}/seats/999/take"),
            "bob",
            json!({}),
            StatusCode::BAD_REQUEST,
            "INVALID_SEAT",
        ),
        (
            format!("/v1/rooms/{room_id}/seats/12/take"),
            "bob",
            json!({}),
            StatusCode::BAD_REQUEST,
            "INVALID_SEAT",
        ),
        (
            format!("/v1/rooms/{room_id}/seats/1/lock"),
            "alice",
            json!({"locked": "yes"}),
            StatusCode::BAD_REQUEST,
            "INVALID_BODY",
        ),
        (
            format!("/v1/rooms/{room_id}/kick"),
            "alice",
            json!({"user_id": long_id()}),
            StatusCode::BAD_REQUEST,
            "INVALID_ID",
        ),
        (
            format!("/v1/rooms/{room_id}/kick"),
            "alice",
            json!({"user_id": "bob", "ban_seconds": -5}),
            StatusCode::BAD_REQUEST,
            "INVALID_BODY",
        ),
        (
            format!("/v1/rooms/{room_id}/join"),
            "carol",
            json!({"password": 1234}),
            StatusCode::BAD_REQUEST,
            "INVALID_BODY",
        ),
        (
            "/v1/admin/wallets/bob/credit".into(),
            "admin",
            json!({"op_id": "c", "amount": 0}),
            StatusCode::BAD_REQUEST,
            "INVALID_AMOUNT",
        ),
        (
            "/v1/admin/wallets/bob/credit".into(),
            "admin",
            json!({"op_id": "c", "amount": -3}),
            StatusCode::BAD_REQUEST,
            "INVALID_AMOUNT",
        ),
        (
            "/v1/admin/wallets/bob/credit".into(),
            "admin",
            json!({"op_id": "c", "amount": 1_000_000_000_001_i64}),
            StatusCode::BAD_REQUEST,
            "INVALID_AMOUNT",
        ),
        (
            "/v1/admin/wallets/bob/credit".into(),
            "admin",
            json!({"op_id": long_id(), "amount": 3}),
            StatusCode::BAD_REQUEST,
            "INVALID_ID",
        ),
        (
            format!("/v1/admin/wallets/{}/credit", long_id()),
            "admin",
            json!({"op_id": "c", "amount": 3}),
            StatusCode::BAD_REQUEST,
            "INVALID_ID",
        ),
        (
            "/v1/admin/wallets/bob/credit".into(),
            "admin",
            json!({"op_id": "c", "amount": 1e30}),
            StatusCode::BAD_REQUEST,
            "INVALID_BODY",
        ),
    ];
    for (path, user, body, status, code) in post_cases {
        let token = if user == "admin" {
            admin.clone()
        } else {
            t.token(user)
        };
        let (got, answer) = t.post(&path, &token, body).await;
        assert_eq!((got, error_code(&answer)), (status, code), "{path}");
    }
    let (status, body) = t.call(Method::DELETE, "/v1/gifts", Some(&bob), None).await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::METHOD_NOT_ALLOWED, "METHOD_NOT_ALLOWED")
    );
}

/// Garbage of every shape, sent to every route: never a 5xx, always the error shape.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_input_produces_a_server_error() {
    let t = TestApp::new().await;
    let room_id = t.room_with_members(100).await;
    let routes = [
        (Method::POST, "/v1/rooms".to_owned()),
        (Method::PATCH, format!("/v1/rooms/{room_id}")),
        (Method::POST, format!("/v1/rooms/{room_id}/join")),
        (Method::POST, format!("/v1/rooms/{room_id}/seats/0/lock")),
        (Method::POST, format!("/v1/rooms/{room_id}/seats/0/mute")),
        (Method::POST, format!("/v1/rooms/{room_id}/kick")),
        (Method::POST, format!("/v1/rooms/{room_id}/unban")),
        (Method::POST, format!("/v1/rooms/{room_id}/mute")),
        (Method::POST, format!("/v1/rooms/{room_id}/gifts")),
        (Method::POST, "/v1/admin/wallets/bob/credit".to_owned()),
        (Method::PUT, "/v1/admin/gifts/g".to_owned()),
        (Method::PUT, "/v1/admin/users/u".to_owned()),
        (Method::PUT, "/v1/admin/users".to_owned()),
        (Method::PATCH, "/v1/me/profile".to_owned()),
        (Method::POST, "/v1/rtc/callbacks".to_owned()),
    ];
    let bodies = [
        "",
        "null",
        "[]",
        "\"x\"",
        "0",
        "{}",
        "{\"a\":",
        "\u{0}",
        "{\"name\": null}",
        "{\"user_id\": 5}",
        "{\"count\": 1e400}",
        "{\"amount\": 99999999999999999999}",
        "{\"password\": null}",
        "{\"seconds\": 4294967296}",
    ];
    let admin = t.admin_token();
    for (method, path) in &routes {
        for body in bodies {
            let request = Request::builder()
                .method(method.clone())
                .uri(path)
                .header(header::AUTHORIZATION, format!("Bearer {admin}"))
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(body))
                .unwrap();
            let (status, _, answer) = t.send(request).await;
            let answer = parse(&answer);
            assert!(
                !status.is_server_error(),
                "{method} {path} {body:?}: {status} {answer}"
            );
            if !status.is_success() {
                error_code(&answer);
            }
        }
    }
}

/// A body is a JSON object (or, where it may be left out, nothing or `null`): serde would read
/// a struct from an array of its fields, which no schema allows, so an array is refused on
/// every route, the optional bodies too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_array_is_no_body_even_where_the_body_may_be_left_out() {
    let t = TestApp::new().await;
    let room_id = t.create_room("alice").await;
    for body in [json!(["\u{0096}\u{00fd}"]), json!([null]), json!([])] {
        let (status, answer) = t
            .post(
                &format!("/v1/rooms/{room_id}/join"),
                &t.token("bob"),
                body.clone(),
            )
            .await;
        assert_eq!(
            (status, error_code(&answer)),
            (StatusCode::BAD_REQUEST, "INVALID_BODY"),
            "{body}: {answer}"
        );
    }
    // Nothing, or null, still joins.
    let (status, answer) = t
        .post(
            &format!("/v1/rooms/{room_id}/join"),
            &t.token("bob"),
            Value::Null,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
}
