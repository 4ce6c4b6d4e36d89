//! `[lease]`: room leases in Redis, by which several nodes share the rooms.

use std::time::Duration;

use secrecy::SecretString;
use serde::{Deserialize, Serialize};

use super::redact::optional_secret;
use super::reference::Section;

/// `[lease]`: room leases in Redis, which several `room-api` nodes behind a load balancer
/// share the rooms by. Unset `redis_url`: one node, which owns every room.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct LeaseSettings {
    /// `redis://[:password@]host:port/db` (`ROOM__LEASE__REDIS_URL`): room leases, the node
    /// registry, presence, the password lockout and the display relay. Set, this node is one
    /// of several: it needs a node id of its own (`ROOM__CELL__NODE_ID`), an advertised URL and
    /// the internal token.
    #[serde(serialize_with = "optional_secret")]
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

/// What `[lease]` and each of its keys are for, in the reference (`docs/configuration.md`).
pub(super) const SECTION: Section = Section {
    name: "lease",
    about: "Room leases in Redis, by which several nodes behind a load balancer share the rooms: \
        each room runs on the one node holding its lease, and any node forwards a request for a \
        room another node runs to that node.",
    keys: &[
        (
            "redis_url",
            "`redis://[:password@]host:port/db`: room leases, the node registry, presence, the \
             password lockout and the display relay. Set, this node shares the rooms with others: \
             the storage must be MySQL, and the node needs `ROOM__CELL__NODE_ID`, \
             `ROOM__CLUSTER__INTERNAL_TOKEN` and a URL the others reach. Unset, this node owns \
             every room.",
        ),
        (
            "ttl_ms",
            "How long a room lease lasts unless renewed (every third of it), in milliseconds; a \
             dead node's rooms move within it. At least 3000.",
        ),
        (
            "key_prefix",
            "Prepended to every Redis key (several deployments on one Redis).",
        ),
        (
            "pool_size",
            "The most Redis connections of this node, per use (leases, presence, lockout).",
        ),
    ],
};
