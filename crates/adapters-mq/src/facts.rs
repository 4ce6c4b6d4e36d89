//! [`KafkaFacts`]: the topic as the [`FactSource`] of the service's own consumers of the
//! durable facts, when a broker is configured.

use std::sync::Arc;

use async_trait::async_trait;
use room_app::consumers::{FactConsumer, FactSource};
use tokio_util::sync::CancellationToken;

use crate::{Error, EventConsumer, EventConsumerSettings, KafkaSettings, Result};

/// Feeds each consumer from the topic of [`KafkaSettings`] as a consumer group named after
/// it ([`FactConsumer::name`]): the group's members share the topic's partitions, a
/// partition's facts come in order, and an offset is committed only after its fact was
/// handled ([`EventConsumer`]). A member that dies keeps its partitions until the broker's
/// session timeout (`session.timeout.ms`, a pass-through property) has passed.
#[derive(Debug, Clone)]
pub struct KafkaFacts {
    settings: KafkaSettings,
    brokers: String,
}

impl KafkaFacts {
    /// A source reading the topic of `settings`; [`Error::Settings`] without brokers.
    pub fn new(settings: &KafkaSettings) -> Result<Self> {
        let brokers = settings
            .brokers
            .clone()
            .ok_or_else(|| Error::Settings("no brokers are configured".into()))?;
        Ok(KafkaFacts {
            settings: settings.clone(),
            brokers,
        })
    }

    /// The reader's settings for consumer group `group`.
    fn consumer_settings(&self, group: &str) -> EventConsumerSettings {
        let mut settings = EventConsumerSettings::new(self.brokers.clone(), group);
        settings.topic = self.settings.topic.clone();
        settings.properties = self.settings.properties.clone();
        settings
    }
}

#[async_trait]
impl FactSource for KafkaFacts {
    async fn run(
        &self,
        consumer: Arc<FactConsumer>,
        cancel: CancellationToken,
    ) -> room_app::Result<()> {
        let reader = EventConsumer::subscribe(&self.consumer_settings(consumer.name()))?;
        let stop = cancel.clone();
        reader
            .run(
                move |envelope| {
                    let (consumer, stop) = (consumer.clone(), stop.clone());
                    // Retries happen in `deliver`; an error here only means the consumer
                    // stopped first, and leaves the offset unstored.
                    async move {
                        if consumer.deliver(&envelope, &stop).await {
                            Ok(())
                        } else {
                            Err("stopped before the fact was handled")
                        }
                    }
                },
                cancel,
            )
            .await?;
        Ok(())
    }
}
