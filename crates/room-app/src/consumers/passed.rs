//! [`mark_passed`]: with no broker configured, outbox rows count as delivered once every
//! in-process consumer has passed them, so that retention deletes them after
//! `outbox.retention_days` like delivered rows, and never before.

use crate::error::Result;
use crate::ports::{ClockRef, ConsumerPositionsRef, OutboxRef};
use crate::workers::in_batches;

/// Marks delivered the outbox rows every consumer in `consumers` has passed (each one's
/// stored position; a consumer without one has passed nothing), `batch` rows per statement
/// and at most `max_batches` statements per pass; with no consumer at all every row is
/// passed as soon as it is committed. Returns how many rows it marked.
///
/// Only for a deployment without a broker: with one, the publisher marks rows delivered once
/// the broker has them, and consumers read the topic instead.
///
/// Metrics: `room_outbox_passed_total` (rows), and `room_outbox_lag_seconds`: how old the
/// oldest row not yet passed by every consumer is, from its commit (0 when there is none).
pub async fn mark_passed(
    outbox: &OutboxRef,
    positions: &ConsumerPositionsRef,
    consumers: &[String],
    clock: &ClockRef,
    batch: u32,
    max_batches: u32,
) -> Result<u64> {
    let mut through = i64::MAX;
    for consumer in consumers {
        through = through.min(positions.get_position(consumer).await?.unwrap_or(0));
    }
    let now = clock.now();
    let marked = in_batches("room_outbox_passed_total", batch, max_batches, |batch| {
        outbox.mark_passed(through, now, batch)
    })
    .await?;
    let oldest = if through == i64::MAX {
        None
    } else {
        outbox.list_after(through, 1).await?.pop()
    };
    let lag = oldest.map_or(0, |row| (now.0 - row.envelope.occurred_at.0).max(0));
    metrics::gauge!("room_outbox_lag_seconds").set(lag as f64 / 1000.0);
    Ok(marked)
}
