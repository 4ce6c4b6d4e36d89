//! The queue per room: what the dispatcher keeps of one room: its events waiting in seq
//! order, the newest event of each coalescing key, its token bucket, and a message parked
//! until the room's group exists. What is done to a room's queue lives beside it:
//! coalescing, shedding and packing.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use room_domain::RoomId;
use tokio::time::Instant;

use super::bucket::Bucket;
use super::item::{Item, Pack};
use crate::group_id;

/// The newest event of one coalescing key of a room.
pub(super) struct Held {
    pub(super) key: &'static str,
    /// The newest event not yet moved to the queue.
    pub(super) item: Option<Item>,
    /// When `item` moves to the queue.
    pub(super) due: Instant,
    /// The seq of this key's event in the queue, if one is there unsent: a newer one replaces
    /// it when it moves there.
    pub(super) queued_seq: Option<u64>,
}

/// A message refused because its group did not exist, kept to be sent again.
pub(super) struct Parked {
    pub(super) pack: Pack,
    pub(super) retry: NoGroupRetry,
}

/// Where a message refused for a missing group is in its retries.
#[derive(Debug, Clone, Copy)]
pub(super) struct NoGroupRetry {
    /// The first refusal.
    pub(super) since: Instant,
    /// The last wait.
    pub(super) delay: Duration,
    /// When it goes again.
    pub(super) at: Instant,
}

/// What the dispatcher keeps of one room.
pub(super) struct Room {
    pub(super) group_id: Arc<str>,
    /// Events waiting, by seq.
    pub(super) queue: VecDeque<Item>,
    pub(super) held: Vec<Held>,
    pub(super) bucket: Bucket,
    pub(super) in_flight: bool,
    /// A message waiting for the room's group to exist; it goes before the queue.
    pub(super) parked: Option<Parked>,
    /// Halves of messages Tencent refused as too long, in order; they go before the queue.
    pub(super) halves: VecDeque<Pack>,
    /// Whether the missing group was logged already.
    pub(super) warned_no_group: bool,
    /// Whether the room is in the dispatcher's list of rooms waiting for a send slot.
    pub(super) waiting_slot: bool,
    /// The earliest wake-up the dispatcher has for the room.
    pub(super) wake_at: Option<Instant>,
}

impl Room {
    pub(super) fn new(room_id: &RoomId, rate: f64, burst: f64, now: Instant) -> Self {
        Room {
            group_id: group_id(room_id).into(),
            queue: VecDeque::new(),
            held: Vec::new(),
            bucket: Bucket::full(rate, burst, now),
            in_flight: false,
            parked: None,
            halves: VecDeque::new(),
            warned_no_group: false,
            waiting_slot: false,
            wake_at: None,
        }
    }

    /// Events waiting (queued, held, parked for a missing group, or in halves of a message
    /// refused as too long).
    pub(super) fn size(&self) -> usize {
        self.queue.len()
            + self.held.iter().filter(|h| h.item.is_some()).count()
            + self.parked.as_ref().map_or(0, |p| p.pack.published.len())
            + self.halves.iter().map(|h| h.published.len()).sum::<usize>()
    }

    /// Whether a held event of `key` is waiting (a new one replaces it instead of adding one).
    pub(super) fn holds(&self, key: &'static str) -> bool {
        self.held.iter().any(|h| h.key == key && h.item.is_some())
    }

    /// Puts `item` in the queue at its seq's place (the end, nearly always).
    pub(super) fn enqueue(&mut self, item: Item) {
        if self
            .queue
            .back()
            .is_none_or(|last| last.seq() <= item.seq())
        {
            self.queue.push_back(item);
        } else {
            let at = self.queue.partition_point(|q| q.seq() <= item.seq());
            self.queue.insert(at, item);
        }
    }
}
