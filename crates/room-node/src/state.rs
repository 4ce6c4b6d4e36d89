//! [`AppState`]: what every handler can reach.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::extract::FromRef;
use metrics_exporter_prometheus::PrometheusHandle;
use room_app::{BroadcastMessenger, RoomService};
use room_domain::{Rejection, RoomId};
use secrecy::SecretString;
use tokio_util::sync::CancellationToken;

use crate::auth::AuthenticatorRef;
use crate::error::ApiResult;
use crate::extract::parse_id;
use crate::limits::{RateLimits, StreamSlots};
use crate::link::LinkTasks;

/// Shared state of the handlers: one pointer, so the clone axum makes for every handler and
/// layer of every request is one reference count (its fields are read through `Deref`).
#[derive(Clone)]
pub struct AppState(Arc<HandlerContext>);

impl AppState {
    /// The state of a service.
    pub fn new(shared: HandlerContext) -> Self {
        AppState(Arc::new(shared))
    }
}

impl std::ops::Deref for AppState {
    type Target = HandlerContext;

    fn deref(&self) -> &HandlerContext {
        &self.0
    }
}

/// What every handler can reach, behind [`AppState`].
pub struct HandlerContext {
    /// The use cases.
    pub service: Arc<RoomService>,
    /// Token checks.
    pub auth: AuthenticatorRef,
    /// The display events the runtime publishes, for the SSE stream. The same instance the
    /// runtime was given.
    pub messenger: Arc<BroadcastMessenger>,
    /// The TRTC callback key; `None` refuses every callback.
    pub rtc_key: Option<Arc<SecretString>>,
    /// The expected `SdkAppId` of TRTC callbacks, if checked.
    pub rtc_sdk_app_id: Option<u64>,
    /// How far from now a TRTC callback's times may lie, in the past or the future.
    pub rtc_callback_window: Duration,
    /// The Prometheus registry's renderer.
    pub metrics: PrometheusHandle,
    /// Whether the service takes traffic (start-up recovery done, not shutting down).
    pub ready: Arc<AtomicBool>,
    /// Cancelled when the service begins to stop: SSE streams end.
    pub shutdown: CancellationToken,
    /// Keep-alive period of SSE streams.
    pub sse_keep_alive: Duration,
    /// The most missed events a reconnecting SSE watcher is sent; beyond, `resync`.
    pub sse_replay_max: u64,
    /// Per-user token buckets per class of request; `None` when the limits are off.
    pub limits: Option<Arc<RateLimits>>,
    /// The event streams each user has open, capped.
    pub streams: Arc<StreamSlots>,
    /// The secret other nodes call the internal routes with; `None` refuses them all.
    pub internal_token: Option<Arc<SecretString>>,
    /// This node's id (`cell.node_id`): the internal routes refuse a request meant for
    /// another node, and name this one in every answer.
    pub node_id: String,
    /// Tencent IM, when configured: it signs clients' IM credentials.
    pub im: Option<adapters_tencent_im::ImClient>,
    /// Robot room configurations (the admin routes).
    pub robots: room_app::ports::RobotRoomsRef,
    /// The outbox, for its dead letters (the admin routes).
    pub outbox: room_app::ports::OutboxRef,
    /// The user-id prefix that marks robots (`[robots] id_prefix`).
    pub robot_id_prefix: String,
    /// The internal links this node serves (other nodes' forwarded requests).
    pub links: LinkTasks,
    /// The `Idempotency-Key` rule over the shared records of keyed requests.
    pub keyed: Arc<room_app::keyed::KeyedGate>,
    /// Following rooms.
    pub follows: Arc<room_app::follows::RoomFollowing>,
    /// The room lists and their pins.
    pub lists: Arc<room_app::lists::RoomLists>,
    /// The zone gift value and turnover are counted in (`billing.time_zone`).
    pub billing_zone: BillingZone,
    /// The leaderboard pages this node answered lately (`boards.page_cache_ms`).
    pub board_pages: Arc<crate::page_cache::PageCache>,
}

/// The billing time zone, as configured and as an offset.
#[derive(Debug, Clone)]
pub struct BillingZone {
    /// As configured (`+08:00`).
    pub name: String,
    /// Seconds east of UTC.
    pub utc_offset_secs: i32,
}

impl FromRef<AppState> for AuthenticatorRef {
    fn from_ref(state: &AppState) -> Self {
        state.auth.clone()
    }
}

impl AppState {
    /// Whether the service is ready for traffic.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// Validates a room id from a path and checks that the room exists (open or closed).
    ///
    /// The use cases refuse unknown rooms too; checking here as well covers the reads the
    /// API makes on the runtime directly (the event stream), and answers a made-up id without
    /// queueing anything ([`RoomService::room_was_created`] says how, mostly without a read).
    pub async fn existing_room(&self, raw: &str) -> ApiResult<RoomId> {
        let room_id: RoomId = parse_id("room_id", raw)?;
        if !self.room_exists(&room_id).await? {
            return Err(Rejection::RoomNotFound.into());
        }
        Ok(room_id)
    }

    /// Whether a room was ever created (it may be closed):
    /// [`RoomService::room_was_created`].
    pub async fn room_exists(&self, room_id: &RoomId) -> ApiResult<bool> {
        Ok(self.service.room_was_created(room_id).await?)
    }
}
