//! Redis adapters of the room service: [`RedisLease`], the room leases that decide which node
//! runs each room (liveness; the epoch in the database gives safety), with the node registry
//! that tells other nodes where the holder is reached.
//!
//! Keys: `{prefix}room:lease:{room_id}` holds the holder's node id with a TTL;
//! `{prefix}room:node:{node_id}` holds the node's advertised URL with the same TTL, refreshed by
//! every [`Lease::renew_all`](room_app::ports::Lease::renew_all) (the keeper's tick) and every
//! acquire. Every change of a lease is one Lua script, so it is atomic on the server. The
//! scripts touch several keys (a lease and the registration; up to 1,000 leases per renewal
//! call), so the adapter needs a standalone Redis (or Sentinel), not Redis Cluster.

mod client;
mod lease;

pub use lease::{DEFAULT_LEASE_TTL, RedisLease, RedisLeaseSettings};

/// The crate's result type: the port errors of `room-app`.
pub type Result<T, E = room_app::Error> = std::result::Result<T, E>;
