//! [`Role`]: what a node serves and runs, which its settings are checked against and its
//! background work is chosen by.

/// What a node serves and runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// `room-api`: the client API and the internal endpoint, and the background work unless
    /// `workers.in_process` is off.
    Api,
    /// `room-worker`: the background work of a whole cluster (every pass reaches every room,
    /// forwarding items of rooms other nodes run to them), the outbox publisher and its
    /// retention; it serves the internal endpoint (rooms it activates to settle their work are
    /// reached there), health and metrics, never the client API.
    Worker,
    /// `room-orchestrator`: the robot rooms of a cluster, shared with the other orchestrators
    /// (each room run by the node holding its lease); it serves the internal endpoint (human
    /// commands for its rooms are forwarded there), health and metrics, never the client
    /// API. Its background passes, when `workers.in_process` is on, settle only the rooms it
    /// runs.
    Orchestrator,
}

impl Role {
    /// The binary that runs a node of this role, for messages.
    pub fn binary(self) -> &'static str {
        match self {
            Role::Api => "room-api",
            Role::Worker => "room-worker",
            Role::Orchestrator => "room-orchestrator",
        }
    }
}
