//! The `Idempotency-Key` rule at the edge ([`keyed_request`]): on the routes whose key names
//! their commands (and a robot room creation's room), a request with a key is admitted by the
//! shared record of that key ([`KeyedGate`]): the first runs and its answer is kept; the same
//! request again gets that answer (with `Idempotency-Replayed: true`); another request with
//! the key is 422 `IDEMPOTENCY_KEY_REUSED` (409 `ROBOT_ROOM_EXISTS` on a robot room creation,
//! as that route documents); a repeat while the first runs is 409 `IDEMPOTENCY_KEY_IN_USE`,
//! retryable.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{FromRef, FromRequestParts, MatchedPath, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use room_app::keyed::{Admission, KeyedGate, fingerprint};
use room_app::ports::{KeyedAnswer, MAX_KEYED_ANSWER_BYTES};

use crate::auth::{Auth, AuthenticatorRef};
use crate::config::MAX_BODY_BYTES;
use crate::error::{ApiCode, ApiError};
use crate::extract::IdempotencyKey;

/// The header that marks an answer given again to a repeated request.
pub const REPLAYED_HEADER: &str = "idempotency-replayed";

/// What the middleware needs: the gate over the shared records, and token checks to name the
/// user of a request.
#[derive(Clone)]
pub struct KeyedState {
    /// The shared records' rule.
    pub gate: Arc<KeyedGate>,
    /// Token checks.
    pub auth: AuthenticatorRef,
}

impl FromRef<KeyedState> for AuthenticatorRef {
    fn from_ref(state: &KeyedState) -> Self {
        state.auth.clone()
    }
}

/// How a route answers a key reused for another request, if the route keeps the key's record:
/// every mutating route but those of [`OWN_KEYS`] that are idempotent their own way.
fn keyed_route(method: &Method, route: &str) -> Option<ApiCode> {
    if !matches!(
        *method,
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    ) {
        return None;
    }
    let method = method.as_str().to_ascii_lowercase();
    match OWN_KEYS
        .iter()
        .find(|(m, path, _)| *m == method && *path == route)
    {
        Some((_, _, KeyUse::Own(_))) => None,
        Some((_, _, KeyUse::Text(_, reused))) => Some(*reused),
        None => Some(ApiCode::IdempotencyKeyReused),
    }
}

/// How a mutating route uses its `Idempotency-Key` header, where that is not the default (the
/// key's shared record: [`keyed_request`]).
pub(crate) enum KeyUse {
    /// Checked only: the route is idempotent by what this names.
    Own(&'static str),
    /// The shared record, with the route's own account of what the key does and its answer
    /// to a key reused for another request.
    Text(&'static str, ApiCode),
}

/// The mutating routes (method, lowercase, and path template) that use their
/// `Idempotency-Key` their own way: most are idempotent by an id of their own and check the
/// header only. Every other mutating route keeps the key's record ([`keyed_request`]), and
/// the API document says so of each.
pub(crate) const OWN_KEYS: [(&str, &str, KeyUse); 14] = [
    (
        "post",
        "/v1/rooms/{room_id}/gifts",
        KeyUse::Own("the body's `order_id`"),
    ),
    (
        "post",
        "/v1/admin/wallets/{user_id}/credit",
        KeyUse::Own("the body's `op_id`"),
    ),
    (
        "put",
        "/v1/admin/gifts/{gift_id}",
        KeyUse::Own("the gift id (a `PUT` of the same gift)"),
    ),
    (
        "put",
        "/v1/admin/users/{user_id}",
        KeyUse::Own("its body (a `PUT` of the same fields writes the same profile)"),
    ),
    (
        "put",
        "/v1/admin/users",
        KeyUse::Own("its body (a repeat of the batch writes the same profiles)"),
    ),
    (
        "put",
        "/v1/admin/users/{user_id}/vip",
        KeyUse::Own("its body (a `PUT` of the same grant writes the same grant)"),
    ),
    (
        "delete",
        "/v1/admin/users/{user_id}/vip",
        KeyUse::Own("nature (revoking a grant that is gone answers the same)"),
    ),
    (
        "patch",
        "/v1/me/profile",
        KeyUse::Own("its body (a repeat of the change writes the same profile)"),
    ),
    (
        "put",
        "/v1/rooms/{room_id}/follow",
        KeyUse::Own("nature (following twice counts once)"),
    ),
    (
        "delete",
        "/v1/rooms/{room_id}/follow",
        KeyUse::Own("nature (unfollowing a room not followed answers the same)"),
    ),
    (
        "post",
        "/v1/rooms/{room_id}/heartbeat",
        KeyUse::Own("nature (a heartbeat repeats harmlessly)"),
    ),
    (
        "post",
        "/v1/admin/robot-rooms",
        KeyUse::Text(
            "The key is the calling admin's: the same request with it gets the first answer \
             again (`Idempotency-Replayed: true`); another request with it is 409 \
             `ROBOT_ROOM_EXISTS`, and nothing is written; while the first runs, 409 \
             `IDEMPOTENCY_KEY_IN_USE` (retryable). Beneath that record (kept \
             `ROOM__HTTP__IDEMPOTENCY_RETENTION_SECS`), the key names the room, and without \
             the header the request's content does. A key or content whose room was closed \
             answers 409 `ROBOT_ROOM_EXISTS`: send a new key for a new room",
            ApiCode::RobotRoomExists,
        ),
    ),
    (
        "patch",
        "/v1/admin/robot-rooms/{room_id}",
        KeyUse::Own(
            "its body (a change already in effect answers 200 with the configuration, \
             whatever `version` says)",
        ),
    ),
    (
        "delete",
        "/v1/admin/robot-rooms/{room_id}",
        KeyUse::Own("nature (a repeat answers 404 `ROBOT_ROOM_NOT_FOUND`)"),
    ),
];

/// The middleware. Requests of other routes, without a key, with a key the handler will
/// refuse, or without a valid token, pass as they are (their handler answers them).
pub async fn keyed_request(
    State(state): State<KeyedState>,
    request: Request,
    next: Next,
) -> Response {
    let reused = request
        .extensions()
        .get::<MatchedPath>()
        .and_then(|route| keyed_route(request.method(), route.as_str()));
    let Some(reused) = reused else {
        return next.run(request).await;
    };
    let (mut parts, body) = request.into_parts();
    let key = IdempotencyKey::from_request_parts(&mut parts, &state).await;
    let user = Auth::from_request_parts(&mut parts, &state).await;
    let (Ok(IdempotencyKey(Some(key))), Ok(Auth(actor))) = (key, user) else {
        return next.run(Request::from_parts(parts, body)).await;
    };
    let bytes = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
        Ok(bytes) => bytes,
        Err(_) => return ApiError::from_status(StatusCode::PAYLOAD_TOO_LARGE).into_response(),
    };
    let request_fingerprint = fingerprint(parts.method.as_str(), parts.uri.path(), &bytes);
    let ticket = match state
        .gate
        .admit(&key, &actor.user_id, &request_fingerprint)
        .await
    {
        Ok(Admission::Run(ticket)) => ticket,
        Ok(Admission::Replay(answer)) => return replay(answer),
        Ok(Admission::Reused) => return reused_answer(reused),
        Ok(Admission::InUse) => {
            return ApiError::of(
                ApiCode::IdempotencyKeyInUse,
                "a request with this Idempotency-Key is running; retry it shortly",
            )
            .into_response();
        }
        Err(error) => return ApiError::from(error).into_response(),
    };
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    let (head, body) = response.into_parts();
    // Only a definite answer is kept: one a retry could change (429, 5xx, a timeout, any
    // retryable error) frees the key for the retry, and so do 400, 413 and 415, a request
    // refused for its form, which claims nothing: fixed, it may go with the same key.
    let definite = head.status.is_success()
        || (head.status.is_client_error()
            && !matches!(
                head.status,
                StatusCode::BAD_REQUEST
                    | StatusCode::PAYLOAD_TOO_LARGE
                    | StatusCode::UNSUPPORTED_MEDIA_TYPE
                    | StatusCode::TOO_MANY_REQUESTS
                    | StatusCode::REQUEST_TIMEOUT
            )
            && !head.headers.contains_key(header::RETRY_AFTER));
    let bytes = match axum::body::to_bytes(body, MAX_KEYED_ANSWER_BYTES).await {
        Ok(bytes) => bytes,
        Err(error) => {
            // Longer than a record keeps (no answer of these routes is): not kept.
            tracing::warn!(%error, "a keyed answer too long to keep");
            let _ = state.gate.answered(ticket, None).await;
            return ApiError::of(ApiCode::Internal, "internal error").into_response();
        }
    };
    let kept = definite
        .then(|| String::from_utf8(bytes.to_vec()).ok())
        .flatten()
        .map(|body| KeyedAnswer {
            status: head.status.as_u16(),
            body,
        });
    if let Err(error) = state.gate.answered(ticket, kept).await {
        // The request was answered; its record stays claimed until it goes stale, and a
        // repeat meanwhile is told to retry.
        tracing::warn!(%error, "a keyed answer could not be recorded");
    }
    Response::from_parts(head, Body::from(bytes))
}

/// A kept answer, given again.
fn replay(answer: KeyedAnswer) -> Response {
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::OK);
    let mut response = (status, Bytes::from(answer.body)).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(REPLAYED_HEADER, HeaderValue::from_static("true"));
    if status == StatusCode::UNAUTHORIZED {
        headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    response
}

/// The answer to a key sent again with another request.
fn reused_answer(code: ApiCode) -> Response {
    let message = match code {
        ApiCode::RobotRoomExists => {
            "this Idempotency-Key was used before for another robot room: send another key"
        }
        _ => "this Idempotency-Key was used before for another request: send another key",
    };
    ApiError::of(code, message).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_routes_that_use_their_key_are_keyed_and_no_other() {
        let keyed = |method: Method, route: &str| keyed_route(&method, route);
        assert_eq!(
            keyed(Method::POST, "/v1/admin/robot-rooms"),
            Some(ApiCode::RobotRoomExists)
        );
        for (method, route) in [
            (Method::POST, "/v1/rooms"),
            (Method::PATCH, "/v1/rooms/{room_id}"),
            (Method::POST, "/v1/rooms/{room_id}/join"),
            (Method::POST, "/v1/rooms/{room_id}/seats/{seat}/take"),
            (Method::PUT, "/v1/rooms/{room_id}/admins/{user_id}"),
            (Method::DELETE, "/v1/rooms/{room_id}/admins/{user_id}"),
        ] {
            assert_eq!(
                keyed(method, route),
                Some(ApiCode::IdempotencyKeyReused),
                "{route}"
            );
        }
        for (method, route) in [
            (Method::POST, "/v1/rooms/{room_id}/gifts"),
            (Method::POST, "/v1/rooms/{room_id}/heartbeat"),
            (Method::POST, "/v1/admin/wallets/{user_id}/credit"),
            (Method::PUT, "/v1/admin/gifts/{gift_id}"),
            (Method::PATCH, "/v1/admin/robot-rooms/{room_id}"),
            (Method::PUT, "/v1/admin/users/{user_id}"),
            (Method::PUT, "/v1/admin/users"),
            (Method::PATCH, "/v1/me/profile"),
            (Method::GET, "/v1/rooms/{room_id}"),
        ] {
            assert_eq!(keyed(method, route), None, "{route}");
        }
    }
}
