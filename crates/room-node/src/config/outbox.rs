//! `[outbox]`: publishing the outbox to Kafka, reading it in process without Kafka, and its
//! retention.

use serde::{Deserialize, Serialize};

use super::reference::Section;

/// `[outbox]`: publishing the outbox's durable facts to Kafka, and deleting delivered rows.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct OutboxSettings {
    /// Rows published per batch (one read, one broker round, one update).
    pub publish_batch: u32,
    /// How often the publisher looks for new rows when the outbox is drained, in
    /// milliseconds: the commit-to-broker lag of a quiet outbox is at most about this.
    pub publish_every_ms: u64,
    /// Delivered rows are deleted this many days after delivery
    /// (`ROOM__OUTBOX__RETENTION_DAYS`); undelivered rows are never deleted. Without Kafka, a
    /// row counts as delivered once every in-process consumer has passed it. Each room's
    /// command log is pruned behind its newest snapshot after as long.
    pub retention_days: u64,
    /// How often the retention pass runs, in seconds.
    pub retention_every_secs: u64,
    /// Rows one retention statement deletes at most.
    pub retention_batch: u32,
    /// Without Kafka: how often an in-process consumer of the durable facts (the IM group
    /// effects) looks for new rows in the outbox once it has read them all, in milliseconds.
    pub consume_every_ms: u64,
}

impl Default for OutboxSettings {
    fn default() -> Self {
        OutboxSettings {
            publish_batch: 1000,
            publish_every_ms: 50,
            retention_days: 3,
            retention_every_secs: 60,
            retention_batch: 1000,
            consume_every_ms: 100,
        }
    }
}

/// What `[outbox]` and each of its keys are for, in the reference (`docs/configuration.md`).
pub(super) const SECTION: Section = Section {
    name: "outbox",
    about: "Publishing the outbox's durable facts to Kafka, reading them in process without \
        Kafka, and deleting what was delivered.",
    keys: &[
        (
            "publish_batch",
            "Rows published per round (one read, one broker round, one update).",
        ),
        (
            "publish_every_ms",
            "How often the publisher looks for new rows once the outbox is drained, in \
             milliseconds: the commit-to-broker lag of a quiet outbox is at most about this.",
        ),
        (
            "retention_days",
            "Delivered rows are deleted this many days after delivery (undelivered rows never \
             are), and each room's events and commands this long after they were applied, once its \
             newest snapshot covers them (a reconnect past them gets `resync`; a repeat of an \
             older command id may no longer be recognised). Without Kafka, a row counts as \
             delivered once every in-process consumer of the durable facts (the IM group effects, \
             when IM is configured) has passed it, and at once when there is none.",
        ),
        (
            "retention_every_secs",
            "How often the retention pass runs, in seconds.",
        ),
        (
            "retention_batch",
            "The most rows one retention statement deletes.",
        ),
        (
            "consume_every_ms",
            "Without Kafka, how often an in-process consumer of the durable facts (the IM group \
             effects) looks for new rows in the outbox once it has read them all, in \
             milliseconds; each reads `publish_batch` rows at a time, after its stored position.",
        ),
    ],
};
