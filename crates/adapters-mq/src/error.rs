//! [`Error`]: what building a publisher or a consumer, or running a consumer, can fail with.
//! The publisher's port answers with `room_app::Error` instead (in
//! [`Published::error`](room_app::ports::Published::error)).

use rdkafka::error::KafkaError;

/// Why a Kafka client could not be built or stopped working.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The settings are wrong: a required one is missing, or a pass-through property is
    /// refused or unknown to librdkafka. Fix the configuration.
    #[error("invalid Kafka settings: {0}")]
    Settings(String),
    /// The brokers did not answer, or do not have the topic.
    #[error("Kafka is unavailable: {0}")]
    Unavailable(String),
    /// The client failed for good (a fatal librdkafka error).
    #[error("Kafka client failed: {0}")]
    Fatal(String),
}

impl Error {
    /// Whether trying again later can succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::Unavailable(_))
    }

    /// A client that librdkafka refused to create: its configuration is wrong.
    pub(crate) fn client_config(error: KafkaError) -> Self {
        Error::Settings(error.to_string())
    }
}

impl From<Error> for room_app::Error {
    fn from(error: Error) -> Self {
        match error {
            Error::Settings(_) => room_app::Error::Invalid(error.to_string()),
            Error::Unavailable(_) => room_app::Error::Unavailable(error.to_string()),
            Error::Fatal(_) => room_app::Error::Internal(error.to_string()),
        }
    }
}
