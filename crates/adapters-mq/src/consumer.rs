//! [`EventConsumer`]: reads room events as typed [`EventEnvelope`]s, at least once.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rdkafka::Offset;
use rdkafka::TopicPartitionList;
use rdkafka::consumer::{CommitMode, Consumer, StreamConsumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{BorrowedMessage, Message};
use room_domain::EventEnvelope;
use tokio_util::sync::CancellationToken;

use crate::context::TracingContext;
use crate::dedup::RecentEventIds;
use crate::{Error, EventConsumerSettings, Result};

/// The pause after the consumer reported an error, so a broken connection does not spin.
const ERROR_PAUSE: Duration = Duration::from_millis(100);

/// Reads the room events topic for another service and hands each event, decoded, to a
/// handler ([`EventConsumer::run`]).
///
/// Delivery is at least once: librdkafka commits offsets by itself
/// (`enable.auto.commit=true`), but only offsets the consumer stored
/// (`enable.auto.offset.store=false`), and it stores a message's offset only after the
/// handler succeeded with it, so a crash repeats the messages since the last commit and
/// loses none.
///
/// - **Handler errors.** A failed handler call is tried again, with the same event, after a
///   pause that doubles from [`EventConsumerSettings::retry_initial_ms`] up to
///   [`EventConsumerSettings::retry_max_ms`], until it succeeds or the consumer is cancelled.
///   Messages are handled one at a time, in order, so nothing after it (in any partition of
///   this consumer) is handled meanwhile and no offset moves past it: stopping the consumer
///   leaves it to be read again. A handler should fail only for what a retry can mend (its
///   own store is down); a message it can never handle should be logged and accepted.
/// - **Undecodable messages** (not an envelope, or an event type newer than this copy of
///   `room-domain`) are counted, logged and skipped, their offsets stored, so that one bad
///   message cannot stall its partition.
/// - **Repeats.** With [`EventConsumerSettings::dedup_capacity`] above 0, the consumer
///   remembers that many of the latest handled `event_id`s and skips a message whose id is
///   among them. The memory is per process: after a restart, the messages since the last
///   commit come again, and the handler must tolerate them (an upsert keyed by `event_id`,
///   or a per-room "seq already applied" check in its own store).
///
/// Metrics: `room_kafka_consumed_total{outcome}` (`handled`, `duplicate`, `undecodable`),
/// `room_kafka_handler_failures_total`, `room_kafka_consume_errors_total`.
pub struct EventConsumer {
    consumer: Arc<StreamConsumer<TracingContext>>,
    topic: String,
    dedup_capacity: usize,
    retry_initial: Duration,
    retry_max: Duration,
}

impl std::fmt::Debug for EventConsumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventConsumer")
            .field("topic", &self.topic)
            .field("dedup_capacity", &self.dedup_capacity)
            .finish_non_exhaustive()
    }
}

impl EventConsumer {
    /// A member of consumer group [`EventConsumerSettings::group_id`]: the group shares the
    /// topic's partitions among its members and moves them when members come and go.
    pub fn subscribe(settings: &EventConsumerSettings) -> Result<Self> {
        let consumer = EventConsumer::create(settings)?;
        consumer
            .consumer
            .subscribe(&[&consumer.topic])
            .map_err(|error| Error::Settings(format!("cannot subscribe: {error}")))?;
        Ok(consumer)
    }

    /// A consumer of exactly `partitions` of the topic, outside any group rebalancing: each
    /// partition resumes at the offset the group committed, or per
    /// [`EventConsumerSettings::auto_offset_reset`] without one. Offsets are still committed
    /// to the group. Starts reading sooner than [`subscribe`](Self::subscribe), which
    /// waits for the group to form.
    pub fn assign(settings: &EventConsumerSettings, partitions: &[i32]) -> Result<Self> {
        let consumer = EventConsumer::create(settings)?;
        let mut assignment = TopicPartitionList::with_capacity(partitions.len());
        for &partition in partitions {
            assignment
                .add_partition_offset(&consumer.topic, partition, Offset::Stored)
                .map_err(|error| Error::Settings(format!("partition {partition}: {error}")))?;
        }
        consumer
            .consumer
            .assign(&assignment)
            .map_err(|error| Error::Settings(format!("cannot assign partitions: {error}")))?;
        Ok(consumer)
    }

    fn create(settings: &EventConsumerSettings) -> Result<Self> {
        let config = settings.consumer_config()?;
        let consumer: StreamConsumer<TracingContext> = config
            .create_with_context(TracingContext)
            .map_err(Error::client_config)?;
        Ok(EventConsumer {
            consumer: Arc::new(consumer),
            topic: settings.topic.clone(),
            dedup_capacity: settings.dedup_capacity,
            retry_initial: settings.retry_initial(),
            retry_max: settings.retry_max(),
        })
    }

    /// The topic read.
    pub fn topic(&self) -> &str {
        &self.topic
    }

    /// Reads until `cancel` fires, calling `handler` with each event in partition order
    /// (see the [type docs](EventConsumer) for failures, bad messages and repeats). A call
    /// in progress when `cancel` fires is awaited; a retry pause is cut short. Before it
    /// returns, the stored offsets are committed.
    ///
    /// Fails only when the client failed for good ([`Error::Fatal`]).
    pub async fn run<H, Fut, E>(&self, mut handler: H, cancel: CancellationToken) -> Result<()>
    where
        H: FnMut(EventEnvelope) -> Fut,
        Fut: Future<Output = std::result::Result<(), E>>,
        E: std::fmt::Display,
    {
        let mut seen = (self.dedup_capacity > 0).then(|| RecentEventIds::new(self.dedup_capacity));
        loop {
            let received = tokio::select! {
                biased;
                () = cancel.cancelled() => break,
                received = self.consumer.recv() => received,
            };
            let message = match received {
                Ok(message) => message,
                Err(error) => {
                    self.consume_error(&error)?;
                    tokio::select! {
                        () = cancel.cancelled() => break,
                        () = tokio::time::sleep(ERROR_PAUSE) => continue,
                    }
                }
            };
            let envelope = match decode(&message) {
                Ok(envelope) => envelope,
                Err(why) => {
                    tracing::warn!(
                        topic = message.topic(),
                        partition = message.partition(),
                        offset = message.offset(),
                        why,
                        "skipping a message that is not a room event"
                    );
                    metrics::counter!("room_kafka_consumed_total", "outcome" => "undecodable")
                        .increment(1);
                    self.store(&message);
                    continue;
                }
            };
            if seen
                .as_ref()
                .is_some_and(|s| s.contains(&envelope.event_id))
            {
                tracing::debug!(event_id = %envelope.event_id, "skipping a repeated event");
                metrics::counter!("room_kafka_consumed_total", "outcome" => "duplicate")
                    .increment(1);
                self.store(&message);
                continue;
            }
            let event_id = envelope.event_id.clone();
            if !self.handle(&mut handler, envelope, &message, &cancel).await {
                // Cancelled while the handler kept failing: the message stays unstored.
                break;
            }
            if let Some(seen) = seen.as_mut() {
                seen.insert(&event_id);
            }
            metrics::counter!("room_kafka_consumed_total", "outcome" => "handled").increment(1);
            self.store(&message);
        }
        self.commit().await;
        Ok(())
    }

    /// Calls `handler` until it succeeds (`true`) or `cancel` fires during a pause (`false`).
    async fn handle<H, Fut, E>(
        &self,
        handler: &mut H,
        envelope: EventEnvelope,
        message: &BorrowedMessage<'_>,
        cancel: &CancellationToken,
    ) -> bool
    where
        H: FnMut(EventEnvelope) -> Fut,
        Fut: Future<Output = std::result::Result<(), E>>,
        E: std::fmt::Display,
    {
        let mut pause = self.retry_initial;
        loop {
            let error = match handler(envelope.clone()).await {
                Ok(()) => return true,
                Err(error) => error,
            };
            metrics::counter!("room_kafka_handler_failures_total").increment(1);
            tracing::warn!(
                event_id = %envelope.event_id,
                partition = message.partition(),
                offset = message.offset(),
                %error,
                retry_in = ?pause,
                "the event handler failed; trying the same event again"
            );
            tokio::select! {
                () = cancel.cancelled() => return false,
                () = tokio::time::sleep(pause) => {}
            }
            pause = (pause * 2).min(self.retry_max);
        }
    }

    /// Stores the offset after `message`, for the next commit.
    fn store(&self, message: &BorrowedMessage<'_>) {
        if let Err(error) = self.consumer.store_offset_from_message(message) {
            // The partition was taken away meanwhile: its new reader reads the message again.
            tracing::debug!(
                partition = message.partition(),
                offset = message.offset(),
                %error,
                "could not store an offset"
            );
        }
    }

    /// Counts and logs an error from the consumer; fails when the client failed for good.
    fn consume_error(&self, error: &KafkaError) -> Result<()> {
        metrics::counter!("room_kafka_consume_errors_total").increment(1);
        if let Some((code, reason)) = self.consumer.client().fatal_error() {
            return Err(Error::Fatal(format!("{code}: {reason}")));
        }
        tracing::warn!(%error, "the Kafka consumer reported an error");
        Ok(())
    }

    /// Commits the stored offsets, waiting for the broker's answer.
    async fn commit(&self) {
        let consumer = Arc::clone(&self.consumer);
        // A blocking librdkafka call.
        let committed =
            tokio::task::spawn_blocking(move || consumer.commit_consumer_state(CommitMode::Sync))
                .await;
        match committed {
            Ok(Ok(())) | Ok(Err(KafkaError::ConsumerCommit(RDKafkaErrorCode::NoOffset))) => {}
            Ok(Err(error)) => {
                tracing::warn!(%error, "could not commit offsets; the last messages will be read again");
            }
            Err(error) => tracing::warn!(%error, "the offset commit panicked"),
        }
    }

    /// The offsets the group has committed for this consumer's partitions: partition →
    /// the next offset to read. Partitions without a committed offset are left out.
    pub async fn committed_offsets(&self, timeout: Duration) -> Result<BTreeMap<i32, i64>> {
        let consumer = Arc::clone(&self.consumer);
        let topic = self.topic.clone();
        // A blocking librdkafka call.
        let list = tokio::task::spawn_blocking(move || consumer.committed(timeout))
            .await
            .map_err(|error| Error::Fatal(format!("the offset request panicked: {error}")))?
            .map_err(|error| {
                Error::Unavailable(format!("cannot read committed offsets: {error}"))
            })?;
        Ok(list
            .elements_for_topic(&topic)
            .iter()
            .filter_map(|element| match element.offset() {
                Offset::Offset(offset) => Some((element.partition(), offset)),
                _ => None,
            })
            .collect())
    }
}

/// The envelope in a message's value, or why there is none.
fn decode(message: &BorrowedMessage<'_>) -> std::result::Result<EventEnvelope, String> {
    let payload = message
        .payload()
        .ok_or_else(|| "the message has no value".to_owned())?;
    serde_json::from_slice(payload).map_err(|error| error.to_string())
}
