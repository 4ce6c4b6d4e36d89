//! What the tests share: a settled [`Cluster`] of a `room-api` node and two orchestrators,
//! its nodes, the constants and the turn every test takes, and the probes that wait for the
//! cluster and read its metrics.

mod cluster;
mod nodes;
mod probes;
mod shared;

pub(crate) use cluster::Cluster;
pub(crate) use nodes::Orchestrator;
pub(crate) use probes::{metric, wait_until};
pub(crate) use shared::{API_NODE, DEADLINE, ROOMS, TAKEOVER};
