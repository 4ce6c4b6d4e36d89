//! A cell's task: activation, the loop that takes batches from the mailbox until the cell is
//! idle, released, fenced or the node stops, and the stop (drain, snapshot, release of the
//! lease).

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use room_domain::RoomId;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::active::{Cell, Stop};
use super::mailbox::{Mailbox, Request, fail};
use super::registry::{CellControl, Inner};
use crate::error::Error;

pub(super) async fn run_cell(
    inner: Arc<Inner>,
    room_id: RoomId,
    id: u64,
    rx: mpsc::Receiver<Request>,
    control: Arc<CellControl>,
) {
    let mut mailbox = Mailbox {
        rx,
        held: VecDeque::new(),
        held_queries: Vec::new(),
        cap: inner.config.mailbox,
    };
    // The lease, once acquired, holds at least one TTL from here.
    let asked = tokio::time::Instant::now();
    let mut cell = match Cell::activate(&inner, &room_id, id).await {
        Ok(cell) => cell,
        Err(error) => {
            if matches!(error, Error::NotOwner(_)) {
                // Another node took the room first: expected among several nodes.
                metrics::counter!("room_cell_activation_conflicts_total").increment(1);
                tracing::debug!(room_id = %room_id, "room activation found the room held elsewhere");
            } else {
                tracing::warn!(room_id = %room_id, error = %error, "room activation failed");
            }
            inner.forget(&room_id, id);
            mailbox.rx.close();
            let retryable = if error.is_retryable() {
                error
            } else {
                Error::Unavailable(error.to_string())
            };
            while let Some(request) = mailbox.recv().await {
                fail(request, &retryable, &room_id);
            }
            return;
        }
    };
    let config = &inner.config;
    // From here on the keeper renews this room's lease with the node's others.
    control.hold_until(asked + inner.config.lease_ttl());
    control.active.store(true, Ordering::Release);
    let mut stop = Stop::Orderly;
    // The idle deadline moves only when a request arrives: lease renewals do not count.
    let mut idle_deadline = tokio::time::Instant::now() + config.idle_after;
    loop {
        tokio::select! {
            biased;
            _ = inner.cancel.cancelled() => break,
            () = control.fence.cancelled() => {
                stop = Stop::Fenced;
                break;
            }
            () = control.release.cancelled() => break,
            _ = tokio::time::sleep_until(idle_deadline) => break,
            received = mailbox.recv() => {
                let Some(first) = received else { break };
                let batch = mailbox.take_batch(first, config.max_batch);
                if let Some(stopped) = cell.process(batch, &mut mailbox).await {
                    stop = stopped;
                    break;
                }
                let robot_room = config.release_robot_rooms.as_ref().is_some_and(|prefix| {
                    cell.state
                        .owner
                        .as_ref()
                        .is_some_and(|owner| owner.as_str().starts_with(prefix.as_str()))
                });
                // A robot room is an orchestrator's to run: let go of it soon after use. Read
                // after each batch: the room's creation may be the batch that made it one.
                let idle = if robot_room {
                    ROBOT_ROOM_IDLE.min(config.idle_after)
                } else {
                    config.idle_after
                };
                idle_deadline = tokio::time::Instant::now() + idle;
            }
        }
    }
    // No new requests from here on; answer what is queued before leaving.
    let stopped = CancellationToken::new();
    inner
        .stopping
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(room_id.clone(), (id, stopped.clone()));
    inner.forget(&room_id, id);
    mailbox.rx.close();
    while stop == Stop::Orderly {
        let Some(first) = mailbox.recv().await else {
            break;
        };
        let batch = mailbox.take_batch(first, config.max_batch);
        if let Some(stopped) = cell.process(batch, &mut mailbox).await {
            stop = stopped;
        }
    }
    while let Some(request) = mailbox.recv().await {
        fail(request, &Error::NotOwner(room_id.to_string()), &room_id);
    }
    if stop == Stop::Orderly {
        cell.write_snapshot().await;
    }
    if stop != Stop::Fenced
        && let Err(error) = inner.deps.lease.release(&room_id).await
    {
        tracing::warn!(room_id = %room_id, error = %error, "lease release failed");
    }
    let mut stopping = inner.stopping.lock().unwrap_or_else(|e| e.into_inner());
    if stopping.get(&room_id).is_some_and(|(cell, _)| *cell == id) {
        stopping.remove(&room_id);
    }
    stopped.cancel();
}

/// How soon a robot room goes idle on a node that leaves robot rooms to the orchestrators
/// ([`CellConfig::release_robot_rooms`](crate::CellConfig::release_robot_rooms)).
const ROBOT_ROOM_IDLE: Duration = Duration::from_secs(1);
