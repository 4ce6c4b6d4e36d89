//! Robot rooms at run time: the script a robot room follows ([`plan_step`]), the runtime that
//! plays it on this node's cell of the room, and the [`Orchestrator`] that decides which robot
//! rooms this node runs.
//!
//! A runtime starts only once this node's cell holds the room's lease
//! ([`CellRuntime::activate_here`](crate::CellRuntime::activate_here)), and sends every
//! command to that cell alone ([`CellRuntime::execute_on`](crate::CellRuntime::execute_on)):
//! the node's keeper renews the lease with its other rooms', and the moment the lease is lost
//! the cell stops and so does the runtime. Nothing it sends can reach another node, and the
//! epoch fences whatever was in flight.
//!
//! Orchestrators share the robot rooms by rendezvous hashing over the live members of one
//! lease group ([`ORCHESTRATOR_GROUP`]): each room has one preferred node, a node takes the
//! free rooms it is preferred for (and, after a while, those the preferred node leaves
//! free), and hands over, by releasing the lease, rooms another live member is preferred
//! for. Conflicts (two nodes reaching for one room) are expected: the lease decides, the
//! loser skips the room, and a counter says how often.
//!
//! `script` is the pure script, `runtime` plays it on one room's cell, `orchestrator` decides
//! which rooms run here, `placement` which node each room prefers, `config` what the
//! orchestrator is given.

mod config;
mod orchestrator;
mod placement;
mod runtime;
mod script;

pub use config::{OrchestratorConfig, OrchestratorDeps};
pub use orchestrator::{Orchestrator, ReconcileReport};
pub use placement::{ORCHESTRATOR_GROUP, preferred_node};
pub use runtime::StopReason;
pub use script::{RobotAction, RobotView, ScriptCarry, plan_step, target_listeners};
