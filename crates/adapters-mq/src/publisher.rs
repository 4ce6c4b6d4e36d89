//! [`KafkaPublisher`]: the outbox's [`EventPublisher`], an idempotent producer that enqueues a
//! whole batch at once and then waits for every delivery report.

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use rdkafka::ClientConfig;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord, Producer, PurgeConfig};
use room_app::ports::{EventPublisher, OutboxMessage, Published};
use room_domain::RoomId;

use crate::context::TracingContext;
use crate::{Error, KafkaSettings, Result};

/// The header holding the event's type name ([`Event::type_name`](room_domain::Event::type_name)).
pub const EVENT_TYPE_HEADER: &str = "event_type";
/// The header holding the envelope's `event_id`, by which consumers drop repeats.
pub const EVENT_ID_HEADER: &str = "event_id";

/// The pause before enqueueing again when librdkafka's local queue is full.
const QUEUE_FULL_PAUSE: Duration = Duration::from_millis(5);

type Handle = FutureProducer<TracingContext>;

/// Publishes outbox messages to Kafka: topic from [`KafkaSettings::topic`], key = room id
/// (so each room's facts land in one partition, in order), value = the
/// [`EventEnvelope`](room_domain::EventEnvelope) as JSON, headers [`EVENT_TYPE_HEADER`] and
/// [`EVENT_ID_HEADER`].
///
/// The producer is idempotent with `acks=all`: librdkafka's retries neither duplicate nor
/// reorder a partition's messages, and an acknowledged message is on every in-sync replica.
/// A message can still reach Kafka twice when its acknowledgement is lost and the outbox
/// publishes it again; consumers drop the repeat by `event_id`.
///
/// Metrics: `room_kafka_published_total` (messages returned as delivered),
/// `room_kafka_publish_failures_total{reason}` (messages not returned, `reason` one of
/// `timeout`, `queue_full`, `broker`, `rejected`, `encode`, `held_back`) and the histogram
/// `room_kafka_publish_seconds` (one observation per [`publish`](EventPublisher::publish)
/// call).
pub struct KafkaPublisher {
    config: ClientConfig,
    /// Replaced by a fresh producer after a fatal error (an idempotent producer that lost
    /// track of its sequence numbers refuses every later message).
    producer: Mutex<Handle>,
    topic: String,
    brokers: String,
    /// How long a message may wait for room in librdkafka's queue.
    enqueue_timeout: Duration,
    connect_timeout: Duration,
}

impl std::fmt::Debug for KafkaPublisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaPublisher")
            .field("brokers", &self.brokers)
            .field("topic", &self.topic)
            .finish_non_exhaustive()
    }
}

impl KafkaPublisher {
    /// A publisher for `settings`, without contacting the brokers: the first
    /// [`publish`](EventPublisher::publish) connects. Fails with [`Error::Settings`] when
    /// Kafka is off, a property is refused, or librdkafka rejects the configuration.
    pub fn new(settings: &KafkaSettings) -> Result<Self> {
        let config = settings.producer_config()?;
        let producer = create_producer(&config)?;
        Ok(KafkaPublisher {
            config,
            producer: Mutex::new(producer),
            topic: settings.topic.clone(),
            brokers: settings.required_brokers()?.to_owned(),
            enqueue_timeout: settings.message_timeout(),
            connect_timeout: settings.connect_timeout(),
        })
    }

    /// A publisher for `settings`, once the brokers have answered with the topic's metadata
    /// within [`KafkaSettings::connect_timeout_ms`], so that a binary fails at start with a
    /// clear message ([`Error::Unavailable`]) rather than at its first publish.
    #[tracing::instrument(skip_all, fields(topic = %settings.topic), err)]
    pub async fn connect(settings: &KafkaSettings) -> Result<Self> {
        let publisher = KafkaPublisher::new(settings)?;
        publisher.check_topic(publisher.connect_timeout).await?;
        Ok(publisher)
    }

    /// The topic messages go to.
    pub fn topic(&self) -> &str {
        &self.topic
    }

    /// Asks the brokers for the topic's metadata, waiting at most `timeout`: fails with
    /// [`Error::Unavailable`] when no broker answers or the topic does not exist.
    pub async fn check_topic(&self, timeout: Duration) -> Result<()> {
        let producer = self.producer();
        let topic = self.topic.clone();
        let brokers = self.brokers.clone();
        // A blocking librdkafka call.
        tokio::task::spawn_blocking(move || {
            let metadata = producer
                .client()
                .fetch_metadata(Some(&topic), timeout)
                .map_err(|error| {
                    Error::Unavailable(format!(
                        "no answer from the Kafka brokers {brokers} within {timeout:?}: {error}"
                    ))
                })?;
            let found = metadata.topics().iter().find(|t| t.name() == topic);
            match found {
                Some(t) if t.error().is_none() && !t.partitions().is_empty() => Ok(()),
                Some(t) => Err(Error::Unavailable(format!(
                    "the Kafka brokers {brokers} do not serve topic {topic:?}: {}",
                    t.error().map_or_else(
                        || "it has no partitions".to_owned(),
                        |code| RDKafkaErrorCode::from(code).to_string()
                    )
                ))),
                None => Err(Error::Unavailable(format!(
                    "the Kafka brokers {brokers} do not know topic {topic:?}"
                ))),
            }
        })
        .await
        .map_err(|error| Error::Fatal(format!("the metadata request panicked: {error}")))?
    }

    /// The current producer, replaced first if the last one failed for good.
    fn producer(&self) -> Handle {
        let mut producer = self
            .producer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((code, reason)) = producer.client().fatal_error() {
            match create_producer(&self.config) {
                Ok(fresh) => {
                    tracing::error!(%code, reason, "the Kafka producer failed for good; replaced it");
                    *producer = fresh;
                }
                Err(error) => {
                    tracing::error!(%code, reason, %error, "the Kafka producer failed for good and cannot be replaced");
                }
            }
        }
        producer.clone()
    }

    /// Enqueues one message, waiting while librdkafka's queue is full (until `deadline`).
    async fn enqueue(
        &self,
        producer: &Handle,
        message: &OutboxMessage,
        deadline: Instant,
    ) -> std::result::Result<rdkafka::producer::DeliveryFuture, Failure> {
        let envelope = &message.envelope;
        let payload = serde_json::to_vec(envelope).map_err(|error| Failure {
            reason: Reason::Encode,
            cause: format!("cannot encode event {}: {error}", envelope.event_id),
        })?;
        let headers = OwnedHeaders::new_with_capacity(2)
            .insert(Header {
                key: EVENT_TYPE_HEADER,
                value: Some(envelope.event.type_name()),
            })
            .insert(Header {
                key: EVENT_ID_HEADER,
                value: Some(envelope.event_id.as_str()),
            });
        let mut record = FutureRecord::to(&self.topic)
            .key(envelope.room_id.as_str())
            .payload(&payload)
            .headers(headers);
        loop {
            match producer.send_result(record) {
                Ok(delivery) => return Ok(delivery),
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), returned))
                    if Instant::now() < deadline =>
                {
                    record = returned;
                    tokio::time::sleep(QUEUE_FULL_PAUSE).await;
                }
                Err((error, _)) => return Err(Failure::of(&envelope.event_id, &error)),
            }
        }
    }
}

fn create_producer(config: &ClientConfig) -> Result<Handle> {
    config
        .create_with_context(TracingContext)
        .map_err(Error::client_config)
}

#[async_trait]
impl EventPublisher for KafkaPublisher {
    #[tracing::instrument(skip_all, fields(messages = messages.len(), topic = %self.topic))]
    async fn publish(&self, messages: &[OutboxMessage]) -> Published {
        if messages.is_empty() {
            return Published::default();
        }
        let started = Instant::now();
        let producer = self.producer();
        let deadline = started + self.enqueue_timeout;
        let mut outcomes: Vec<Option<Outcome>> = Vec::with_capacity(messages.len());
        let mut deliveries = FuturesUnordered::new();
        let mut failed_rooms: HashSet<&RoomId> = HashSet::new();
        // Everything is enqueued before anything is awaited, so librdkafka batches the
        // messages per partition.
        for (index, message) in messages.iter().enumerate() {
            let room = &message.envelope.room_id;
            if failed_rooms.contains(room) {
                // Sending it would put it in Kafka ahead of the earlier message that failed.
                outcomes.push(Some(Outcome::HeldBack));
                continue;
            }
            match self.enqueue(&producer, message, deadline).await {
                Ok(delivery) => {
                    outcomes.push(None);
                    deliveries.push(async move { (index, delivery.await) });
                }
                Err(failure) => {
                    failed_rooms.insert(room);
                    outcomes.push(Some(Outcome::Failed(failure)));
                }
            }
        }
        let mut purged = false;
        while let Some((index, report)) = deliveries.next().await {
            let outcome = match report {
                Ok(Ok(_)) => Outcome::Acked,
                Ok(Err((error, _))) => {
                    let failure = Failure::of(&messages[index].envelope.event_id, &error);
                    if failure.reason == Reason::HeldBack {
                        Outcome::HeldBack
                    } else {
                        Outcome::Failed(failure)
                    }
                }
                Err(_) => Outcome::Failed(Failure {
                    reason: Reason::Broker,
                    cause: "the producer went away before the delivery report".into(),
                }),
            };
            if !purged && matches!(&outcome, Outcome::Failed(f) if f.reason.may_leave_a_gap()) {
                // A message that timed out can leave a later message of its room behind in
                // librdkafka's queue, which a returning broker would take ahead of the
                // failed one's next try. Fail what has not been sent yet instead; it is
                // published again with the rest.
                producer.purge(PurgeConfig::default().queue().non_blocking());
                purged = true;
            }
            outcomes[index] = Some(outcome);
        }
        let outcomes: Vec<Outcome> = outcomes
            .into_iter()
            .map(|o| o.unwrap_or(Outcome::HeldBack))
            .collect();
        let (published, tally) = settle(messages, outcomes);
        metrics::histogram!("room_kafka_publish_seconds").record(started.elapsed().as_secs_f64());
        metrics::counter!("room_kafka_published_total").increment(published.delivered.len() as u64);
        for (reason, count) in tally.iter() {
            metrics::counter!("room_kafka_publish_failures_total", "reason" => reason.as_str())
                .increment(count);
        }
        if let Some(error) = &published.error {
            tracing::warn!(
                delivered = published.delivered.len(),
                %error,
                "Kafka did not take every message"
            );
        }
        published
    }
}

/// Why a message was not returned as delivered: the `reason` label of
/// `room_kafka_publish_failures_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reason {
    /// Not acknowledged within `message.timeout.ms`.
    Timeout,
    /// librdkafka's queue stayed full for as long.
    QueueFull,
    /// Another broker or client failure a retry can get past.
    Broker,
    /// The broker refused this message for good (too large, invalid).
    Rejected,
    /// The envelope could not be encoded.
    Encode,
    /// Not sent, or not counted, because an earlier message of its room failed (or because
    /// a failure purged the queue it waited in).
    HeldBack,
}

impl Reason {
    const ALL: [Reason; 6] = [
        Reason::Timeout,
        Reason::QueueFull,
        Reason::Broker,
        Reason::Rejected,
        Reason::Encode,
        Reason::HeldBack,
    ];

    fn as_str(self) -> &'static str {
        match self {
            Reason::Timeout => "timeout",
            Reason::QueueFull => "queue_full",
            Reason::Broker => "broker",
            Reason::Rejected => "rejected",
            Reason::Encode => "encode",
            Reason::HeldBack => "held_back",
        }
    }

    /// Whether a retry can help.
    fn is_retryable(self) -> bool {
        !matches!(self, Reason::Rejected | Reason::Encode)
    }

    /// Whether a later message of the same partition may still go out after this failure.
    fn may_leave_a_gap(self) -> bool {
        matches!(self, Reason::Timeout | Reason::Broker)
    }

    fn of(error: &KafkaError) -> Reason {
        use RDKafkaErrorCode as Code;
        match error.rdkafka_error_code() {
            Some(Code::MessageTimedOut | Code::RequestTimedOut) => Reason::Timeout,
            Some(Code::QueueFull) => Reason::QueueFull,
            Some(Code::PurgeQueue | Code::PurgeInflight) => Reason::HeldBack,
            Some(
                Code::MessageSizeTooLarge
                | Code::InvalidMessage
                | Code::InvalidMessageSize
                | Code::InvalidRecord
                | Code::BadMessage
                | Code::MessageBatchTooLarge,
            ) => Reason::Rejected,
            _ => Reason::Broker,
        }
    }
}

/// A message that was not taken, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Failure {
    reason: Reason,
    cause: String,
}

impl Failure {
    fn of(event_id: &str, error: &KafkaError) -> Failure {
        Failure {
            reason: Reason::of(error),
            cause: format!("event {event_id}: {error}"),
        }
    }
}

/// What became of one message of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    /// The broker acknowledged it.
    Acked,
    /// It failed.
    Failed(Failure),
    /// It was not sent, or was purged, because of another message's failure.
    HeldBack,
}

/// Messages per [`Reason`].
#[derive(Debug, Default, PartialEq, Eq)]
struct Tally([u64; Reason::ALL.len()]);

impl Tally {
    fn add(&mut self, reason: Reason) {
        if let Some(i) = Reason::ALL.iter().position(|r| *r == reason) {
            self.0[i] += 1;
        }
    }

    fn iter(&self) -> impl Iterator<Item = (Reason, u64)> + '_ {
        Reason::ALL
            .iter()
            .zip(self.0)
            .filter(|(_, n)| *n > 0)
            .map(|(r, n)| (*r, n))
    }
}

/// The [`Published`] answer for `messages` given each one's outcome (same order): the
/// acknowledged ids in order, except every message after a failed one of the same room; a
/// message refused for good (the first of its room not taken) in `refused`, with its cause;
/// the first failure a retry can help as the error.
fn settle(messages: &[OutboxMessage], outcomes: Vec<Outcome>) -> (Published, Tally) {
    let mut delivered = Vec::with_capacity(messages.len());
    let mut refused = Vec::new();
    let mut tally = Tally::default();
    let mut stopped: HashSet<&RoomId> = HashSet::new();
    let mut refused_rooms: HashSet<&RoomId> = HashSet::new();
    let mut first: Option<Failure> = None;
    // Messages left out for a reason a retry can help (not after a refusal of their room).
    let mut retry = 0usize;
    for (message, outcome) in messages.iter().zip(outcomes) {
        let room = &message.envelope.room_id;
        match outcome {
            Outcome::Acked if !stopped.contains(room) => delivered.push(message.id),
            Outcome::Acked | Outcome::HeldBack => {
                stopped.insert(room);
                tally.add(Reason::HeldBack);
                if !refused_rooms.contains(room) {
                    retry += 1;
                }
            }
            Outcome::Failed(failure) => {
                tally.add(failure.reason);
                if !failure.reason.is_retryable() && stopped.insert(room) {
                    refused_rooms.insert(room);
                    refused.push((message.id, failure.cause));
                    continue;
                }
                stopped.insert(room);
                if !refused_rooms.contains(room) {
                    retry += 1;
                }
                if failure.reason.is_retryable() {
                    first.get_or_insert(failure);
                }
            }
        }
    }
    let error = first.map(|failure| {
        room_app::Error::Unavailable(format!(
            "Kafka did not take {retry} of {} messages; {}",
            messages.len(),
            failure.cause
        ))
    });
    // Held back only: a purge that another batch's failure caused.
    let error = error.or_else(|| {
        (retry > 0).then(|| {
            room_app::Error::Unavailable(format!(
                "Kafka did not take {retry} of {} messages: they were held back after \
                 another message failed",
                messages.len()
            ))
        })
    });
    (
        Published {
            delivered,
            refused,
            error,
        },
        tally,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use room_domain::{Event, EventEnvelope, Timestamp};

    fn message(id: i64, room: &str, seq: u64) -> OutboxMessage {
        OutboxMessage {
            id,
            envelope: EventEnvelope::new(
                RoomId::new(room).unwrap(),
                seq,
                Timestamp(1_764_460_800_000),
                &Event::RoomClosed { by: None },
            ),
        }
    }

    fn failed(reason: Reason) -> Outcome {
        Outcome::Failed(Failure {
            reason,
            cause: format!("{reason:?}"),
        })
    }

    #[test]
    fn a_failure_leaves_out_every_later_message_of_its_room_only() {
        let messages = [
            message(1, "a", 1),
            message(2, "b", 1),
            message(3, "a", 2),
            message(4, "b", 2),
            message(5, "a", 3),
            message(6, "c", 1),
        ];
        let outcomes = vec![
            Outcome::Acked,
            Outcome::Acked,
            failed(Reason::Timeout),
            Outcome::Acked,
            // Acknowledged, but after its room's failure: not reported delivered.
            Outcome::Acked,
            Outcome::HeldBack,
        ];
        let (published, tally) = settle(&messages, outcomes);
        assert_eq!(published.delivered, vec![1, 2, 4]);
        let error = published.error.unwrap();
        assert!(error.is_retryable(), "{error}");
        assert!(error.to_string().contains("3 of 6"), "{error}");
        assert_eq!(
            tally.iter().collect::<Vec<_>>(),
            vec![(Reason::Timeout, 1), (Reason::HeldBack, 2)]
        );
    }

    #[test]
    fn a_refusal_for_good_is_reported_with_its_message_not_as_the_error() {
        let messages = [
            message(1, "a", 1),
            message(2, "b", 1),
            message(3, "a", 2),
            message(4, "c", 1),
        ];
        let (published, _) = settle(
            &messages,
            vec![
                failed(Reason::Timeout),
                failed(Reason::Rejected),
                Outcome::HeldBack,
                Outcome::Acked,
            ],
        );
        assert_eq!(published.delivered, vec![4]);
        assert_eq!(published.refused, vec![(2, "Rejected".to_owned())]);
        let error = published.error.unwrap();
        assert!(error.is_retryable(), "{error}");
        assert!(error.to_string().contains("Timeout"), "{error}");
        assert!(error.to_string().contains("2 of 4"), "{error}");
    }

    #[test]
    fn a_refusal_alone_is_no_error() {
        let messages = [message(1, "a", 1), message(2, "a", 2), message(3, "b", 1)];
        let (published, _) = settle(
            &messages,
            vec![failed(Reason::Encode), Outcome::HeldBack, Outcome::Acked],
        );
        assert_eq!(published.delivered, vec![3]);
        assert_eq!(published.refused, vec![(1, "Encode".to_owned())]);
        assert!(published.error.is_none(), "{:?}", published.error);
    }

    #[test]
    fn everything_acknowledged_is_delivered_in_order() {
        let messages = [message(7, "a", 1), message(3, "b", 1), message(9, "a", 2)];
        let (published, tally) = settle(&messages, vec![Outcome::Acked; 3]);
        assert_eq!(published.delivered, vec![7, 3, 9]);
        assert!(published.error.is_none());
        assert_eq!(tally, Tally::default());
    }

    #[test]
    fn kafka_errors_fall_into_the_fixed_reasons() {
        let production = |code| KafkaError::MessageProduction(code);
        assert_eq!(
            Reason::of(&production(RDKafkaErrorCode::MessageTimedOut)),
            Reason::Timeout
        );
        assert_eq!(
            Reason::of(&production(RDKafkaErrorCode::MessageSizeTooLarge)),
            Reason::Rejected
        );
        assert_eq!(
            Reason::of(&production(RDKafkaErrorCode::PurgeQueue)),
            Reason::HeldBack
        );
        assert_eq!(
            Reason::of(&production(RDKafkaErrorCode::AllBrokersDown)),
            Reason::Broker
        );
    }
}
