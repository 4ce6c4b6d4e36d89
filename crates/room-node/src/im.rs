//! Tencent IM, when `[im]` is configured: display events go to each room's IM group through
//! [`ImMessenger`] (beside the node's own event streams), clients get their IM credentials
//! from [`ImClient::sign_user`], and the groups follow the rooms — created, destroyed, members
//! muted and banned — by [`run_group_effects`], driven from the durable facts on the Kafka
//! topic.
//!
//! The group effects are durable by the topic's consumer offsets: an effect's fact is
//! committed only once Tencent has done it or refused it for good, so a crash or an IM outage
//! delays effects and loses none; a room's effects keep their order (one partition per room).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use adapters_mq::{EventConsumer, EventConsumerSettings};
use adapters_tencent_im::{DispatcherHandle, ImClient, ImError, ImMessenger, group_id};
use anyhow::Context;
use room_domain::{Event, EventEnvelope, Timestamp};
use tokio_util::sync::CancellationToken;

use crate::config::Settings;

/// The consumer group of the group effects: every node that runs them shares the topic's
/// partitions in it.
pub const GROUP_EFFECTS_CONSUMER_GROUP: &str = "room-service-im-group-effects";

/// This node's IM adapters.
pub(crate) struct Im {
    /// The REST client (credentials, group effects).
    pub client: ImClient,
    /// The display messenger.
    pub messenger: Arc<ImMessenger>,
    /// Its dispatcher, awaited on shutdown.
    pub dispatcher: DispatcherHandle,
}

impl Im {
    /// IM from the settings, if configured; its dispatcher stops with `cancel`.
    pub(crate) fn start(
        settings: &Settings,
        cancel: CancellationToken,
    ) -> anyhow::Result<Option<Im>> {
        if !settings.im.is_configured() {
            return Ok(None);
        }
        let client =
            ImClient::new(&settings.im).context("cannot set up Tencent IM (ROOM__IM__*)")?;
        let (messenger, dispatcher) =
            ImMessenger::start(client.clone(), &settings.im.display, cancel);
        Ok(Some(Im {
            client,
            messenger: Arc::new(messenger),
            dispatcher,
        }))
    }
}

/// Consumes the topic's durable facts as [`GROUP_EFFECTS_CONSUMER_GROUP`] and makes each
/// room's IM group follow them, until `cancel` fires.
pub(crate) async fn run_group_effects(
    client: ImClient,
    settings: &Settings,
    cancel: CancellationToken,
) -> anyhow::Result<()> {
    let brokers = settings
        .kafka
        .brokers
        .clone()
        .context("IM group effects read the Kafka topic: set ROOM__KAFKA__BROKERS")?;
    let mut consumer = EventConsumerSettings::new(brokers, GROUP_EFFECTS_CONSUMER_GROUP);
    consumer.topic = settings.kafka.topic.clone();
    consumer.properties = settings.kafka.properties.clone();
    let consumer = EventConsumer::subscribe(&consumer).context("cannot read the Kafka topic")?;
    let effects = GroupEffects {
        client,
        bans: Arc::new(AtomicBool::new(true)),
    };
    consumer
        .run(|envelope| effects.apply(envelope), cancel)
        .await
        .context("the IM group effects' consumer failed")
}

/// Applies durable facts to IM groups.
#[derive(Clone)]
struct GroupEffects {
    client: ImClient,
    /// Off once Tencent answered that the app's plan has no bans (10007).
    bans: Arc<AtomicBool>,
}

/// Seconds from now until `until`; `None` when it has passed.
fn seconds_until(until: Timestamp) -> Option<u64> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let left = until.0.saturating_sub(now);
    (left > 0).then(|| u64::try_from(left).unwrap_or(0).div_ceil(1000).max(1))
}

impl GroupEffects {
    /// Does what `envelope` asks of its room's group. A retryable failure is returned, so
    /// that the consumer tries the same fact again (and commits nothing past it); a permanent
    /// one is logged, counted and passed over.
    async fn apply(&self, envelope: EventEnvelope) -> Result<(), String> {
        let group = group_id(&envelope.room_id);
        let (effect, result) = match &envelope.event {
            Event::RoomCreated { name, .. } => {
                ("create_group", self.client.create_group(&group, name).await)
            }
            Event::RoomClosed { .. } => ("destroy_group", self.client.destroy_group(&group).await),
            Event::RoomUserMuted { user, until, .. } => {
                // Unmuted, or a mute that has already run out: mute time 0 lifts it.
                let secs = until.and_then(seconds_until).unwrap_or(0);
                (
                    "forbid_send_msg",
                    self.client
                        .forbid_send_msg(&group, &[user.as_str()], secs)
                        .await,
                )
            }
            Event::RoomUserKicked {
                user,
                ban_until: Some(until),
                ..
            } if self.bans.load(Ordering::Relaxed) => match seconds_until(*until) {
                Some(secs) => (
                    "ban_group_member",
                    self.client
                        .ban_group_member(&group, &[user.as_str()], secs, "banned from the room")
                        .await,
                ),
                None => return Ok(()),
            },
            Event::RoomUserUnbanned { user, .. } if self.bans.load(Ordering::Relaxed) => (
                "unban_group_member",
                self.client
                    .unban_group_member(&group, &[user.as_str()])
                    .await,
            ),
            _ => return Ok(()),
        };
        let outcome = match &result {
            Ok(()) => "done",
            Err(error) if error.is_retryable() => "retried",
            Err(_) => "refused",
        };
        metrics::counter!("room_im_group_effects_total", "effect" => effect, "outcome" => outcome)
            .increment(1);
        match result {
            Ok(()) => Ok(()),
            Err(error) if error.is_retryable() => Err(error.to_string()),
            Err(ImError::NotPermitted { info }) if effect.ends_with("ban_group_member") => {
                if self.bans.swap(false, Ordering::Relaxed) {
                    tracing::warn!(
                        info = %info,
                        "Tencent IM refuses bans for this app (10007): IM bans are off until \
                         restart; kicked users are still kept out of the room"
                    );
                }
                Ok(())
            }
            Err(error) => {
                tracing::error!(
                    room_id = %envelope.room_id,
                    event_id = %envelope.event_id,
                    effect,
                    error = %error,
                    "Tencent IM refused a group effect for good"
                );
                Ok(())
            }
        }
    }
}
