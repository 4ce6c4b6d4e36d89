//! A node of the room service, as every binary builds it: the one configuration
//! ([`Settings`]), the adapters built from it ([`Storage`], the Redis lease, presence and
//! display relay when clustered), the Room Cell runtime and the use cases of `room-app`, the
//! HTTP API (axum), the internal endpoint other nodes forward to, and the background work.
//!
//! Without a cluster this is the embedded single-node mode: one process with SQLite storage,
//! an in-process lease and a built-in event stream (Server-Sent Events in place of Tencent IM).
//!
//! [`App::build`] wires a node from [`Settings`]; [`App::router`] is the JSON API of every
//! route (tests drive it with `tower::ServiceExt::oneshot`); [`App::serve`] serves it with a
//! graceful stop. Errors are [`ApiError`]s: `{"error":{"code","message","retryable"}}` with a
//! fitting status.

mod app;
mod auth;
mod boards_cli;
mod catalog;
mod chain;
mod cluster;
mod config;
mod dto;
mod error;
mod extract;
mod facts;
mod im;
mod kafka;
mod keyed;
mod limits;
mod link;
mod page_cache;
mod role;
mod routes;
mod rtc;
mod run;
mod serve;
mod state;
mod storage;

pub use app::App;
pub use auth::{
    ADMIN_ROLE, Audience, Auth, Authenticator, AuthenticatorRef, Claims, PlatformAdmin,
};
pub use boards_cli::{RebuildArgs, rebuild as rebuild_board};
pub use catalog::{CatalogFile, EMBEDDED_CATALOG};
pub use cluster::{INTERNAL_PREFIX, token_matches};
pub use config::{
    AuthSettings, BOARDS_CONSUMER_GROUP, BillingSettings, BoardSettings, CatalogSettings,
    CellSettings, ClusterSettings, DEFAULT_CONFIG_FILE, DEV_JWT_SECRET,
    GROUP_EFFECTS_CONSUMER_GROUP, HttpSettings, INCOME_CONSUMER_GROUP, LeaseSettings,
    LimitSettings, MAX_BODY_BYTES, MAX_CALLBACK_WINDOW_SECS, MAX_PROFILE_CACHE_CAPACITY,
    MAX_PROFILE_CACHE_TTL_MS, MAX_SETTLE_DELAY_SECS, MAX_VIP_CACHE_CAPACITY, MAX_VIP_CACHE_TTL_MS,
    MIN_JWT_SECRET_BYTES, MIN_LEASE_TTL_MS, OutboxSettings, PresenceSettings, ProfileSettings,
    RtcSettings, Settings, SseSettings, StorageSettings, TALLIES_CONSUMER_GROUP, VipSettings,
    WorkerSettings,
};
pub use error::{ApiCode, ApiError, ErrorBody, ErrorResponse};
pub use link::{ForwardAnswer, LINK_PATH, LINK_PROTOCOL, MAX_FRAME, MAX_LINKS};
pub use role::Role;
pub use routes::openapi;
pub use rtc::sign as rtc_sign;
pub use run::run;
pub use storage::Storage;

/// The crate's result type for start-up and tooling.
pub type Result<T, E = anyhow::Error> = std::result::Result<T, E>;
