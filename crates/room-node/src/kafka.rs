//! The broker the outbox is published to: Kafka, when `kafka.brokers` is set.

use std::sync::Arc;

use adapters_mq::KafkaPublisher;
use anyhow::Context;
use room_app::ports::EventPublisherRef;

use crate::config::Settings;

/// The outbox's publisher, if Kafka is configured: connected and its topic checked, so that
/// a node that cannot reach the broker says so at start-up.
pub(crate) async fn publisher(settings: &Settings) -> anyhow::Result<Option<EventPublisherRef>> {
    if !settings.kafka.is_enabled() {
        return Ok(None);
    }
    let publisher = KafkaPublisher::connect(&settings.kafka)
        .await
        .with_context(|| {
            format!(
                "cannot reach Kafka at {} (ROOM__KAFKA__BROKERS), topic {:?}",
                settings.kafka.brokers.as_deref().unwrap_or_default(),
                settings.kafka.topic
            )
        })?;
    Ok(Some(Arc::new(publisher)))
}
