//! [`RedisDisplay`]: a room's display events reach the event-stream watchers of every node,
//! not only those connected to the node that runs the room.
//!
//! The node that commits hands each commit's display events to its own watchers at once (the
//! `local` messenger) and queues them for Redis; one publisher task per node sends them in
//! queue order (`PUBLISH {prefix}room:display:{room_id}`, the payload naming the node), so a
//! room's events leave in commit order. One relay task per node subscribes to every room's
//! channel (`PSUBSCRIBE`) and hands what other nodes published to its local messenger, which
//! drops the events of rooms nobody watches on that node. Display is best effort, as
//! everywhere: a full queue drops (counted), a failed publish is counted and logged, a lost
//! subscription is opened again with a backoff; clients repair from the snapshot and the
//! stream's `Last-Event-ID` replay.
//!
//! Every node receives every room's display events: the cost grows with events times nodes.
//! That suits the built-in stream, which is the embedded mode's display; Tencent IM groups are
//! the display of large deployments.

use std::time::Duration;

use async_trait::async_trait;
use futures_util::StreamExt;
use room_app::ports::{DisplayMessage, Messenger, MessengerRef};
use room_domain::{EventEnvelope, RoomId};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::Result;
use crate::client::{Client, unavailable};

/// The longest wait before a lost subscription is opened again.
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// What a [`RedisDisplay`] needs. `Debug` leaves the URL out: it may hold a password.
#[derive(Clone)]
pub struct RedisDisplaySettings {
    /// `redis://host:port/db`.
    pub url: String,
    /// Prepended to every channel; every node of a cluster uses the same.
    pub key_prefix: String,
    /// This node's id: the relay skips what this node published itself.
    pub node_id: String,
    /// Commits' display batches waiting for the publisher; beyond it they are dropped.
    pub queue: usize,
    /// How long one publish may take.
    pub op_timeout: Duration,
}

impl std::fmt::Debug for RedisDisplaySettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisDisplaySettings")
            .field("url", &"[REDACTED]")
            .field("key_prefix", &self.key_prefix)
            .field("node_id", &self.node_id)
            .field("queue", &self.queue)
            .field("op_timeout", &self.op_timeout)
            .finish()
    }
}

impl RedisDisplaySettings {
    /// Settings with the defaults: no key prefix, 10,000 queued batches, 1 s per publish.
    pub fn new(url: impl Into<String>, node_id: impl Into<String>) -> Self {
        RedisDisplaySettings {
            url: url.into(),
            key_prefix: String::new(),
            node_id: node_id.into(),
            queue: 10_000,
            op_timeout: Duration::from_secs(1),
        }
    }
}

/// One commit's display events as they cross Redis.
#[derive(Debug, Serialize, Deserialize)]
struct Published {
    /// The node that committed them.
    node: String,
    /// The envelopes, in seq order.
    events: Vec<EventEnvelope>,
}

/// The messenger of a clustered node: local watchers first, then every other node's through
/// Redis ([module docs](self)).
pub struct RedisDisplay {
    local: MessengerRef,
    queue: mpsc::Sender<(RoomId, Vec<EventEnvelope>)>,
}

impl std::fmt::Debug for RedisDisplay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisDisplay").finish_non_exhaustive()
    }
}

impl RedisDisplay {
    /// Connects to Redis, then starts the publisher and the relay, which feed `local` (this
    /// node's watchers) with the other nodes' events until `cancel` is cancelled.
    pub async fn start(
        settings: &RedisDisplaySettings,
        local: MessengerRef,
        cancel: CancellationToken,
    ) -> Result<RedisDisplay> {
        let client = Client::connect(&settings.url, 1, settings.op_timeout).await?;
        let subscriber = redis::Client::open(settings.url.as_str())
            .map_err(|error| room_app::Error::Invalid(format!("bad Redis URL: {error}")))?;
        let channel_prefix = format!("{}room:display:", settings.key_prefix);
        let (queue, pending) = mpsc::channel(settings.queue.max(1));
        tokio::spawn(publish_queued(
            client,
            channel_prefix.clone(),
            settings.node_id.clone(),
            pending,
            cancel.clone(),
        ));
        tokio::spawn(relay(
            subscriber,
            channel_prefix,
            settings.node_id.clone(),
            local.clone(),
            cancel,
        ));
        Ok(RedisDisplay { local, queue })
    }
}

#[async_trait]
impl Messenger for RedisDisplay {
    async fn publish(&self, room_id: &RoomId, messages: Vec<DisplayMessage>) {
        let events = messages.iter().map(|m| m.envelope.clone()).collect();
        self.local.publish(room_id, messages).await;
        if self.queue.try_send((room_id.clone(), events)).is_err() {
            metrics::counter!("room_display_relay_dropped_total").increment(1);
        }
    }
}

/// Sends the queued batches, one at a time, in queue order.
async fn publish_queued(
    client: Client,
    channel_prefix: String,
    node: String,
    mut pending: mpsc::Receiver<(RoomId, Vec<EventEnvelope>)>,
    cancel: CancellationToken,
) {
    loop {
        let (room_id, events) = tokio::select! {
            () = cancel.cancelled() => return,
            next = pending.recv() => match next {
                Some(next) => next,
                None => return,
            },
        };
        let payload = match serde_json::to_vec(&Published {
            node: node.clone(),
            events,
        }) {
            Ok(payload) => payload,
            Err(error) => {
                tracing::error!(room_id = %room_id, error = %error, "cannot encode display events");
                continue;
            }
        };
        let mut publish = redis::cmd("PUBLISH");
        publish
            .arg(format!("{channel_prefix}{room_id}"))
            .arg(payload);
        if let Err(error) = client.query::<i64>(&publish).await {
            metrics::counter!("room_display_relay_errors_total", "side" => "publish").increment(1);
            tracing::debug!(room_id = %room_id, error = %error, "display publish failed");
        }
    }
}

/// Subscribes to every room's channel and hands the other nodes' events to `local`, opening
/// the subscription again after a loss.
async fn relay(
    subscriber: redis::Client,
    channel_prefix: String,
    node: String,
    local: MessengerRef,
    cancel: CancellationToken,
) {
    let mut backoff = Duration::from_millis(100);
    loop {
        let outcome = tokio::select! {
            () = cancel.cancelled() => return,
            outcome = relay_once(&subscriber, &channel_prefix, &node, &local) => outcome,
        };
        metrics::counter!("room_display_relay_errors_total", "side" => "subscribe").increment(1);
        match outcome {
            Ok(()) => tracing::warn!("the display subscription ended; subscribing again"),
            Err(error) => tracing::warn!(error = %error, "display subscription failed"),
        }
        tokio::select! {
            () = cancel.cancelled() => return,
            () = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

async fn relay_once(
    subscriber: &redis::Client,
    channel_prefix: &str,
    node: &str,
    local: &MessengerRef,
) -> Result<()> {
    let mut pubsub = subscriber.get_async_pubsub().await.map_err(unavailable)?;
    pubsub
        .psubscribe(format!("{channel_prefix}*"))
        .await
        .map_err(unavailable)?;
    metrics::gauge!("room_display_relay_subscribed").set(1.0);
    let mut messages = pubsub.on_message();
    while let Some(message) = messages.next().await {
        let Some(room) = message.get_channel_name().strip_prefix(channel_prefix) else {
            continue;
        };
        let (Ok(room_id), Ok(published)) = (
            RoomId::new(room),
            serde_json::from_slice::<Published>(message.get_payload_bytes()),
        ) else {
            metrics::counter!("room_display_relay_errors_total", "side" => "decode").increment(1);
            continue;
        };
        if published.node == node {
            continue;
        }
        let messages = published
            .events
            .into_iter()
            .filter_map(|envelope| {
                let delivery = envelope.event.delivery();
                delivery.im.map(|priority| DisplayMessage {
                    envelope,
                    priority,
                    coalesce_key: delivery.coalesce_key,
                })
            })
            .collect();
        local.publish(&room_id, messages).await;
    }
    metrics::gauge!("room_display_relay_subscribed").set(0.0);
    Ok(())
}
