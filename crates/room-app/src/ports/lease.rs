//! Room ownership among nodes ([`Lease`]): leases on rooms, the node registry, node groups
//! and cluster-wide locks.

use std::sync::Arc;

use async_trait::async_trait;
use room_domain::RoomId;

use crate::error::Result;

/// The node holding a room's lease, as [`Lease::get_holder`] finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseHolder {
    /// The holder's node id.
    pub node_id: String,
    /// Where other nodes reach the holder, from the node registry; `None` when the holder's
    /// registration has expired (the node is not live, and its lease is about to expire too).
    pub url: Option<String>,
}

/// Room ownership among nodes: liveness only. Safety comes from the epoch every commit is
/// conditional on, so a node that lost its lease without noticing still cannot commit.
/// Embedded mode always owns.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait Lease: Send + Sync {
    /// Takes the room if free (or already ours, extending the hold).
    async fn acquire(&self, room_id: &RoomId) -> Result<bool>;
    /// Extends our hold on each of `rooms` and refreshes this node's registration, in one
    /// round trip to the backend; answers, room by room in order, whether we still hold it.
    async fn renew_all(&self, rooms: &[RoomId]) -> Result<Vec<bool>>;
    /// Gives the room up if we hold it; another node's hold is left alone.
    async fn release(&self, room_id: &RoomId) -> Result<()>;
    /// Who holds the room, if anyone.
    async fn get_holder(&self, room_id: &RoomId) -> Result<Option<LeaseHolder>>;
    /// Registers this node as a member of `group` for one lease TTL (calling again renews
    /// it) and answers the ids of the group's other live members, sorted: how the nodes
    /// that share some work (the orchestrators sharing the robot rooms) find each other.
    /// Embedded mode has no other node.
    async fn join_group(&self, group: &str) -> Result<Vec<String>>;
    /// Takes this node out of `group` at once (a node that stops in order), rather than
    /// after its registration's TTL.
    async fn leave_group(&self, group: &str) -> Result<()>;
    /// Takes the cluster-wide lock `name` for one lease TTL unless someone holds it, and
    /// answers the token that releases it (`None`: held). Every call is its own holder, two
    /// on one node included: what the lucky gifts of one sender take turns with, whichever
    /// node each lands on. Embedded mode has no other node: the in-process locks of its one
    /// node are the whole story, and the lock is always free.
    async fn try_lock(&self, name: &str) -> Result<Option<String>>;
    /// Releases the lock `name` if `token` still holds it (a lock that expired and was taken
    /// by another is left alone).
    async fn unlock(&self, name: &str, token: &str) -> Result<()>;
}

/// Shared handle to a [`Lease`].
pub type LeaseRef = Arc<dyn Lease>;
