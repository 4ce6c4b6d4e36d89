//! Coalescing: an event with a coalescing key (fuel, heat, rank) waits a while for newer
//! ones of its key and only the newest is sent; when it moves to the queue, it replaces its
//! key's older event still waiting there.

use tokio::time::Instant;

use super::item::Item;
use super::room::{Held, Room};
use super::stats::Stats;

impl Room {
    /// Holds a coalescible event, replacing an older one of its key.
    pub(super) fn hold(&mut self, item: Item, key: &'static str, due: Instant, stats: &Stats) {
        match self.held.iter_mut().find(|h| h.key == key) {
            Some(held) => match &held.item {
                Some(current) if current.seq() > item.seq() => stats.coalesced(),
                Some(_) => {
                    stats.coalesced();
                    held.item = Some(item);
                }
                None => {
                    held.item = Some(item);
                    held.due = due;
                }
            },
            None => self.held.push(Held {
                key,
                item: Some(item),
                due,
                queued_seq: None,
            }),
        }
    }

    /// Moves held events due by `now` into the queue, each replacing its key's older event
    /// still queued.
    pub(super) fn flush_due(&mut self, now: Instant, stats: &Stats) {
        for index in 0..self.held.len() {
            let held = &mut self.held[index];
            if held.due > now {
                continue;
            }
            let Some(item) = held.item.take() else {
                continue;
            };
            let older = held.queued_seq.replace(item.seq());
            if let Some(older) = older {
                let at = self.queue.partition_point(|q| q.seq() < older);
                if self
                    .queue
                    .get(at)
                    .is_some_and(|q| q.seq() == older && q.key.is_some())
                {
                    self.queue.remove(at);
                    stats.coalesced();
                }
            }
            self.enqueue(item);
        }
    }

    /// The earliest time a held event is due.
    pub(super) fn next_due(&self) -> Option<Instant> {
        self.held
            .iter()
            .filter(|h| h.item.is_some())
            .map(|h| h.due)
            .min()
    }
}

/// Clears a key's note of a queued event that left the queue.
pub(super) fn forget_queued(held: &mut [Held], key: &'static str, seq: u64) {
    if let Some(h) = held
        .iter_mut()
        .find(|h| h.key == key && h.queued_seq == Some(seq))
    {
        h.queued_seq = None;
    }
}
