//! [`Settings`]: the service's configuration, loaded in layers — built-in defaults, then the
//! optional TOML file `configs/room.toml`, then environment variables `ROOM__SECTION__KEY`
//! (`ROOM__HTTP__ADDR=0.0.0.0:8080` sets `http.addr`).
//!
//! Secrets are [`SecretString`](secrecy::SecretString)s: `Debug` prints `[REDACTED]`, so
//! logging the settings is safe.
//!
//! Each section has a module of its own, with its settings struct and its defaults; this
//! module gathers them into [`Settings`], loads and checks them, and derives from them what the
//! node builds.

mod auth;
mod billing;
mod boards;
mod broadcast;
mod catalog;
mod cell;
mod cluster;
mod http;
mod im;
mod kafka;
mod lease;
mod limits;
mod lists;
mod outbox;
mod presence;
mod profiles;
mod redact;
mod reference;
mod robots;
mod rtc;
mod sse;
mod storage;
#[cfg(test)]
mod tests;
mod vip;
mod workers;

use std::path::Path;
use std::time::Duration;

use figment::Figment;
use figment::providers::{Env, Format, Toml};
use secrecy::ExposeSecret;
use serde::{Deserialize, Serialize};

pub use auth::{AuthSettings, DEV_JWT_SECRET, MIN_JWT_SECRET_BYTES};
pub use billing::{BillingSettings, MAX_SETTLE_DELAY_SECS};
pub use boards::{BOARDS_CONSUMER_GROUP, BoardSettings};
pub use broadcast::BroadcastSettings;
pub use catalog::CatalogSettings;
pub use cell::CellSettings;
pub use cluster::ClusterSettings;
pub use http::{HttpSettings, MAX_BODY_BYTES};
pub use lease::{LeaseSettings, MIN_LEASE_TTL_MS};
pub use limits::LimitSettings;
pub use lists::ListSettings;
pub use outbox::OutboxSettings;
pub use presence::PresenceSettings;
pub use profiles::{MAX_PROFILE_CACHE_CAPACITY, MAX_PROFILE_CACHE_TTL_MS, ProfileSettings};
pub use robots::RobotSettings;
pub use rtc::{MAX_CALLBACK_WINDOW_SECS, RtcSettings};
pub use sse::SseSettings;
pub use storage::StorageSettings;
pub use vip::{MAX_VIP_CACHE_CAPACITY, MAX_VIP_CACHE_TTL_MS, VipSettings};
pub use workers::{
    GROUP_EFFECTS_CONSUMER_GROUP, INCOME_CONSUMER_GROUP, TALLIES_CONSUMER_GROUP, WorkerSettings,
};

use crate::role::Role;

/// The configuration file read when it exists (relative to the working directory).
pub const DEFAULT_CONFIG_FILE: &str = "configs/room.toml";

/// Every section as the reference describes it, in the order of [`Settings`]' fields.
const SECTIONS: [&reference::Section; 22] = [
    &http::SECTION,
    &storage::SECTION,
    &auth::SECTION,
    &rtc::SECTION,
    &cell::SECTION,
    &presence::SECTION,
    &profiles::SECTION,
    &vip::SECTION,
    &broadcast::SECTION,
    &billing::SECTION,
    &boards::SECTION,
    &workers::SECTION,
    &outbox::SECTION,
    &catalog::SECTION,
    &sse::SECTION,
    &limits::SECTION,
    &lease::SECTION,
    &cluster::SECTION,
    &kafka::SECTION,
    &im::SECTION,
    &robots::SECTION,
    &lists::SECTION,
];

/// Everything the service reads from its configuration.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
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
    /// The node's cache of profiles.
    pub profiles: ProfileSettings,
    /// The node's cache of VIP grants.
    pub vip: VipSettings,
    /// `[broadcast]`: big gifts shown in other rooms of the sender's region.
    pub broadcast: BroadcastSettings,
    /// Periods of gift value and turnover, and the turnover settlement.
    pub billing: BillingSettings,
    /// `[boards]`: the leaderboards.
    pub boards: BoardSettings,
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
    /// The room lists and follows.
    pub lists: ListSettings,
}

impl Settings {
    /// Loads the settings: defaults, then `file` if it exists, then the `ROOM__*` environment;
    /// then [`Settings::validate`]s them.
    pub fn load(file: &Path) -> Result<Settings, Box<figment::Error>> {
        let settings = Self::load_unchecked(file)?;
        settings
            .validate()
            .map_err(|error| Box::new(figment::Error::from(format!("{error:#}"))))?;
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
        self.profiles.validate()?;
        self.vip.validate()?;
        self.broadcast.validate()?;
        self.billing.validate()?;
        self.boards.validate(&[
            &self.workers.im_effects_group,
            &self.workers.income_group,
            &self.workers.tallies_group,
            &self.broadcast.group,
        ])?;
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
        self.lists.validate()?;
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
        anyhow::ensure!(
            room_app::consumers::valid_consumer_name(&self.workers.im_effects_group),
            "ROOM__WORKERS__IM_EFFECTS_GROUP is {:?}: it names a consumer of the durable facts \
             (a Kafka group, an outbox position), 1 to {} ASCII letters, digits, '.', '_' or '-'",
            self.workers.im_effects_group,
            room_app::consumers::MAX_CONSUMER_NAME
        );
        anyhow::ensure!(
            room_app::consumers::valid_consumer_name(&self.workers.income_group)
                && self.workers.income_group != self.workers.im_effects_group,
            "ROOM__WORKERS__INCOME_GROUP is {:?}: it names a consumer of the durable facts (a \
             Kafka group, an outbox position) other than ROOM__WORKERS__IM_EFFECTS_GROUP, 1 to {} \
             ASCII letters, digits, '.', '_' or '-'",
            self.workers.income_group,
            room_app::consumers::MAX_CONSUMER_NAME
        );
        anyhow::ensure!(
            room_app::consumers::valid_consumer_name(&self.workers.tallies_group)
                && self.workers.tallies_group != self.workers.im_effects_group
                && self.workers.tallies_group != self.workers.income_group,
            "ROOM__WORKERS__TALLIES_GROUP is {:?}: it names a consumer of the durable facts (a \
             Kafka group, an outbox position) other than ROOM__WORKERS__IM_EFFECTS_GROUP and \
             ROOM__WORKERS__INCOME_GROUP, 1 to {} ASCII letters, digits, '.', '_' or '-'",
            self.workers.tallies_group,
            room_app::consumers::MAX_CONSUMER_NAME
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
        // Start-up and periodic recovery settle only orders older than this: younger ones may
        // be driven by another node right now, and settling one would void its debit (a valid
        // gift answered ORDER_FAILED). A drive lasts one request at most.
        let age = self.workers.recovery_older_than_secs;
        anyhow::ensure!(
            age > self.http.request_timeout_secs,
            "ROOM__WORKERS__RECOVERY_OLDER_THAN_SECS is {age}: with several nodes it must be \
             longer than http.request_timeout_secs ({} s), or recovery settles gift orders that \
             another node is still driving and fails valid gifts",
            self.http.request_timeout_secs
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

    /// The reference of every setting, the Markdown of `docs/configuration.md`: each
    /// `ROOM__SECTION__KEY` variable with its default (read from [`Settings::default`]) and what
    /// it does (from the table beside each section's struct).
    pub fn reference() -> String {
        reference::render(&Self::default_tree(), &SECTIONS)
    }

    /// The default settings as a tree of sections and keys, secrets left out.
    fn default_tree() -> serde_json::Value {
        serde_json::to_value(Settings::default())
            .unwrap_or_else(|error| panic!("the settings serialize to JSON: {error}"))
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
            heat_half_life: self.lists.heat_half_life(),
        }
    }
}
