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

/// How a route answers a key reused for another request, if the route is keyed at all: the
/// routes whose key names their room commands (and a creation's room).
fn keyed_route(method: &Method, route: &str) -> Option<ApiCode> {
    let reused = ApiCode::IdempotencyKeyReused;
    match (method.as_str(), route) {
        ("POST", "/v1/admin/robot-rooms") => Some(ApiCode::RobotRoomExists),
        ("POST", "/v1/rooms") | ("PATCH", "/v1/rooms/{room_id}") => Some(reused),
        ("PUT" | "DELETE", "/v1/rooms/{room_id}/admins/{user_id}") => Some(reused),
        ("POST", route) => {
            let rest = route.strip_prefix("/v1/rooms/{room_id}/")?;
            let keyed = matches!(
                rest,
                "close"
                    | "join"
                    | "leave"
                    | "kick"
                    | "unban"
                    | "mute"
                    | "seats/{seat}/take"
                    | "seats/{seat}/leave"
                    | "seats/{seat}/lock"
                    | "seats/{seat}/mute"
                    | "seats/{seat}/remove"
            );
            keyed.then_some(reused)
        }
        _ => None,
    }
}

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
