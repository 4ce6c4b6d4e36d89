//! Redis adapters of the room service: the state that every node of a cluster shares.
//!
//! - [`RedisLease`]: the room leases that decide which node runs each room (liveness; the
//!   epoch in the database gives safety), with the node registry that tells other nodes where
//!   the holder is reached. `{prefix}room:lease:{room_id}` holds the holder's node id with a
//!   TTL; `{prefix}room:node:{node_id}` holds the node's advertised URL with the same TTL,
//!   refreshed by every [`Lease::renew_all`](room_app::ports::Lease::renew_all) (the keeper's
//!   tick) and every acquire.
//! - [`RedisPresence`]: who is in which room, by heartbeat, so that the one-room-per-user
//!   rule, the current room and the eviction pass hold across nodes.
//!   `{prefix}room:presence:user:{user_id}` is a hash of the user's room and last heartbeat;
//!   `{prefix}room:presence:seen` a sorted set of user ids by last heartbeat. Both are deleted
//!   with their users and expire [`RedisPresenceSettings::entry_ttl`] after the last write.
//! - [`RedisPasswordAttempts`]: the wrong-password counts, so that the lockout (5 wrong
//!   passwords of one user for one room within a minute) holds whichever node a guess reaches.
//!   `{prefix}room:attempts:{user_id}/{room_id}` is a hash of the window's count and start,
//!   expiring with the window.
//! - [`RedisListCache`]: the newest room lists the refresher computed, for every node to read.
//!   `{prefix}room:lists` is a hash of the lists' generation and encoded body, without expiry.
//!
//! Every change is one Lua script, so it is atomic on the server. Scripts touch several keys
//! (a lease and the registration, up to 1,000 leases per renewal call; a user's hash and the
//! presence set), some of them named inside the script (the holder's registration, the hashes
//! of listed users), so the adapters need a standalone Redis (or Sentinel), not Redis Cluster.
//! Every call has a timeout, and every Redis failure is a retryable
//! [`Error::Unavailable`](room_app::Error::Unavailable).

mod attempts;
mod budgets;
mod client;
mod display;
mod lease;
mod lists;
mod presence;

pub use attempts::{RedisPasswordAttempts, RedisPasswordAttemptsSettings};
pub use budgets::{RedisOpenStreams, RedisRateBudgets, RedisRateBudgetsSettings};
pub use display::{RedisDisplay, RedisDisplaySettings};
pub use lease::{DEFAULT_LEASE_TTL, RedisLease, RedisLeaseSettings};
pub use lists::{RedisListCache, RedisListCacheSettings};
pub use presence::{DEFAULT_PRESENCE_ENTRY_TTL, RedisPresence, RedisPresenceSettings};

/// The crate's result type: the port errors of `room-app`.
pub type Result<T, E = room_app::Error> = std::result::Result<T, E>;
