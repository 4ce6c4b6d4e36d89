//! Activation and recovery: a cell takes the room's lease, bumps its epoch, loads the newest
//! snapshot and replays the log after it; it rebuilds its state the same way after a commit
//! of unknown outcome, and writes the snapshots the next activation starts from.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use room_domain::{RoomId, RoomState, RoomStatus, Snapshot, Timestamp, evolve};

use super::active::{Cell, RecentHeat, Stop};
use super::registry::Inner;
use crate::error::{Error, Result};

/// How long a new cell waits for the room's previous cell on this node to finish stopping.
const PREVIOUS_CELL_WAIT: Duration = Duration::from_secs(10);

impl Cell {
    pub(super) async fn activate(inner: &Arc<Inner>, room_id: &RoomId, id: u64) -> Result<Cell> {
        let deps = &inner.deps;
        let previous = inner
            .stopping
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(room_id)
            .map(|(_, stopped)| stopped.clone());
        if let Some(stopped) = previous {
            // Its lease release must come before our acquire, not after.
            let _ = tokio::time::timeout(PREVIOUS_CELL_WAIT, stopped.cancelled()).await;
        }
        if !deps.lease.acquire(room_id).await? {
            return Err(Error::NotOwner(room_id.to_string()));
        }
        let activation = deps.store.activate(room_id, &inner.config.node_id).await?;
        let (state, snapshot_version) = load_state(inner, room_id).await?;
        let recent_heat = load_recent_heat(inner, room_id, &state).await?;
        if state.version != activation.version {
            return Err(Error::corrupt(format!(
                "room {room_id}: replay reached version {}, the log says {}",
                state.version, activation.version
            )));
        }
        if let Some(presence) = inner.presence.get() {
            let now = deps.clock.now();
            // Robots have no client to heartbeat: the orchestrator running the room is their
            // presence, and the eviction pass must not take them out.
            for (user, _) in state.members.iter().filter(|(_, member)| !member.robot) {
                presence.restore(room_id, user, now).await?;
            }
        }
        tracing::debug!(room_id = %room_id, epoch = activation.epoch, version = state.version, "room activated");
        metrics::counter!("room_cell_activations_total").increment(1);
        Ok(Cell {
            inner: inner.clone(),
            room_id: room_id.clone(),
            id,
            epoch: activation.epoch,
            state,
            snapshot_version,
            recent: HashMap::new(),
            recent_order: VecDeque::new(),
            recent_bytes: 0,
            reset_armed_at: None,
            resolving: false,
            recent_heat,
        })
    }

    /// Rebuilds the state from storage after a commit of unknown outcome.
    pub(super) async fn reload(&mut self) -> Option<Stop> {
        let loaded = match load_state(&self.inner, &self.room_id).await {
            Ok((state, snapshot_version)) => load_recent_heat(&self.inner, &self.room_id, &state)
                .await
                .map(|recent_heat| (state, snapshot_version, recent_heat)),
            Err(error) => Err(error),
        };
        match loaded {
            Ok((state, snapshot_version, recent_heat)) => {
                self.recent_heat = recent_heat;
                self.state = state;
                self.snapshot_version = snapshot_version;
                self.recent.clear();
                self.recent_order.clear();
                self.recent_bytes = 0;
                self.reset_armed_at = None;
                None
            }
            Err(error) => {
                tracing::error!(room_id = %self.room_id, error = %error, "room reload failed; stopping the cell");
                Some(Stop::Fenced)
            }
        }
    }

    pub(super) async fn write_snapshot(&mut self) {
        if self.state.version == self.snapshot_version || self.state.status == RoomStatus::Absent {
            return;
        }
        let snapshot = Snapshot::new(self.state.clone());
        match self.inner.deps.snapshots.put(&snapshot).await {
            Ok(()) => {
                self.snapshot_version = self.state.version;
                metrics::counter!("room_snapshots_written_total").increment(1);
            }
            Err(error) => {
                tracing::warn!(room_id = %self.room_id, error = %error, "snapshot write failed")
            }
        }
    }
}

/// The recent heat the room's last commit wrote into its summary; none before its first.
async fn load_recent_heat(
    inner: &Inner,
    room_id: &RoomId,
    state: &RoomState,
) -> Result<RecentHeat> {
    Ok(match inner.deps.directory.get_summary(room_id).await? {
        Some(summary) => RecentHeat {
            milli: summary.recent_heat_milli,
            at: summary.recent_heat_at,
            heat: summary.heat,
        },
        None => RecentHeat {
            milli: 0,
            at: Timestamp(0),
            heat: state.heat,
        },
    })
}

/// The newest snapshot plus every event after it. Returns the state and the snapshot's version.
async fn load_state(inner: &Inner, room_id: &RoomId) -> Result<(RoomState, u64)> {
    let deps = &inner.deps;
    let mut state = match deps.snapshots.get_latest(room_id).await? {
        Some(snapshot) => snapshot.into_state().map_err(Error::corrupt)?,
        None => RoomState::new(room_id.clone()),
    };
    let snapshot_version = state.version;
    const PAGE: u32 = 1000;
    loop {
        let events = deps.store.list_events(room_id, state.version, PAGE).await?;
        let done = events.len() < PAGE as usize;
        for stored in &events {
            if stored.seq != state.version + 1 {
                return Err(Error::corrupt(format!(
                    "room {room_id}: event {} follows version {}",
                    stored.seq, state.version
                )));
            }
            evolve(&mut state, &stored.event);
        }
        if done {
            break;
        }
    }
    Ok((state, snapshot_version))
}
