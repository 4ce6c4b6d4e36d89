//! [`TracingContext`]: librdkafka's log lines and client errors as `tracing` events.

use rdkafka::client::ClientContext;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::consumer::ConsumerContext;
use rdkafka::error::KafkaError;

/// The client context of every producer and consumer of the crate: librdkafka speaks through
/// `tracing` (target `librdkafka`) like the rest of the service.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TracingContext;

impl ClientContext for TracingContext {
    fn log(&self, level: RDKafkaLogLevel, facility: &str, message: &str) {
        match level {
            RDKafkaLogLevel::Emerg
            | RDKafkaLogLevel::Alert
            | RDKafkaLogLevel::Critical
            | RDKafkaLogLevel::Error => {
                tracing::error!(target: "librdkafka", facility, "{message}");
            }
            RDKafkaLogLevel::Warning => tracing::warn!(target: "librdkafka", facility, "{message}"),
            RDKafkaLogLevel::Notice | RDKafkaLogLevel::Info => {
                tracing::info!(target: "librdkafka", facility, "{message}");
            }
            RDKafkaLogLevel::Debug => tracing::debug!(target: "librdkafka", facility, "{message}"),
        }
    }

    fn error(&self, error: KafkaError, reason: &str) {
        // Mostly transient (a broker went away, all brokers are down); librdkafka retries.
        tracing::warn!(target: "librdkafka", %error, reason, "Kafka client error");
    }
}

impl ConsumerContext for TracingContext {}
