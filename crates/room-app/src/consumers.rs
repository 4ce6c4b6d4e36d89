//! Consumers of the durable facts: one way for a projection (IM group effects, and whatever
//! else follows the rooms) to read what rooms committed to the outbox, whichever way the
//! deployment carries it.
//!
//! - A consumer is a [`FactHandler`] under a name ([`FactConsumer`]): it is handed each
//!   durable fact as an [`EventEnvelope`], at least once, in commit order per room; its
//!   effects must be idempotent by `event_id` (a repeat changes nothing). It answers each
//!   fact done, or failed with a [`FactError`] that says whether a retry can help: a
//!   retryable failure is tried again, with the same fact, after a pause that doubles up to
//!   30 s, and nothing after it is handled meanwhile; a permanent one is logged, counted and
//!   passed over.
//! - A [`FactSource`] feeds a consumer: the Kafka topic when a broker is configured (a
//!   consumer group named after the consumer, offsets committed after the work; in
//!   `adapters-mq`), otherwise the store's own outbox ([`OutboxSource`]: a stored position
//!   per consumer, moved by compare-and-set, and one process at a time per consumer under a
//!   work claim).
//! - With no broker configured, [`mark_passed`] makes the outbox rows every consumer has
//!   passed count as delivered, so that retention deletes them like delivered rows and no
//!   sooner.
//!
//! Metrics, by `consumer` (its configured name): `room_facts_handled_total`,
//! `room_facts_failures_total{kind}` (`retryable`, `permanent`) and `room_facts_lag_seconds`
//! (how old the fact in hand is, from its commit; 0 once an outbox-fed consumer has caught
//! up).

mod outbox;
mod passed;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use room_domain::EventEnvelope;
use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};
use crate::ports::ClockRef;

pub use outbox::{GAP_WAIT, OutboxSource};
pub use passed::mark_passed;

/// The longest a consumer's name may be, in bytes: it names the consumer's Kafka group, its
/// stored position and its work claim (`consumer:{name}`).
pub const MAX_CONSUMER_NAME: usize = 55;

/// The first pause before a fact whose handling failed is tried again.
const RETRY_FIRST: Duration = Duration::from_millis(100);
/// The longest pause between tries of one fact.
const RETRY_MAX: Duration = Duration::from_secs(30);

/// Why a consumer did not handle a fact, and whether trying again can help.
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", if *.retryable { "retryable" } else { "permanent" })]
pub struct FactError {
    retryable: bool,
    #[source]
    source: Box<dyn std::error::Error + Send + Sync>,
}

impl FactError {
    /// A failure a later try can mend (the consumer's store or peer is down): the fact is
    /// handed over again, and nothing after it meanwhile.
    pub fn retryable(source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        FactError {
            retryable: true,
            source: source.into(),
        }
    }

    /// A failure no try will mend (the peer refused the effect for good): logged, counted
    /// and passed over.
    pub fn permanent(source: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        FactError {
            retryable: false,
            source: source.into(),
        }
    }

    /// Whether a later try can succeed.
    pub fn is_retryable(&self) -> bool {
        self.retryable
    }
}

/// What a consumer does with each durable fact. Its effects must be idempotent by the
/// envelope's `event_id`: every fact may come more than once.
#[async_trait]
pub trait FactHandler: Send + Sync {
    /// Does what `envelope` asks of this consumer, or says why not.
    async fn handle(&self, envelope: &EventEnvelope) -> std::result::Result<(), FactError>;

    /// Does what each of `envelopes` (a run of facts in the source's order) asks, in fewer
    /// pieces of work than one a fact (one ledger transaction for many gifts, say). It need
    /// not be all or nothing: on an error the source hands the same facts over again one at a
    /// time ([`handle`](Self::handle)), so what one fact cannot do is isolated, and what was
    /// done already is done again idempotently. `None` (the default): the consumer takes
    /// facts one at a time only.
    async fn handle_all(
        &self,
        envelopes: &[EventEnvelope],
    ) -> Option<std::result::Result<(), FactError>> {
        let _ = envelopes;
        None
    }
}

/// Shared handle to a [`FactHandler`].
pub type FactHandlerRef = Arc<dyn FactHandler>;

/// An error and its causes, `: `-separated, for the log.
struct Chain<'a>(&'a FactError);

impl std::fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)?;
        let mut cause = std::error::Error::source(&*self.0.source);
        while let Some(error) = cause {
            write!(f, ": {error}")?;
            cause = error.source();
        }
        Ok(())
    }
}

/// Whether `name` can name a consumer: 1 to [`MAX_CONSUMER_NAME`] bytes of ASCII letters,
/// digits, `.`, `_` and `-` (a Kafka group id, a row key and a metric label alike).
pub fn valid_consumer_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_CONSUMER_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// What one try of a fact came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt {
    /// Handled, or refused for good and passed over: the consumer may move past it.
    Done,
    /// Failed in a way a later try can mend: the same fact must come again.
    Retry,
}

/// A named consumer: a [`FactHandler`] with the name its position, its Kafka group and its
/// metrics go by, and the retries and counting every source shares.
pub struct FactConsumer {
    name: String,
    handler: FactHandlerRef,
    clock: ClockRef,
}

impl std::fmt::Debug for FactConsumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FactConsumer")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl FactConsumer {
    /// The consumer `name` ([`valid_consumer_name`]; else [`Error::Invalid`]) handing facts
    /// to `handler`; `clock` dates its lag.
    pub fn new(name: &str, handler: FactHandlerRef, clock: ClockRef) -> Result<Self> {
        if !valid_consumer_name(name) {
            return Err(Error::Invalid(format!(
                "consumer name {name:?}: 1 to {MAX_CONSUMER_NAME} ASCII letters, digits, '.', \
                 '_' or '-'"
            )));
        }
        Ok(FactConsumer {
            name: name.to_owned(),
            handler,
            clock,
        })
    }

    /// The consumer's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Sets `room_facts_lag_seconds` to the age of a fact committed at `occurred_at` (0: caught
    /// up).
    pub fn set_lag(&self, occurred_at: Option<room_domain::Timestamp>) {
        let millis = occurred_at.map_or(0, |at| (self.clock.now().0 - at.0).max(0));
        metrics::gauge!("room_facts_lag_seconds", "consumer" => self.name.clone())
            .set(millis as f64 / 1000.0);
    }

    /// Tries `envelope` once: counts it, and logs a failure with its cause.
    pub async fn attempt(&self, envelope: &EventEnvelope) -> Attempt {
        self.set_lag(Some(envelope.occurred_at));
        match self.handler.handle(envelope).await {
            Ok(()) => {
                metrics::counter!("room_facts_handled_total", "consumer" => self.name.clone())
                    .increment(1);
                Attempt::Done
            }
            Err(error) if error.is_retryable() => {
                metrics::counter!("room_facts_failures_total", "consumer" => self.name.clone(), "kind" => "retryable")
                    .increment(1);
                tracing::warn!(
                    consumer = %self.name,
                    event_id = %envelope.event_id,
                    error = %Chain(&error),
                    "a consumer failed to handle a fact; it will be tried again"
                );
                Attempt::Retry
            }
            Err(error) => {
                metrics::counter!("room_facts_failures_total", "consumer" => self.name.clone(), "kind" => "permanent")
                    .increment(1);
                metrics::counter!("room_facts_handled_total", "consumer" => self.name.clone())
                    .increment(1);
                tracing::error!(
                    consumer = %self.name,
                    event_id = %envelope.event_id,
                    error = %Chain(&error),
                    "a consumer refused a fact for good; passed over"
                );
                Attempt::Done
            }
        }
    }

    /// Tries a run of facts at once ([`FactHandler::handle_all`]): `true` when every one is
    /// handled (each counted); `false` when the consumer takes facts one at a time or the run
    /// failed, and the caller is to hand them over one at a time ([`attempt`](Self::attempt)).
    /// Runs are counted in `room_facts_runs_total{consumer, outcome}` (`done`, `failed`).
    pub async fn attempt_all(&self, envelopes: &[EventEnvelope]) -> bool {
        let Some(last) = envelopes.last() else {
            return true;
        };
        let Some(outcome) = self.handler.handle_all(envelopes).await else {
            return false;
        };
        self.set_lag(Some(last.occurred_at));
        let done = outcome.is_ok();
        metrics::counter!("room_facts_runs_total", "consumer" => self.name.clone(), "outcome" => if done { "done" } else { "failed" })
            .increment(1);
        match outcome {
            Ok(()) => {
                metrics::counter!("room_facts_handled_total", "consumer" => self.name.clone())
                    .increment(envelopes.len() as u64);
            }
            Err(error) => {
                tracing::debug!(
                    consumer = %self.name,
                    facts = envelopes.len(),
                    error = %Chain(&error),
                    "a run of facts failed; handing them over one at a time"
                );
            }
        }
        done
    }

    /// Hands `envelope` over until it is done ([`Attempt::Done`]), pausing between tries
    /// (from 100 ms, doubling up to 30 s); `false` when `cancel` fired first.
    pub async fn deliver(&self, envelope: &EventEnvelope, cancel: &CancellationToken) -> bool {
        self.attempt(envelope).await == Attempt::Done || self.redeliver(envelope, cancel).await
    }

    /// Like [`deliver`](Self::deliver) for a fact whose last try failed: pauses before each
    /// try.
    pub async fn redeliver(&self, envelope: &EventEnvelope, cancel: &CancellationToken) -> bool {
        let mut pause = RETRY_FIRST;
        loop {
            tokio::select! {
                () = cancel.cancelled() => return false,
                () = tokio::time::sleep(pause) => {}
            }
            if self.attempt(envelope).await == Attempt::Done {
                return true;
            }
            pause = (pause * 2).min(RETRY_MAX);
        }
    }
}

impl FactConsumer {
    /// Hands `envelope` over once, right after its commit, ahead of the durable way, for at
    /// most [`EARLY_WAIT`]: whatever the outcome, the fact reaches the consumer again through
    /// its source, which is the retry. Counted in `room_facts_early_total{consumer, outcome}`
    /// (`done`, `failed`, `timeout`).
    pub async fn hand_early(&self, envelope: &EventEnvelope) {
        let outcome = match tokio::time::timeout(EARLY_WAIT, self.handler.handle(envelope)).await {
            Ok(Ok(())) => "done",
            Ok(Err(error)) => {
                tracing::warn!(
                    consumer = %self.name,
                    event_id = %envelope.event_id,
                    error = %Chain(&error),
                    "handing a fact over early failed; the durable way will bring it again"
                );
                "failed"
            }
            Err(_) => {
                tracing::warn!(
                    consumer = %self.name,
                    event_id = %envelope.event_id,
                    "handing a fact over early took too long; the durable way will bring it again"
                );
                "timeout"
            }
        };
        metrics::counter!("room_facts_early_total", "consumer" => self.name.clone(), "outcome" => outcome)
            .increment(1);
    }
}

/// The longest [`FactConsumer::hand_early`] waits for its consumer.
pub const EARLY_WAIT: Duration = Duration::from_secs(1);

/// Where a consumer's facts come from: the broker's topic, or the store's outbox.
#[async_trait]
pub trait FactSource: Send + Sync {
    /// Hands `consumer` the facts from where it stands, in order, until `cancel` fires; fails
    /// only when the source cannot go on (the caller builds it again after a pause).
    async fn run(&self, consumer: Arc<FactConsumer>, cancel: CancellationToken) -> Result<()>;
}

/// Shared handle to a [`FactSource`].
pub type FactSourceRef = Arc<dyn FactSource>;
