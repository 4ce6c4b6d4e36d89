//! An active cell: the room's state in memory and what the cell remembers beside it, and why
//! its loop ends.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use room_domain::{CommandId, RoomId, RoomState, Timestamp};

use super::registry::Inner;
use crate::ports::CommandReply;

/// Why a cell's loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stop {
    /// Idle, shutdown or a closed mailbox: drain, snapshot, release.
    Orderly,
    /// The room is no longer ours: answer NotOwner, write nothing.
    Fenced,
    /// A commit outlasted its deadline and its outcome is unknown: answer NotOwner, write
    /// nothing more, and give the lease up so that another activation (which bumps the epoch,
    /// fencing the late commit) takes the room at once.
    Abandoned,
}

/// One room's cell, owned by its task ([`run_cell`](super::run::run_cell)): the room's
/// state as this activation holds it, and the replies it remembers.
pub(super) struct Cell {
    pub(super) inner: Arc<Inner>,
    pub(super) room_id: RoomId,
    /// This cell's registry id.
    pub(super) id: u64,
    pub(super) epoch: u64,
    pub(super) state: RoomState,
    pub(super) snapshot_version: u64,
    pub(super) recent: HashMap<CommandId, Arc<CommandReply>>,
    /// Remembered ids, oldest first, with the estimated bytes of each entry.
    pub(super) recent_order: VecDeque<(CommandId, usize)>,
    /// The estimated bytes of everything in `recent`.
    pub(super) recent_bytes: usize,
    /// When the rocket-reset timer this cell last committed is due: every gift fuels the
    /// rocket, and re-arming the same timer each time would cost a write per gift.
    pub(super) reset_armed_at: Option<Timestamp>,
    /// Whether the commands being planned are the fresh ones of [`Cell::resolve_duplicates`]:
    /// a second clash on a command id then is an id the log no longer answers.
    pub(super) resolving: bool,
    /// The room's recent heat as its last commit wrote it into the directory's summary.
    pub(super) recent_heat: RecentHeat,
}

/// A room's recent heat (the room lists' decayed heat) as of its last commit, and the
/// lifetime heat it was brought up to date with: the next commit decays it to its own time
/// and adds the heat that came since.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct RecentHeat {
    /// Thousandths of a heat point.
    pub(super) milli: i64,
    /// As of when.
    pub(super) at: Timestamp,
    /// The room's lifetime heat then.
    pub(super) heat: i64,
}
