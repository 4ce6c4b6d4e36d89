//! [`OutboxSource`]: a consumer fed from the store's own outbox, when no broker is
//! configured. Each consumer has a stored position (the outbox id up to which it handled
//! every fact), moved forward by compare-and-set after the work; one process at a time reads
//! for it, under the work claim `consumer:{name}`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use room_domain::EventEnvelope;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{Attempt, FactConsumer, FactSource};
use crate::error::{Error, Result};
use crate::ports::{ConsumerPositionsRef, OutboxRef};
use crate::workers::{Claim, run_claimed};

/// How long a reader waits at a gap in the outbox ids before it passes it. A gap is an id
/// allotted to a transaction that rolled back (for good), or, where transactions commit out
/// of id order, one that a transaction is about to insert: the store waits for rows being
/// written in the range it reads ([`Outbox::list_after`](crate::ports::Outbox::list_after)),
/// so only the instant between an id's allotment and its insertion is left, far below this.
pub const GAP_WAIT: Duration = Duration::from_secs(1);

/// Feeds consumers from the outbox: rows after the consumer's stored position, in id
/// (commit) order, `batch` at a time, looked for every `poll_every` once caught up.
///
/// - **At least once.** The position moves after the facts up to it were handled (at the end
///   of each page, and before waiting on a fact that keeps failing), so a crash hands the
///   facts since the last move over again.
/// - **One reader per consumer.** Only the process holding the claim `consumer:{name}`
///   reads (renewed while it reads; another process takes over once it expires), and the
///   position moves only from the value the reader started from: a reader that lost its
///   claim without noticing cannot move it.
/// - **Runs.** The facts of a page up to a gap are handed over as one run
///   ([`FactHandler::handle_all`](super::FactHandler::handle_all)); when the run fails, they
///   are handed over again one at a time, with the retries below.
/// - **Gaps.** An id missing between two rows holds the consumer back for [`GAP_WAIT`]
///   (counted in `room_facts_gaps_passed_total{consumer}` once passed).
pub struct OutboxSource {
    outbox: OutboxRef,
    positions: ConsumerPositionsRef,
    claim: Claim,
    poll_every: Duration,
    batch: u32,
}

impl OutboxSource {
    /// A source over `outbox` keeping positions in `positions`, reading under `claim`.
    pub fn new(
        outbox: OutboxRef,
        positions: ConsumerPositionsRef,
        claim: Claim,
        poll_every: Duration,
        batch: u32,
    ) -> Self {
        OutboxSource {
            outbox,
            positions,
            claim,
            poll_every,
            batch: batch.max(1),
        }
    }
}

#[async_trait]
impl FactSource for OutboxSource {
    async fn run(&self, consumer: Arc<FactConsumer>, cancel: CancellationToken) -> Result<()> {
        let reader = Arc::new(tokio::sync::Mutex::new(Reader {
            outbox: self.outbox.clone(),
            positions: self.positions.clone(),
            consumer: consumer.clone(),
            batch: self.batch,
            gap: None,
        }));
        let stop = cancel.clone();
        run_claimed(
            claim_name(consumer.name()),
            self.poll_every,
            self.claim.clone(),
            cancel,
            move || {
                let (reader, stop) = (reader.clone(), stop.clone());
                async move { reader.lock().await.read_once(&stop).await }
            },
        )
        .await;
        Ok(())
    }
}

/// The claim a consumer reads under, `consumer:{name}`. Claims are named by `&'static str`;
/// each consumer name is made static once, and there are only as many as the configuration
/// names.
fn claim_name(consumer: &str) -> &'static str {
    static NAMES: OnceLock<Mutex<HashMap<String, &'static str>>> = OnceLock::new();
    let mut names = NAMES
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    names
        .entry(consumer.to_owned())
        .or_insert_with(|| Box::leak(format!("consumer:{consumer}").into_boxed_str()))
}

/// One consumer's reading state in this process.
struct Reader {
    outbox: OutboxRef,
    positions: ConsumerPositionsRef,
    consumer: Arc<FactConsumer>,
    batch: u32,
    /// The first id of the gap the consumer waits at, and since when.
    gap: Option<(i64, Instant)>,
}

impl Reader {
    /// Reads a page after the stored position, hands it over and moves the position; answers
    /// how many facts were handled.
    async fn read_once(&mut self, cancel: &CancellationToken) -> Result<u64> {
        let stored = self.positions.get_position(self.consumer.name()).await?;
        let start = stored.unwrap_or(0);
        let rows = self.outbox.list_after(start, self.batch).await?;
        if rows.is_empty() {
            self.consumer.set_lag(None);
            self.gap = None;
            return Ok(0);
        }
        // The run the consumer may take now: up to a gap it still waits at.
        let mut run = 0;
        let mut next = start + 1;
        for row in &rows {
            if row.id != next && !self.may_pass_gap(next) {
                self.consumer.set_lag(Some(row.envelope.occurred_at));
                break;
            }
            next = row.id + 1;
            run += 1;
        }
        // The run's facts, moved out of the page (not copied: every fact of the outbox passes
        // here once per consumer).
        let (ids, envelopes): (Vec<i64>, Vec<EventEnvelope>) = rows
            .into_iter()
            .take(run)
            .map(|row| (row.id, row.envelope))
            .unzip();
        if envelopes.len() > 1 && self.consumer.attempt_all(&envelopes).await {
            let through = ids.last().copied().unwrap_or(start);
            self.save(stored, through).await?;
            return Ok(envelopes.len() as u64);
        }
        let (mut saved, mut through, mut handled) = (stored, start, 0u64);
        for (id, envelope) in ids.into_iter().zip(&envelopes) {
            if self.consumer.attempt(envelope).await == Attempt::Retry {
                // Keep what is done before waiting on this fact.
                saved = self.save(saved, through).await?;
                if !self.consumer.redeliver(envelope, cancel).await {
                    return Err(Error::Cancelled);
                }
            }
            through = id;
            handled += 1;
        }
        self.save(saved, through).await?;
        Ok(handled)
    }

    /// Whether the consumer may pass the gap that starts at `missing`: once it has waited at
    /// it for [`GAP_WAIT`].
    fn may_pass_gap(&mut self, missing: i64) -> bool {
        match self.gap {
            Some((at, since)) if at == missing => {
                let passable = since.elapsed() >= GAP_WAIT;
                if passable {
                    self.gap = None;
                    metrics::counter!("room_facts_gaps_passed_total", "consumer" => self.consumer.name().to_owned())
                        .increment(1);
                    tracing::debug!(
                        consumer = self.consumer.name(),
                        missing,
                        "passing a gap in the outbox ids"
                    );
                }
                passable
            }
            _ => {
                self.gap = Some((missing, Instant::now()));
                false
            }
        }
    }

    /// Moves the stored position from `saved` to `through` (nothing to do when it is there
    /// already); fails with [`Error::Conflict`] when it moved meanwhile: another reader has it.
    async fn save(&self, saved: Option<i64>, through: i64) -> Result<Option<i64>> {
        if saved.unwrap_or(0) == through {
            return Ok(saved);
        }
        let name = self.consumer.name();
        if !self
            .positions
            .advance_position(name, saved, through)
            .await?
        {
            return Err(Error::Conflict(format!(
                "the outbox position of consumer {name} moved under its reader"
            )));
        }
        Ok(Some(through))
    }
}
