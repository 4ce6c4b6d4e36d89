//! `POST /v1/rtc/callbacks`: TRTC's room and media callbacks (see [`crate::rtc`]).

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::HeaderMap;
use room_app::rtc_events::{RtcEvent, RtcEventKind, RtcEvents, RtcOutcome, RtcRoom};
use room_domain::{Timestamp, UserId};
use secrecy::ExposeSecret;

use crate::dto::RtcAck;
use crate::error::{ApiCode, ApiError, ApiResult, ErrorResponse};
use crate::extract::bytes_rejection;
use crate::rtc::{
    self, Callback, EVENT_AUDIO_PUBLISH_STARTED, EVENT_USER_LEFT, RtcRoomId, TimeRefusal,
};
use crate::state::AppState;

/// Handles a TRTC callback. 203 (audio publish started) confirms the seat holder's mic; 104
/// (user left the RTC room) frees their seat; other events are acknowledged and ignored. A
/// definite refusal of the room (the user holds no seat any more, the room closed) is
/// acknowledged too, so TRTC stops retrying; only a retryable failure answers 503. Every
/// delivery of one event is one command to the room ([`rtc::command_id`]): a repeat is
/// answered as the first delivery was and changes nothing.
///
/// A signed callback whose times (`CallbackTs`, `EventInfo.EventMsTs`, `EventInfo.EventTs`)
/// are not all within the configured window of now is refused with 401
/// `CALLBACK_OUT_OF_WINDOW` (a replay, or a clock far off), and one without any time with 400
/// `INVALID_BODY`.
#[utoipa::path(
    post, path = "/v1/rtc/callbacks", tag = "rtc",
    request_body(content = Object, description = "TRTC's JSON callback (`EventGroupId`, `EventType`, `CallbackTs`, `EventInfo`), signed in the `Sign` header", content_type = "application/json"),
    params(
        ("Sign" = String, Header, description = "base64(HMAC-SHA256(callback key, raw body))"),
        ("SdkAppId" = Option<String>, Header, description = "The TRTC application"),
    ),
    responses(
        (status = 200, description = "Handled or ignored", body = RtcAck),
        (status = 400, description = "`INVALID_BODY`: not a TRTC callback body, or one without any time", body = ErrorResponse),
        (status = 401, description = "`BAD_SIGNATURE` (callbacks not configured, a missing or wrong `Sign`, another `SdkAppId`) or `CALLBACK_OUT_OF_WINDOW` (dated too far in the past or the future)", body = ErrorResponse),
        (status = 413, description = "`PAYLOAD_TOO_LARGE`: the body is larger than 64 KiB", body = ErrorResponse),
        (status = 503, description = "`retryable: true`: retry later", body = ErrorResponse),
    )
)]
pub async fn rtc_callback(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult<Json<RtcAck>> {
    let body = body.map_err(bytes_rejection)?;
    let key = state
        .rtc_key
        .as_ref()
        .ok_or_else(|| ApiError::of(ApiCode::BadSignature, "RTC callbacks are not configured"))?;
    let signature = headers
        .get("sign")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    if !rtc::verify(key.expose_secret().as_bytes(), &body, signature) {
        metrics::counter!("room_rtc_callbacks_total", "outcome" => "bad_signature").increment(1);
        return Err(ApiError::of(
            ApiCode::BadSignature,
            "the Sign header does not match the body",
        ));
    }
    if let Some(expected) = state.rtc_sdk_app_id {
        let app_id = headers
            .get("sdkappid")
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.trim().parse::<u64>().ok());
        if app_id != Some(expected) {
            return Err(ApiError::of(
                ApiCode::BadSignature,
                "the SdkAppId header does not name this application",
            ));
        }
    }
    let callback: Callback = serde_json::from_slice(&body).map_err(|error| {
        ApiError::of(
            ApiCode::InvalidBody,
            format!("not a TRTC callback: {error}"),
        )
    })?;
    check_time(&state, &callback)?;
    let outcome = handle(&state, &callback).await?;
    metrics::counter!("room_rtc_callbacks_total", "outcome" => outcome).increment(1);
    Ok(Json(RtcAck { code: 0 }))
}

/// Refuses a callback dated outside the window: the signature does not expire, so without
/// this a captured callback could be replayed at any later time (an old "user left" freeing
/// the seat of someone who came back).
fn check_time(state: &AppState, callback: &Callback) -> ApiResult<()> {
    let now = state.service.ports().clock.now();
    let window_ms = i64::try_from(state.rtc_callback_window.as_millis()).unwrap_or(i64::MAX);
    let refusal = match rtc::check_time(callback, now.0, window_ms) {
        Ok(()) => return Ok(()),
        Err(refusal) => refusal,
    };
    metrics::counter!("room_rtc_callbacks_total", "outcome" => "out_of_window").increment(1);
    let window = state.rtc_callback_window.as_secs();
    let message = match refusal {
        TimeRefusal::Undated => {
            return Err(ApiError::of(
                ApiCode::InvalidBody,
                "not a TRTC callback: no CallbackTs, EventInfo.EventMsTs or EventInfo.EventTs",
            ));
        }
        TimeRefusal::TooOld { age_ms } => format!(
            "the callback is {} s old; callbacks older than {window} s are refused",
            age_ms / 1000
        ),
        TimeRefusal::InTheFuture { ahead_ms } => format!(
            "the callback is dated {} s ahead; callbacks more than {window} s ahead are refused",
            ahead_ms / 1000
        ),
    };
    Err(ApiError::of(ApiCode::CallbackOutOfWindow, message))
}

async fn handle(state: &AppState, callback: &Callback) -> ApiResult<&'static str> {
    tracing::debug!(
        group = callback.event_group_id,
        event = callback.event_type,
        sent_at_ms = ?callback.callback_ts,
        "RTC callback"
    );
    let kind = match callback.event_type {
        EVENT_AUDIO_PUBLISH_STARTED => RtcEventKind::AudioPublishStarted,
        EVENT_USER_LEFT => RtcEventKind::UserLeft,
        _ => return Ok("ignored"),
    };
    let info = &callback.event_info;
    let (Some(room), Some(user)) = (&info.room_id, &info.user_id) else {
        return Ok("ignored");
    };
    let Ok(user) = UserId::new(user) else {
        return Ok("ignored");
    };
    let event = RtcEvent {
        kind,
        room: match room {
            RtcRoomId::Text(text) => RtcRoom::Text(text.clone()),
            RtcRoomId::Number(number) => RtcRoom::Number(*number),
        },
        user: user.clone(),
        // The event's own time lets the room ignore an event about an earlier seat session.
        at: callback.event_time_ms().map(Timestamp),
    };
    // Named by the event: a retry or replay within the window is the same command, answered
    // as the first time, and cannot act on a seat the user took since.
    let outcome = RtcEvents::new(state.service.clone())
        .apply(event, |room_id| rtc::command_id(callback, room_id, &user))
        .await?;
    Ok(match outcome {
        RtcOutcome::Applied => "applied",
        RtcOutcome::Refused => "refused",
        RtcOutcome::UnknownRoom => "unknown_room",
    })
}
