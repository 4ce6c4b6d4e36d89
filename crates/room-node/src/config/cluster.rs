//! `[cluster]`: how the nodes of a deployment reach each other.

use secrecy::SecretString;
use serde::{Deserialize, Serialize};

use super::redact::optional_secret;
use super::reference::Section;

/// `[cluster]`: how the nodes of a deployment reach each other.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClusterSettings {
    /// Where the other nodes reach this node's internal endpoint, such as
    /// `http://10.0.0.5:8080` (`ROOM__CLUSTER__ADVERTISE_URL`). Unset: `http://` and
    /// `http.addr`, unless that is a wildcard address (`0.0.0.0`, `[::]`), which others
    /// cannot reach.
    pub advertise_url: Option<String>,
    /// The shared secret of node-to-node calls, at least 32 bytes
    /// (`ROOM__CLUSTER__INTERNAL_TOKEN`). Unset, the internal routes refuse every call.
    #[serde(serialize_with = "optional_secret")]
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

/// What `[cluster]` and each of its keys are for, in the reference (`docs/configuration.md`).
pub(super) const SECTION: Section = Section {
    name: "cluster",
    about: "How the nodes of a deployment reach each other.",
    keys: &[
        (
            "advertise_url",
            "Where the other nodes reach this node: an `http://` URL (nodes talk plain HTTP to \
             each other). Unset: `http://` and `ROOM__HTTP__ADDR`, unless that is a wildcard \
             address (`0.0.0.0`, `[::]`), which others cannot reach.",
        ),
        (
            "internal_token",
            "The nodes' shared secret for `/internal/v1/...`, at least 32 bytes, the same on every \
             node; needed with `ROOM__LEASE__REDIS_URL`. Unset, the internal routes refuse every \
             call (403 `INTERNAL_DISABLED`).",
        ),
        (
            "single_node",
            "MySQL storage for one node without Redis: this node owns every room, and nothing but \
             the epoch keeps a second node off the database's rooms. Without it, MySQL storage \
             needs `ROOM__LEASE__REDIS_URL`.",
        ),
        (
            "forward_timeout_ms",
            "How long a request forwarded to a room's owner may take, in milliseconds, before it \
             is answered 503 (retryable); at least 100 and below \
             `ROOM__HTTP__REQUEST_TIMEOUT_SECS`. Unset: half of that.",
        ),
    ],
};
