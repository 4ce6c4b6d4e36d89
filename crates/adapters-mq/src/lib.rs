//! Kafka adapters of the room service: [`KafkaPublisher`], the outbox's
//! [`EventPublisher`](room_app::ports::EventPublisher), and [`EventConsumer`], the helper
//! other Rust services read the room events with.
//!
//! Room events go to one topic ([`DEFAULT_TOPIC`], `room.events.v1`), keyed by room id so
//! that each room's facts stay in order in one partition. The value is the
//! [`EventEnvelope`](room_domain::EventEnvelope) as JSON,
//! `{"event_id","room_id","seq","v","occurred_at","type","payload"}`; the headers
//! [`EVENT_TYPE_HEADER`] and [`EVENT_ID_HEADER`] repeat the event's type and id, so a reader
//! can route or drop a repeat without decoding the value.
//!
//! - [`KafkaPublisher`] sends each batch of the outbox through an idempotent producer
//!   (`enable.idempotence=true`, `acks=all`) and answers which messages the brokers
//!   acknowledged, never one that follows, in its room, a message that failed.
//! - [`EventConsumer`] hands a service's handler typed events and stores a message's offset
//!   only once the handler succeeded with it: at least once, with optional in-memory
//!   removal of repeats by `event_id`.
//! - [`KafkaFacts`] feeds the service's own consumers of the durable facts
//!   ([`FactSource`](room_app::consumers::FactSource)) from the topic, one consumer group per
//!   consumer.
//!
//! Settings ([`KafkaSettings`] for the service's `[kafka]` section,
//! [`EventConsumerSettings`] for a reader) pass librdkafka properties through (SASL, TLS,
//! ...) but refuse those that would undo what the adapters rely on; [`KafkaSettings`]
//! says how their names are spelled in TOML and in environment variables.
//!
//! `examples/gift_totals.rs` shows a service that reads the topic with [`EventConsumer`]
//! and `room-domain` alone.

mod consumer;
mod context;
mod dedup;
mod error;
mod facts;
mod publisher;
mod settings;

pub use consumer::EventConsumer;
pub use error::Error;
pub use facts::KafkaFacts;
pub use publisher::{EVENT_ID_HEADER, EVENT_TYPE_HEADER, KafkaPublisher};
pub use settings::{DEFAULT_TOPIC, EventConsumerSettings, KafkaSettings, OffsetReset};

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
