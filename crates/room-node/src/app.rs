//! [`App`]: a node of the service — storage, the shared state when clustered, the Room Cell
//! runtime, the use cases, the background work of its [`Role`] and the HTTP router — wired
//! from [`Settings`], with a graceful stop.

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
use room_app::consumers::FactConsumer;
use room_app::lists::{ListDeps, RoomLists};
use room_app::ports::{
    ClockRef, EventPublisherRef, IdGenRef, LeaseRef, MessengerRef, PasswordAttemptsRef, PresenceRef,
};
use room_app::robots::{Orchestrator, OrchestratorDeps};
use room_app::visitors::Visitors;
use room_app::{
    BroadcastMessenger, CellDeps, CellRuntime, FanOutMessenger, LocalLease, LocalPasswordAttempts,
    LocalPresence, RandomIds, RoomService, ServicePorts, SystemClock, workers,
};
use room_domain::Timestamp;
use secrecy::ExposeSecret;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::auth::AuthenticatorRef;
use crate::catalog::CatalogFile;
use crate::cluster::NodeForwarder;
use crate::config::Settings;
use crate::im::Im;
use crate::limits::{RateLimits, StreamSlots};
use crate::link::LinkTasks;
use crate::role::Role;
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
    /// The per-user request budgets of the cluster, in Redis; `None` embedded (each node's
    /// own limits then).
    budgets: Option<room_app::ports::RateBudgetsRef>,
    /// The event streams users hold over the cluster, in Redis; `None` embedded.
    streams: Option<room_app::ports::OpenStreamsRef>,
    /// The room lists the cluster's refresher leaves for every node, in Redis; `None`
    /// embedded.
    lists: Option<room_app::ports::ListCacheRef>,
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
                budgets: None,
                streams: None,
                lists: None,
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
        let mut budgets = adapters_redis::RedisRateBudgetsSettings::new(lease.url.clone());
        budgets.key_prefix = lease.key_prefix.clone();
        budgets.pool_size = lease.pool_size;
        // A limiter waits on Redis no longer than this; past it, the node's own limits answer.
        budgets.op_timeout = lease.op_timeout.min(Duration::from_millis(100));
        let mut lists = adapters_redis::RedisListCacheSettings::new(lease.url.clone());
        lists.key_prefix = lease.key_prefix.clone();
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
            budgets: Some(Arc::new(
                adapters_redis::RedisRateBudgets::connect(&budgets)
                    .await
                    .context(unreachable)?,
            )),
            streams: Some(Arc::new(
                adapters_redis::RedisOpenStreams::connect(&budgets)
                    .await
                    .context(unreachable)?,
            )),
            lists: Some(Arc::new(
                adapters_redis::RedisListCache::connect(&lists)
                    .await
                    .context(unreachable)?,
            )),
        })
    }
}

/// A node of the service.
pub struct App {
    settings: Settings,
    role: Role,
    /// Where the outbox is published, when Kafka is configured.
    publisher: Option<EventPublisherRef>,
    /// The node's consumers of the durable facts (the IM group effects, when IM is
    /// configured).
    consumers: Vec<Arc<FactConsumer>>,
    state: AppState,
    router: Router,
    storage: Storage,
    /// Room leases and the nodes' groups.
    lease: LeaseRef,
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
        Self::build_as(settings, Role::Api).await
    }

    /// Builds a node of `role` from settings, as [`App::build`] does.
    pub async fn build_as(settings: Settings, role: Role) -> anyhow::Result<App> {
        // Before storage: bad settings must not create or lock a database file.
        settings.validate_for(role)?;
        let storage = Storage::open(&settings.storage).await?;
        Self::build_with_storage_as(settings, storage, role).await
    }

    /// Like [`App::build`], over storage built by the caller.
    pub async fn build_with_storage(settings: Settings, storage: Storage) -> anyhow::Result<App> {
        Self::build_with_storage_as(settings, storage, Role::Api).await
    }

    /// Like [`App::build_as`], over storage built by the caller.
    pub async fn build_with_storage_as(
        settings: Settings,
        storage: Storage,
        role: Role,
    ) -> anyhow::Result<App> {
        Self::build_with_clock(settings, storage, role, Arc::new(SystemClock)).await
    }

    /// Like [`App::build_with_storage_as`], with the service's time from `clock` (a test's
    /// clock, to run a node past its retention).
    pub async fn build_with_clock(
        settings: Settings,
        storage: Storage,
        role: Role,
        clock: ClockRef,
    ) -> anyhow::Result<App> {
        // Settings built in code (tests, tools) skip `Settings::load`, which validates too.
        settings.validate_for(role)?;
        let catalog = CatalogFile::load(&settings.catalog.path)?;
        catalog.upsert(&storage.catalog).await?;
        let billing = room_app::income::seed_billing(&storage.billing, &catalog.billing)
            .await
            .context("cannot store the first billing policy")?;
        tracing::info!(version = billing.version, "billing policy");
        let rocket = room_app::rocket::seed_rocket(&storage.rocket, &catalog.rules.rocket_levels)
            .await
            .context("cannot store the first rocket levels")?;
        tracing::info!(version = rocket.version, "rocket levels");
        let rewards = room_app::boards::rewards::seed_board_rewards(
            &storage.board_rewards,
            &catalog.board_rewards,
        )
        .await
        .context("cannot store the first board rewards")?;
        tracing::info!(version = rewards.version, "board rewards");

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
        let auth: AuthenticatorRef = Arc::new(
            settings
                .auth
                .authenticator()?
                .refusing_robots(&settings.robots.id_prefix),
        );

        let messenger = Arc::new(BroadcastMessenger::new(settings.sse.buffer.max(1)));
        let ids: IdGenRef = Arc::new(RandomIds::new());
        let internal_token = settings.cluster.internal_token.clone().map(Arc::new);
        let root = CancellationToken::new();
        let shared = SharedState::build(&settings, messenger.clone(), &root).await?;
        let tasks = TaskTracker::new();
        let im = Im::start(&settings, root.child_token())?;
        let display: MessengerRef = match &im {
            Some(im) => Arc::new(FanOutMessenger::new(vec![
                shared.messenger,
                Arc::new(crate::im::RobotSampling {
                    inner: im.messenger.clone(),
                    per_million: (settings.robots.im_sample * 1_000_000.0).round() as u64,
                }),
            ])),
            None => shared.messenger,
        };
        let lease = shared.lease;
        let shared_budgets = shared.budgets;
        let shared_streams = shared.streams;
        let runtime = CellRuntime::new(
            CellDeps {
                store: storage.cells.clone(),
                snapshots: storage.snapshots.clone(),
                lease: lease.clone(),
                messenger: display,
                clock: clock.clone(),
                ids: ids.clone(),
                directory: storage.directory.clone(),
            },
            room_app::CellConfig {
                background_forwards: role == Role::Worker,
                background_own_rooms_only: role == Role::Orchestrator,
                // Clustered, robot rooms run on orchestrators only.
                release_robot_rooms: (settings.is_clustered() && role != Role::Orchestrator)
                    .then(|| settings.robots.id_prefix.clone()),
                ..settings.cell_config(catalog.rules)
            },
            CancellationToken::new(),
        );
        // The rooms take the stored levels (the configured ones seeded them, or an operator
        // changed them since).
        runtime.set_rocket(&rocket);
        if settings.is_clustered()
            && let Some(token) = &internal_token
        {
            let timeout = settings.forward_timeout();
            runtime.forward_with(Arc::new(NodeForwarder::new(token.clone(), timeout)?));
            tracing::info!(
                node_id = %settings.cell.node_id,
                advertise_url = ?settings.advertise_url(),
                "clustered: rooms other nodes own are forwarded to them"
            );
        }
        let early =
            crate::facts::early_consumer(&settings, im.as_ref().map(|im| &im.client), &clock)?;
        let service = RoomService::new(
            runtime,
            ServicePorts {
                orders: storage.orders.clone(),
                wallet: storage.wallet.clone(),
                catalog: storage.catalog.clone(),
                billing: storage.billing.clone(),
                income: storage.income.clone(),
                tallies: storage.tallies.clone(),
                boards: storage.boards.clone(),
                board_rewards: storage.board_rewards.clone(),
                rocket: storage.rocket.clone(),
                directory: storage.directory.clone(),
                users: storage.users.clone(),
                vip: storage.vip.clone(),
                presence: shared.presence,
                attempts: shared.attempts,
                clock,
                ids,
            },
        );
        let service = service
            .with_profile_cache(settings.profiles.cache())
            .with_vip_cache(settings.vip.cache());
        // A new room's IM group is created before the room's creation is answered.
        let service = Arc::new(match early {
            Some(consumer) => service.with_early_consumer(consumer),
            None => service,
        });
        let consumers =
            crate::facts::consumers(&settings, im.as_ref().map(|im| &im.client), &service)?;

        let keys_clock = service.ports().clock.clone();
        let follows = Arc::new(room_app::follows::RoomFollowing::new(
            storage.follows.clone(),
            storage.directory.clone(),
            keys_clock.clone(),
            settings.lists.max_follows_per_user,
        ));
        let lists = Arc::new(RoomLists::new(
            ListDeps {
                directory: storage.directory.clone(),
                profiles: service.profiles_handle(),
                robots: storage.robots.clone(),
                pins: storage.pins.clone(),
                store_clock: storage.claims.clone(),
                clock: keys_clock.clone(),
                ids: service.ports().ids.clone(),
                following: follows.clone(),
                cache: shared.lists.clone(),
            },
            settings.lists.lists(),
        ));
        // Not ready until `start` has recovered and started the background work: 0 from
        // here, so that a node stuck in start-up recovery shows as one.
        let metrics = prometheus();
        metrics::gauge!("room_node_ready").set(0.0);
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
            metrics,
            ready: Arc::new(AtomicBool::new(false)),
            shutdown: root.clone(),
            sse_keep_alive: Duration::from_secs(settings.sse.keep_alive_secs.max(1)),
            sse_replay_max: settings.sse.replay_max,
            limits: RateLimits::new(&settings.limits)
                .map(|limits| Arc::new(limits.shared(shared_budgets))),
            streams: match shared_streams {
                Some(streams) => StreamSlots::shared(
                    settings.sse.max_streams_per_user,
                    streams,
                    keys_clock.clone(),
                    settings.cell.node_id.clone(),
                ),
                None => StreamSlots::new(settings.sse.max_streams_per_user),
            },
            internal_token,
            node_id: settings.cell.node_id.clone(),
            im: im.as_ref().map(|im| im.client.clone()),
            robots: storage.robots.clone(),
            outbox: storage.outbox.clone(),
            robot_id_prefix: settings.robots.id_prefix.clone(),
            links: LinkTasks::new(tasks.clone()),
            // A claim unanswered for twice the request timeout was a node that died running
            // it: a repeat takes it over.
            // Claims are dated by the store's clock, as work claims are.
            follows,
            lists,
            billing_zone: crate::state::BillingZone {
                name: settings.billing.time_zone.clone(),
                utc_offset_secs: settings.billing.utc_offset_secs()?,
            },
            board_pages: Arc::new(crate::page_cache::PageCache::new(
                Duration::from_millis(settings.boards.page_cache_ms),
                settings.boards.page_cache_entries,
            )),
            keyed: room_app::keyed::KeyedGate::on_store_clock(
                storage.keyed.clone(),
                keys_clock,
                storage.claims.clone(),
                settings.cell.node_id.clone(),
                Duration::from_secs(settings.http.request_timeout_secs.max(1) * 2),
            ),
        });
        let router = routes::router(
            state.clone(),
            Duration::from_secs(settings.http.request_timeout_secs.max(1)),
            role == Role::Api,
        );
        let runs_passes = role == Role::Worker || settings.workers.in_process;
        let publisher = if runs_passes {
            crate::kafka::publisher(&settings).await?
        } else {
            None
        };
        if runs_passes && publisher.is_none() {
            tracing::warn!(
                "ROOM__KAFKA__BROKERS is not set: durable facts are not published; the node's own \
                 consumers read them from the outbox, and retention deletes them once passed"
            );
        }
        if let Some(im) = im {
            tasks.spawn(im.dispatcher.stopped());
        }
        Ok(App {
            settings,
            role,
            publisher,
            consumers,
            state,
            router,
            storage,
            lease,
            root,
            tasks,
        })
    }

    /// The HTTP application.
    pub fn router(&self) -> Router {
        self.router.clone()
    }

    /// The room lists (tests rank them at once with [`RoomLists::refresh`] instead of waiting
    /// for the refresher).
    pub fn lists(&self) -> &Arc<RoomLists> {
        &self.state.lists
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

    /// What `/metrics` answers now (the Prometheus text of this process).
    pub fn metrics_text(&self) -> String {
        self.state.metrics.render()
    }

    /// What this node serves and runs.
    pub fn role(&self) -> Role {
        self.role
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
        self.spawn_lists();
        self.state.ready.store(true, Ordering::Release);
        metrics::gauge!("room_node_ready").set(1.0);
        Ok(())
    }

    /// Recovery at start-up. In embedded mode nothing else runs yet, so every unfinished
    /// order, however young, is left over from before and is settled now. With several nodes
    /// the others may be driving their young orders right now (settling one would void its
    /// debit and fail a valid gift): only orders older than
    /// `workers.recovery_older_than_secs` are settled, as the periodic pass does. One pass
    /// walks the orders page by page; what it cannot settle (a retryable error, a record
    /// that needs a person) waits for the periodic pass.
    async fn recover_gifts_at_start(&self) -> anyhow::Result<()> {
        let page = self.settings.workers.batch_limit.max(1);
        let before = if self.settings.is_clustered() {
            // The store's clock, which every node reads alike.
            let now = self
                .storage
                .claims
                .now()
                .await
                .context("reading the store's clock")?;
            let age = self.settings.workers.recovery_older_than_secs;
            Timestamp(
                now.0
                    .saturating_sub(i64::try_from(age.saturating_mul(1000)).unwrap_or(i64::MAX)),
            )
        } else {
            Timestamp(i64::MAX)
        };
        let report = self
            .state
            .service
            .gifts()
            .recover(before, page)
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

    /// Whether this node runs the background passes.
    fn runs_passes(&self) -> bool {
        self.role == Role::Worker || self.settings.workers.in_process
    }

    /// Whether this node runs robot rooms: an orchestrator does, and room-api in embedded
    /// mode unless `robots.in_process` is off.
    fn runs_robots(&self) -> bool {
        match self.role {
            Role::Orchestrator => true,
            Role::Api => !self.settings.is_clustered() && self.settings.robots.in_process,
            Role::Worker => false,
        }
    }

    /// The robot room orchestrator, when this node runs robot rooms.
    fn spawn_orchestrator(&self) {
        if !self.runs_robots() {
            return;
        }
        let service = &self.state.service;
        let ports = service.ports();
        let orchestrator = Orchestrator::new(
            OrchestratorDeps {
                runtime: service.runtime().clone(),
                robot_rooms: self.storage.robots.clone(),
                catalog: self.storage.catalog.clone(),
                lease: self.lease.clone(),
                clock: ports.clock.clone(),
                ids: ports.ids.clone(),
            },
            self.settings
                .robots
                .orchestrator(&self.settings.cell.node_id),
            self.root.child_token(),
        );
        tracing::info!("running robot rooms");
        self.tasks.spawn(orchestrator.run());

        let robots = &self.settings.robots;
        if robots.visitors_below == 0 {
            return;
        }
        let visitors = Arc::new(tokio::sync::Mutex::new(Visitors::new(robots.visitors())));
        let service = service.clone();
        let pass = move || {
            let (visitors, service) = (visitors.clone(), service.clone());
            async move {
                // Counted by the pass's own metrics; answering 0 keeps the period (a pass
                // that answers work done is run again at once).
                visitors.lock().await.pass(&service).await?;
                Ok(0)
            }
        };
        let every = Duration::from_secs(robots.visitors_every_secs.max(1));
        let cancel = self.root.child_token();
        if self.role == Role::Orchestrator {
            // One orchestrator of the cluster at a time sends visitors.
            self.tasks.spawn(workers::run_claimed(
                "robot_visitors",
                every,
                self.claim(),
                cancel,
                pass,
            ));
        } else {
            self.tasks
                .spawn(workers::run_every("robot_visitors", every, cancel, pass));
        }
    }

    /// The room lists' refresher, on nodes that serve the API: on one node it ranks every
    /// `refresh_ms` into its own memory; in a cluster one node at a time ranks (under a
    /// claim) into Redis, and every node polls Redis four times a period.
    fn spawn_lists(&self) {
        if self.role != Role::Api {
            return;
        }
        let lists = self.state.lists.clone();
        let every = self.settings.lists.refresh_every();
        let refresh = move || {
            let lists = lists.clone();
            async move {
                // Before the refresh: a refresh that keeps failing shows as a growing age.
                lists.record_age();
                lists.refresh().await?;
                // Answering 0 keeps the period (a pass answering work done runs again at once).
                Ok(0)
            }
        };
        if !self.settings.is_clustered() {
            self.tasks.spawn(workers::run_every(
                "room_lists",
                every,
                self.root.child_token(),
                refresh,
            ));
            return;
        }
        self.tasks.spawn(workers::run_claimed(
            "room_lists",
            every,
            self.claim(),
            self.root.child_token(),
            refresh,
        ));
        let lists = self.state.lists.clone();
        self.tasks.spawn(workers::run_every(
            "room_lists_poll",
            (every / 4).max(Duration::from_millis(25)),
            self.root.child_token(),
            move || {
                let lists = lists.clone();
                async move {
                    lists.poll().await?;
                    Ok(0)
                }
            },
        ));
    }

    fn spawn_workers(&self) {
        self.spawn_upkeep();
        self.spawn_rocket_refresh();
        self.spawn_orchestrator();
        if !self.runs_passes() {
            tracing::info!("workers.in_process is off: room-worker runs the background passes");
            return;
        }
        self.spawn_passes();
        self.spawn_outbox();
        self.spawn_turnover();
        self.spawn_board_retention();
        self.spawn_board_rewards();
    }

    /// The rewards of closed periods' boards, paid by one process of the deployment at a
    /// time (under a claim).
    fn spawn_board_rewards(&self) {
        let Ok(offset) = self.settings.billing.utc_offset_secs() else {
            // Validated at start: unreachable with checked settings.
            tracing::error!("the board rewards cannot start: bad billing.time_zone");
            return;
        };
        let boards = &self.settings.boards;
        let ports = self.state.service.ports();
        let payer = Arc::new(room_app::boards::rewards::RewardPayer {
            boards: ports.boards.clone(),
            rewards: ports.board_rewards.clone(),
            wallet: ports.wallet.clone(),
            directory: ports.directory.clone(),
            outbox: self.storage.outbox.clone(),
            // Without a broker the board consumer reads the outbox under its stored position.
            consumer: (!self.settings.kafka.is_enabled())
                .then(|| (self.storage.positions.clone(), boards.group.clone())),
            utc_offset_secs: offset,
            delay_secs: boards.reward_delay_secs,
        });
        let (clock, limit) = (
            ports.clock.clone(),
            self.settings.workers.batch_limit.max(1),
        );
        self.tasks.spawn(workers::run_claimed(
            "board_rewards",
            Duration::from_secs(boards.reward_every_secs.max(1)),
            self.claim(),
            self.root.child_token(),
            move || {
                let (payer, clock) = (payer.clone(), clock.clone());
                async move { payer.pay(clock.now(), limit).await }
            },
        ));
    }

    /// The deletion of expired periods' board entries, by one process of the deployment at a
    /// time (under a claim).
    fn spawn_board_retention(&self) {
        let Ok(offset) = self.settings.billing.utc_offset_secs() else {
            // Validated at start: unreachable with checked settings.
            tracing::error!("the board retention cannot start: bad billing.time_zone");
            return;
        };
        let boards = &self.settings.boards;
        let ports = self.state.service.ports();
        let (store, clock) = (ports.boards.clone(), ports.clock.clone());
        let (retention, batch) = (
            boards.retention(self.settings.billing.tally_keys_days),
            self.settings.outbox.retention_batch.max(1),
        );
        self.tasks.spawn(workers::run_claimed(
            "board_retention",
            Duration::from_secs(boards.prune_every_secs.max(1)),
            self.claim(),
            self.root.child_token(),
            move || {
                let (store, clock) = (store.clone(), clock.clone());
                async move {
                    room_app::boards::prune_boards(&store, retention, clock.now(), offset, batch)
                        .await
                }
            },
        ));
    }

    /// On every process that runs rooms: the rooms take the newest stored rocket levels
    /// within `catalog.rocket_refresh_ms` of an operator's change made through another node.
    fn spawn_rocket_refresh(&self) {
        let (store, runtime) = (
            self.storage.rocket.clone(),
            self.state.service.runtime().clone(),
        );
        self.tasks.spawn(workers::run_every(
            "rocket_refresh",
            Duration::from_millis(self.settings.catalog.rocket_refresh_ms.max(100)),
            self.root.child_token(),
            move || {
                let (store, runtime) = (store.clone(), runtime.clone());
                async move { room_app::rocket::refresh_rocket(&store, &runtime).await }
            },
        ));
    }

    /// The settlement of closed days' turnovers and the retention of the counted gifts'
    /// keys, each run by one process of the deployment at a time (under a claim).
    fn spawn_turnover(&self) {
        let billing = &self.settings.billing;
        let offset = match billing.utc_offset_secs() {
            Ok(offset) => offset,
            Err(error) => {
                // Validated at start: unreachable with checked settings.
                tracing::error!(error = %format_args!("{error:#}"), "the turnover settlement cannot start");
                return;
            }
        };
        let ports = self.state.service.ports();
        let settler = Arc::new(room_app::gift_value::Settler {
            tallies: ports.tallies.clone(),
            income: ports.income.clone(),
            directory: ports.directory.clone(),
            policies: ports.billing.clone(),
            utc_offset_secs: offset,
            delay_secs: billing.settle_delay_secs,
            resume: std::sync::Mutex::new(None),
        });
        let (clock, limit) = (
            ports.clock.clone(),
            self.settings.workers.batch_limit.max(1),
        );
        self.tasks.spawn(workers::run_claimed(
            "turnover_settlement",
            Duration::from_secs(billing.settle_every_secs.max(1)),
            self.claim(),
            self.root.child_token(),
            move || {
                let (settler, clock) = (settler.clone(), clock.clone());
                async move {
                    settler
                        .settle_turnovers(clock.now(), limit)
                        .await
                        .map(u64::from)
                }
            },
        ));
        let (tallies, clock) = (ports.tallies.clone(), ports.clock.clone());
        let (days, batch) = (
            billing.tally_keys_days.max(1),
            self.settings.outbox.retention_batch.max(1),
        );
        self.tasks.spawn(workers::run_claimed(
            "tally_key_retention",
            Duration::from_secs(self.settings.outbox.retention_every_secs.max(1)),
            self.claim(),
            self.root.child_token(),
            move || {
                let (tallies, clock) = (tallies.clone(), clock.clone());
                async move { workers::prune_tally_keys(&tallies, &clock, days, batch, 10).await }
            },
        ));
    }

    /// The passes of the rooms' background work. Each node that runs them handles the rooms
    /// nobody else runs; an API node leaves the other rooms to their owners' passes, a worker
    /// forwards to the owners ([`room_app::CellConfig::background_forwards`]).
    fn spawn_passes(&self) {
        let workers = &self.settings.workers;
        let limit = workers.batch_limit.max(1);
        let service = &self.state.service;
        let every = |secs: u64| Duration::from_secs(secs.max(1));

        let (s, timers) = (service.clone(), self.storage.timers.clone());
        self.spawn_pass(
            "timers",
            Duration::from_millis(workers.timers_every_ms.max(10)),
            move || {
                let (s, timers) = (s.clone(), timers.clone());
                async move { workers::fire_due_timers(&s, &timers, limit).await }
            },
        );

        let s = service.clone();
        let timeout = Duration::from_secs(self.settings.presence.timeout_secs.max(1));
        self.spawn_pass("presence", every(workers.presence_every_secs), move || {
            let s = s.clone();
            async move { workers::evict_stale_members(&s, timeout, limit).await }
        });

        let (s, payouts) = (service.clone(), self.storage.payouts.clone());
        self.spawn_pass("payouts", every(workers.payouts_every_secs), move || {
            let (s, payouts) = (s.clone(), payouts.clone());
            async move { workers::pay_out(&s, &payouts, limit).await }
        });

        let (s, store_clock) = (service.clone(), self.storage.claims.clone());
        let older_than = Duration::from_secs(workers.recovery_older_than_secs);
        self.spawn_pass(
            "gift_recovery",
            every(workers.recovery_every_secs),
            move || {
                let (s, store_clock) = (s.clone(), store_clock.clone());
                async move { workers::recover_gifts(&s, &store_clock, older_than, limit).await }
            },
        );
    }

    /// Runs `pass` every `period`: on a worker only while it holds the pass's claim, so that
    /// workers side by side do not run one pass at once.
    fn spawn_pass<F, Fut>(&self, name: &'static str, period: Duration, pass: F)
    where
        F: FnMut() -> Fut + Send + 'static,
        Fut: Future<Output = room_app::Result<u64>> + Send + 'static,
    {
        let cancel = self.root.child_token();
        if self.role == Role::Worker {
            self.tasks.spawn(workers::run_claimed(
                name,
                period,
                self.claim(),
                cancel,
                pass,
            ));
        } else {
            self.tasks
                .spawn(workers::run_every(name, period, cancel, pass));
        }
    }

    /// This node's claims on background work.
    fn claim(&self) -> workers::Claim {
        workers::Claim {
            claims: self.storage.claims.clone(),
            owner: self.settings.cell.node_id.clone(),
            ttl: Duration::from_secs(self.settings.workers.claim_ttl_secs.max(1)),
        }
    }

    /// The outbox publisher (when Kafka is configured; without it, the pass that marks done
    /// the rows every consumer has passed), the consumers of the durable facts (the IM group
    /// effects, when IM is configured), and the retention of the outbox and of the command
    /// log, each run by one process of the cluster at a time (under a claim; the consumers
    /// under a claim each, or as one Kafka consumer group each).
    fn spawn_outbox(&self) {
        let outbox = &self.settings.outbox;
        let clock = self.state.service.ports().clock.clone();
        if let Some(publisher) = self.publisher.clone() {
            let (rows, batch) = (self.storage.outbox.clone(), outbox.publish_batch.max(1));
            let clock = clock.clone();
            self.tasks.spawn(workers::run_claimed(
                "outbox_publisher",
                Duration::from_millis(outbox.publish_every_ms.max(1)),
                self.claim(),
                self.root.child_token(),
                {
                    // The rooms held back after a failure, from one pass to the next.
                    let state = Arc::new(tokio::sync::Mutex::new(
                        workers::OutboxPublisherState::default(),
                    ));
                    move || {
                        let (rows, publisher, clock) =
                            (rows.clone(), publisher.clone(), clock.clone());
                        let state = state.clone();
                        async move {
                            let mut state = state.lock().await;
                            workers::publish_outbox_with(
                                &mut state, &rows, &publisher, &clock, batch, 10,
                            )
                            .await
                        }
                    }
                },
            ));
        }
        if !self.consumers.is_empty() {
            match crate::facts::source(&self.settings, &self.storage, self.claim()) {
                Ok(source) => {
                    crate::facts::spawn_consumers(&self.consumers, &source, &self.tasks, &self.root)
                }
                Err(error) => {
                    metrics::counter!("room_worker_errors_total", "worker" => "facts").increment(1);
                    tracing::error!(error = %format_args!("{error:#}"), "the consumers of the durable facts cannot start");
                }
            }
        }
        if self.publisher.is_none() {
            // Without a broker, a row is done once every consumer has passed it.
            crate::facts::spawn_passed(
                &self.consumers,
                &self.storage,
                self.claim(),
                clock.clone(),
                outbox.retention_batch.max(1),
                &self.tasks,
                &self.root,
            );
        }
        let rows = self.storage.outbox.clone();
        let retention = Duration::from_secs(outbox.retention_days.saturating_mul(86_400));
        let batch = outbox.retention_batch.max(1);
        self.tasks.spawn(workers::run_claimed(
            "outbox_retention",
            Duration::from_secs(outbox.retention_every_secs.max(1)),
            self.claim(),
            self.root.child_token(),
            move || {
                let (rows, clock) = (rows.clone(), clock.clone());
                async move { workers::prune_outbox(&rows, &clock, retention, batch, 10).await }
            },
        ));
        // The records of keyed requests, after their own retention.
        let records = self.storage.keyed.clone();
        let keyed_retention =
            Duration::from_secs(self.settings.http.idempotency_retention_secs.max(1));
        let keyed_clock = self.state.service.ports().clock.clone();
        self.tasks.spawn(workers::run_claimed(
            "keyed_request_retention",
            Duration::from_secs(outbox.retention_every_secs.max(1)),
            self.claim(),
            self.root.child_token(),
            move || {
                let (records, clock) = (records.clone(), keyed_clock.clone());
                async move {
                    workers::prune_keyed_requests(&records, &clock, keyed_retention, batch, 10)
                        .await
                }
            },
        ));
        // The command log behind each room's newest snapshot, after the same retention.
        let cells = self.storage.cells.clone();
        let clock = self.state.service.ports().clock.clone();
        self.tasks.spawn(workers::run_claimed(
            "log_retention",
            Duration::from_secs(outbox.retention_every_secs.max(1)),
            self.claim(),
            self.root.child_token(),
            move || {
                let (cells, clock) = (cells.clone(), clock.clone());
                async move { workers::prune_log(&cells, &clock, retention, batch, 10).await }
            },
        ));
    }

    /// Upkeep of this process's own state, whatever its role.
    fn spawn_upkeep(&self) {
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
    }

    /// Starts the service on `listener` and serves until `signal` completes, then stops
    /// gracefully: no new connections, requests in flight finish, SSE streams and background
    /// passes end, every cell drains its queue and writes its snapshot.
    pub async fn serve(
        self,
        listener: TcpListener,
        signal: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        // Embedded, recovery settles every unfinished order, so it must end before the first
        // request. With several nodes, the internal endpoint is served first: recovery
        // activates rooms that the other nodes must reach meanwhile (`/readyz` answers 503
        // until it ends, so clients are not sent here yet).
        let clustered = self.settings.is_clustered();
        if !clustered {
            self.start().await?;
        }
        let address = listener.local_addr().ok();
        tracing::info!(address = ?address, binary = self.role.binary(), "listening");
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
        let serving = serve::serve(listener, self.router.clone(), limits, stop);
        let started = if clustered {
            let (started, ()) = tokio::join!(
                async {
                    let started = self.start().await;
                    if started.is_err() {
                        self.root.cancel();
                    }
                    started
                },
                serving
            );
            started
        } else {
            serving.await;
            Ok(())
        };
        self.stop().await;
        started
    }

    /// Stops background passes and drains every cell. Idempotent.
    pub async fn stop(&self) {
        self.state.ready.store(false, Ordering::Release);
        metrics::gauge!("room_node_ready").set(0.0);
        self.root.cancel();
        self.tasks.close();
        self.tasks.wait().await;
        self.state.service.runtime().shutdown().await;
        self.storage.close().await;
        tracing::info!("stopped");
    }
}
