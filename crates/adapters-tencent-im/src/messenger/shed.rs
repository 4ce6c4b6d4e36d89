//! Shedding: a room's queue beyond its bound loses its oldest Low events first, then Normal,
//! then High.

use room_domain::ImPriority;

use super::coalesce::forget_queued;
use super::room::Room;
use super::stats::Stats;

impl Room {
    /// Sheds events beyond `max`: the oldest Low first, then Normal, then High.
    pub(super) fn shed(&mut self, max: usize, stats: &Stats) {
        let mut excess = self.queue.len().saturating_sub(max);
        for priority in [ImPriority::Low, ImPriority::Normal, ImPriority::High] {
            if excess == 0 {
                return;
            }
            let mut removed = 0;
            let held = &mut self.held;
            self.queue.retain(|item| {
                if removed == excess || item.priority != priority {
                    return true;
                }
                removed += 1;
                if let Some(key) = item.key {
                    forget_queued(held, key, item.seq());
                }
                false
            });
            stats.shed(priority, removed);
            excess -= removed;
        }
    }
}
