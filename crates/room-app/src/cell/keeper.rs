//! The lease keeper: one tick renews the leases of every active room of this node in one call,
//! and stops, as fenced, every cell whose lease was not renewed.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use room_domain::RoomId;

use super::registry::CellControl;
use super::runtime::CellRuntime;

/// What one keeper tick did ([`CellRuntime::renew_leases`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeeperTick {
    /// Active rooms whose lease was renewed.
    pub renewed: usize,
    /// Active rooms whose lease was lost (expired, taken, or the renewal failed): their cells
    /// were told to stop.
    pub lost: usize,
}

impl CellRuntime {
    /// One keeper tick: renews the leases of every active room of this node (and the node's
    /// registration) in one call to the lease backend, and stops at once, as fenced, every
    /// cell whose lease was not renewed. A failed renewal loses them all: a cell must not
    /// run on a lease it cannot show, and the epoch fences whatever it had in flight.
    pub async fn renew_leases(&self) -> KeeperTick {
        let (rooms, controls): (Vec<RoomId>, Vec<Arc<CellControl>>) = self
            .inner
            .lock_cells()
            .iter()
            .filter(|(_, entry)| entry.control.active.load(Ordering::Acquire))
            .map(|(room, entry)| (room.clone(), entry.control.clone()))
            .unzip();
        let held = match self.inner.deps.lease.renew_all(&rooms).await {
            Ok(held) if held.len() == rooms.len() => held,
            Ok(held) => {
                tracing::error!(
                    rooms = rooms.len(),
                    answers = held.len(),
                    "the lease backend answered a renewal for another number of rooms"
                );
                vec![false; rooms.len()]
            }
            Err(error) => {
                metrics::counter!("room_lease_renewal_failures_total").increment(1);
                tracing::warn!(error = %error, rooms = rooms.len(), "lease renewal failed; stopping this node's cells");
                vec![false; rooms.len()]
            }
        };
        let mut tick = KeeperTick::default();
        for ((room, control), held) in rooms.iter().zip(&controls).zip(held) {
            if held {
                tick.renewed += 1;
            } else {
                tick.lost += 1;
                tracing::warn!(room_id = %room, "lost the room lease; stopping the cell");
                control.fence.cancel();
            }
        }
        metrics::counter!("room_lease_renewals_total").increment(tick.renewed as u64);
        metrics::counter!("room_leases_lost_total").increment(tick.lost as u64);
        tick
    }

    /// Renews this node's leases every
    /// [`CellConfig::lease_renew_every`](crate::CellConfig::lease_renew_every) until the
    /// runtime stops ([`CellRuntime::renew_leases`]).
    pub(super) fn spawn_keeper(&self) {
        let runtime = self.clone();
        let every = self
            .inner
            .config
            .lease_renew_every
            .max(Duration::from_millis(10));
        let cancel = self.inner.cancel.clone();
        self.inner.tracker.spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticks.tick().await;
            loop {
                tokio::select! {
                    () = cancel.cancelled() => break,
                    _ = ticks.tick() => {
                        let started = Instant::now();
                        runtime.renew_leases().await;
                        metrics::histogram!("room_lease_renewal_seconds")
                            .record(started.elapsed().as_secs_f64());
                    }
                }
            }
        });
    }
}
