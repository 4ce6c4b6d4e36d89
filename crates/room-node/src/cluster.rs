//! Node to node: the internal endpoint through which other nodes reach the cells this node
//! runs, and [`HttpForwarder`], which sends this node's requests for rooms another node owns
//! to that node's endpoint.
//!
//! Both sides authenticate with the cluster's internal token
//! (`Authorization: Bearer <ROOM__CLUSTER__INTERNAL_TOKEN>`, compared in constant time); a node
//! without one refuses every internal request. The endpoint answers 200 with a
//! [`ForwardAnswer`] whatever the room decided, so that any other status means the request
//! did not reach the runtime, whose outcome is then unknown (retryable).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use axum::Json;
use axum::Router;
use axum::extract::{Path, Query, Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use room_app::ports::{ForwardedCommand, Forwarder, Membership, ReadKind};
use room_app::{CommandReply, Error, RemoteError};
use room_domain::{RoomId, RoomState, UserId};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::ApiError;
use crate::extract::parse_id;
use crate::state::AppState;

/// Idle keep-alive connections an [`HttpForwarder`] keeps to each other node.
const MAX_IDLE_PER_NODE: usize = 256;

/// The path of the internal endpoint's routes.
pub const INTERNAL_PREFIX: &str = "/internal/v1";

/// The answer of the internal endpoint to a forwarded request: the reply, or the error the
/// owner's runtime answered.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ForwardAnswer<T> {
    /// What the owner answered.
    Ok(T),
    /// The owner's error, with its meaning.
    Err(RemoteError),
}

impl<T> ForwardAnswer<T> {
    fn of(result: room_app::Result<T>) -> Self {
        match result {
            Ok(value) => ForwardAnswer::Ok(value),
            Err(error) => ForwardAnswer::Err(RemoteError::from(&error)),
        }
    }

    fn into_result(self, room_id: &RoomId) -> room_app::Result<T> {
        match self {
            ForwardAnswer::Ok(value) => Ok(value),
            ForwardAnswer::Err(error) => Err(error.into_error(room_id)),
        }
    }
}

/// Whether `given` is the configured internal token, in time that does not depend on where
/// they differ (both are hashed first, so their lengths leak nothing either).
pub fn token_matches(configured: &SecretString, given: &str) -> bool {
    let expected = Sha256::digest(configured.expose_secret().as_bytes());
    let given = Sha256::digest(given.as_bytes());
    expected
        .iter()
        .zip(given.iter())
        .fold(0u8, |acc, (a, b)| acc | (a ^ b))
        == 0
}

/// The internal routes, for [`crate::routes::router`]; they are not in the OpenAPI document
/// (clients never call them).
pub fn internal_routes(state: AppState) -> Router<AppState> {
    Router::new()
        .route(
            "/internal/v1/rooms/{room_id}/commands",
            post(execute_forwarded),
        )
        .route("/internal/v1/rooms/{room_id}/state", get(read_forwarded))
        .route(
            "/internal/v1/rooms/{room_id}/members/{user_id}",
            get(membership_forwarded),
        )
        .layer(middleware::from_fn_with_state(
            state,
            require_internal_token,
        ))
}

async fn require_internal_token(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let Some(configured) = state.internal_token.as_deref() else {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "INTERNAL_DISABLED",
            "this node has no internal token (ROOM__CLUSTER__INTERNAL_TOKEN): internal routes \
             are off",
        )
        .into_response();
    };
    let (parts, body) = request.into_parts();
    match crate::auth::bearer_token(&parts) {
        Ok(token) if token_matches(configured, token) => {
            next.run(Request::from_parts(parts, body)).await
        }
        Ok(_) => ApiError::unauthenticated("wrong internal token").into_response(),
        Err(error) => error.into_response(),
    }
}

async fn execute_forwarded(
    State(state): State<AppState>,
    Path(room_id): Path<String>,
    Json(request): Json<ForwardedCommand>,
) -> Result<Json<ForwardAnswer<CommandReply>>, ApiError> {
    let room_id = known_room(&state, &room_id).await?;
    let answer = match room_id {
        Ok(room_id) => state
            .service
            .runtime()
            .execute_local(&room_id, request.command, request.actor, request.order)
            .await
            .map(|reply| (*reply).clone()),
        Err(unknown) => Err(unknown),
    };
    Ok(Json(ForwardAnswer::of(answer)))
}

/// `?kind=committed|newest`.
#[derive(Debug, Deserialize)]
struct ReadParams {
    kind: ReadKind,
}

async fn read_forwarded(
    State(state): State<AppState>,
    Path(room_id): Path<String>,
    Query(params): Query<ReadParams>,
) -> Result<Json<ForwardAnswer<RoomState>>, ApiError> {
    let answer = match known_room(&state, &room_id).await? {
        Ok(room_id) => {
            state
                .service
                .runtime()
                .read_local(&room_id, params.kind)
                .await
        }
        Err(unknown) => Err(unknown),
    };
    Ok(Json(ForwardAnswer::of(answer)))
}

async fn membership_forwarded(
    State(state): State<AppState>,
    Path((room_id, user_id)): Path<(String, String)>,
    Query(params): Query<ReadParams>,
) -> Result<Json<ForwardAnswer<Membership>>, ApiError> {
    let user: UserId = parse_id("user_id", &user_id)?;
    let answer = match known_room(&state, &room_id).await? {
        Ok(room_id) => {
            state
                .service
                .runtime()
                .membership_local(&room_id, &user, params.kind)
                .await
        }
        Err(unknown) => Err(unknown),
    };
    Ok(Json(ForwardAnswer::of(answer)))
}

/// The room of the path if it was ever created; a made-up id gets the room's own answer
/// (`ROOM_NOT_FOUND`) and activates nothing, as on the node the client called.
async fn known_room(state: &AppState, raw: &str) -> Result<room_app::Result<RoomId>, ApiError> {
    let room_id: RoomId = parse_id("room_id", raw)?;
    Ok(if state.room_exists(&room_id).await? {
        Ok(room_id)
    } else {
        Err(Error::Rejected(room_domain::Rejection::RoomNotFound))
    })
}

/// Sends requests for rooms another node owns to that node's internal endpoint, over HTTP
/// with keep-alive. A request that gets no [`ForwardAnswer`] (the owner unreachable, slow, or
/// answering something else) has an unknown outcome: [`Error::Unavailable`], retryable, so the
/// gift saga keeps such an order unfinished.
pub struct HttpForwarder {
    client: reqwest::Client,
    token: Arc<SecretString>,
}

impl HttpForwarder {
    /// A forwarder whose requests carry `token` and give up after `timeout`.
    pub fn new(token: Arc<SecretString>, timeout: Duration) -> anyhow::Result<Self> {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(1)))
            .pool_idle_timeout(Duration::from_secs(30))
            // Idle connections kept per owner node; those in use are bounded by the requests
            // this node serves at once.
            .pool_max_idle_per_host(MAX_IDLE_PER_NODE)
            .build()?;
        Ok(HttpForwarder { client, token })
    }

    async fn send<T: serde::de::DeserializeOwned>(
        &self,
        room_id: &RoomId,
        request: reqwest::RequestBuilder,
    ) -> room_app::Result<T> {
        let unknown =
            |cause: String| Error::Unavailable(format!("forward of room {room_id}: {cause}"));
        let response = request
            .bearer_auth(self.token.expose_secret())
            .send()
            .await
            .map_err(|error| unknown(error.without_url().to_string()))?;
        let status = response.status();
        if status != StatusCode::OK {
            return Err(unknown(format!("the owner answered {status}")));
        }
        response
            .json::<ForwardAnswer<T>>()
            .await
            .map_err(|error| unknown(error.without_url().to_string()))?
            .into_result(room_id)
    }
}

/// `?kind=` of the read routes.
fn kind_param(kind: ReadKind) -> &'static str {
    match kind {
        ReadKind::Committed => "committed",
        ReadKind::Newest => "newest",
    }
}

fn room_url(base: &str, room_id: &RoomId, what: &str) -> String {
    format!(
        "{}{INTERNAL_PREFIX}/rooms/{room_id}/{what}",
        base.trim_end_matches('/')
    )
}

#[async_trait]
impl Forwarder for HttpForwarder {
    async fn execute(
        &self,
        url: &str,
        room_id: &RoomId,
        command: &ForwardedCommand,
    ) -> room_app::Result<CommandReply> {
        let request = self
            .client
            .post(room_url(url, room_id, "commands"))
            .json(command);
        self.send(room_id, request).await
    }

    async fn read(
        &self,
        url: &str,
        room_id: &RoomId,
        kind: ReadKind,
    ) -> room_app::Result<RoomState> {
        let request = self
            .client
            .get(room_url(url, room_id, "state"))
            .query(&[("kind", kind_param(kind))]);
        self.send(room_id, request).await
    }

    async fn membership(
        &self,
        url: &str,
        room_id: &RoomId,
        user: &UserId,
        kind: ReadKind,
    ) -> room_app::Result<Membership> {
        let request = self
            .client
            .get(room_url(url, room_id, &format!("members/{user}")))
            .query(&[("kind", kind_param(kind))]);
        self.send(room_id, request).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_configured_token_matches() {
        let token = SecretString::from("a-long-internal-token-of-the-cluster");
        assert!(token_matches(
            &token,
            "a-long-internal-token-of-the-cluster"
        ));
        assert!(!token_matches(
            &token,
            "a-long-internal-token-of-the-clustex"
        ));
        assert!(!token_matches(&token, "a-long-internal-token"));
        assert!(!token_matches(&token, ""));
    }
}
