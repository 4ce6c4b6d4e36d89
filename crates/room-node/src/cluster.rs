//! Node to node: the internal endpoint through which other nodes reach the cells this node
//! runs, and [`HttpForwarder`], which sends this node's requests for rooms another node owns
//! to that node's endpoint.
//!
//! Commands and membership reads travel in batches: the requests of one kind (commands or
//! reads) for one owner that wait while [`BATCHES_IN_FLIGHT`] batches to it are under way go
//! together in the next one (`POST /internal/v1/batch`, at most [`BATCH_ITEMS`] items and
//! [`MAX_BODY_BYTES`]), and the owner runs the items of a batch side by side, so its cells
//! commit them together as they would commit local requests. A hot room's forwarded gifts
//! cost one round trip per batch, not one per gift.
//!
//! Both sides authenticate with the cluster's internal token
//! (`Authorization: Bearer <ROOM__CLUSTER__INTERNAL_TOKEN>`, compared in constant time); a node
//! without one refuses every internal request. The endpoint answers 200 with a
//! [`ForwardAnswer`] whatever the room decided, so that any other status means the request
//! did not reach the runtime, whose outcome is then unknown (retryable).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
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
use room_domain::{Actor, Event, GiftOrder, RoomId, RoomState, UserId};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::sync::{Semaphore, mpsc, oneshot};

use crate::error::ApiError;
use crate::extract::parse_id;
use crate::routes::MAX_BODY_BYTES;
use crate::state::AppState;

/// Idle keep-alive connections an [`HttpForwarder`] keeps to each other node.
const MAX_IDLE_PER_NODE: usize = 256;

/// The most items in one batch to another node.
pub const BATCH_ITEMS: usize = 64;

/// The most batches to one node under way at once; what comes meanwhile waits for the next.
pub const BATCHES_IN_FLIGHT: usize = 4;

/// The most requests waiting for a batch to one node; beyond, a request is answered as
/// unavailable at once (it was not sent).
pub const BATCH_QUEUE: usize = 4_096;

/// The most other nodes a forwarder keeps a batch queue for (a cluster has far fewer; the
/// queues of nodes gone are dropped when it is reached).
const MAX_LANES: usize = 256;

/// One request of a batch to another node's internal endpoint.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BatchItem {
    /// Apply a command to the room's cell.
    Execute {
        /// The room.
        room_id: String,
        /// The command, its actor and order.
        command: Box<ForwardedCommand>,
    },
    /// Apply a gift order to the room's cell: the order's own command
    /// ([`room_app::gift_apply_command`], by the system), which the owner builds from the
    /// order, so the command's content does not travel twice. Answered with
    /// [`BatchAnswer::ApplyGift`].
    ApplyGift {
        /// The room.
        room_id: String,
        /// The order.
        order: Box<GiftOrder>,
    },
    /// Where a user stands in the room.
    Membership {
        /// The room.
        room_id: String,
        /// The user.
        user: String,
        /// Committed or newest state.
        kind: ReadKind,
    },
}

/// The answer to one [`BatchItem`], in the batch's order.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BatchAnswer {
    /// The answer to [`BatchItem::Execute`].
    Execute(ForwardAnswer<CommandReply>),
    /// The answer to [`BatchItem::ApplyGift`]: the reply with the gift's `RoomGiftSent` event
    /// only, all the saga reads of it.
    ApplyGift(ForwardAnswer<CommandReply>),
    /// The answer to [`BatchItem::Membership`].
    Membership(ForwardAnswer<Membership>),
}

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
        .route("/internal/v1/rooms/{room_id}/state", get(read_forwarded))
        .route("/internal/v1/batch", post(batch_forwarded))
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

/// Runs the items of a batch side by side and answers each, in order. An item whose ids do
/// not parse gets the error a single request would have got, inside its answer.
async fn batch_forwarded(
    State(state): State<AppState>,
    Json(items): Json<Vec<BatchItem>>,
) -> Result<Json<Vec<BatchAnswer>>, ApiError> {
    if items.len() > BATCH_ITEMS {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "INVALID_BODY",
            format!("a batch holds at most {BATCH_ITEMS} items"),
        ));
    }
    let answers = items.into_iter().map(|item| {
        let state = state.clone();
        async move {
            match item {
                BatchItem::Execute { room_id, command } => {
                    let ForwardedCommand {
                        command,
                        actor,
                        order,
                    } = *command;
                    let answer = execute_item(&state, &room_id, command, actor, order).await;
                    BatchAnswer::Execute(ForwardAnswer::of(answer.map(|reply| (*reply).clone())))
                }
                BatchItem::ApplyGift { room_id, order } => {
                    let command = room_app::gift_apply_command(&order);
                    let answer =
                        execute_item(&state, &room_id, command, Actor::System, Some(*order)).await;
                    BatchAnswer::ApplyGift(ForwardAnswer::of(
                        answer.map(|reply| gift_reply(&reply)),
                    ))
                }
                BatchItem::Membership {
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
                    BatchAnswer::Membership(ForwardAnswer::of(answer.await))
                }
            }
        }
    });
    Ok(Json(futures_util::future::join_all(answers).await))
}

/// Applies a batch item's command to its room's cell on this node, if the room was ever
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

/// The room of a batch item if it was ever created; see [`created`].
async fn created_room(state: &AppState, raw: &str) -> room_app::Result<RoomId> {
    let room_id = RoomId::new(raw).map_err(|error| Error::Invalid(format!("room_id: {error}")))?;
    created(state, room_id).await
}

/// The room if it was ever created; a made-up id gets the room's own answer
/// (`ROOM_NOT_FOUND`) and activates nothing, as on the node the client called.
async fn created(state: &AppState, room_id: RoomId) -> room_app::Result<RoomId> {
    if state.room_was_created(&room_id).await? {
        Ok(room_id)
    } else {
        Err(Error::Rejected(room_domain::Rejection::RoomNotFound))
    }
}

/// Sends requests for rooms another node owns to that node's internal endpoint, over HTTP
/// with keep-alive; commands and membership reads in batches (see the module). A request that
/// gets no [`ForwardAnswer`] (the owner unreachable, slow, or answering something else) has
/// an unknown outcome: [`Error::Unavailable`], retryable, so the gift saga keeps such an
/// order unfinished.
pub struct HttpForwarder {
    client: reqwest::Client,
    token: Arc<SecretString>,
    timeout: Duration,
    /// A batch queue per owner URL.
    lanes: Mutex<HashMap<String, mpsc::Sender<Queued>>>,
}

/// A request waiting for its batch: the item, already encoded, and who waits for its answer.
struct Queued {
    item: Vec<u8>,
    answer: oneshot::Sender<room_app::Result<BatchAnswer>>,
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
        Ok(HttpForwarder {
            client,
            token,
            timeout,
            lanes: Mutex::new(HashMap::new()),
        })
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

    /// Sends `item` to the node at `url` in its next batch and waits for its answer, at most
    /// the forward timeout.
    async fn batched(
        &self,
        url: &str,
        room_id: &RoomId,
        item: &BatchItem,
    ) -> room_app::Result<BatchAnswer> {
        let unknown =
            |cause: &str| Error::Unavailable(format!("forward of room {room_id}: {cause}"));
        let reads = matches!(item, BatchItem::Membership { .. });
        let item = serde_json::to_vec(item).map_err(|error| unknown(&error.to_string()))?;
        let (answer, answered) = oneshot::channel();
        self.lane(url, reads)
            .try_send(Queued { item, answer })
            .map_err(|_| {
                metrics::counter!("room_forward_queue_full_total").increment(1);
                unknown("too many requests wait for this owner")
            })?;
        match tokio::time::timeout(self.timeout, answered).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(unknown("the batch was dropped")),
            Err(_) => Err(unknown("no answer in time")),
        }
    }

    /// The batch queue of the node at `url` for reads or for commands, started on first
    /// use. Reads have their own: a batch of commands waits for the room's commit, a read
    /// is answered at once, and must not wait behind it.
    fn lane(&self, url: &str, reads: bool) -> mpsc::Sender<Queued> {
        let key = format!("{} {url}", if reads { "reads" } else { "commands" });
        let mut lanes = self.lanes.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(lane) = lanes.get(&key).filter(|lane| !lane.is_closed()) {
            return lane.clone();
        }
        if lanes.len() >= MAX_LANES {
            // Only nodes gone leave lanes behind: their tasks end with their queues.
            lanes.clear();
        }
        let (lane, queue) = mpsc::channel(BATCH_QUEUE);
        tokio::spawn(run_lane(
            self.client.clone(),
            self.token.clone(),
            format!("{}{INTERNAL_PREFIX}/batch", url.trim_end_matches('/')),
            queue,
        ));
        lanes.insert(key, lane.clone());
        lane
    }
}

/// Takes the requests queued for one node, as many as fit a batch, whenever fewer than
/// [`BATCHES_IN_FLIGHT`] batches to it are under way, and sends them.
async fn run_lane(
    client: reqwest::Client,
    token: Arc<SecretString>,
    url: String,
    mut queue: mpsc::Receiver<Queued>,
) {
    let in_flight = Arc::new(Semaphore::new(BATCHES_IN_FLIGHT));
    let mut carried: Option<Queued> = None;
    loop {
        let first = match carried.take() {
            Some(first) => first,
            None => match queue.recv().await {
                Some(first) => first,
                None => return,
            },
        };
        let Ok(permit) = in_flight.clone().acquire_owned().await else {
            return;
        };
        // `[` + items + `,` between them + `]`.
        let mut size = first.item.len() + 2;
        let mut batch = vec![first];
        while batch.len() < BATCH_ITEMS {
            let Ok(next) = queue.try_recv() else { break };
            if size + next.item.len() + 1 > MAX_BODY_BYTES {
                carried = Some(next);
                break;
            }
            size += next.item.len() + 1;
            batch.push(next);
        }
        let (client, token, url) = (client.clone(), token.clone(), url.clone());
        tokio::spawn(async move {
            send_batch(&client, &token, &url, batch).await;
            drop(permit);
        });
    }
}

/// Sends one batch and hands each waiting request its answer; when no list of answers comes
/// back, each gets [`Error::Unavailable`] (outcome unknown).
async fn send_batch(client: &reqwest::Client, token: &SecretString, url: &str, batch: Vec<Queued>) {
    metrics::histogram!("room_forward_batch_items").record(batch.len() as f64);
    let mut body = Vec::with_capacity(batch.iter().map(|q| q.item.len() + 1).sum::<usize>() + 1);
    body.push(b'[');
    for (i, queued) in batch.iter().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        body.extend_from_slice(&queued.item);
    }
    body.push(b']');
    let answers = async {
        let response = client
            .post(url)
            .bearer_auth(token.expose_secret())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body)
            .send()
            .await
            .map_err(|error| error.without_url().to_string())?;
        let status = response.status();
        if status != StatusCode::OK {
            return Err(format!("the owner answered {status}"));
        }
        let answers: Vec<BatchAnswer> = response
            .json()
            .await
            .map_err(|error| error.without_url().to_string())?;
        if answers.len() != batch.len() {
            return Err(format!(
                "the owner answered {} items of {}",
                answers.len(),
                batch.len()
            ));
        }
        Ok(answers)
    }
    .await;
    match answers {
        Ok(answers) => {
            for (queued, answer) in batch.into_iter().zip(answers) {
                let _ = queued.answer.send(Ok(answer));
            }
        }
        Err(cause) => {
            for queued in batch {
                let _ = queued
                    .answer
                    .send(Err(Error::Unavailable(format!("forward: {cause}"))));
            }
        }
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
/// ([`room_app::gift_apply_command`]): such a command goes as [`BatchItem::ApplyGift`].
fn order_apply(command: &ForwardedCommand) -> Option<&GiftOrder> {
    let order = command.order.as_ref()?;
    (command.actor == Actor::System && command.command == room_app::gift_apply_command(order))
        .then_some(order)
}

/// What [`BatchAnswer::ApplyGift`] carries of an applied gift's reply: its version and its
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
impl Forwarder for HttpForwarder {
    async fn execute(
        &self,
        url: &str,
        room_id: &RoomId,
        command: &ForwardedCommand,
    ) -> room_app::Result<CommandReply> {
        let room = room_id.to_string();
        let (item, lean) = match order_apply(command) {
            Some(order) => (
                BatchItem::ApplyGift {
                    room_id: room,
                    order: Box::new(order.clone()),
                },
                true,
            ),
            None => (
                BatchItem::Execute {
                    room_id: room,
                    command: Box::new(command.clone()),
                },
                false,
            ),
        };
        match (self.batched(url, room_id, &item).await?, lean) {
            (BatchAnswer::Execute(answer), false) | (BatchAnswer::ApplyGift(answer), true) => {
                answer.into_result(room_id)
            }
            _ => Err(Error::Unavailable(format!(
                "forward of room {room_id}: the owner answered another request"
            ))),
        }
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
        let item = BatchItem::Membership {
            room_id: room_id.to_string(),
            user: user.to_string(),
            kind,
        };
        match self.batched(url, room_id, &item).await? {
            BatchAnswer::Membership(answer) => answer.into_result(room_id),
            BatchAnswer::Execute(_) | BatchAnswer::ApplyGift(_) => Err(Error::Unavailable(
                format!("forward of room {room_id}: the owner answered another request"),
            )),
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
