//! [`Settings`]: the service's configuration, loaded in layers — built-in defaults, then the
//! optional TOML file `configs/room.toml`, then environment variables `ROOM__SECTION__KEY`
//! (`ROOM__HTTP__ADDR=0.0.0.0:8080` sets `http.addr`).
//!
//! Secrets are [`SecretString`]s: `Debug` prints `[REDACTED]`, so logging the settings is safe.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use figment::Figment;
use figment::providers::{Env, Format, Toml};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;

use crate::role::Role;

/// The configuration file read when it exists (relative to the working directory).
pub const DEFAULT_CONFIG_FILE: &str = "configs/room.toml";

/// The JWT secret used when none is configured. Anyone can mint tokens with it: the service
/// logs a loud warning when it runs with this value.
pub const DEV_JWT_SECRET: &str = "room-service-development-secret-do-not-use-in-production";

/// The largest request body: 64 KiB. It bounds a request's frame on an internal link too.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// The default consumer group of the IM group effects (`workers.im_effects_group`): every node
/// that runs them shares the topic's partitions in it.
pub const GROUP_EFFECTS_CONSUMER_GROUP: &str = "room-service-im-group-effects";

/// The widest `rtc.callback_window_secs` accepted, a day: wider, a captured callback could be
/// replayed long after its event, which is what the window is there to refuse.
pub const MAX_CALLBACK_WINDOW_SECS: u64 = 24 * 3600;

/// Everything the service reads from its configuration.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// The HTTP listener.
    pub http: HttpSettings,
    /// Where rooms, orders and balances are stored.
    pub storage: StorageSettings,
    /// Bearer tokens.
    pub auth: AuthSettings,
    /// The TRTC webhook.
    pub rtc: RtcSettings,
    /// The Room Cell runtime.
    pub cell: CellSettings,
    /// Heartbeats.
    pub presence: PresenceSettings,
    /// Background passes.
    pub workers: WorkerSettings,
    /// Publishing and pruning the outbox.
    pub outbox: OutboxSettings,
    /// The gift catalog and room rules file.
    pub catalog: CatalogSettings,
    /// The Server-Sent Events stream.
    pub sse: SseSettings,
    /// Per-user rate limits.
    pub limits: LimitSettings,
    /// Room leases in Redis (several nodes).
    pub lease: LeaseSettings,
    /// How the nodes reach each other.
    pub cluster: ClusterSettings,
    /// The Kafka broker the outbox is published to (`ROOM__KAFKA__BROKERS`; unset: off).
    pub kafka: adapters_mq::KafkaSettings,
    /// Tencent IM (`ROOM__IM__SDK_APP_ID` and `ROOM__IM__SECRET_KEY`; unset: off, display
    /// goes to the event stream only).
    pub im: adapters_tencent_im::ImSettings,
    /// Robot rooms.
    pub robots: RobotSettings,
}

/// `[robots]`: the users that robot rooms run.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RobotSettings {
    /// The user-id prefix that marks robots (`ROOM__ROBOTS__ID_PREFIX`): a robot room's pool
    /// holds only ids with it.
    pub id_prefix: String,
    /// The share of robot display events (robot gifts, joins, leaves and mic changes) sent to
    /// Tencent IM (`ROOM__ROBOTS__IM_SAMPLE`, 0 to 1): robot rooms must not eat the rooms' IM
    /// budget. The event stream gets them all.
    pub im_sample: f64,
    /// Whether `room-api` runs the robot rooms itself in embedded mode
    /// (`ROOM__ROBOTS__IN_PROCESS`). Clustered, `room-orchestrator` nodes run them and
    /// `room-api` never does.
    pub in_process: bool,
    /// How often an orchestrator reads the robot room configurations and starts, stops and
    /// hands over runtimes, in milliseconds (`ROOM__ROBOTS__RECONCILE_EVERY_MS`).
    pub reconcile_every_ms: u64,
    /// How often each robot room plays one step of its script, in milliseconds
    /// (`ROOM__ROBOTS__STEP_EVERY_MS`): at most one join or leave, one seat change and the
    /// gifts its rate owes per step.
    pub step_every_ms: u64,
    /// How long a robot stays in a room on average before another of the pool takes its
    /// place, in seconds (`ROOM__ROBOTS__STAY_SECS`).
    pub stay_secs: u64,
    /// The most robot rooms one node runs (`ROOM__ROBOTS__MAX_RUNTIMES`); past it the rest
    /// wait for another orchestrator.
    pub max_runtimes: usize,
    /// Human rooms with at least one person and fewer than this many get robot visitors
    /// (`ROOM__ROBOTS__VISITORS_BELOW`); 0, the default: none do.
    pub visitors_below: u32,
    /// The most robot visitors one room gets (`ROOM__ROBOTS__VISITORS_PER_ROOM`).
    pub visitors_per_room: u32,
    /// The visitor robots, `{id_prefix}visitor-0` up to this many
    /// (`ROOM__ROBOTS__VISITOR_POOL`).
    pub visitor_pool: u32,
    /// How often the quiet rooms are looked at, in seconds (`ROOM__ROBOTS__VISITORS_EVERY_SECS`).
    pub visitors_every_secs: u64,
    /// The most open rooms one look goes through, hottest first (`ROOM__ROBOTS__VISITORS_SCAN`).
    pub visitors_scan: u32,
}

impl Default for RobotSettings {
    fn default() -> Self {
        RobotSettings {
            id_prefix: "robot-".into(),
            im_sample: 0.1,
            in_process: true,
            reconcile_every_ms: 5_000,
            step_every_ms: 2_000,
            stay_secs: 600,
            max_runtimes: 10_000,
            visitors_below: 0,
            visitors_per_room: 2,
            visitor_pool: 1_000,
            visitors_every_secs: 10,
            visitors_scan: 500,
        }
    }
}

impl RobotSettings {
    /// The orchestrator's configuration for node `node_id`.
    pub fn orchestrator(&self, node_id: &str) -> room_app::robots::OrchestratorConfig {
        room_app::robots::OrchestratorConfig {
            node_id: node_id.to_owned(),
            reconcile_every: Duration::from_millis(self.reconcile_every_ms.max(10)),
            step_every: Duration::from_millis(self.step_every_ms.max(10)),
            robot_stay: Duration::from_secs(self.stay_secs.max(1)),
            max_runtimes: self.max_runtimes,
            ..room_app::robots::OrchestratorConfig::default()
        }
    }

    /// The robot visitors' configuration.
    pub fn visitors(&self) -> room_app::visitors::VisitorConfig {
        room_app::visitors::VisitorConfig {
            below: self.visitors_below,
            per_room: self.visitors_per_room,
            pool: self.visitor_pool,
            id_prefix: self.id_prefix.clone(),
            scan: self.visitors_scan.max(1),
            every: Duration::from_secs(self.visitors_every_secs.max(1)),
        }
    }
}

/// `[lease]`: room leases in Redis, which several `room-api` nodes behind a load balancer
/// share the rooms by. Unset `redis_url`: one node, which owns every room.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LeaseSettings {
    /// `redis://[:password@]host:port/db` (`ROOM__LEASE__REDIS_URL`): room leases, the node
    /// registry, presence, the password lockout and the display relay. Set, this node is one
    /// of several: it needs a node id of its own (`ROOM__CELL__NODE_ID`), an advertised URL and
    /// the internal token.
    pub redis_url: Option<SecretString>,
    /// How long a room lease lasts unless renewed, in milliseconds (`ROOM__LEASE__TTL_MS`); a
    /// dead node's rooms move within it. The keeper renews every third of it.
    pub ttl_ms: u64,
    /// Prepended to every Redis key (several deployments on one Redis).
    pub key_prefix: String,
    /// The most Redis connections of this node, per use (leases, presence, lockout).
    pub pool_size: usize,
}

impl Default for LeaseSettings {
    fn default() -> Self {
        LeaseSettings {
            redis_url: None,
            ttl_ms: 10_000,
            key_prefix: String::new(),
            pool_size: 16,
        }
    }
}

impl LeaseSettings {
    /// The lease TTL.
    pub fn ttl(&self) -> Duration {
        Duration::from_millis(self.ttl_ms)
    }
}

/// The shortest lease TTL accepted: the keeper renews every third of it, and a renewal must
/// fit in that with room to spare.
pub const MIN_LEASE_TTL_MS: u64 = 3_000;

/// `[cluster]`: how the nodes of a deployment reach each other.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClusterSettings {
    /// Where the other nodes reach this node's internal endpoint, such as
    /// `http://10.0.0.5:8080` (`ROOM__CLUSTER__ADVERTISE_URL`). Unset: `http://` and
    /// `http.addr`, unless that is a wildcard address (`0.0.0.0`, `[::]`), which others
    /// cannot reach.
    pub advertise_url: Option<String>,
    /// The shared secret of node-to-node calls, at least 32 bytes
    /// (`ROOM__CLUSTER__INTERNAL_TOKEN`). Unset, the internal routes refuse every call.
    pub internal_token: Option<SecretString>,
    /// MySQL storage for one node, without Redis (`ROOM__CLUSTER__SINGLE_NODE`): this node
    /// then owns every room, and nothing keeps a second node off the database's rooms but the
    /// epoch. Without it, MySQL storage needs `ROOM__LEASE__REDIS_URL`.
    pub single_node: bool,
    /// How long a request forwarded to a room's owner may take, in milliseconds
    /// (`ROOM__CLUSTER__FORWARD_TIMEOUT_MS`); below `http.request_timeout_secs`, so the client
    /// hears why. Unset: half of it.
    pub forward_timeout_ms: Option<u64>,
}

/// `[http]`: the listener and request limits.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HttpSettings {
    /// Address to listen on (`ROOM__HTTP__ADDR`).
    pub addr: SocketAddr,
    /// A request that has not produced its response after this many seconds is answered with
    /// a retryable `TIMEOUT` error.
    pub request_timeout_secs: u64,
    /// A connection that has not sent a whole request head this many seconds after it opened
    /// (or after the first byte of a later request) is closed (`ROOM__HTTP__HEADER_TIMEOUT_SECS`).
    pub header_timeout_secs: u64,
    /// A keep-alive connection with no request for this many seconds after its last response
    /// is closed (`ROOM__HTTP__IDLE_TIMEOUT_SECS`).
    pub idle_timeout_secs: u64,
    /// Most connections open at once; further connections wait in the listen queue until one
    /// closes (`ROOM__HTTP__MAX_CONNECTIONS`).
    pub max_connections: usize,
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            addr: SocketAddr::from(([127, 0, 0, 1], 8080)),
            request_timeout_secs: 10,
            header_timeout_secs: 10,
            idle_timeout_secs: 60,
            max_connections: 10_000,
        }
    }
}

/// `[storage]`: the backend. `Debug` hides a password in the URL.
#[derive(Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StorageSettings {
    /// `sqlite://path/to/file.db` (created if missing), `mysql://user:password@host:3306/db`
    /// (shared by every node; migrated by `room-api migrate`) or `memory://` (nothing survives
    /// a restart; for tests) (`ROOM__STORAGE__URL`).
    pub url: String,
    /// MySQL: the most connections of this node.
    pub max_connections: u32,
    /// SQLite: read-only connections beside the single writer.
    pub max_read_connections: u32,
    /// SQLite: the most write jobs committed in one transaction.
    pub max_jobs_per_transaction: usize,
    /// SQLite: how long to wait for a lock held by another process, in milliseconds.
    pub busy_timeout_ms: u64,
    /// SQLite: how often the WAL is checkpointed into the database file, in milliseconds.
    pub checkpoint_every_ms: u64,
}

impl Default for StorageSettings {
    fn default() -> Self {
        let sqlite = adapters_sqlite::SqliteSettings::default();
        StorageSettings {
            url: "sqlite://data/room.db".into(),
            max_connections: adapters_mysql::MySqlSettings::default().max_connections,
            max_read_connections: sqlite.max_read_connections,
            max_jobs_per_transaction: sqlite.max_jobs_per_transaction,
            busy_timeout_ms: sqlite.busy_timeout_ms,
            checkpoint_every_ms: sqlite.checkpoint_every_ms,
        }
    }
}

impl std::fmt::Debug for StorageSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StorageSettings")
            .field("url", &self.redacted_url())
            .field("max_connections", &self.max_connections)
            .field("max_read_connections", &self.max_read_connections)
            .field("max_jobs_per_transaction", &self.max_jobs_per_transaction)
            .field("busy_timeout_ms", &self.busy_timeout_ms)
            .field("checkpoint_every_ms", &self.checkpoint_every_ms)
            .finish()
    }
}

impl StorageSettings {
    /// The URL with any password replaced by `***`, for logs and messages.
    pub fn redacted_url(&self) -> String {
        let url = &self.url;
        let Some((scheme, rest)) = url.split_once("://") else {
            return url.clone();
        };
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        match authority.rsplit_once('@') {
            Some((user_info, host)) if user_info.contains(':') => {
                let user = user_info.split(':').next().unwrap_or_default();
                format!("{scheme}://{user}:***@{host}{path}")
            }
            _ => url.clone(),
        }
    }

    /// The MySQL adapter's settings.
    pub fn mysql(&self) -> adapters_mysql::MySqlSettings {
        adapters_mysql::MySqlSettings {
            max_connections: self.max_connections.max(1),
            ..adapters_mysql::MySqlSettings::new(self.url.clone())
        }
    }

    /// The SQLite adapter's settings.
    pub fn sqlite(&self) -> adapters_sqlite::SqliteSettings {
        adapters_sqlite::SqliteSettings {
            url: self.url.clone(),
            max_read_connections: self.max_read_connections,
            max_jobs_per_transaction: self.max_jobs_per_transaction,
            busy_timeout_ms: self.busy_timeout_ms,
            checkpoint_every_ms: self.checkpoint_every_ms,
        }
    }
}

/// `[auth]`: bearer tokens (JWT, HS256).
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuthSettings {
    /// The HMAC secret of the tokens (`ROOM__AUTH__JWT_SECRET`).
    pub jwt_secret: SecretString,
    /// Lifetime of tokens minted by `room-api token`, in seconds.
    pub token_ttl_secs: u64,
    /// When set, tokens must carry this `iss` (`ROOM__AUTH__ISSUER`).
    pub issuer: Option<String>,
    /// When set, tokens must carry this `aud` (`ROOM__AUTH__AUDIENCE`).
    pub audience: Option<String>,
}

impl Default for AuthSettings {
    fn default() -> Self {
        AuthSettings {
            jwt_secret: SecretString::from(DEV_JWT_SECRET),
            token_ttl_secs: 24 * 3600,
            issuer: None,
            audience: None,
        }
    }
}

impl AuthSettings {
    /// Whether the secret is the public development default.
    pub fn uses_dev_secret(&self) -> bool {
        self.jwt_secret.expose_secret() == DEV_JWT_SECRET
    }

    /// The token authority these settings describe.
    pub fn authenticator(&self) -> anyhow::Result<crate::auth::Authenticator> {
        crate::auth::Authenticator::with_claims(
            &self.jwt_secret,
            self.issuer.as_deref(),
            self.audience.as_deref(),
        )
    }
}

/// The shortest JWT secret accepted, in bytes: HS256 keys shorter than its 32-byte output can
/// be guessed faster than the hash can be broken.
pub const MIN_JWT_SECRET_BYTES: usize = 32;

/// `[rtc]`: the TRTC room and media callbacks.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RtcSettings {
    /// The callback key configured in the TRTC console (`ROOM__RTC__CALLBACK_KEY`). Unset:
    /// every callback is refused with 401.
    pub callback_key: Option<SecretString>,
    /// When set, callbacks must carry this `SdkAppId` header (`ROOM__RTC__SDK_APP_ID`).
    pub sdk_app_id: Option<u64>,
    /// A callback whose times lie further than this many seconds from now, in the past or the
    /// future, is refused as a replay (`ROOM__RTC__CALLBACK_WINDOW_SECS`). TRTC retries for
    /// about a minute, so the window must stay well above that; 1 to
    /// [`MAX_CALLBACK_WINDOW_SECS`], others are refused at start-up.
    pub callback_window_secs: u64,
}

impl Default for RtcSettings {
    fn default() -> Self {
        RtcSettings {
            callback_key: None,
            sdk_app_id: None,
            callback_window_secs: 300,
        }
    }
}

/// `[cell]`: tuning of the Room Cell runtime.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CellSettings {
    /// This node's id, recorded as the owner of the rooms it activates.
    pub node_id: String,
    /// Queued requests per room; beyond that a request is answered 429 at once.
    pub mailbox: usize,
    /// Most commands per group commit (1 turns group commit off).
    pub max_batch: usize,
    /// A snapshot is written after this many events (and when a room deactivates).
    pub snapshot_every: u64,
    /// A room with no request for this many seconds deactivates.
    pub idle_secs: u64,
    /// Command ids each active room remembers for idempotent answers without a storage read.
    pub recent_commands: usize,
    /// The most bytes (estimated) the replies each active room remembers may take.
    pub recent_commands_bytes: usize,
}

impl Default for CellSettings {
    fn default() -> Self {
        let defaults = room_app::CellConfig::default();
        CellSettings {
            node_id: defaults.node_id,
            mailbox: defaults.mailbox,
            max_batch: defaults.max_batch,
            snapshot_every: defaults.snapshot_every,
            idle_secs: defaults.idle_after.as_secs(),
            recent_commands: defaults.recent_commands,
            recent_commands_bytes: defaults.recent_commands_bytes,
        }
    }
}

/// `[presence]`: heartbeats.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PresenceSettings {
    /// A member whose last heartbeat (or join) is older than this many seconds is evicted.
    pub timeout_secs: u64,
}

impl Default for PresenceSettings {
    fn default() -> Self {
        PresenceSettings { timeout_secs: 90 }
    }
}

/// `[workers]`: the background passes of the embedded mode.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkerSettings {
    /// How often due timers (rocket launch, mic publish timeout) are fired, in milliseconds.
    pub timers_every_ms: u64,
    /// How often members without a recent heartbeat are looked for, in seconds.
    pub presence_every_secs: u64,
    /// How often owed rocket rewards are paid, in seconds.
    pub payouts_every_secs: u64,
    /// How often unfinished gift orders are recovered, in seconds.
    pub recovery_every_secs: u64,
    /// The periodic recovery settles orders unfinished for longer than this many seconds
    /// (recovery at start-up settles every unfinished order).
    pub recovery_older_than_secs: u64,
    /// Most items one pass handles (timers, evictions, payouts); gift recovery reads
    /// unfinished orders in pages of this size and walks all of them in one pass.
    pub batch_limit: u32,
    /// Whether `room-api` runs the background passes itself (`ROOM__WORKERS__IN_PROCESS`).
    /// Set it to `false` on the API nodes when `room-worker` processes are deployed.
    pub in_process: bool,
    /// How long a process's claim on a pass holds without renewal, in seconds: when a worker
    /// dies, another takes its passes over after this long.
    pub claim_ttl_secs: u64,
    /// The Kafka consumer group the IM group effects read the topic as
    /// (`ROOM__WORKERS__IM_EFFECTS_GROUP`): every process running them joins it.
    pub im_effects_group: String,
}

/// `[outbox]`: publishing the outbox's durable facts to Kafka, and deleting delivered rows.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OutboxSettings {
    /// Rows published per batch (one read, one broker round, one update).
    pub publish_batch: u32,
    /// How often the publisher looks for new rows when the outbox is drained, in
    /// milliseconds: the commit-to-broker lag of a quiet outbox is at most about this.
    pub publish_every_ms: u64,
    /// Delivered rows are deleted this many days after delivery
    /// (`ROOM__OUTBOX__RETENTION_DAYS`); undelivered rows are never deleted. Each room's
    /// command log is pruned behind its newest snapshot after as long.
    pub retention_days: u64,
    /// How often the retention pass runs, in seconds.
    pub retention_every_secs: u64,
    /// Rows one retention statement deletes at most.
    pub retention_batch: u32,
}

impl Default for OutboxSettings {
    fn default() -> Self {
        OutboxSettings {
            publish_batch: 1000,
            publish_every_ms: 50,
            retention_days: 3,
            retention_every_secs: 60,
            retention_batch: 1000,
        }
    }
}

impl Default for WorkerSettings {
    fn default() -> Self {
        WorkerSettings {
            timers_every_ms: 500,
            presence_every_secs: 10,
            payouts_every_secs: 2,
            recovery_every_secs: 30,
            recovery_older_than_secs: 60,
            batch_limit: 200,
            in_process: true,
            claim_ttl_secs: 30,
            im_effects_group: GROUP_EFFECTS_CONSUMER_GROUP.to_owned(),
        }
    }
}

/// `[catalog]`: the gift catalog and room rules file.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CatalogSettings {
    /// The file with the `[[gifts]]` catalog and the `[rules]`; when it does not exist, the
    /// copy built into the binary is used.
    pub path: PathBuf,
}

impl Default for CatalogSettings {
    fn default() -> Self {
        CatalogSettings {
            path: PathBuf::from("configs/gifts.toml"),
        }
    }
}

/// `[sse]`: the room event stream.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SseSettings {
    /// Events buffered per watcher; a watcher that falls further behind skips ahead and gets
    /// a `lagged` event.
    pub buffer: usize,
    /// Seconds between keep-alive comments on an idle stream.
    pub keep_alive_secs: u64,
    /// Streams one user may have open at once; one more is answered 429 `TOO_MANY_STREAMS`
    /// (`ROOM__SSE__MAX_STREAMS_PER_USER`).
    pub max_streams_per_user: usize,
    /// The most events a watcher reconnecting with `Last-Event-ID` is sent from the log; one
    /// that missed more gets a `resync` event (`ROOM__SSE__REPLAY_MAX`).
    pub replay_max: u64,
}

impl Default for SseSettings {
    fn default() -> Self {
        SseSettings {
            buffer: 256,
            keep_alive_secs: 15,
            max_streams_per_user: 8,
            replay_max: 1000,
        }
    }
}

/// `[limits]`: token buckets per user and route class. A request over its class's budget is
/// answered 429 `RATE_LIMITED` with `Retry-After`. Rates and bursts below 1 count as 1.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitSettings {
    /// Whether the limits apply at all (`ROOM__LIMITS__ENABLED`).
    pub enabled: bool,
    /// Users tracked per class. While a class tracks this many, its requests pass unlimited
    /// until the next prune forgets the quiet ones: its memory stays bounded whatever the
    /// number of users, and no crowd of users can lock the others out.
    pub max_users: usize,
    /// How often users whose bucket is full again are forgotten, in seconds.
    pub prune_every_secs: u64,
    /// `POST /v1/rooms`: room creations per minute per user, sustained.
    pub create_room_per_minute: u32,
    /// `POST /v1/rooms`: room creations at once after a quiet period.
    pub create_room_burst: u32,
    /// `POST /v1/rooms/{room_id}/join`: joins per minute per user.
    pub join_per_minute: u32,
    /// `POST /v1/rooms/{room_id}/join`: joins at once.
    pub join_burst: u32,
    /// `POST /v1/rooms/{room_id}/gifts`: gifts per minute per user.
    pub gift_per_minute: u32,
    /// `POST /v1/rooms/{room_id}/gifts`: gifts at once.
    pub gift_burst: u32,
    /// `GET /v1/rooms/{room_id}/events`: streams opened per minute per user.
    pub stream_per_minute: u32,
    /// `GET /v1/rooms/{room_id}/events`: streams opened at once.
    pub stream_burst: u32,
    /// Every other `POST`, `PUT`, `PATCH` and `DELETE` (heartbeats are not limited): requests
    /// per minute per user.
    pub write_per_minute: u32,
    /// Every other `POST`, `PUT`, `PATCH` and `DELETE`: requests at once.
    pub write_burst: u32,
}

impl Default for LimitSettings {
    fn default() -> Self {
        LimitSettings {
            enabled: true,
            max_users: 100_000,
            prune_every_secs: 60,
            create_room_per_minute: 60,
            create_room_burst: 20,
            join_per_minute: 600,
            join_burst: 60,
            gift_per_minute: 6_000,
            gift_burst: 300,
            stream_per_minute: 120,
            stream_burst: 30,
            write_per_minute: 3_000,
            write_burst: 200,
        }
    }
}

impl Settings {
    /// Loads the settings: defaults, then `file` if it exists, then the `ROOM__*` environment;
    /// then [`Settings::validate`]s them.
    pub fn load(file: &Path) -> Result<Settings, Box<figment::Error>> {
        let settings = Self::load_unchecked(file)?;
        settings
            .validate()
            .map_err(|error| Box::new(figment::Error::from(error.to_string())))?;
        Ok(settings)
    }

    /// Loads the settings like [`Settings::load`] (unknown keys still stop it) without
    /// [`Settings::validate`]: for the tools that use a part of them (`room-api migrate` the
    /// storage, `room-api token` the secret), which a node's whole settings may be given to
    /// as they are.
    pub fn load_unchecked(file: &Path) -> Result<Settings, Box<figment::Error>> {
        Figment::new()
            .merge(Toml::file(file))
            .merge(Env::prefixed("ROOM__").split("__"))
            .extract()
            .map_err(Box::new)
    }

    /// Refuses values the service must not start with, naming the key. Values where any
    /// choice works, only less well (a zero mailbox), are raised to a minimum where used
    /// instead.
    pub fn validate(&self) -> anyhow::Result<()> {
        if self.auth.uses_dev_secret() {
            // Anyone who knows the public secret can mint an admin token and credit coins:
            // only a service that nobody else can reach may use it.
            anyhow::ensure!(
                self.http.addr.ip().is_loopback(),
                "ROOM__AUTH__JWT_SECRET is not set and the service listens on {}, which is not \
                 a loopback address: the public development secret would let anyone reach it \
                 as any user, admins included. Set ROOM__AUTH__JWT_SECRET (at least \
                 {MIN_JWT_SECRET_BYTES} bytes), or listen on 127.0.0.1 for development",
                self.http.addr
            );
        } else {
            let len = self.auth.jwt_secret.expose_secret().len();
            anyhow::ensure!(
                len >= MIN_JWT_SECRET_BYTES,
                "ROOM__AUTH__JWT_SECRET is {len} bytes long; it must be at least \
                 {MIN_JWT_SECRET_BYTES} bytes (a random 32-byte value, e.g. \
                 `openssl rand -base64 32`)"
            );
        }
        for (name, value) in [
            ("ROOM__AUTH__ISSUER", &self.auth.issuer),
            ("ROOM__AUTH__AUDIENCE", &self.auth.audience),
        ] {
            anyhow::ensure!(
                value.as_ref().is_none_or(|v| !v.trim().is_empty()),
                "{name} is set but empty: leave it unset to accept tokens without it"
            );
        }
        if let Some(token) = &self.cluster.internal_token {
            let len = token.expose_secret().len();
            anyhow::ensure!(
                len >= MIN_JWT_SECRET_BYTES,
                "ROOM__CLUSTER__INTERNAL_TOKEN is {len} bytes long; it must be at least \
                 {MIN_JWT_SECRET_BYTES} bytes"
            );
        }
        self.validate_cluster()?;
        let prefix = &self.robots.id_prefix;
        anyhow::ensure!(
            !prefix.is_empty()
                && prefix.chars().count() < room_domain::MAX_ID_CHARS
                && room_domain::UserId::new(prefix.as_str()).is_ok(),
            "ROOM__ROBOTS__ID_PREFIX is {prefix:?}: it must be the start of a user id, 1 to {} \
             characters without whitespace, control characters or `/` (empty, every user \
             would be a robot)",
            room_domain::MAX_ID_CHARS - 1
        );
        let window = self.rtc.callback_window_secs;
        anyhow::ensure!(
            window > 0,
            "rtc.callback_window_secs must be at least 1: with 0 every TRTC callback is refused"
        );
        anyhow::ensure!(
            window <= MAX_CALLBACK_WINDOW_SECS,
            "rtc.callback_window_secs is {window}, more than {MAX_CALLBACK_WINDOW_SECS} (a day): \
             captured callbacks could be replayed that long after their event"
        );
        Ok(())
    }

    /// [`Settings::validate`], and what a node of `role` needs besides: a worker runs beside
    /// other nodes, so it needs shared storage and the lease.
    pub fn validate_for(&self, role: Role) -> anyhow::Result<()> {
        self.validate()?;
        anyhow::ensure!(
            self.im.sdk_app_id.is_some() == self.im.secret_key.is_some(),
            "Tencent IM needs both ROOM__IM__SDK_APP_ID and ROOM__IM__SECRET_KEY (or neither, \
             for no IM)"
        );
        anyhow::ensure!(
            self.workers.in_process || !self.storage.url.starts_with("sqlite:"),
            "ROOM__WORKERS__IN_PROCESS=false, but ROOM__STORAGE__URL is a SQLite file, which \
             one process serves: room-worker cannot share it, so room-api must run the \
             background work itself (leave ROOM__WORKERS__IN_PROCESS unset)"
        );
        anyhow::ensure!(
            (0.0..=1.0).contains(&self.robots.im_sample),
            "ROOM__ROBOTS__IM_SAMPLE is {}: it is a share, from 0 to 1",
            self.robots.im_sample
        );
        anyhow::ensure!(
            self.robots.step_every_ms >= 100 && self.robots.reconcile_every_ms >= 100,
            "ROOM__ROBOTS__STEP_EVERY_MS ({}) and ROOM__ROBOTS__RECONCILE_EVERY_MS ({}) must be \
             at least 100",
            self.robots.step_every_ms,
            self.robots.reconcile_every_ms
        );
        if self.im.is_configured() {
            self.im.validate().map_err(anyhow::Error::msg)?;
        }
        let runs_passes = role == Role::Worker || self.workers.in_process;
        anyhow::ensure!(
            !(self.im.is_configured() && runs_passes) || self.kafka.is_enabled(),
            "Tencent IM is configured and this node runs the background work, whose IM group \
             effects (creating, destroying, muting, banning) follow the durable facts on the \
             Kafka topic: set ROOM__KAFKA__BROKERS"
        );
        if role == Role::Orchestrator {
            anyhow::ensure!(
                self.is_clustered() && !self.storage.url.starts_with("sqlite:"),
                "room-orchestrator runs the robot rooms of a cluster beside room-api nodes, on \
                 the same storage and lease: set ROOM__STORAGE__URL=mysql://... and \
                 ROOM__LEASE__REDIS_URL (with ROOM__CLUSTER__INTERNAL_TOKEN, ROOM__CELL__NODE_ID \
                 and the cluster's other settings); in embedded mode room-api runs the robot \
                 rooms itself"
            );
            anyhow::ensure!(
                self.robots.reconcile_every_ms.saturating_mul(2) <= self.lease.ttl_ms,
                "ROOM__ROBOTS__RECONCILE_EVERY_MS ({}) must be at most half of \
                 ROOM__LEASE__TTL_MS ({}): an orchestrator renews its place among the \
                 orchestrators once a round, for one lease TTL",
                self.robots.reconcile_every_ms,
                self.lease.ttl_ms
            );
        }
        if role == Role::Worker {
            anyhow::ensure!(
                !self.storage.url.starts_with("sqlite:"),
                "room-worker needs storage that several processes share, and \
                 ROOM__STORAGE__URL ({}) is a SQLite file: with SQLite, room-api runs every \
                 background job itself; do not deploy room-worker",
                self.storage.redacted_url()
            );
            anyhow::ensure!(
                self.is_clustered(),
                "room-worker runs beside room-api nodes and takes rooms by lease like them: set \
                 ROOM__STORAGE__URL=mysql://... and ROOM__LEASE__REDIS_URL (with \
                 ROOM__CLUSTER__INTERNAL_TOKEN, ROOM__CELL__NODE_ID and the cluster's other \
                 settings)"
            );
        }
        Ok(())
    }

    /// Refuses every combination of storage, lease and cluster settings that cannot work,
    /// saying which keys to set.
    fn validate_cluster(&self) -> anyhow::Result<()> {
        let mysql = self.storage.url.starts_with("mysql:");
        if !self.is_clustered() {
            anyhow::ensure!(
                !mysql || self.cluster.single_node,
                "ROOM__STORAGE__URL is a MySQL database, which several nodes share: set \
                 ROOM__LEASE__REDIS_URL so that they share its rooms, or \
                 ROOM__CLUSTER__SINGLE_NODE=true if this node is the only one"
            );
            return Ok(());
        }
        anyhow::ensure!(
            !self.cluster.single_node,
            "ROOM__CLUSTER__SINGLE_NODE=true and ROOM__LEASE__REDIS_URL contradict each other: \
             unset one"
        );
        // memory:// stays allowed: tests run several nodes in one process over one store.
        anyhow::ensure!(
            !self.storage.url.starts_with("sqlite:"),
            "ROOM__LEASE__REDIS_URL is set, so this node shares its rooms with others, but \
             ROOM__STORAGE__URL ({}) is a SQLite file, which one process serves: use mysql://",
            self.storage.redacted_url()
        );
        anyhow::ensure!(
            self.cluster.internal_token.is_some(),
            "ROOM__LEASE__REDIS_URL is set, so this node shares rooms with others: set \
             ROOM__CLUSTER__INTERNAL_TOKEN (the same secret on every node) so that they can \
             forward requests to each other"
        );
        let advertised = self.advertise_url();
        anyhow::ensure!(
            advertised.is_some(),
            "ROOM__LEASE__REDIS_URL is set and this node listens on {}, which other nodes cannot \
             reach: set ROOM__CLUSTER__ADVERTISE_URL to the http:// URL where they reach it",
            self.http.addr
        );
        // Nodes talk plain HTTP to each other (their internal links are upgraded HTTP/1.1
        // connections): an https:// URL would need a proxy that ends TLS and passes upgrades.
        anyhow::ensure!(
            advertised
                .as_deref()
                .and_then(|url| url.strip_prefix("http://"))
                .is_some_and(|rest| !rest.is_empty()),
            "ROOM__CLUSTER__ADVERTISE_URL is {:?}: it must be the http:// URL where the other \
             nodes reach this one (http://host:port)",
            advertised.unwrap_or_default()
        );
        anyhow::ensure!(
            !self.cell.node_id.trim().is_empty() && self.cell.node_id != "local",
            "ROOM__LEASE__REDIS_URL is set: give this node an id of its own \
             (ROOM__CELL__NODE_ID), unique among the nodes"
        );
        anyhow::ensure!(
            self.lease.ttl_ms >= MIN_LEASE_TTL_MS,
            "ROOM__LEASE__TTL_MS is {}: it must be at least {MIN_LEASE_TTL_MS} (the keeper \
             renews every third of it)",
            self.lease.ttl_ms
        );
        let forward = self.forward_timeout().as_millis();
        anyhow::ensure!(
            forward >= 100 && forward < u128::from(self.http.request_timeout_secs) * 1000,
            "ROOM__CLUSTER__FORWARD_TIMEOUT_MS is {forward}: it must be at least 100 and below \
             http.request_timeout_secs ({} s)",
            self.http.request_timeout_secs
        );
        Ok(())
    }

    /// Whether this node is one of several (a lease Redis URL is set).
    pub fn is_clustered(&self) -> bool {
        self.lease.redis_url.is_some()
    }

    /// Where other nodes reach this one: `cluster.advertise_url`, or `http://` and
    /// `http.addr` when that is not a wildcard address.
    pub fn advertise_url(&self) -> Option<String> {
        self.cluster.advertise_url.clone().or_else(|| {
            (!self.http.addr.ip().is_unspecified()).then(|| format!("http://{}", self.http.addr))
        })
    }

    /// How long a forwarded request may take: `cluster.forward_timeout_ms`, or half the
    /// request timeout.
    pub fn forward_timeout(&self) -> Duration {
        self.cluster
            .forward_timeout_ms
            .map(Duration::from_millis)
            .unwrap_or(Duration::from_secs(self.http.request_timeout_secs) / 2)
    }

    /// The Redis lease's settings for this node, if clustered.
    pub fn redis_lease(&self) -> Option<adapters_redis::RedisLeaseSettings> {
        let url = self.lease.redis_url.as_ref()?;
        let mut settings = adapters_redis::RedisLeaseSettings::new(
            url.expose_secret(),
            &self.cell.node_id,
            self.advertise_url().unwrap_or_default(),
        );
        settings.ttl = self.lease.ttl();
        settings.key_prefix = self.lease.key_prefix.clone();
        settings.pool_size = self.lease.pool_size.max(1);
        // A call may take a tenth of the TTL: a renewal that hangs must end well within it.
        settings.op_timeout = (self.lease.ttl() / 10).max(Duration::from_millis(100));
        Some(settings)
    }

    /// Loads the settings from [`DEFAULT_CONFIG_FILE`] and the environment.
    pub fn load_default() -> Result<Settings, Box<figment::Error>> {
        Self::load(Path::new(DEFAULT_CONFIG_FILE))
    }

    /// [`Settings::load_unchecked`] from [`DEFAULT_CONFIG_FILE`] and the environment.
    pub fn load_default_unchecked() -> Result<Settings, Box<figment::Error>> {
        Self::load_unchecked(Path::new(DEFAULT_CONFIG_FILE))
    }

    /// The runtime's configuration.
    pub fn cell_config(&self, rules: room_domain::RoomRules) -> room_app::CellConfig {
        room_app::CellConfig {
            node_id: self.cell.node_id.clone(),
            mailbox: self.cell.mailbox.max(1),
            max_batch: self.cell.max_batch.max(1),
            snapshot_every: self.cell.snapshot_every.max(1),
            idle_after: Duration::from_secs(self.cell.idle_secs.max(1)),
            recent_commands: self.cell.recent_commands,
            recent_commands_bytes: self.cell.recent_commands_bytes,
            rules: std::sync::Arc::new(rules),
            lease_renew_every: if self.is_clustered() {
                self.lease.ttl() / 3
            } else {
                room_app::CellConfig::default().lease_renew_every
            },
            background_forwards: false,
            background_own_rooms_only: false,
            release_robot_rooms: None,
        }
    }
}

#[cfg(test)]
// figment's `Jail` closures must return its (large) error type.
#[allow(clippy::result_large_err)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_contract() {
        figment::Jail::expect_with(|jail| {
            jail.clear_env();
            let settings = Settings::load(Path::new("absent.toml")).unwrap();
            assert_eq!(settings.http.addr.to_string(), "127.0.0.1:8080");
            assert_eq!(settings.storage.url, "sqlite://data/room.db");
            assert!(settings.auth.uses_dev_secret());
            assert!(settings.rtc.callback_key.is_none());
            assert_eq!(settings.rtc.callback_window_secs, 300);
            assert_eq!(settings.presence.timeout_secs, 90);
            assert_eq!(settings.http.header_timeout_secs, 10);
            assert_eq!(settings.http.idle_timeout_secs, 60);
            assert_eq!(settings.http.max_connections, 10_000);
            assert_eq!(settings.sse.max_streams_per_user, 8);
            assert!(settings.limits.enabled);
            assert_eq!(settings.robots.id_prefix, "robot-");
            Ok(())
        });
    }

    #[test]
    fn the_robot_prefix_comes_from_the_environment_and_must_be_an_id_start() {
        figment::Jail::expect_with(|jail| {
            jail.clear_env();
            jail.set_env("ROOM__ROBOTS__ID_PREFIX", "bot_");
            let settings = Settings::load(Path::new("absent.toml")).unwrap();
            assert_eq!(settings.robots.id_prefix, "bot_");
            for bad in ["", "bot x", "a/b"] {
                let mut settings = Settings::default();
                settings.robots.id_prefix = bad.into();
                let error = settings.validate().unwrap_err().to_string();
                assert!(
                    error.contains("ROOM__ROBOTS__ID_PREFIX"),
                    "{bad:?}: {error}"
                );
            }
            Ok(())
        });
    }

    #[test]
    fn the_file_then_the_environment_override_defaults() {
        figment::Jail::expect_with(|jail| {
            jail.clear_env();
            jail.create_file(
                "room.toml",
                "[http]\naddr = \"0.0.0.0:9000\"\n[cell]\nmax_batch = 7\n",
            )?;
            jail.set_env("ROOM__HTTP__ADDR", "127.0.0.1:9001");
            jail.set_env(
                "ROOM__AUTH__JWT_SECRET",
                "s3cret-value-of-at-least-32-bytes",
            );
            jail.set_env("ROOM__RTC__CALLBACK_KEY", "rtc-key");
            let settings = Settings::load(Path::new("room.toml")).unwrap();
            assert_eq!(settings.http.addr.to_string(), "127.0.0.1:9001");
            assert_eq!(settings.cell.max_batch, 7);
            assert_eq!(
                settings.auth.jwt_secret.expose_secret(),
                "s3cret-value-of-at-least-32-bytes"
            );
            let debug = format!("{settings:?}");
            assert!(!debug.contains("s3cret-value"), "{debug}");
            assert!(!debug.contains("rtc-key"), "{debug}");
            Ok(())
        });
    }

    #[test]
    fn the_shipped_file_documents_the_defaults() {
        figment::Jail::expect_with(|jail| {
            jail.clear_env();
            let shipped = Path::new(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../configs/room.toml"
            ));
            let from_file = Settings::load(shipped).unwrap();
            let defaults = Settings::load(Path::new("absent.toml")).unwrap();
            assert_eq!(format!("{from_file:?}"), format!("{defaults:?}"));
            Ok(())
        });
    }

    #[test]
    fn a_callback_window_of_zero_or_over_a_day_is_refused() {
        figment::Jail::expect_with(|jail| {
            jail.clear_env();
            for (window, accepted) in [
                ("0", false),
                ("1", true),
                ("86400", true),
                ("86401", false),
                ("18446744073709551615", false),
            ] {
                jail.set_env("ROOM__RTC__CALLBACK_WINDOW_SECS", window);
                match Settings::load(Path::new("absent.toml")) {
                    Ok(settings) => {
                        assert!(accepted, "{window} s was accepted");
                        assert_eq!(settings.rtc.callback_window_secs.to_string(), window);
                    }
                    Err(error) => {
                        assert!(!accepted, "{window} s was refused: {error}");
                        let message = error.to_string();
                        assert!(message.contains("rtc.callback_window_secs"), "{message}");
                    }
                }
            }
            Ok(())
        });
        let mut settings = Settings::default();
        settings.rtc.callback_window_secs = 0;
        assert!(settings.validate().is_err());
    }

    #[test]
    fn every_wrong_combination_of_storage_lease_and_cluster_is_refused_by_name() {
        let secret = "x".repeat(MIN_JWT_SECRET_BYTES);
        let clustered = || {
            let mut s = Settings::default();
            s.auth.jwt_secret = SecretString::from(secret.clone());
            s.storage.url = "mysql://room@db/room".into();
            s.lease.redis_url = Some(SecretString::from("redis://cache:6379"));
            s.cluster.internal_token = Some(SecretString::from(secret.clone()));
            s.cell.node_id = "api-1".into();
            s
        };
        assert!(clustered().validate().is_ok());
        assert_eq!(
            clustered().advertise_url().as_deref(),
            Some("http://127.0.0.1:8080")
        );
        let refused = |change: &dyn Fn(&mut Settings), key: &str| {
            let mut s = clustered();
            change(&mut s);
            let message = s.validate().unwrap_err().to_string();
            assert!(message.contains(key), "{key}: {message}");
        };
        refused(&|s| s.lease.redis_url = None, "ROOM__CLUSTER__SINGLE_NODE");
        refused(&|s| s.cluster.single_node = true, "contradict");
        refused(&|s| s.storage.url = "sqlite://x.db".into(), "mysql://");
        refused(
            &|s| s.cluster.internal_token = None,
            "ROOM__CLUSTER__INTERNAL_TOKEN",
        );
        refused(
            &|s| s.cluster.internal_token = Some(SecretString::from("short")),
            "ROOM__CLUSTER__INTERNAL_TOKEN",
        );
        refused(
            &|s| s.http.addr = "0.0.0.0:8080".parse().unwrap(),
            "ADVERTISE_URL",
        );
        refused(
            &|s| s.cluster.advertise_url = Some("https://10.0.0.5:8443".into()),
            "http://",
        );
        refused(&|s| s.cell.node_id = "local".into(), "ROOM__CELL__NODE_ID");
        refused(&|s| s.lease.ttl_ms = 2_999, "ROOM__LEASE__TTL_MS");
        refused(
            &|s| s.cluster.forward_timeout_ms = Some(10_000),
            "ROOM__CLUSTER__FORWARD_TIMEOUT_MS",
        );
        // A wildcard listener is fine with an advertised URL; one node on MySQL with the flag.
        let mut s = clustered();
        s.http.addr = "0.0.0.0:8080".parse().unwrap();
        s.cluster.advertise_url = Some("http://10.0.0.5:8080".into());
        assert!(s.validate().is_ok());
        let mut s = clustered();
        s.lease.redis_url = None;
        s.cluster.single_node = true;
        assert!(s.validate().is_ok());
    }

    #[test]
    fn what_a_role_needs_is_refused_by_name() {
        let secret = SecretString::from("x".repeat(MIN_JWT_SECRET_BYTES));
        let base = || {
            let mut s = Settings::default();
            s.auth.jwt_secret = secret.clone();
            s
        };
        let refused = |s: Settings, role: Role, key: &str| {
            let message = s.validate_for(role).unwrap_err().to_string();
            assert!(message.contains(key), "{key}: {message}");
        };
        assert!(base().validate_for(Role::Api).is_ok());
        refused(base(), Role::Worker, "SQLite");
        refused(base(), Role::Orchestrator, "room-orchestrator");
        let mut s = base();
        s.workers.in_process = false;
        refused(s, Role::Api, "ROOM__WORKERS__IN_PROCESS");
        let mut s = base();
        s.im.sdk_app_id = Some(1_400_000_000);
        refused(s, Role::Api, "ROOM__IM__SECRET_KEY");
        let mut s = base();
        s.im = adapters_tencent_im::ImSettings::new(1_400_000_000, "key");
        refused(s, Role::Api, "ROOM__KAFKA__BROKERS");
        // IM on an API node that leaves the background work to workers needs no Kafka.
        let mut s = base();
        s.storage.url = "memory://".into();
        s.workers.in_process = false;
        s.im = adapters_tencent_im::ImSettings::new(1_400_000_000, "key");
        assert!(s.validate_for(Role::Api).is_ok());
    }

    #[test]
    fn a_password_in_the_storage_url_is_never_printed() {
        let mut settings = Settings::default();
        settings.storage.url = "mysql://room:s3cret@db.internal:3306/room".into();
        assert_eq!(
            settings.storage.redacted_url(),
            "mysql://room:***@db.internal:3306/room"
        );
        assert!(!format!("{settings:?}").contains("s3cret"));
        settings.storage.url = "sqlite://data/room.db".into();
        assert_eq!(settings.storage.redacted_url(), "sqlite://data/room.db");
    }

    #[test]
    fn unknown_keys_are_refused() {
        figment::Jail::expect_with(|jail| {
            jail.clear_env();
            jail.create_file("room.toml", "[http]\nadress = \"0.0.0.0:9000\"\n")?;
            assert!(Settings::load(Path::new("room.toml")).is_err());
            Ok(())
        });
    }

    #[test]
    fn the_development_secret_serves_loopback_only() {
        let mut settings = Settings::default();
        assert!(settings.auth.uses_dev_secret());
        for addr in ["127.0.0.1:8080", "[::1]:8080", "127.0.0.2:0"] {
            settings.http.addr = addr.parse().unwrap();
            assert!(settings.validate().is_ok(), "{addr}");
        }
        for addr in ["0.0.0.0:8080", "[::]:8080", "10.1.2.3:8080"] {
            settings.http.addr = addr.parse().unwrap();
            let message = settings.validate().unwrap_err().to_string();
            assert!(message.contains("ROOM__AUTH__JWT_SECRET"), "{message}");
            assert!(message.contains("loopback"), "{message}");
        }
        // With a real secret, any address.
        settings.auth.jwt_secret = SecretString::from("x".repeat(MIN_JWT_SECRET_BYTES));
        assert!(settings.validate().is_ok());
    }

    #[test]
    fn short_secrets_and_empty_claims_are_refused() {
        let mut settings = Settings::default();
        settings.auth.jwt_secret = SecretString::from("x".repeat(MIN_JWT_SECRET_BYTES - 1));
        let message = settings.validate().unwrap_err().to_string();
        assert!(message.contains("at least 32 bytes"), "{message}");
        settings.auth.jwt_secret = SecretString::from("x".repeat(MIN_JWT_SECRET_BYTES));
        assert!(settings.validate().is_ok());
        settings.auth.issuer = Some(" ".into());
        assert!(settings.validate().is_err());
        settings.auth.issuer = Some("https://id.example".into());
        settings.auth.audience = Some("rooms".into());
        assert!(settings.validate().is_ok());
        let auth = settings.auth.authenticator().unwrap();
        let alice = room_domain::UserId::new("alice").unwrap();
        let token = auth.mint(&alice, false, Duration::from_secs(60)).unwrap();
        assert_eq!(auth.verify(&token).unwrap().user_id, alice);
        // A token minted without the claims does not pass.
        let plain = crate::auth::Authenticator::new(&settings.auth.jwt_secret)
            .unwrap()
            .mint(&alice, false, Duration::from_secs(60))
            .unwrap();
        assert!(auth.verify(&plain).is_err());
    }
}
