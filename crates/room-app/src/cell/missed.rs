//! What a watcher that reconnects missed: a room's display events read back from the log, as
//! the messenger got them at their commit.

use room_domain::{EventEnvelope, RoomId};

use super::runtime::CellRuntime;
use crate::error::Result;
use crate::ports::{DisplayMessage, StoredEvent};

impl CellRuntime {
    /// The display events of `room_id` with `after < seq <= up_to`, in seq order, as the
    /// messenger got them when they were committed (redacted): what a watcher that reconnects
    /// missed. Read from the log, so it holds whichever node ran the room; at most
    /// `up_to - after` events are read. `up_to` is at most the room's committed version.
    ///
    /// `None` when the log no longer holds every event after `after` up to `up_to`: it was
    /// pruned behind a snapshot ([`CellStore::prune_log`]), so the first event it holds comes
    /// after `after + 1` (or there is none). The watcher then reads the room again (an event
    /// stream's `resync`) instead of being sent a replay with a hole in it.
    ///
    /// [`CellStore::prune_log`]: crate::ports::CellStore::prune_log
    pub async fn missed_events(
        &self,
        room_id: &RoomId,
        after: u64,
        up_to: u64,
    ) -> Result<Option<Vec<DisplayMessage>>> {
        const PAGE: u64 = 1000;
        let mut display = Vec::new();
        let mut seen = after;
        while seen < up_to {
            let limit = (up_to - seen).min(PAGE) as u32;
            let events = self
                .inner
                .deps
                .store
                .list_events(room_id, seen, limit)
                .await?;
            if events.is_empty() {
                // Events up to `up_to` were committed: none left means they were pruned.
                metrics::counter!("room_replay_gaps_total").increment(1);
                return Ok(None);
            }
            // At most `up_to - seen` events were asked for: without a gap, they all come at or
            // before `up_to`.
            for stored in &events {
                if stored.seq != seen + 1 {
                    metrics::counter!("room_replay_gaps_total").increment(1);
                    return Ok(None);
                }
                seen = stored.seq;
                display.extend(display_message(room_id, stored));
            }
        }
        Ok(Some(display))
    }
}

/// The display message of a stored event, as the messenger got it at its commit, if the event
/// is displayed at all.
fn display_message(room_id: &RoomId, stored: &StoredEvent) -> Option<DisplayMessage> {
    let delivery = stored.event.delivery();
    delivery.im.map(|priority| DisplayMessage {
        envelope: EventEnvelope::new(
            room_id.clone(),
            stored.seq,
            stored.occurred_at,
            &stored.event,
        ),
        priority,
        coalesce_key: delivery.coalesce_key,
    })
}
