//! What an [`Orchestrator`](crate::robots::Orchestrator) is given: its tuning
//! ([`OrchestratorConfig`]) and the cells and ports it and its runtimes use
//! ([`OrchestratorDeps`]).

use std::time::Duration;

use crate::cell::CellRuntime;
use crate::ports::{ClockRef, GiftCatalogRef, IdGenRef, LeaseRef, RobotRoomsRef};

/// How an [`Orchestrator`](crate::robots::Orchestrator) runs.
#[derive(Debug, Clone)]
pub struct OrchestratorConfig {
    /// This node's id (the cell runtime's).
    pub node_id: String,
    /// How often the configurations are read and runtimes started, stopped and handed over.
    pub reconcile_every: Duration,
    /// How often each runtime plays one step of its room's script.
    pub step_every: Duration,
    /// How long a robot stays in the room on average before another robot of the pool takes
    /// its place (the audience turns over even when its size holds).
    pub robot_stay: Duration,
    /// The most runtimes one reconcile starts (the rest wait for the next).
    pub max_starts_per_reconcile: usize,
    /// The most runtimes this node runs at once.
    pub max_runtimes: usize,
}

impl Default for OrchestratorConfig {
    fn default() -> Self {
        OrchestratorConfig {
            node_id: "local".into(),
            reconcile_every: Duration::from_secs(5),
            step_every: Duration::from_secs(2),
            robot_stay: Duration::from_secs(600),
            max_starts_per_reconcile: 1000,
            max_runtimes: 10_000,
        }
    }
}

/// What an orchestrator needs.
#[derive(Clone)]
pub struct OrchestratorDeps {
    /// The cells of this node.
    pub runtime: CellRuntime,
    /// The configurations.
    pub robot_rooms: RobotRoomsRef,
    /// The gift catalog (robot gifts show catalog gifts).
    pub catalog: GiftCatalogRef,
    /// Room leases and the orchestrators' group.
    pub lease: LeaseRef,
    /// Time.
    pub clock: ClockRef,
    /// Command ids and random draws.
    pub ids: IdGenRef,
}
