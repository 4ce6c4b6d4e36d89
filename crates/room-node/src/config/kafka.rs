//! `[kafka]` in the reference: what each key of [`adapters_mq::KafkaSettings`] is for.
//! The settings are adapters-mq's own; their descriptions live here, beside the other
//! sections'.

use super::reference::Section;

/// What `[kafka]` and each of its keys are for, in the reference (`docs/configuration.md`).
pub(super) const SECTION: Section = Section {
    name: "kafka",
    about: "The Kafka topic the outbox is published to (the settings of `adapters-mq`).",
    keys: &[
        (
            "brokers",
            "The bootstrap brokers, `host:port[,host:port...]`. The publisher is idempotent \
             (`enable.idempotence=true`, `acks=all`): key the room id, value the event envelope's \
             JSON, headers `event_type` and `event_id`; a row is marked delivered after its \
             delivery report. Unset: Kafka is off, and the outbox is not published.",
        ),
        ("topic", "The topic (created by the operator)."),
        (
            "message_timeout_ms",
            "How long librdkafka tries to deliver a message before it reports it failed \
             (`message.timeout.ms`), in milliseconds; a publish waits at most about this long.",
        ),
        (
            "linger_ms",
            "How long librdkafka waits to fill a batch before sending it (`linger.ms`), in \
             milliseconds.",
        ),
        (
            "connect_timeout_ms",
            "How long start-up waits for the topic's metadata before it reports Kafka unreachable, \
             in milliseconds.",
        ),
        (
            "properties",
            "Any librdkafka property, `_` standing for `.` in the variable \
             (`ROOM__KAFKA__PROPERTIES__SASL_MECHANISM=PLAIN`; in the file `[kafka.properties]` \
             then `\"sasl.mechanism\" = \"PLAIN\"`). A property that contradicts idempotence or \
             `acks=all`, or that a key above sets, stops the start.",
        ),
    ],
};
