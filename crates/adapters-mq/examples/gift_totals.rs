//! A service of its own that reads the room events topic and prints, as gifts arrive, the
//! coins given per room and received per user: how another Rust service reuses
//! `room-domain`'s types through [`EventConsumer`].
//!
//! ```text
//! cargo run -p adapters-mq --example gift_totals -- [BROKERS [TOPIC]]
//! ```
//!
//! Brokers and topic come from the arguments, else from `ROOM_KAFKA_BROKERS` and
//! `ROOM_KAFKA_TOPIC` (default `127.0.0.1:9092` and `room.events.v1`); the consumer group
//! from `ROOM_KAFKA_GROUP` (default `gift-totals`). Ctrl-C stops it after committing what it
//! has read. Totals live in memory, so a restart counts from the group's committed offsets
//! on: a real service would keep them, and the last `seq` applied per room, in its store.

#![allow(
    clippy::print_stdout,
    reason = "the example's output is what it prints"
)]

use std::collections::BTreeMap;
use std::convert::Infallible;

use adapters_mq::{DEFAULT_TOPIC, EventConsumer, EventConsumerSettings};
use room_domain::{Coins, Event, EventEnvelope, RoomId, UserId};
use tokio_util::sync::CancellationToken;

/// What the gifts of one room add up to.
#[derive(Debug, Default)]
struct RoomTotals {
    /// Coins senders paid.
    given: i64,
    /// Coins each recipient got.
    received: BTreeMap<UserId, i64>,
}

/// The totals of every room seen.
#[derive(Debug, Default)]
struct GiftTotals {
    rooms: BTreeMap<RoomId, RoomTotals>,
}

impl GiftTotals {
    /// Adds a gift, returning the line to print; other events are not gifts.
    fn record(&mut self, envelope: &EventEnvelope) -> Option<String> {
        let Event::RoomGiftSent(gift) = &envelope.event else {
            return None;
        };
        let room = self.rooms.entry(envelope.room_id.clone()).or_default();
        room.given = room.given.saturating_add(gift.total_value.0);
        let each: Coins = gift.value_per_recipient();
        for recipient in &gift.recipients {
            let received = room.received.entry(recipient.clone()).or_default();
            *received = received.saturating_add(each.0);
        }
        let received: Vec<String> = room
            .received
            .iter()
            .map(|(user, coins)| format!("{user}={coins}"))
            .collect();
        Some(format!(
            "room {} seq {}: {} sent {} x{} ({} coins) -> room total {} coins; received: {}",
            envelope.room_id,
            envelope.seq,
            gift.sender,
            gift.gift_id,
            gift.count,
            gift.total_value.0,
            room.given,
            received.join(", ")
        ))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let brokers = args
        .next()
        .or_else(|| std::env::var("ROOM_KAFKA_BROKERS").ok())
        .unwrap_or_else(|| "127.0.0.1:9092".to_owned());
    let topic = args
        .next()
        .or_else(|| std::env::var("ROOM_KAFKA_TOPIC").ok())
        .unwrap_or_else(|| DEFAULT_TOPIC.to_owned());
    let group = std::env::var("ROOM_KAFKA_GROUP").unwrap_or_else(|_| "gift-totals".to_owned());

    let mut settings = EventConsumerSettings::new(&brokers, group);
    settings.topic = topic;
    let consumer = EventConsumer::subscribe(&settings)?;
    println!("reading {} from {brokers}; Ctrl-C stops", consumer.topic());

    let cancel = CancellationToken::new();
    tokio::spawn({
        let cancel = cancel.clone();
        async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
            }
        }
    });

    let mut totals = GiftTotals::default();
    consumer
        .run(
            move |envelope| {
                // The handler runs one event at a time, so the totals need no lock.
                if let Some(line) = totals.record(&envelope) {
                    println!("{line}");
                }
                async { Ok::<(), Infallible>(()) }
            },
            cancel,
        )
        .await?;
    println!("stopped");
    Ok(())
}
