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
    /// Active rooms whose lease was lost (expired, taken, or the renewal failed so late that
    /// it may have expired): their cells were told to stop.
    pub lost: usize,
    /// Whether the renewal call failed (the backend unreachable): the rooms not lost keep
    /// running on their leases, which still hold, and the keeper tries again soon.
    pub failed: bool,
}

impl CellRuntime {
    /// One keeper tick: renews the leases of every active room of this node (and the node's
    /// registration) in one call to the lease backend, and stops at once, as fenced, every
    /// cell whose lease the backend did not renew (expired, or another node's now).
    ///
    /// A renewal that fails (a Redis stall) proves no lease lost: each was set for a TTL
    /// from its last renewal, so only the cells whose lease may expire before the keeper's
    /// next try (`lease_renew_every / 4` later) are stopped; the others run on and are
    /// renewed by that try. A cell never runs on a lease it cannot show, and the epoch fences
    /// whatever a stopped cell had in flight.
    pub async fn renew_leases(&self) -> KeeperTick {
        let (rooms, controls): (Vec<RoomId>, Vec<Arc<CellControl>>) = self
            .inner
            .lock_cells()
            .iter()
            .filter(|(_, entry)| entry.control.active.load(Ordering::Acquire))
            .map(|(room, entry)| (room.clone(), entry.control.clone()))
            .unzip();
        let asked = tokio::time::Instant::now();
        let ttl = self.inner.config.lease_ttl();
        let mut tick = KeeperTick::default();
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
                tick.failed = true;
                // Whatever may have expired by the next try is given up now.
                let next_try = tokio::time::Instant::now() + retry_after(&self.inner.config);
                let held: Vec<bool> = controls
                    .iter()
                    .map(|control| control.held_until().is_some_and(|until| until > next_try))
                    .collect();
                tracing::warn!(
                    error = %error,
                    rooms = rooms.len(),
                    stopping = held.iter().filter(|held| !**held).count(),
                    "lease renewal failed; stopping the cells whose lease may expire before the next try"
                );
                held
            }
        };
        for ((room, control), held) in rooms.iter().zip(&controls).zip(held) {
            if !held {
                tick.lost += 1;
                tracing::warn!(room_id = %room, "lost the room lease; stopping the cell");
                control.fence.cancel();
            } else if !tick.failed {
                tick.renewed += 1;
                control.hold_until(asked + ttl);
            }
        }
        metrics::counter!("room_lease_renewals_total").increment(tick.renewed as u64);
        metrics::counter!("room_leases_lost_total").increment(tick.lost as u64);
        tick
    }

    /// Renews this node's leases every
    /// [`CellConfig::lease_renew_every`](crate::CellConfig::lease_renew_every) until the
    /// runtime stops ([`CellRuntime::renew_leases`]); after a failed renewal, tries again a
    /// quarter of that later, until one succeeds.
    pub(super) fn spawn_keeper(&self) {
        let runtime = self.clone();
        let every = self
            .inner
            .config
            .lease_renew_every
            .max(Duration::from_millis(10));
        let retry = retry_after(&self.inner.config);
        let cancel = self.inner.cancel.clone();
        self.inner.tracker.spawn(async move {
            let mut next = tokio::time::Instant::now() + every;
            loop {
                tokio::select! {
                    () = cancel.cancelled() => break,
                    () = tokio::time::sleep_until(next) => {
                        let begun = tokio::time::Instant::now();
                        let started = Instant::now();
                        let tick = runtime.renew_leases().await;
                        metrics::histogram!("room_lease_renewal_seconds")
                            .record(started.elapsed().as_secs_f64());
                        next = begun + if tick.failed { retry } else { every };
                    }
                }
            }
        });
    }
}

/// How soon the keeper tries again after a failed renewal: a quarter of its period, so that
/// a lease renewed on time (two thirds of its TTL left) gets several tries before it expires.
fn retry_after(config: &crate::CellConfig) -> Duration {
    (config.lease_renew_every / 4).max(Duration::from_millis(5))
}
