//! What the Room Cell runtime is given: its tuning ([`CellConfig`]) and the ports it reaches
//! outside through ([`CellDeps`]).

use std::sync::Arc;
use std::time::Duration;

use room_domain::RoomRules;

use crate::ports::{
    CellStoreRef, ClockRef, IdGenRef, LeaseRef, MessengerRef, RoomDirectoryRef, SnapshotStoreRef,
};

/// Tuning of the Room Cell runtime.
#[derive(Debug, Clone)]
pub struct CellConfig {
    /// This node's id, recorded as the owner on activation.
    pub node_id: String,
    /// Queued requests per room; a full mailbox answers
    /// [`Error::Overloaded`](crate::Error::Overloaded) at once.
    pub mailbox: usize,
    /// Most commands per group commit (1 turns group commit off).
    pub max_batch: usize,
    /// A snapshot is written after this many events (and on orderly deactivation).
    pub snapshot_every: u64,
    /// A cell with no request for this long deactivates.
    pub idle_after: Duration,
    /// How often the keeper renews the leases of this node's active rooms, all in one call
    /// (a third of the lease's TTL).
    pub lease_renew_every: Duration,
    /// Command ids remembered per cell for idempotent answers without a storage read.
    pub recent_commands: usize,
    /// The most bytes (estimated) the replies remembered per cell may take; the oldest are
    /// forgotten first. A repeat of a forgotten command is answered from the log.
    pub recent_commands_bytes: usize,
    /// The room rules.
    pub rules: Arc<RoomRules>,
    /// Whether this node's background passes reach every room: items of rooms another node
    /// runs are forwarded to it. Off (the default), every node runs its own passes and
    /// leaves such items to the owner's; on for the one process that runs the passes for a
    /// cluster whose API nodes do not (`room-worker`).
    pub background_forwards: bool,
    /// Whether this node's background passes settle only the items of rooms it runs itself,
    /// leaving every other room's to other nodes: a robot orchestrator, which runs robot
    /// rooms and no other. Off by default.
    pub background_own_rooms_only: bool,
    /// The robot id prefix, on nodes that do not run robot rooms (clustered API nodes and
    /// workers): a room owned by a robot that such a node activates (a person's request while
    /// no orchestrator holds it, the room's creation) goes idle a second after its last
    /// request instead of [`CellConfig::idle_after`], releasing its lease, so that an
    /// orchestrator takes it at its next round. `None`: this node keeps robot rooms like any
    /// other (embedded mode, orchestrators).
    pub release_robot_rooms: Option<String>,
    /// The half-life of a room's recent heat, which each commit decays and writes into the
    /// directory's summary for the room lists.
    pub heat_half_life: Duration,
}

impl CellConfig {
    /// The lease's TTL: three times [`CellConfig::lease_renew_every`].
    pub fn lease_ttl(&self) -> Duration {
        self.lease_renew_every * 3
    }

    /// How long one commit may take before its outcome counts as unknown and the cell lets
    /// the room go: half the lease's TTL, so that a wedged commit never keeps a room from
    /// the other nodes for longer than a lost lease would.
    pub fn commit_deadline(&self) -> Duration {
        self.lease_ttl() / 2
    }
}

impl Default for CellConfig {
    fn default() -> Self {
        CellConfig {
            node_id: "local".into(),
            mailbox: 1024,
            max_batch: 256,
            snapshot_every: 1000,
            idle_after: Duration::from_secs(300),
            lease_renew_every: Duration::from_secs(3),
            recent_commands: 4096,
            recent_commands_bytes: 256 * 1024,
            rules: Arc::new(RoomRules::default()),
            background_forwards: false,
            background_own_rooms_only: false,
            release_robot_rooms: None,
            heat_half_life: Duration::from_secs(1800),
        }
    }
}

/// What the runtime needs from outside.
#[derive(Clone)]
pub struct CellDeps {
    /// The command log.
    pub store: CellStoreRef,
    /// Snapshots.
    pub snapshots: SnapshotStoreRef,
    /// Room ownership.
    pub lease: LeaseRef,
    /// Display events.
    pub messenger: MessengerRef,
    /// Time.
    pub clock: ClockRef,
    /// Random values.
    pub ids: IdGenRef,
    /// The room directory: a cell reads its room's summary when it activates (the recent
    /// heat its commits carry on).
    pub directory: RoomDirectoryRef,
}
