//! What the messenger counts: [`DisplayStats`] for its callers and tests, and the counters
//! behind them, each of which is also a Prometheus metric.

use std::sync::atomic::{AtomicU64, Ordering};

use room_domain::ImPriority;

/// What the messenger did so far (the same figures as its metrics).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DisplayStats {
    /// Messages Tencent took and delivered.
    pub messages_sent: u64,
    /// Events in those messages.
    pub events_sent: u64,
    /// Events dropped because the node's queue was full.
    pub dropped_queue_full: u64,
    /// Events dropped because the node held
    /// [`DisplaySettings::max_held_events`](crate::DisplaySettings::max_held_events) already.
    pub dropped_node_full: u64,
    /// Events older than [`DisplaySettings::max_age_ms`](crate::DisplaySettings::max_age_ms)
    /// when their turn came.
    pub dropped_too_old: u64,
    /// Events whose room's group still did not exist after
    /// [`DisplaySettings::no_group_retry_ms`](crate::DisplaySettings::no_group_retry_ms).
    pub dropped_no_group: u64,
    /// Events shed by a room's bound (the sum of the three `shed_*`).
    pub dropped_shed: u64,
    /// Events too large for a message on their own.
    pub dropped_too_large: u64,
    /// Events in messages Tencent took but dropped (`MsgDropReason`).
    pub dropped_by_im: u64,
    /// Events in messages whose send failed after its retries.
    pub dropped_send_failed: u64,
    /// Events still waiting when the dispatcher stopped.
    pub dropped_shutdown: u64,
    /// Low events shed.
    pub shed_low: u64,
    /// Normal events shed.
    pub shed_normal: u64,
    /// High events shed.
    pub shed_high: u64,
    /// Events replaced by a newer one of the same room and coalescing key.
    pub coalesced: u64,
}

#[derive(Debug, Default)]
pub(super) struct Stats {
    pub(super) messages_sent: AtomicU64,
    pub(super) events_sent: AtomicU64,
    pub(super) dropped_queue_full: AtomicU64,
    pub(super) dropped_node_full: AtomicU64,
    pub(super) dropped_too_old: AtomicU64,
    pub(super) dropped_no_group: AtomicU64,
    pub(super) dropped_too_large: AtomicU64,
    pub(super) dropped_by_im: AtomicU64,
    pub(super) dropped_send_failed: AtomicU64,
    pub(super) dropped_shutdown: AtomicU64,
    pub(super) shed: [AtomicU64; 3],
    pub(super) coalesced: AtomicU64,
    /// Rooms the dispatcher keeps (the `room_im_display_rooms` gauge), for tests.
    pub(super) rooms: AtomicU64,
}

/// Why events were dropped: the `reason` label.
#[derive(Debug, Clone, Copy)]
pub(super) enum DropReason {
    QueueFull,
    NodeFull,
    TooOld,
    NoGroup,
    TooLarge,
    ByIm,
    SendFailed,
    Shutdown,
}

impl Stats {
    pub(super) fn dropped(&self, why: DropReason, events: usize) {
        if events == 0 {
            return;
        }
        let (counter, reason) = match why {
            DropReason::QueueFull => (&self.dropped_queue_full, "queue_full"),
            DropReason::NodeFull => (&self.dropped_node_full, "node_full"),
            DropReason::TooOld => (&self.dropped_too_old, "too_old"),
            DropReason::NoGroup => (&self.dropped_no_group, "no_group"),
            DropReason::TooLarge => (&self.dropped_too_large, "too_large"),
            DropReason::ByIm => (&self.dropped_by_im, "im_dropped"),
            DropReason::SendFailed => (&self.dropped_send_failed, "send_failed"),
            DropReason::Shutdown => (&self.dropped_shutdown, "shutdown"),
        };
        counter.fetch_add(events as u64, Ordering::Relaxed);
        metrics::counter!("room_im_display_dropped_total", "reason" => reason)
            .increment(events as u64);
    }

    pub(super) fn shed(&self, priority: ImPriority, events: usize) {
        if events == 0 {
            return;
        }
        self.shed[rank(priority)].fetch_add(events as u64, Ordering::Relaxed);
        metrics::counter!("room_im_display_shed_total", "priority" => priority_label(priority))
            .increment(events as u64);
        metrics::counter!("room_im_display_dropped_total", "reason" => "shed")
            .increment(events as u64);
    }

    pub(super) fn coalesced(&self) {
        self.coalesced.fetch_add(1, Ordering::Relaxed);
        metrics::counter!("room_im_display_coalesced_total").increment(1);
    }

    pub(super) fn snapshot(&self) -> DisplayStats {
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        let shed = [get(&self.shed[0]), get(&self.shed[1]), get(&self.shed[2])];
        DisplayStats {
            messages_sent: get(&self.messages_sent),
            events_sent: get(&self.events_sent),
            dropped_queue_full: get(&self.dropped_queue_full),
            dropped_node_full: get(&self.dropped_node_full),
            dropped_too_old: get(&self.dropped_too_old),
            dropped_no_group: get(&self.dropped_no_group),
            dropped_shed: shed.iter().sum(),
            dropped_too_large: get(&self.dropped_too_large),
            dropped_by_im: get(&self.dropped_by_im),
            dropped_send_failed: get(&self.dropped_send_failed),
            dropped_shutdown: get(&self.dropped_shutdown),
            shed_low: shed[0],
            shed_normal: shed[1],
            shed_high: shed[2],
            coalesced: get(&self.coalesced),
        }
    }
}

fn rank(priority: ImPriority) -> usize {
    match priority {
        ImPriority::Low => 0,
        ImPriority::Normal => 1,
        ImPriority::High => 2,
    }
}

fn priority_label(priority: ImPriority) -> &'static str {
    match priority {
        ImPriority::Low => "low",
        ImPriority::Normal => "normal",
        ImPriority::High => "high",
    }
}
