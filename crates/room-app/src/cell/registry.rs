//! The registry of this node's cells: what the runtime shares with every cell task (the
//! ports, the tuning, the table of active cells and of cells still stopping), and what the
//! keeper shares with each cell.

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use room_domain::{RoomId, UserId};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::config::{CellConfig, CellDeps};
use super::mailbox::Request;
use crate::ports::{ForwarderRef, Membership, PresenceRef};

/// The registry's entry of a room's cell: its id, its mailbox and its controls.
pub(super) struct CellEntry {
    pub(super) id: u64,
    pub(super) tx: mpsc::Sender<Request>,
    pub(super) control: Arc<CellControl>,
}

/// What the keeper shares with one cell.
#[derive(Default)]
pub(super) struct CellControl {
    /// Set once the cell holds its lease and has activated: only such cells are renewed, so a
    /// cell still acquiring is not taken for one that lost its lease.
    pub(super) active: std::sync::atomic::AtomicBool,
    /// Cancelled by the keeper when the lease is lost: the cell stops as fenced.
    pub(super) fence: CancellationToken,
    /// Cancelled to have the cell stop in order, as when idle
    /// ([`CellRuntime::release`](crate::CellRuntime::release)).
    pub(super) release: CancellationToken,
    /// Until when the lease surely holds, by this node's clock: one TTL after the last
    /// acquire or renewal that succeeded was asked for (the backend set it later, so it holds
    /// at least that long). The keeper fences the cell when a renewal fails this late.
    pub(super) held_until: Mutex<Option<tokio::time::Instant>>,
}

impl CellControl {
    /// Records that the lease holds until `until` (never earlier than recorded already).
    pub(super) fn hold_until(&self, until: tokio::time::Instant) {
        let mut held = self.held_until.lock().unwrap_or_else(|e| e.into_inner());
        if held.is_none_or(|before| before < until) {
            *held = Some(until);
        }
    }

    /// Until when the lease surely holds; `None` before the cell holds it.
    pub(super) fn held_until(&self) -> Option<tokio::time::Instant> {
        *self.held_until.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What the runtime's handles and every cell task share.
pub(super) struct Inner {
    pub(super) deps: CellDeps,
    pub(super) config: CellConfig,
    pub(super) presence: std::sync::OnceLock<PresenceRef>,
    pub(super) forwarder: std::sync::OnceLock<ForwarderRef>,
    /// Rooms other nodes run, as lately looked up: room -> (the owner, when looked up).
    pub(super) owners: Mutex<HashMap<RoomId, (crate::ports::Peer, tokio::time::Instant)>>,
    /// Members of open rooms other nodes run, as their owners lately answered a newest-state
    /// membership read or applied a gift of theirs: (room, user) -> (the answer, when). See
    /// [`MEMBER_HINT_FOR`](crate::MEMBER_HINT_FOR).
    pub(super) member_hints: Mutex<HashMap<(RoomId, UserId), (Membership, tokio::time::Instant)>>,
    pub(super) cells: Mutex<HashMap<RoomId, CellEntry>>,
    /// Cells that left the registry and are still stopping (draining, writing their snapshot,
    /// releasing the lease), by room: a new cell of the room waits for the old one's release,
    /// which would otherwise delete the lease the new cell just took (same node, same holder).
    pub(super) stopping: Mutex<HashMap<RoomId, (u64, CancellationToken)>>,
    pub(super) next_cell_id: AtomicU64,
    pub(super) tracker: TaskTracker,
    pub(super) cancel: CancellationToken,
    /// The rules cells decide with now: the configured ones, with the rocket's levels of the
    /// newest version set at run time ([`CellRuntime::set_rocket`](super::CellRuntime::set_rocket)),
    /// and that version (0: the configured levels).
    pub(super) rules: std::sync::RwLock<(Arc<room_domain::RoomRules>, u64)>,
}

impl Inner {
    /// The rules a cell decides its next batch with.
    pub(super) fn rules(&self) -> Arc<room_domain::RoomRules> {
        self.rules
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .0
            .clone()
    }

    pub(super) fn lock_cells(&self) -> std::sync::MutexGuard<'_, HashMap<RoomId, CellEntry>> {
        self.cells.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Removes the registry entry of cell `id` (not of a newer cell of the same room).
    pub(super) fn forget(&self, room_id: &RoomId, id: u64) {
        let mut cells = self.lock_cells();
        if cells.get(room_id).is_some_and(|entry| entry.id == id) {
            cells.remove(room_id);
        }
        metrics::gauge!("room_cells_active").set(cells.len() as f64);
    }
}
