//! `[cluster]`: how the nodes of a deployment reach each other.

use secrecy::SecretString;
use serde::Deserialize;

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
