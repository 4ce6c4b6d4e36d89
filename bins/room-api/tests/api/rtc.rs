//! The TRTC callback: signature, mic confirmation, seat release, idempotency.

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

fn signed(body: &Value) -> Request<Body> {
    let signature = room_api::rtc_sign(RTC_KEY.as_bytes(), body.to_string().as_bytes());
    callback(body, Some(&signature))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audio_publish_confirms_the_mic_and_leaving_frees_the_seat() {
    let t = TestApp::new().await;
    let room_id = t.room_with_members(0).await;
    let (status, room) = t
        .post(
            &format!("/v1/rooms/{room_id}/seats/1/take"),
            &t.token("bob"),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(room["seats"][1]["publishing"], false);
    let short_id = room["short_id"].as_u64().unwrap();

    let publish = json!({
        "EventGroupId": 2, "EventType": 203, "CallbackTs": 1_764_460_800_000i64,
        "EventInfo": {"RoomId": room_id, "UserId": "bob", "EventTs": 1_764_460_800, "Role": 20}
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
        "EventGroupId": 1, "EventType": 104, "CallbackTs": 1_764_460_900_000i64,
        "EventInfo": {"RoomId": short_id, "UserId": "bob", "Reason": 1}
    });
    let forged = room_api::rtc_sign(b"wrong key", left.to_string().as_bytes());
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
    let signature = room_api::rtc_sign(RTC_KEY.as_bytes(), left.to_string().as_bytes());
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
    for body in [
        json!({"EventGroupId": 1, "EventType": 101, "EventInfo": {"RoomId": "r", "UserId": "u"}}),
        json!({"EventGroupId": 2, "EventType": 203, "EventInfo": {"RoomId": "no-such-room", "UserId": "u"}}),
        json!({"EventGroupId": 2, "EventType": 203, "EventInfo": {"RoomId": 42, "UserId": "u"}}),
        json!({"EventGroupId": 2, "EventType": 203, "EventInfo": {}}),
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_configured_key_every_callback_is_refused() {
    let t = TestApp::with(|settings| settings.rtc.callback_key = None).await;
    let body = json!({"EventType": 101});
    let (status, _, _) = t.send(signed(&body)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}
