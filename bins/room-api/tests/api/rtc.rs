//! The TRTC callback: signature, freshness, mic confirmation, seat release, idempotency.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{Value, json};

use crate::support::{RTC_KEY, TestApp, error_code, parse};

fn callback(body: &Value, sign: Option<&str>) -> Request<Body> {
    let mut request = Request::post("/v1/rtc/callbacks")
        .header("content-type", "application/json")
        .header("SdkAppId", "1400000000");
    if let Some(sign) = sign {
        request = request.header("Sign", sign);
    }
    request.body(Body::from(body.to_string())).unwrap()
}

/// Now, in milliseconds since the epoch, as TRTC stamps `CallbackTs`.
fn now_ms() -> i64 {
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    i64::try_from(since_epoch.as_millis()).unwrap()
}

fn signed(body: &Value) -> Request<Body> {
    let signature = room_node::rtc_sign(RTC_KEY.as_bytes(), body.to_string().as_bytes());
    callback(body, Some(&signature))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audio_publish_confirms_the_mic_and_leaving_frees_the_seat() {
    let t = TestApp::new().await;
    let room_id = t.room_with_members(0).await;
    let room = t.seat(&room_id, "bob", 1, "take").await;
    assert_eq!(room["seats"][1]["publishing"], false);
    let short_id = room["short_id"].as_u64().unwrap();

    let now = now_ms();
    let publish = json!({
        "EventGroupId": 2, "EventType": 203, "CallbackTs": now,
        "EventInfo": {"RoomId": room_id, "UserId": "bob", "EventTs": now / 1000, "Role": 20}
    });
    // TRTC retries: every delivery is acknowledged, the mic is confirmed once.
    for _ in 0..3 {
        let (status, _, body) = t.send(signed(&publish)).await;
        assert_eq!((status, parse(&body)), (StatusCode::OK, json!({"code": 0})));
    }
    let room = t.room(&room_id).await;
    assert_eq!(room["seats"][1]["publishing"], true);
    let version = room["version"].clone();

    // A bad or missing signature is refused and changes nothing.
    let left = json!({
        "EventGroupId": 1, "EventType": 104, "CallbackTs": now_ms(),
        "EventInfo": {"RoomId": short_id, "UserId": "bob", "Reason": 1}
    });
    let forged = room_node::rtc_sign(b"wrong key", left.to_string().as_bytes());
    for request in [
        callback(&left, Some(&forged)),
        callback(&left, Some("bm90IGEgc2lnbmF0dXJl")),
        callback(&left, Some("%%%")),
        callback(&left, None),
    ] {
        let (status, _, body) = t.send(request).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(error_code(&parse(&body)), "BAD_SIGNATURE");
    }
    // The signature covers the exact bytes: the same JSON re-spaced does not verify.
    let signature = room_node::rtc_sign(RTC_KEY.as_bytes(), left.to_string().as_bytes());
    let respaced = Request::post("/v1/rtc/callbacks")
        .header("Sign", signature)
        .body(Body::from(serde_json::to_string_pretty(&left).unwrap()))
        .unwrap();
    assert_eq!(t.send(respaced).await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(t.room(&room_id).await["version"], version);

    // 104 with the numeric short id frees bob's seat; repeats are acknowledged.
    for _ in 0..2 {
        let (status, _, body) = t.send(signed(&left)).await;
        assert_eq!((status, parse(&body)), (StatusCode::OK, json!({"code": 0})));
    }
    let room = t.room(&room_id).await;
    assert!(room["seats"][1]["user_id"].is_null());
    // bob is still in the room: only the audio side left.
    assert_eq!(room["online_count"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_events_and_unknown_rooms_are_acknowledged() {
    let t = TestApp::new().await;
    let now = now_ms();
    for body in [
        json!({"EventGroupId": 1, "EventType": 101, "CallbackTs": now, "EventInfo": {"RoomId": "r", "UserId": "u"}}),
        json!({"EventGroupId": 2, "EventType": 203, "CallbackTs": now, "EventInfo": {"RoomId": "no-such-room", "UserId": "u"}}),
        json!({"EventGroupId": 2, "EventType": 203, "EventInfo": {"RoomId": 42, "UserId": "u", "EventMsTs": now}}),
        json!({"EventGroupId": 2, "EventType": 203, "EventInfo": {"EventTs": now / 1000}}),
    ] {
        let (status, _, answer) = t.send(signed(&body)).await;
        assert_eq!(
            (status, parse(&answer)),
            (StatusCode::OK, json!({"code": 0})),
            "{body}"
        );
    }
    let (status, _, answer) = t.send(signed(&json!({"EventType": "x"}))).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error_code(&parse(&answer)), "INVALID_BODY");
}

/// A room where bob holds seat 1; answers the room id.
async fn bob_on_seat_one(t: &TestApp) -> String {
    let room_id = t.room_with_members(0).await;
    t.seat(&room_id, "bob", 1, "take").await;
    room_id
}

/// A "bob left the RTC room" callback stamped at `at_ms`.
fn bob_left(room_id: &str, at_ms: i64) -> Value {
    json!({
        "EventGroupId": 1, "EventType": 104, "CallbackTs": at_ms,
        "EventInfo": {"RoomId": room_id, "UserId": "bob", "EventTs": at_ms / 1000, "EventMsTs": at_ms, "Reason": 1}
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn callbacks_outside_the_window_are_refused_and_change_nothing() {
    let t = TestApp::new().await;
    let room_id = bob_on_seat_one(&t).await;
    let version = t.room(&room_id).await["version"].clone();

    // A captured "bob left" replayed ten minutes later, and one dated ten minutes ahead: both
    // correctly signed, both refused, bob keeps his seat.
    let now = now_ms();
    for at in [now - 600_000, now + 600_000] {
        let (status, _, body) = t.send(signed(&bob_left(&room_id, at))).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "at {at}");
        assert_eq!(error_code(&parse(&body)), "CALLBACK_OUT_OF_WINDOW");
    }
    // A retry stamped anew still carries the old event's time.
    let mut restamped = bob_left(&room_id, now - 600_000);
    restamped["CallbackTs"] = json!(now);
    let (status, _, body) = t.send(signed(&restamped)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(error_code(&parse(&body)), "CALLBACK_OUT_OF_WINDOW");
    // Without any time there is nothing to check freshness against.
    let undated = json!({"EventGroupId": 1, "EventType": 104, "EventInfo": {"RoomId": room_id, "UserId": "bob"}});
    let (status, _, body) = t.send(signed(&undated)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(error_code(&parse(&body)), "INVALID_BODY");
    let room = t.room(&room_id).await;
    assert_eq!(room["seats"][1]["user_id"], "bob");
    assert_eq!(room["version"], version);

    // A fresh one frees the seat; its repeats within the window are still acknowledged. (One
    // dated before bob took the seat would be about an earlier seat session: see
    // `a_leave_from_before_the_seat_was_taken_does_not_free_it`.)
    let fresh = bob_left(&room_id, now_ms());
    for _ in 0..3 {
        let (status, _, body) = t.send(signed(&fresh)).await;
        assert_eq!((status, parse(&body)), (StatusCode::OK, json!({"code": 0})));
    }
    assert!(t.room(&room_id).await["seats"][1]["user_id"].is_null());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_window_is_configurable() {
    let t = TestApp::with(|settings| settings.rtc.callback_window_secs = 30).await;
    let room_id = bob_on_seat_one(&t).await;
    // Two minutes old: inside the default window, outside this one.
    let (status, _, body) = t
        .send(signed(&bob_left(&room_id, now_ms() - 120_000)))
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(error_code(&parse(&body)), "CALLBACK_OUT_OF_WINDOW");
    assert_eq!(t.room(&room_id).await["seats"][1]["user_id"], "bob");
    let (status, _, _) = t.send(signed(&bob_left(&room_id, now_ms()))).await;
    assert_eq!(status, StatusCode::OK);
    assert!(t.room(&room_id).await["seats"][1]["user_id"].is_null());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_configured_key_every_callback_is_refused() {
    let t = TestApp::with(|settings| settings.rtc.callback_key = None).await;
    let body = json!({"EventType": 101});
    let (status, _, _) = t.send(signed(&body)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

/// The scenario of a replay inside the window: bob leaves the RTC room and his seat is freed;
/// he comes back and takes the seat again; the same signed 104 arrives again (a slow retry, or
/// a captured body). It is the same command as the first: answered, and bob keeps his seat.
async fn a_repeated_leave_does_not_free_a_seat_taken_again(t: &TestApp) {
    let room_id = bob_on_seat_one(t).await;
    let first_at = now_ms();
    let left = bob_left(&room_id, first_at);
    let (status, _, body) = t.send(signed(&left)).await;
    assert_eq!((status, parse(&body)), (StatusCode::OK, json!({"code": 0})));
    assert!(t.room(&room_id).await["seats"][1]["user_id"].is_null());

    let room = t.seat(&room_id, "bob", 1, "take").await;
    let version = room["version"].clone();

    for _ in 0..2 {
        let (status, _, body) = t.send(signed(&left)).await;
        assert_eq!((status, parse(&body)), (StatusCode::OK, json!({"code": 0})));
    }
    let room = t.room(&room_id).await;
    assert_eq!(room["seats"][1]["user_id"], "bob");
    assert_eq!(room["version"], version);

    // Another departure (a later event time) is another command, and frees the seat.
    let later = bob_left(&room_id, now_ms().max(first_at + 1));
    let (status, _, _) = t.send(signed(&later)).await;
    assert_eq!(status, StatusCode::OK);
    assert!(t.room(&room_id).await["seats"][1]["user_id"].is_null());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leave_repeated_within_the_window_keeps_the_seat_taken_since() {
    let t = TestApp::new().await;
    a_repeated_leave_does_not_free_a_seat_taken_again(&t).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_leave_is_answered_from_the_log_when_the_room_forgot_it() {
    // A room that remembers no command ids finds the repeat in the command log.
    let t = TestApp::with(|settings| settings.cell.recent_commands = 0).await;
    a_repeated_leave_does_not_free_a_seat_taken_again(&t).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_publish_does_not_confirm_a_new_mic_session() {
    let t = TestApp::new().await;
    let room_id = bob_on_seat_one(&t).await;
    let now = now_ms();
    let publish = json!({
        "EventGroupId": 2, "EventType": 203, "CallbackTs": now,
        "EventInfo": {"RoomId": room_id, "UserId": "bob", "EventTs": now / 1000, "EventMsTs": now, "Role": 20}
    });
    let (status, _, _) = t.send(signed(&publish)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(t.room(&room_id).await["seats"][1]["publishing"], true);

    // bob leaves the seat and takes it again: a new mic session, not yet confirmed.
    for action in ["leave", "take"] {
        t.seat(&room_id, "bob", 1, action).await;
    }
    let room = t.room(&room_id).await;
    assert_eq!(room["seats"][1]["publishing"], false);

    let (status, _, body) = t.send(signed(&publish)).await;
    assert_eq!((status, parse(&body)), (StatusCode::OK, json!({"code": 0})));
    let after = t.room(&room_id).await;
    assert_eq!(after["seats"][1]["publishing"], false);
    assert_eq!(after["version"], room["version"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leave_from_before_the_seat_was_taken_does_not_free_it() {
    let t = TestApp::new().await;
    let room_id = t.room_with_members(0).await;
    // bob leaves the RTC room while on no seat: nothing to free, so nothing is recorded.
    let left = bob_left(&room_id, now_ms() - 30_000);
    let (status, _, body) = t.send(signed(&left)).await;
    assert_eq!((status, parse(&body)), (StatusCode::OK, json!({"code": 0})));

    let room = t.seat(&room_id, "bob", 1, "take").await;

    // The same event again (a late retry, a replay inside the window): it is older than
    // bob's seat session, so the seat stays his.
    let (status, _, body) = t.send(signed(&left)).await;
    assert_eq!((status, parse(&body)), (StatusCode::OK, json!({"code": 0})));
    let after = t.room(&room_id).await;
    assert_eq!(after["seats"][1]["user_id"], "bob");
    assert_eq!(after["version"], room["version"]);
}
