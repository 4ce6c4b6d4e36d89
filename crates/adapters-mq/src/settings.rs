//! [`KafkaSettings`] (the publisher's `[kafka]` section) and [`EventConsumerSettings`] (a
//! reading service's), with the librdkafka properties they pass through and the ones they
//! refuse to let through.

use std::collections::BTreeMap;
use std::time::Duration;

use rdkafka::ClientConfig;
use serde::{Deserialize, Deserializer, Serialize};

use crate::{Error, Result};

/// The topic room events are published to (DESIGN §6).
pub const DEFAULT_TOPIC: &str = "room.events.v1";

/// `[kafka]`: where the outbox publisher sends durable facts. Kafka is on when `brokers` is
/// set. `Debug` shows the names of pass-through properties, not their values (they may hold
/// passwords).
///
/// # Pass-through properties
///
/// `properties` holds librdkafka configuration properties (SASL, TLS, client id, batching
/// limits, ...) handed to librdkafka as they are. A name may be written in either of two
/// spellings, and both mean the same property:
///
/// - with dots, as librdkafka names it: in TOML, quote the name,
///   `[kafka.properties]` then `"sasl.mechanism" = "PLAIN"`;
/// - with `_` for every `.`: that is the spelling environment variables allow, so
///   `ROOM__KAFKA__PROPERTIES__SASL_MECHANISM=PLAIN` sets `sasl.mechanism` (case does not
///   matter). The two librdkafka properties settable as text whose names hold a `_`,
///   `log_level` and `enabled_events`, keep it.
///
/// When both spellings of one name are given, the `_` one wins: that is the environment
/// variable, which overrides the file. Values may be strings, numbers or booleans.
///
/// The properties the adapters rely on cannot be overridden: a pass-through that contradicts
/// them (`acks=1`, `enable.idempotence=false`, `enable.auto.offset.store=true`, ...) or
/// duplicates a typed setting (`bootstrap.servers`, `linger.ms`, `group.id`, ...) is refused
/// with an [`Error::Settings`] naming it.
#[derive(Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct KafkaSettings {
    /// The bootstrap brokers, `host:port[,host:port...]` (`ROOM__KAFKA__BROKERS`). Unset:
    /// Kafka is off.
    pub brokers: Option<String>,
    /// The topic (`ROOM__KAFKA__TOPIC`), [`DEFAULT_TOPIC`] unless set.
    pub topic: String,
    /// How long librdkafka tries to deliver a message before it reports it failed
    /// (librdkafka's `message.timeout.ms`); a publish call waits at most about this long.
    pub message_timeout_ms: u64,
    /// How long librdkafka waits to fill a batch before sending it (`linger.ms`).
    pub linger_ms: u64,
    /// How long [`KafkaPublisher::connect`](crate::KafkaPublisher::connect) waits for the
    /// topic's metadata before it reports Kafka unreachable.
    pub connect_timeout_ms: u64,
    /// librdkafka properties passed through as they are (see [Pass-through
    /// properties](KafkaSettings#pass-through-properties) for how names are spelled).
    #[serde(deserialize_with = "property_map")]
    pub properties: BTreeMap<String, String>,
}

impl Default for KafkaSettings {
    fn default() -> Self {
        KafkaSettings {
            brokers: None,
            topic: DEFAULT_TOPIC.to_owned(),
            message_timeout_ms: 30_000,
            linger_ms: 5,
            connect_timeout_ms: 10_000,
            properties: BTreeMap::new(),
        }
    }
}

impl std::fmt::Debug for KafkaSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KafkaSettings")
            .field("brokers", &self.brokers)
            .field("topic", &self.topic)
            .field("message_timeout_ms", &self.message_timeout_ms)
            .field("linger_ms", &self.linger_ms)
            .field("connect_timeout_ms", &self.connect_timeout_ms)
            .field("properties", &self.properties.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl KafkaSettings {
    /// Settings for `brokers` with every default.
    pub fn new(brokers: impl Into<String>) -> Self {
        KafkaSettings {
            brokers: Some(brokers.into()),
            ..KafkaSettings::default()
        }
    }

    /// Whether Kafka is on: `brokers` is set and not blank.
    pub fn is_enabled(&self) -> bool {
        self.brokers
            .as_deref()
            .is_some_and(|b| !b.trim().is_empty())
    }

    /// [`Self::message_timeout_ms`] as a duration.
    pub fn message_timeout(&self) -> Duration {
        Duration::from_millis(self.message_timeout_ms)
    }

    /// [`Self::connect_timeout_ms`] as a duration.
    pub fn connect_timeout(&self) -> Duration {
        Duration::from_millis(self.connect_timeout_ms)
    }

    /// The brokers, or [`Error::Settings`] when Kafka is off.
    pub(crate) fn required_brokers(&self) -> Result<&str> {
        match self.brokers.as_deref().map(str::trim) {
            Some(brokers) if !brokers.is_empty() => Ok(brokers),
            _ => Err(Error::Settings("kafka.brokers is not set".into())),
        }
    }

    /// The idempotent producer's configuration: the defaults, then the pass-through
    /// properties, then what the publisher relies on.
    pub(crate) fn producer_config(&self) -> Result<ClientConfig> {
        let brokers = self.required_brokers()?;
        if self.topic.trim().is_empty() {
            return Err(Error::Settings("kafka.topic is empty".into()));
        }
        if self.message_timeout_ms == 0 {
            return Err(Error::Settings(
                "kafka.message_timeout_ms must be above 0 (0 would retry forever)".into(),
            ));
        }
        let mut config = ClientConfig::new();
        config.set("client.id", "room-service");
        for (name, value) in resolve(&self.properties, PRODUCER_RULES)? {
            config.set(name, value);
        }
        config
            .set("bootstrap.servers", brokers)
            .set("enable.idempotence", "true")
            .set("acks", "all")
            // A message that fails in flight stops the producer (rebuilt by the publisher)
            // rather than letting a later message of its room through ahead of its retry.
            .set("enable.gapless.guarantee", "true")
            .set("message.timeout.ms", self.message_timeout_ms.to_string())
            .set("linger.ms", self.linger_ms.to_string());
        Ok(config)
    }
}

/// Where a consumer that has no committed offset for a partition starts reading it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OffsetReset {
    /// From the oldest message the topic still holds.
    #[default]
    Earliest,
    /// From the next message published.
    Latest,
}

impl OffsetReset {
    fn as_str(self) -> &'static str {
        match self {
            OffsetReset::Earliest => "earliest",
            OffsetReset::Latest => "latest",
        }
    }
}

/// What an [`EventConsumer`](crate::EventConsumer) needs: where to read, as which consumer
/// group, and how to handle failures and repeats. Deserializes with defaults, so a service's
/// configuration can embed it. `Debug` hides property values.
#[derive(Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EventConsumerSettings {
    /// The bootstrap brokers, `host:port[,host:port...]`.
    pub brokers: String,
    /// The topic, [`DEFAULT_TOPIC`] unless set.
    pub topic: String,
    /// The consumer group: its committed offsets are where the consumer resumes.
    pub group_id: String,
    /// Where to start in a partition the group has no committed offset for.
    pub auto_offset_reset: OffsetReset,
    /// How many recent `event_id`s the consumer remembers to drop repeats; 0 turns
    /// deduplication off.
    pub dedup_capacity: usize,
    /// The first pause before a failed handler call is tried again, in milliseconds.
    pub retry_initial_ms: u64,
    /// The longest pause between tries of a failing handler call, in milliseconds; the pause
    /// doubles up to it.
    pub retry_max_ms: u64,
    /// librdkafka properties passed through as they are, spelled as for
    /// [`KafkaSettings::properties`].
    #[serde(deserialize_with = "property_map")]
    pub properties: BTreeMap<String, String>,
}

impl Default for EventConsumerSettings {
    fn default() -> Self {
        EventConsumerSettings {
            brokers: String::new(),
            topic: DEFAULT_TOPIC.to_owned(),
            group_id: String::new(),
            auto_offset_reset: OffsetReset::Earliest,
            dedup_capacity: 100_000,
            retry_initial_ms: 100,
            retry_max_ms: 30_000,
            properties: BTreeMap::new(),
        }
    }
}

impl std::fmt::Debug for EventConsumerSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventConsumerSettings")
            .field("brokers", &self.brokers)
            .field("topic", &self.topic)
            .field("group_id", &self.group_id)
            .field("auto_offset_reset", &self.auto_offset_reset)
            .field("dedup_capacity", &self.dedup_capacity)
            .field("retry_initial_ms", &self.retry_initial_ms)
            .field("retry_max_ms", &self.retry_max_ms)
            .field("properties", &self.properties.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl EventConsumerSettings {
    /// Settings for group `group_id` reading `brokers`, with every default.
    pub fn new(brokers: impl Into<String>, group_id: impl Into<String>) -> Self {
        EventConsumerSettings {
            brokers: brokers.into(),
            group_id: group_id.into(),
            ..EventConsumerSettings::default()
        }
    }

    /// The consumer's configuration: the defaults, then the pass-through properties, then
    /// what at-least-once delivery relies on.
    pub(crate) fn consumer_config(&self) -> Result<ClientConfig> {
        for (field, value) in [
            ("brokers", &self.brokers),
            ("topic", &self.topic),
            ("group_id", &self.group_id),
        ] {
            if value.trim().is_empty() {
                return Err(Error::Settings(format!("the consumer's {field} is empty")));
            }
        }
        let mut config = ClientConfig::new();
        config.set("client.id", "room-events-consumer");
        for (name, value) in resolve(&self.properties, CONSUMER_RULES)? {
            config.set(name, value);
        }
        config
            .set("bootstrap.servers", self.brokers.trim())
            .set("group.id", &self.group_id)
            .set("auto.offset.reset", self.auto_offset_reset.as_str())
            .set("enable.auto.commit", "true")
            .set("enable.auto.offset.store", "false");
        Ok(config)
    }

    /// The first pause after a handler failure.
    pub(crate) fn retry_initial(&self) -> Duration {
        Duration::from_millis(self.retry_initial_ms.max(1))
    }

    /// The longest pause between handler tries.
    pub(crate) fn retry_max(&self) -> Duration {
        Duration::from_millis(self.retry_max_ms.max(self.retry_initial_ms).max(1))
    }
}

/// What a pass-through property may not do.
enum Rule {
    /// The property is a typed setting: set that instead.
    Typed(&'static str),
    /// The adapter needs this value (any of the spellings listed, compared without case).
    Fixed(&'static [&'static str]),
}

/// The producer's refused and fixed properties.
const PRODUCER_RULES: &[(&str, Rule)] = &[
    ("bootstrap.servers", Rule::Typed("kafka.brokers")),
    ("metadata.broker.list", Rule::Typed("kafka.brokers")),
    (
        "message.timeout.ms",
        Rule::Typed("kafka.message_timeout_ms"),
    ),
    (
        "delivery.timeout.ms",
        Rule::Typed("kafka.message_timeout_ms"),
    ),
    ("linger.ms", Rule::Typed("kafka.linger_ms")),
    ("queue.buffering.max.ms", Rule::Typed("kafka.linger_ms")),
    ("enable.idempotence", Rule::Fixed(&["true"])),
    ("acks", Rule::Fixed(&["all", "-1"])),
    ("request.required.acks", Rule::Fixed(&["all", "-1"])),
    ("enable.gapless.guarantee", Rule::Fixed(&["true"])),
];

/// The consumer's refused and fixed properties.
const CONSUMER_RULES: &[(&str, Rule)] = &[
    ("bootstrap.servers", Rule::Typed("brokers")),
    ("metadata.broker.list", Rule::Typed("brokers")),
    ("group.id", Rule::Typed("group_id")),
    ("auto.offset.reset", Rule::Typed("auto_offset_reset")),
    ("enable.auto.commit", Rule::Fixed(&["true"])),
    ("enable.auto.offset.store", Rule::Fixed(&["false"])),
];

/// librdkafka's properties, settable as text, whose names hold a `_`.
const UNDERSCORED: &[&str] = &["log_level", "enabled_events"];

/// The librdkafka name a written property name stands for: `_` is `.` (but in
/// [`UNDERSCORED`] names), case is ignored.
fn librdkafka_name(written: &str) -> String {
    let name = written.trim().to_ascii_lowercase();
    if UNDERSCORED.contains(&name.as_str()) {
        name
    } else {
        name.replace('_', ".")
    }
}

/// The pass-through properties by librdkafka name, checked against `rules`. Of two spellings
/// of one name, the one with `_` (an environment variable's) wins.
fn resolve(
    properties: &BTreeMap<String, String>,
    rules: &[(&str, Rule)],
) -> Result<BTreeMap<String, String>> {
    let mut resolved: BTreeMap<String, (bool, String)> = BTreeMap::new();
    for (written, value) in properties {
        let name = librdkafka_name(written);
        if name.is_empty() {
            return Err(Error::Settings("a property has an empty name".into()));
        }
        let from_env = written.contains('_');
        match resolved.get(&name) {
            Some((true, _)) if !from_env => {}
            _ => {
                resolved.insert(name, (from_env, value.clone()));
            }
        }
    }
    for (name, (_, value)) in &resolved {
        let Some((_, rule)) = rules.iter().find(|(locked, _)| locked == name) else {
            continue;
        };
        match rule {
            Rule::Typed(field) => {
                return Err(Error::Settings(format!(
                    "property {name:?} is set by {field}: set that instead"
                )));
            }
            Rule::Fixed(allowed) => {
                if !allowed.iter().any(|a| a.eq_ignore_ascii_case(value.trim())) {
                    return Err(Error::Settings(format!(
                        "property {name:?} = {value:?} is refused: the adapter relies on \
                         {name}={}; remove the property",
                        allowed[0]
                    )));
                }
            }
        }
    }
    Ok(resolved
        .into_iter()
        .map(|(name, (_, value))| (name, value))
        .collect())
}

/// A property value as configuration layers give it: TOML and environment variables may
/// turn `5` or `true` into a number or a boolean.
#[derive(Deserialize)]
#[serde(untagged)]
enum PropertyValue {
    Text(String),
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
}

impl PropertyValue {
    fn into_text(self) -> String {
        match self {
            PropertyValue::Text(text) => text,
            PropertyValue::Bool(b) => b.to_string(),
            PropertyValue::Int(n) => n.to_string(),
            PropertyValue::Uint(n) => n.to_string(),
            PropertyValue::Float(x) => x.to_string(),
        }
    }
}

/// Deserializes a map of property names to scalar values as text.
fn property_map<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<BTreeMap<String, String>, D::Error> {
    let raw = BTreeMap::<String, PropertyValue>::deserialize(deserializer)?;
    Ok(raw
        .into_iter()
        .map(|(name, value)| (name, value.into_text()))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn both_spellings_name_the_same_property_and_the_environment_one_wins() {
        let resolved = resolve(
            &props(&[
                ("sasl.mechanism", "PLAIN"),
                ("SASL_MECHANISM", "SCRAM-SHA-512"),
                ("security_protocol", "SASL_SSL"),
                ("LOG_LEVEL", "7"),
            ]),
            PRODUCER_RULES,
        )
        .unwrap();
        assert_eq!(
            resolved,
            props(&[
                ("log_level", "7"),
                ("sasl.mechanism", "SCRAM-SHA-512"),
                ("security.protocol", "SASL_SSL"),
            ])
        );
    }

    #[test]
    fn properties_that_contradict_the_publisher_are_refused() {
        for (name, value) in [
            ("acks", "1"),
            ("request_required_acks", "0"),
            ("enable.idempotence", "false"),
            ("linger.ms", "10"),
            ("BOOTSTRAP_SERVERS", "elsewhere:9092"),
        ] {
            let error = resolve(&props(&[(name, value)]), PRODUCER_RULES).unwrap_err();
            assert!(matches!(error, Error::Settings(_)), "{name}: {error}");
        }
        // Saying what the publisher does anyway is harmless.
        resolve(
            &props(&[("acks", "-1"), ("enable.idempotence", "TRUE")]),
            PRODUCER_RULES,
        )
        .unwrap();
    }

    #[test]
    fn properties_that_would_lose_at_least_once_are_refused() {
        for (name, value) in [
            ("enable.auto.offset.store", "true"),
            ("enable_auto_commit", "false"),
            ("group.id", "other"),
        ] {
            assert!(resolve(&props(&[(name, value)]), CONSUMER_RULES).is_err());
        }
    }

    #[test]
    fn numbers_and_booleans_become_text() {
        let settings: KafkaSettings = serde_json::from_value(serde_json::json!({
            "brokers": "k:9092",
            "properties": {"batch.num.messages": 5000, "socket.keepalive.enable": true}
        }))
        .unwrap();
        assert_eq!(settings.topic, DEFAULT_TOPIC);
        assert_eq!(settings.properties["batch.num.messages"], "5000");
        assert_eq!(settings.properties["socket.keepalive.enable"], "true");
        let config = settings.producer_config().unwrap();
        assert_eq!(config.get("batch.num.messages"), Some("5000"));
        assert_eq!(config.get("acks"), Some("all"));
        assert_eq!(config.get("enable.idempotence"), Some("true"));
        assert_eq!(config.get("enable.gapless.guarantee"), Some("true"));
    }

    #[test]
    fn debug_hides_property_values() {
        let mut settings = KafkaSettings::new("k:9092");
        settings
            .properties
            .insert("sasl.password".into(), "hunter2".into());
        let shown = format!("{settings:?}");
        assert!(shown.contains("sasl.password"), "{shown}");
        assert!(!shown.contains("hunter2"), "{shown}");
    }

    #[test]
    fn kafka_is_off_without_brokers() {
        let settings = KafkaSettings::default();
        assert!(!settings.is_enabled());
        assert!(matches!(
            settings.producer_config(),
            Err(Error::Settings(_))
        ));
    }
}
