//! Tencent IM, when `[im]` is configured: display events go to each room's IM group through
//! [`ImMessenger`] (beside the node's own event streams), clients get their IM credentials
//! from [`ImClient::sign_user`], and the groups follow the rooms — created, destroyed, members
//! muted and banned — by [`run_group_effects`], driven from the durable facts on the Kafka
//! topic. Chat switched off in a room mutes its members in the group (all but the owner and
//! the admins, and whoever joins while it is off); switched on, it lifts those mutes and keeps
//! each member's own chat mute.
//!
//! The group effects are durable by the topic's consumer offsets: an effect's fact is
//! committed only once Tencent has done it or refused it for good, so a crash or an IM outage
//! delays effects and loses none; a room's effects keep their order (one partition per room).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use adapters_mq::{EventConsumer, EventConsumerSettings};
use adapters_tencent_im::{DispatcherHandle, ImClient, ImError, ImMessenger, group_id};
use anyhow::Context;
use room_app::RoomService;
use room_domain::{Event, EventEnvelope, RoomId, RoomState, Timestamp, UserId};
use tokio_util::sync::CancellationToken;

use crate::config::Settings;

/// The default consumer group of the group effects (`workers.im_effects_group`): every node
/// that runs them shares the topic's partitions in it.
pub const GROUP_EFFECTS_CONSUMER_GROUP: &str = "room-service-im-group-effects";

/// How long chat switched off mutes a member in the group, in seconds (30 days): switching it
/// on lifts the mute sooner; a room that stays silent longer gets the mute renewed by its
/// joins.
const CHAT_OFF_MUTE_SECS: u64 = 30 * 24 * 3600;

/// Rooms whose chat setting the effects remember, at most; beyond, the memory starts over
/// (the next join of a forgotten room reads the room again).
const CHAT_SETTINGS_KEPT: usize = 100_000;

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

/// Hands display events on to IM, but only a share of the robot events (robot gifts, joins and
/// leaves, [`Event::is_robot`]): which ones is decided by the event's id, so every
/// node that might send it decides alike. Human events all pass.
pub(crate) struct RobotSampling {
    /// The messenger events go on to.
    pub inner: room_app::ports::MessengerRef,
    /// Robot events kept per million.
    pub per_million: u64,
}

impl RobotSampling {
    fn keeps(&self, message: &room_app::ports::DisplayMessage) -> bool {
        if !message.envelope.event.is_robot() {
            return true;
        }
        use std::hash::BuildHasher;
        // A fixed-key hasher: the same event draws the same number on every node of a build.
        let draw =
            std::hash::BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default()
                .hash_one(&message.envelope.event_id);
        draw % 1_000_000 < self.per_million
    }
}

#[async_trait::async_trait]
impl room_app::ports::Messenger for RobotSampling {
    async fn publish(&self, room_id: &RoomId, mut messages: Vec<room_app::ports::DisplayMessage>) {
        let before = messages.len();
        messages.retain(|message| self.keeps(message));
        let dropped = before - messages.len();
        if dropped > 0 {
            metrics::counter!("room_im_robot_events_sampled_out_total").increment(dropped as u64);
        }
        if !messages.is_empty() {
            self.inner.publish(room_id, messages).await;
        }
    }
}

/// Consumes the topic's durable facts as consumer group `workers.im_effects_group` and makes each
/// room's IM group follow them, until `cancel` fires.
pub(crate) async fn run_group_effects(
    client: ImClient,
    service: Arc<RoomService>,
    settings: &Settings,
    cancel: CancellationToken,
) -> anyhow::Result<()> {
    let brokers = settings
        .kafka
        .brokers
        .clone()
        .context("IM group effects read the Kafka topic: set ROOM__KAFKA__BROKERS")?;
    let mut consumer = EventConsumerSettings::new(brokers, &settings.workers.im_effects_group);
    consumer.topic = settings.kafka.topic.clone();
    consumer.properties = settings.kafka.properties.clone();
    let consumer = EventConsumer::subscribe(&consumer).context("cannot read the Kafka topic")?;
    let effects = GroupEffects {
        client,
        service,
        bans: Arc::new(AtomicBool::new(true)),
        chat_on: Arc::default(),
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
    /// Reads a room's members and settings when its chat setting matters.
    service: Arc<RoomService>,
    /// Off once Tencent answered that the app's plan has no bans (10007).
    bans: Arc<AtomicBool>,
    /// Whether each room's chat is on, as last seen (bounded by [`CHAT_SETTINGS_KEPT`]).
    chat_on: Arc<Mutex<HashMap<RoomId, bool>>>,
}

/// What chat mutes a room's group should hold now: each member's mute in seconds, 0 for none.
fn chat_mutes(state: &RoomState) -> Vec<(UserId, u64)> {
    let moderators =
        |user: &UserId| state.owner.as_ref() == Some(user) || state.admins.contains(user);
    state
        .members
        .keys()
        .map(|user| {
            let own = state
                .chat_mutes
                .get(user)
                .and_then(|until| seconds_until(*until));
            let secs = if !state.settings.chat_enabled && !moderators(user) {
                CHAT_OFF_MUTE_SECS
            } else {
                own.unwrap_or(0)
            };
            (user.clone(), secs)
        })
        .collect()
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
    fn remember_chat(&self, room: &RoomId, enabled: bool) {
        let mut known = self.chat_on.lock().unwrap_or_else(|p| p.into_inner());
        if known.len() >= CHAT_SETTINGS_KEPT && !known.contains_key(room) {
            known.clear();
        }
        known.insert(room.clone(), enabled);
    }

    /// Whether the room's chat is on: as remembered, else as the room says.
    async fn chat_enabled(&self, room: &RoomId) -> room_app::Result<bool> {
        let known = self
            .chat_on
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(room)
            .copied();
        if let Some(enabled) = known {
            return Ok(enabled);
        }
        let enabled = self
            .service
            .runtime()
            .query(room, |state| state.settings.chat_enabled)
            .await?;
        self.remember_chat(room, enabled);
        Ok(enabled)
    }

    /// Sets every member's group mute (or only `only`'s) to what the room's chat setting,
    /// their role and their own chat mute say now. The room is read as it is now, not as it
    /// was at the fact: a fact handled late (a worker that restarts reads facts again) then
    /// sets what holds today.
    async fn sync_chat(
        &self,
        room: &RoomId,
        group: &str,
        only: Option<&UserId>,
    ) -> Result<(), ImError> {
        let only = only.cloned();
        let read = move |state: &RoomState| {
            let mut mutes = chat_mutes(state);
            if let Some(user) = &only {
                mutes.retain(|(member, _)| member == user);
            }
            mutes
        };
        let mutes = match self.service.runtime().query(room, read).await {
            Ok(mutes) => mutes,
            Err(error) if error.is_retryable() => {
                return Err(ImError::Io(format!("room {room} unreadable: {error}")));
            }
            // A room that is gone has no members to mute.
            Err(_) => return Ok(()),
        };
        let mut by_secs: HashMap<u64, Vec<&str>> = HashMap::new();
        for (user, secs) in &mutes {
            by_secs.entry(*secs).or_default().push(user.as_str());
        }
        for (secs, users) in by_secs {
            self.client.forbid_send_msg(group, &users, secs).await?;
        }
        Ok(())
    }

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
                // While chat is off, the chat-off mute covers the member whatever their own.
                match self.chat_enabled(&envelope.room_id).await {
                    Ok(false) => return Ok(()),
                    Err(error) if error.is_retryable() => return Err(error.to_string()),
                    _ => {}
                }
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
            Event::RoomChatEnabledChanged { enabled, .. } => {
                self.remember_chat(&envelope.room_id, *enabled);
                (
                    "forbid_send_msg",
                    self.sync_chat(&envelope.room_id, &group, None).await,
                )
            }
            Event::RoomUserJoined { user, .. } => {
                match self.chat_enabled(&envelope.room_id).await {
                    Ok(true) => return Ok(()),
                    Ok(false) => (
                        "forbid_send_msg",
                        self.sync_chat(&envelope.room_id, &group, Some(user)).await,
                    ),
                    // The room cannot be read now: the same fact is tried again.
                    Err(error) if error.is_retryable() => return Err(error.to_string()),
                    Err(_) => return Ok(()),
                }
            }
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

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use room_app::ports::{DisplayMessage, Messenger};
    use room_domain::{Event, EventEnvelope, ImPriority, Role, RoomId, Timestamp, UserId};

    use super::*;

    /// Counts what reaches it.
    #[derive(Default)]
    struct Counting(Mutex<Vec<u64>>);

    #[async_trait::async_trait]
    impl Messenger for Counting {
        async fn publish(&self, _room_id: &RoomId, messages: Vec<DisplayMessage>) {
            self.0
                .lock()
                .unwrap()
                .extend(messages.iter().map(|m| m.envelope.seq));
        }
    }

    fn join(room: &RoomId, seq: u64, robot: bool) -> DisplayMessage {
        let event = Event::RoomUserJoined {
            user: UserId::new(if robot { "robot-1" } else { "alice" }).unwrap(),
            role: Role::Member,
            vip_level: 0,
            joined_at: Timestamp(0),
            robot,
        };
        DisplayMessage {
            envelope: EventEnvelope::new(room.clone(), seq, Timestamp(0), &event),
            priority: ImPriority::Normal,
            coalesce_key: None,
        }
    }

    async fn kept(per_million: u64, robot: bool) -> usize {
        let counting = Arc::new(Counting::default());
        let sampling = RobotSampling {
            inner: counting.clone(),
            per_million,
        };
        let room = RoomId::new("room-1").unwrap();
        for seq in 1..=10_000 {
            sampling.publish(&room, vec![join(&room, seq, robot)]).await;
        }
        counting.0.lock().unwrap().len()
    }

    #[tokio::test]
    async fn only_the_configured_share_of_robot_events_reaches_im() {
        assert_eq!(kept(0, true).await, 0, "a share of 0 sends no robot event");
        assert_eq!(
            kept(1_000_000, true).await,
            10_000,
            "a share of 1 sends them all"
        );
        let tenth = kept(100_000, true).await;
        assert!((800..=1_200).contains(&tenth), "about a tenth: {tenth}");
        assert_eq!(kept(0, false).await, 10_000, "human events all pass");
    }
}
