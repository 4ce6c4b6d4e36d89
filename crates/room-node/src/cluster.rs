//! Node to node: the internal endpoint through which other nodes reach the cells this node
//! runs, and [`NodeForwarder`], which sends this node's requests for rooms another node owns
//! to that node.
//!
//! Commands and membership reads travel over a [link](crate::link) to the owner (one
//! connection per owner, upgraded from `GET /internal/v1/link`), each request answered as
//! soon as its room is done with it; the owner runs the requests that arrive together side by
//! side, so its cells commit them together as they would commit local requests. Whole-state
//! reads, rare and large, are `GET /internal/v1/rooms/{room_id}/state`.
//!
//! Both sides authenticate with the cluster's internal token
//! (`Authorization: Bearer <ROOM__CLUSTER__INTERNAL_TOKEN>`, compared in constant time); a node
//! without one refuses every internal request. Each request names the node it is meant for
//! (`room-node: <node id>`, the room's holder as the lease registry has it), and each answer
//! the node that gives it: a node refuses a request meant for another (421 `WRONG_NODE`), and
//! the sender accepts an answer, or a link, only from the node it meant. A URL the registry
//! still names after another process took its address is so never trusted with a room's
//! requests. The owner answers each request with a
//! [`ForwardAnswer`] whatever the room decided, so that a missing answer means the request's
//! outcome is unknown (retryable).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use axum::Json;
use axum::Router;
use axum::extract::{Path, Query, Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use room_app::ports::{BatchStanding, ForwardedCommand, Forwarder, Membership, Peer, ReadKind};
use room_app::{CommandReply, Error};
use room_domain::{Actor, Event, GiftOrder, GiftScope, RoomId, RoomState, UserId};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::chain::ErrorChain;
use crate::error::{ApiCode, ApiError};
use crate::extract::parse_id;
use crate::link::{
    Failure, ForwardAnswer, LINK_PROTOCOL, LinkAnswer, LinkItem, Links, MAX_LINKS, NODE_HEADER,
};
use crate::state::AppState;

/// Idle keep-alive connections a [`NodeForwarder`] keeps to each other node for whole-state
/// reads.
const MAX_IDLE_PER_NODE: usize = 16;

/// The path of the internal endpoint's routes.
pub const INTERNAL_PREFIX: &str = "/internal/v1";

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
        .route("/internal/v1/rooms/{room_id}/state", get(read_forwarded))
        .route(crate::link::LINK_PATH, get(open_link))
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
        return ApiError::of(
            ApiCode::InternalDisabled,
            "this node has no internal token (ROOM__CLUSTER__INTERNAL_TOKEN): internal routes \
             are off",
        )
        .into_response();
    };
    let (parts, body) = request.into_parts();
    let mut response = match crate::auth::bearer_token(&parts) {
        Ok(token) if token_matches(configured, token) => {
            match parts.headers.get(NODE_HEADER).map(|value| value.to_str()) {
                // A sender of an earlier release names no node.
                None => next.run(Request::from_parts(parts, body)).await,
                Some(Ok(meant)) if meant == state.node_id => {
                    next.run(Request::from_parts(parts, body)).await
                }
                Some(_) => ApiError::of(
                    ApiCode::WrongNode,
                    "this request is meant for another node: look the room's holder up again",
                )
                .into_response(),
            }
        }
        Ok(_) => ApiError::unauthenticated("wrong internal token").into_response(),
        Err(error) => error.into_response(),
    };
    if let Ok(node) = axum::http::HeaderValue::from_str(&state.node_id) {
        response.headers_mut().insert(NODE_HEADER, node);
    }
    response
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
    let room_id: RoomId = parse_id("room_id", &room_id)?;
    let answer = async {
        let room_id = created(&state, room_id).await?;
        state
            .service
            .runtime()
            .read_local(&room_id, params.kind)
            .await
    }
    .await;
    Ok(Json(ForwardAnswer::of(answer)))
}

/// Upgrades the connection to a [link](crate::link) and serves it: `101 Switching
/// Protocols` when the request asks for `Upgrade: room-link/1`; 426 when it asks for nothing
/// else; 503 `LINKS_FULL` when this node serves [`MAX_LINKS`] links already.
async fn open_link(State(state): State<AppState>, mut request: Request) -> Response {
    let asks = request
        .headers()
        .get(axum::http::header::UPGRADE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.eq_ignore_ascii_case(LINK_PROTOCOL));
    let Some(upgrade) = request
        .extensions_mut()
        .remove::<hyper::upgrade::OnUpgrade>()
        .filter(|_| asks)
    else {
        return ApiError::of(
            ApiCode::UpgradeRequired,
            format!("this route upgrades the connection to {LINK_PROTOCOL}"),
        )
        .into_response();
    };
    let Ok(slot) = state.links.slots.clone().try_acquire_owned() else {
        metrics::counter!("room_forward_links_refused_total").increment(1);
        return ApiError::of(
            ApiCode::LinksFull,
            format!("this node serves {MAX_LINKS} internal links already"),
        )
        .into_response();
    };
    let stop = state.shutdown.clone();
    let tasks = state.links.tasks.clone();
    tasks.spawn(async move {
        let _slot = slot;
        match upgrade.await {
            Ok(upgraded) => {
                let io = hyper_util::rt::TokioIo::new(upgraded);
                crate::link::serve(io, stop, move |item| {
                    Box::pin(answer_item(state.clone(), item))
                })
                .await;
            }
            Err(error) => {
                tracing::debug!(error = %ErrorChain(&error), "an internal link was not upgraded")
            }
        }
    });
    Response::builder()
        .status(StatusCode::SWITCHING_PROTOCOLS)
        .header(axum::http::header::CONNECTION, "upgrade")
        .header(axum::http::header::UPGRADE, LINK_PROTOCOL)
        .body(axum::body::Body::empty())
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// Runs one request of a link on this node and answers it. A request whose ids do not parse
/// gets the error a client's request would have got, inside its answer.
async fn answer_item(state: AppState, item: LinkItem) -> LinkAnswer {
    match item {
        LinkItem::Execute { room_id, command } => {
            let ForwardedCommand {
                command,
                actor,
                order,
            } = *command;
            let answer = execute_item(&state, &room_id, command, actor, order).await;
            LinkAnswer::Execute(ForwardAnswer::of(answer.map(|reply| (*reply).clone())))
        }
        LinkItem::ApplyGift { room_id, order } => {
            let command = room_app::gift_apply_command(&order);
            let answer = execute_item(&state, &room_id, command, Actor::System, Some(*order)).await;
            LinkAnswer::ApplyGift(ForwardAnswer::of(answer.map(|reply| gift_reply(&reply))))
        }
        LinkItem::BatchStanding {
            room_id,
            sender,
            scope,
            most,
        } => {
            let answer = async {
                let sender = UserId::new(&sender)
                    .map_err(|error| Error::Invalid(format!("sender: {error}")))?;
                let room_id = created_room(&state, &room_id).await?;
                // The owner's own bound, whatever the asker wants.
                let most = most.min(room_domain::MAX_BATCH_RECIPIENTS);
                state
                    .service
                    .runtime()
                    .batch_standing_local(&room_id, &sender, scope, most)
                    .await
            };
            LinkAnswer::BatchStanding(ForwardAnswer::of(answer.await))
        }
        LinkItem::Membership {
            room_id,
            user,
            kind,
        } => {
            let answer = async {
                let user = UserId::new(&user)
                    .map_err(|error| Error::Invalid(format!("user_id: {error}")))?;
                let room_id = created_room(&state, &room_id).await?;
                state
                    .service
                    .runtime()
                    .membership_local(&room_id, &user, kind)
                    .await
            };
            LinkAnswer::Membership(ForwardAnswer::of(answer.await))
        }
    }
}

/// Applies a request's command to its room's cell on this node, if the room was ever
/// created.
async fn execute_item(
    state: &AppState,
    room_id: &str,
    command: room_domain::Command,
    actor: Actor,
    order: Option<GiftOrder>,
) -> room_app::Result<Arc<CommandReply>> {
    let room_id = created_room(state, room_id).await?;
    state
        .service
        .runtime()
        .execute_local(&room_id, command, actor, order)
        .await
}

/// The room of a request if it was ever created; see [`created`].
async fn created_room(state: &AppState, raw: &str) -> room_app::Result<RoomId> {
    let room_id = RoomId::new(raw).map_err(|error| Error::Invalid(format!("room_id: {error}")))?;
    created(state, room_id).await
}

/// The room if it was ever created; a made-up id gets the room's own answer
/// (`ROOM_NOT_FOUND`) and activates nothing, as on the node the client called.
async fn created(state: &AppState, room_id: RoomId) -> room_app::Result<RoomId> {
    if state.service.room_was_created(&room_id).await? {
        Ok(room_id)
    } else {
        Err(Error::Rejected(room_domain::Rejection::RoomNotFound))
    }
}

/// Sends requests for rooms another node owns to that node: commands and membership reads
/// over a [link](crate::link), whole-state reads over HTTP. A request that gets no
/// [`ForwardAnswer`] (the owner unreachable, slow, or answering something else) has an
/// unknown outcome: [`Error::Unavailable`], retryable, so the gift saga keeps such an order
/// unfinished.
pub struct NodeForwarder {
    client: reqwest::Client,
    token: Arc<SecretString>,
    links: Links,
}

impl NodeForwarder {
    /// A forwarder whose requests carry `token` and give up after `timeout`.
    pub fn new(token: Arc<SecretString>, timeout: Duration) -> anyhow::Result<Self> {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(1)))
            .pool_idle_timeout(Duration::from_secs(30))
            .pool_max_idle_per_host(MAX_IDLE_PER_NODE)
            .build()?;
        Ok(NodeForwarder {
            client,
            links: Links::new(token.clone(), timeout),
            token,
        })
    }

    async fn send<T: serde::de::DeserializeOwned>(
        &self,
        peer: &Peer,
        room_id: &RoomId,
        request: reqwest::RequestBuilder,
    ) -> room_app::Result<T> {
        let unknown =
            |cause: String| Error::Unavailable(format!("forward of room {room_id}: {cause}"));
        let response = request
            .bearer_auth(self.token.expose_secret())
            .header(NODE_HEADER, &peer.node_id)
            .send()
            .await
            .map_err(|error| unknown(ErrorChain(&error.without_url()).to_string()))?;
        let status = response.status();
        let answering = response
            .headers()
            .get(NODE_HEADER)
            .and_then(|value| value.to_str().ok());
        if status == StatusCode::MISDIRECTED_REQUEST || answering != Some(peer.node_id.as_str()) {
            // Another node serves the registered URL now: the room is looked up again.
            metrics::counter!("room_forward_wrong_node_total").increment(1);
            return Err(Error::NotOwner(room_id.to_string()));
        }
        if status != StatusCode::OK {
            return Err(unknown(format!("the owner answered {status}")));
        }
        response
            .json::<ForwardAnswer<T>>()
            .await
            .map_err(|error| unknown(ErrorChain(&error.without_url()).to_string()))?
            .into_result(room_id)
    }

    /// Sends `item` to the node `peer` over its link and waits for the answer.
    async fn call(
        &self,
        peer: &Peer,
        room_id: &RoomId,
        item: &LinkItem,
    ) -> room_app::Result<LinkAnswer> {
        self.links.call(peer, item).await.map_err(|failure| match failure {
            Failure::NotSent(cause) => {
                Error::Unavailable(format!("forward of room {room_id} not sent: {cause}"))
            }
            Failure::Unknown(cause) => {
                Error::Unavailable(format!("forward of room {room_id}: {cause}"))
            }
            // Nothing was sent: the room is looked up again.
            Failure::WrongNode(cause) => {
                tracing::info!(room_id = %room_id, cause = %cause, "a link reached another node");
                Error::NotOwner(room_id.to_string())
            }
        })
    }
}

/// `?kind=` of the read routes.
fn kind_param(kind: ReadKind) -> &'static str {
    match kind {
        ReadKind::Committed => "committed",
        ReadKind::Newest => "newest",
    }
}

/// The order `command` applies, when it is that order's own apply by the system
/// ([`room_app::gift_apply_command`]): such a command goes as [`LinkItem::ApplyGift`].
fn order_apply(command: &ForwardedCommand) -> Option<&GiftOrder> {
    let order = command.order.as_ref()?;
    (command.actor == Actor::System && command.command == room_app::gift_apply_command(order))
        .then_some(order)
}

/// What [`LinkAnswer::ApplyGift`] carries of an applied gift's reply: its version and its
/// `RoomGiftSent` event (the heat, rank and rocket events stay behind).
fn gift_reply(reply: &CommandReply) -> CommandReply {
    CommandReply {
        version: reply.version,
        events: reply
            .events
            .iter()
            .filter(|stored| matches!(stored.event, Event::RoomGiftSent(_)))
            .cloned()
            .collect(),
    }
}

fn room_url(base: &str, room_id: &RoomId, what: &str) -> String {
    format!(
        "{}{INTERNAL_PREFIX}/rooms/{room_id}/{what}",
        base.trim_end_matches('/')
    )
}

#[async_trait]
impl Forwarder for NodeForwarder {
    async fn execute(
        &self,
        peer: &Peer,
        room_id: &RoomId,
        command: &ForwardedCommand,
    ) -> room_app::Result<CommandReply> {
        let room = room_id.to_string();
        let (item, lean) = match order_apply(command) {
            Some(order) => (
                LinkItem::ApplyGift {
                    room_id: room,
                    order: Box::new(order.clone()),
                },
                true,
            ),
            None => (
                LinkItem::Execute {
                    room_id: room,
                    command: Box::new(command.clone()),
                },
                false,
            ),
        };
        match (self.call(peer, room_id, &item).await?, lean) {
            (LinkAnswer::Execute(answer), false) | (LinkAnswer::ApplyGift(answer), true) => {
                answer.into_result(room_id)
            }
            _ => Err(Error::Unavailable(format!(
                "forward of room {room_id}: the owner answered another request"
            ))),
        }
    }

    async fn read(
        &self,
        peer: &Peer,
        room_id: &RoomId,
        kind: ReadKind,
    ) -> room_app::Result<RoomState> {
        let request = self
            .client
            .get(room_url(&peer.url, room_id, "state"))
            .query(&[("kind", kind_param(kind))]);
        self.send(peer, room_id, request).await
    }

    async fn membership(
        &self,
        peer: &Peer,
        room_id: &RoomId,
        user: &UserId,
        kind: ReadKind,
    ) -> room_app::Result<Membership> {
        let item = LinkItem::Membership {
            room_id: room_id.to_string(),
            user: user.to_string(),
            kind,
        };
        match self.call(peer, room_id, &item).await? {
            LinkAnswer::Membership(answer) => answer.into_result(room_id),
            _ => Err(Error::Unavailable(format!(
                "forward of room {room_id}: the owner answered another request"
            ))),
        }
    }

    async fn batch_standing(
        &self,
        peer: &Peer,
        room_id: &RoomId,
        sender: &UserId,
        scope: GiftScope,
        most: u32,
    ) -> room_app::Result<BatchStanding> {
        let item = LinkItem::BatchStanding {
            room_id: room_id.to_string(),
            sender: sender.to_string(),
            scope,
            most,
        };
        match self.call(peer, room_id, &item).await? {
            LinkAnswer::BatchStanding(answer) => answer.into_result(room_id),
            _ => Err(Error::Unavailable(format!(
                "forward of room {room_id}: the owner answered another request"
            ))),
        }
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
