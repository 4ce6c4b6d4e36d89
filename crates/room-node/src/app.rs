//! [`App`]: the embedded single-node service — storage, the Room Cell runtime, the use cases,
//! the background passes and the HTTP router — wired from [`Settings`], with a graceful stop.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use adapters_redis::{
    DEFAULT_PRESENCE_ENTRY_TTL, RedisDisplay, RedisDisplaySettings, RedisLease,
    RedisPasswordAttempts, RedisPasswordAttemptsSettings, RedisPresence, RedisPresenceSettings,
};
use anyhow::Context;
use axum::Router;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use room_app::ports::{
    ClockRef, IdGenRef, LeaseRef, MessengerRef, PasswordAttemptsRef, PresenceRef,
};
use room_app::{
    BroadcastMessenger, CellDeps, CellRuntime, LocalLease, LocalPasswordAttempts, LocalPresence,
    RandomIds, RoomService, ServicePorts, SystemClock, workers,
};
use room_domain::Timestamp;
use secrecy::ExposeSecret;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::auth::AuthenticatorRef;
use crate::catalog::CatalogFile;
use crate::cluster::HttpForwarder;
use crate::config::Settings;
use crate::limits::{RateLimits, StreamSlots};
use crate::routes;
use crate::serve::{self, ConnectionLimits};
use crate::state::{AppState, HandlerContext};
use crate::storage::Storage;

/// How often the metrics recorder folds its recent samples into the summaries.
const METRICS_UPKEEP: Duration = Duration::from_secs(5);

/// The process-wide Prometheus recorder: a process has one global recorder, so every [`App`]
/// of a process (tests build several) shares it.
fn prometheus() -> PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let recorder = PrometheusBuilder::new().build_recorder();
            let handle = recorder.handle();
            if metrics::set_global_recorder(recorder).is_err() {
                tracing::warn!("a metrics recorder was already installed; /metrics stays empty");
            }
            handle
        })
        .clone()
}

/// What the nodes of a cluster share — room leases, presence, the wrong-password counts — in
/// Redis when clustered, in this process otherwise.
struct SharedState {
    lease: LeaseRef,
    presence: PresenceRef,
    attempts: PasswordAttemptsRef,
    /// Display events: this node's watchers, and, clustered, every other node's too.
    messenger: MessengerRef,
}

impl SharedState {
    /// `local` feeds this node's event streams; the relay of display events between nodes
    /// stops with `root`.
    async fn build(
        settings: &Settings,
        local: Arc<BroadcastMessenger>,
        root: &CancellationToken,
    ) -> anyhow::Result<SharedState> {
        let Some(lease) = settings.redis_lease() else {
            return Ok(SharedState {
                lease: Arc::new(LocalLease),
                presence: Arc::new(LocalPresence::new()),
                attempts: Arc::new(LocalPasswordAttempts::default()),
                messenger: local,
            });
        };
        let unreachable = "cannot reach Redis (ROOM__LEASE__REDIS_URL)";
        let mut presence = RedisPresenceSettings::new(lease.url.clone());
        presence.key_prefix = lease.key_prefix.clone();
        presence.pool_size = lease.pool_size;
        presence.op_timeout = lease.op_timeout;
        // Far above the eviction threshold, so that only a cluster that stopped lets entries
        // expire on their own.
        presence.entry_ttl = DEFAULT_PRESENCE_ENTRY_TTL.max(Duration::from_secs(
            settings.presence.timeout_secs.saturating_mul(10),
        ));
        let mut attempts = RedisPasswordAttemptsSettings::new(lease.url.clone());
        attempts.key_prefix = lease.key_prefix.clone();
        attempts.pool_size = lease.pool_size;
        attempts.op_timeout = lease.op_timeout;
        let mut display = RedisDisplaySettings::new(lease.url.clone(), &settings.cell.node_id);
        display.key_prefix = lease.key_prefix.clone();
        display.op_timeout = lease.op_timeout;
        Ok(SharedState {
            messenger: Arc::new(
                RedisDisplay::start(&display, local, root.child_token())
                    .await
                    .context(unreachable)?,
            ),
            lease: Arc::new(RedisLease::connect(&lease).await.context(unreachable)?),
            presence: Arc::new(
                RedisPresence::connect(&presence)
                    .await
                    .context(unreachable)?,
            ),
            attempts: Arc::new(
                RedisPasswordAttempts::connect(&attempts)
                    .await
                    .context(unreachable)?,
            ),
        })
    }
}

/// The embedded service.
pub struct App {
    settings: Settings,
    state: AppState,
    router: Router,
    storage: Storage,
    /// Cancelled when the service stops: HTTP intake, SSE streams and background passes
    /// end. The cells have their own token, cancelled by [`CellRuntime::shutdown`] once intake
    /// has stopped, so that requests in flight still reach their rooms.
    root: CancellationToken,
    tasks: TaskTracker,
}

impl App {
    /// Builds the service from settings: opens storage, loads and checks the catalog and
    /// rules, writes the catalog, and wires the runtime. Starts nothing yet.
    pub async fn build(settings: Settings) -> anyhow::Result<App> {
        // Before storage: bad settings must not create or lock a database file.
        settings.validate()?;
        let storage = Storage::open(&settings.storage).await?;
        Self::build_with_storage(settings, storage).await
    }

    /// Like [`App::build`], over storage built by the caller.
    pub async fn build_with_storage(settings: Settings, storage: Storage) -> anyhow::Result<App> {
        // Settings built in code (tests, tools) skip `Settings::load`, which validates too.
        settings.validate()?;
        let catalog = CatalogFile::load(&settings.catalog.path)?;
        catalog.upsert(&storage.catalog).await?;

        if settings.auth.uses_dev_secret() {
            tracing::warn!(
                "!!! ROOM__AUTH__JWT_SECRET is not set: using the PUBLIC development secret. \
                 Anyone can mint tokens for any user, admins included. Never run this in \
                 production. !!!"
            );
        }
        if settings.rtc.callback_key.is_none() {
            tracing::warn!("ROOM__RTC__CALLBACK_KEY is not set: every TRTC callback is refused");
        }
        let auth: AuthenticatorRef = Arc::new(settings.auth.authenticator()?);

        let messenger = Arc::new(BroadcastMessenger::new(settings.sse.buffer.max(1)));
        let clock: ClockRef = Arc::new(SystemClock);
        let ids: IdGenRef = Arc::new(RandomIds::new());
        let internal_token = settings.cluster.internal_token.clone().map(Arc::new);
        let root = CancellationToken::new();
        let shared = SharedState::build(&settings, messenger.clone(), &root).await?;
        let runtime = CellRuntime::new(
            CellDeps {
                store: storage.cells.clone(),
                snapshots: storage.snapshots.clone(),
                lease: shared.lease,
                messenger: shared.messenger,
                clock: clock.clone(),
                ids: ids.clone(),
            },
            settings.cell_config(catalog.rules),
            CancellationToken::new(),
        );
        if settings.is_clustered()
            && let Some(token) = &internal_token
        {
            let timeout = settings.forward_timeout();
            runtime.forward_with(Arc::new(HttpForwarder::new(token.clone(), timeout)?));
            tracing::info!(
                node_id = %settings.cell.node_id,
                advertise_url = ?settings.advertise_url(),
                "clustered: rooms other nodes own are forwarded to them"
            );
        }
        let service = Arc::new(RoomService::new(
            runtime,
            ServicePorts {
                orders: storage.orders.clone(),
                wallet: storage.wallet.clone(),
                catalog: storage.catalog.clone(),
                directory: storage.directory.clone(),
                presence: shared.presence,
                attempts: shared.attempts,
                clock,
                ids,
            },
        ));

        let state = AppState::new(HandlerContext {
            service,
            auth,
            messenger,
            // An empty key would let anyone sign callbacks: treat it as no key (every
            // callback refused).
            rtc_key: settings
                .rtc
                .callback_key
                .clone()
                .filter(|key| !key.expose_secret().is_empty())
                .map(Arc::new),
            rtc_sdk_app_id: settings.rtc.sdk_app_id,
            rtc_callback_window: Duration::from_secs(settings.rtc.callback_window_secs),
            metrics: prometheus(),
            ready: Arc::new(AtomicBool::new(false)),
            shutdown: root.clone(),
            sse_keep_alive: Duration::from_secs(settings.sse.keep_alive_secs.max(1)),
            sse_replay_max: settings.sse.replay_max,
            limits: RateLimits::new(&settings.limits).map(Arc::new),
            streams: StreamSlots::new(settings.sse.max_streams_per_user),
            internal_token,
        });
        let router = routes::router(
            state.clone(),
            Duration::from_secs(settings.http.request_timeout_secs.max(1)),
        );
        Ok(App {
            settings,
            state,
            router,
            storage,
            root,
            tasks: TaskTracker::new(),
        })
    }

    /// The HTTP application.
    pub fn router(&self) -> Router {
        self.router.clone()
    }

    /// The use cases.
    pub fn service(&self) -> &Arc<RoomService> {
        &self.state.service
    }

    /// The storage ports.
    pub fn storage(&self) -> &Storage {
        &self.storage
    }

    /// The token authority (to mint tokens in tests and for `room-api token`).
    pub fn authenticator(&self) -> &AuthenticatorRef {
        &self.state.auth
    }

    /// The in-process display event channels (the SSE streams' source).
    pub fn messenger(&self) -> &Arc<BroadcastMessenger> {
        &self.state.messenger
    }

    /// The settings the service was built with.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Cancelled when the service begins to stop.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.root.clone()
    }

    /// Settles every gift order a previous run left unfinished, then starts the background
    /// passes and marks the service ready. Called by [`App::serve`]; tests that drive the
    /// router directly call it themselves.
    pub async fn start(&self) -> anyhow::Result<()> {
        self.recover_gifts_at_start().await?;
        self.spawn_workers();
        self.state.ready.store(true, Ordering::Release);
        Ok(())
    }

    /// Recovery at start-up: nothing else runs yet, so every unfinished order, however young,
    /// is left over from before and is settled now. One pass walks every unfinished order,
    /// page by page; what it cannot settle (a retryable error, a record that needs a person)
    /// waits for the periodic pass.
    async fn recover_gifts_at_start(&self) -> anyhow::Result<()> {
        let page = self.settings.workers.batch_limit.max(1);
        let report = self
            .state
            .service
            .gifts()
            .recover(Timestamp(i64::MAX), page)
            .await
            .context("gift recovery at start-up failed")?;
        if report.examined > 0 {
            tracing::info!(
                settled = report.settled,
                deferred = report.deferred,
                failed = report.failed,
                elsewhere = report.elsewhere,
                "gift orders left by the previous run"
            );
        }
        Ok(())
    }

    fn spawn_workers(&self) {
        let workers = &self.settings.workers;
        let limit = workers.batch_limit.max(1);
        let service = &self.state.service;
        let every = |secs: u64| Duration::from_secs(secs.max(1));

        let (s, timers) = (service.clone(), self.storage.timers.clone());
        self.tasks.spawn(workers::run_every(
            "timers",
            Duration::from_millis(workers.timers_every_ms.max(10)),
            self.root.child_token(),
            move || {
                let (s, timers) = (s.clone(), timers.clone());
                async move { workers::fire_due_timers(&s, &timers, limit).await }
            },
        ));

        let s = service.clone();
        let timeout = Duration::from_secs(self.settings.presence.timeout_secs.max(1));
        self.tasks.spawn(workers::run_every(
            "presence",
            every(workers.presence_every_secs),
            self.root.child_token(),
            move || {
                let s = s.clone();
                async move { workers::evict_stale_members(&s, timeout, limit).await }
            },
        ));

        let (s, payouts) = (service.clone(), self.storage.payouts.clone());
        self.tasks.spawn(workers::run_every(
            "payouts",
            every(workers.payouts_every_secs),
            self.root.child_token(),
            move || {
                let (s, payouts) = (s.clone(), payouts.clone());
                async move { workers::pay_out(&s, &payouts, limit).await }
            },
        ));

        // Histogram samples pile up in the recorder until they are folded into the
        // summaries; without this, memory grows with every request when nobody scrapes.
        let metrics = self.state.metrics.clone();
        self.tasks.spawn(workers::run_every(
            "metrics_upkeep",
            METRICS_UPKEEP,
            self.root.child_token(),
            move || {
                metrics.run_upkeep();
                std::future::ready(Ok(0))
            },
        ));

        // The buckets of users who went quiet are as good as new: forget them, so the tables
        // hold only recent users.
        if let Some(limits) = self.state.limits.clone() {
            self.tasks.spawn(workers::run_every(
                "rate_limit_prune",
                limits.prune_every(),
                self.root.child_token(),
                move || {
                    limits.prune();
                    metrics::gauge!("http_rate_limited_users").set(limits.tracked_users() as f64);
                    std::future::ready(Ok(0))
                },
            ));
        }

        let s = service.clone();
        let older_than = Duration::from_secs(workers.recovery_older_than_secs);
        self.tasks.spawn(workers::run_every(
            "gift_recovery",
            every(workers.recovery_every_secs),
            self.root.child_token(),
            move || {
                let s = s.clone();
                async move { workers::recover_gifts(&s, older_than, limit).await }
            },
        ));
    }

    /// Starts the service on `listener` and serves until `signal` completes, then stops
    /// gracefully: no new connections, requests in flight finish, SSE streams and background
    /// passes end, every cell drains its queue and writes its snapshot.
    pub async fn serve(
        self,
        listener: TcpListener,
        signal: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        self.start().await?;
        let address = listener.local_addr().ok();
        tracing::info!(address = ?address, "room-api listening");
        let root = self.root.clone();
        let stop = async move {
            tokio::select! {
                () = signal => {}
                () = root.cancelled() => {}
            }
            tracing::info!("stopping: no new requests");
            root.cancel();
        };
        let http = &self.settings.http;
        let limits = ConnectionLimits {
            header_timeout: Duration::from_secs(http.header_timeout_secs.max(1)),
            idle_timeout: Duration::from_secs(http.idle_timeout_secs.max(1)),
            max_connections: http.max_connections.max(1),
        };
        serve::serve(listener, self.router.clone(), limits, stop).await;
        self.stop().await;
        Ok(())
    }

    /// Stops background passes and drains every cell. Idempotent.
    pub async fn stop(&self) {
        self.state.ready.store(false, Ordering::Release);
        self.root.cancel();
        self.tasks.close();
        self.tasks.wait().await;
        self.state.service.runtime().shutdown().await;
        self.storage.close().await;
        tracing::info!("stopped");
    }
}
