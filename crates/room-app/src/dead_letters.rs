//! What a platform admin does with the durable facts the broker refused for good: list the
//! dead letters the outbox publisher set aside, and replay one once its cause is fixed.

use crate::error::Result;
use crate::ports::{DeadLetter, OutboxRef};

/// The most dead letters one page lists.
pub const MAX_DEAD_LETTER_PAGE: u32 = 100;

/// A page of dead letters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetterPage {
    /// Dead letters in id (commit) order.
    pub dead_letters: Vec<DeadLetter>,
    /// The id to list after for the next page; `None` on the last page.
    pub next_after: Option<i64>,
}

/// Lists the dead letters with an id above `after`, at most `limit` (1 to
/// [`MAX_DEAD_LETTER_PAGE`]; more is read as the maximum).
pub async fn list_dead_letters(
    outbox: &OutboxRef,
    after: i64,
    limit: u32,
) -> Result<DeadLetterPage> {
    let limit = limit.clamp(1, MAX_DEAD_LETTER_PAGE);
    let dead_letters = outbox.list_dead_letters(after, limit).await?;
    let next_after = (dead_letters.len() == limit as usize)
        .then(|| dead_letters.last().map(|dead| dead.id))
        .flatten();
    Ok(DeadLetterPage {
        dead_letters,
        next_after,
    })
}

/// Puts dead letter `id` back in the outbox, pending under its own id, for the publisher to
/// publish again (counted in `room_outbox_dead_letters_replayed_total`). `Ok(false)` when
/// there is no such dead letter.
pub async fn replay_dead_letter(outbox: &OutboxRef, id: i64) -> Result<bool> {
    let replayed = outbox.replay_dead_letter(id).await?;
    if replayed {
        metrics::counter!("room_outbox_dead_letters_replayed_total").increment(1);
        tracing::info!(outbox_id = id, "dead letter replayed");
    }
    Ok(replayed)
}
