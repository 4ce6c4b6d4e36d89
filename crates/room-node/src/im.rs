//! Tencent IM, when `[im]` is configured: display events go to each room's IM group through
//! [`ImMessenger`] (beside the node's own event streams), clients get their IM credentials
//! from [`ImClient::sign_user`], and the groups follow the rooms — created, destroyed, members
//! muted and banned — by [`GroupEffects`], a consumer of the durable facts (fed from the Kafka
//! topic or the store's outbox: see [`crate::facts`]). A member's group mute is what the room
//! says of them when the fact is handled: their own chat mute, or, while chat is switched off,
//! a mute for all but the owner and the admins; it is set again when they join, are muted or
//! unmuted, or become or stop being an admin, and for every member when chat is switched off
//! or on.
//!
//! The group effects are durable by the consumer's position: a fact is passed only once
//! Tencent has done its effect or refused it for good, so a crash or an IM outage delays
//! effects and loses none; a room's effects keep their order. A new room's group is also
//! created at once, before the creation is answered ([`GroupCreation`], handed the creation
//! early), so that it does not wait for the consumer, nor for a consumer that died to be
//! replaced; the durable fact creates it again if that failed (10025: it exists, done).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use adapters_tencent_im::{DispatcherHandle, ImClient, ImError, ImMessenger, group_id};
use anyhow::Context;
use room_app::RoomService;
use room_app::consumers::{FactError, FactHandler};
use room_domain::{Event, EventEnvelope, RoomId, RoomState, Timestamp, UserId};
use tokio_util::sync::CancellationToken;

use crate::config::Settings;

/// How long chat switched off mutes a member in the group, in seconds (30 days): switching it
/// on lifts the mute sooner; a member who joins (again) while it is off is muted anew.
const CHAT_OFF_MUTE_SECS: u64 = 30 * 24 * 3600;

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

/// Hands display events on to IM, but only a share of the robot events ([`Event::is_robot`]:
/// robot gifts, joins, leaves and seat changes). A robot's joins, leaves and seat changes in a
/// room are kept or dropped together (drawn by room and robot, so an audience never shows a
/// join without its leave), its gifts one by one (drawn by event id); the draw is a SHA-256, so
/// every node and every build decides alike. Human events all pass.
pub(crate) struct RobotSampling {
    /// The messenger events go on to.
    pub inner: room_app::ports::MessengerRef,
    /// Robot events kept per million.
    pub per_million: u64,
}

impl RobotSampling {
    fn keeps(&self, message: &room_app::ports::DisplayMessage) -> bool {
        use sha2::{Digest, Sha256};
        let envelope = &message.envelope;
        let robot = match &envelope.event {
            Event::RoomUserJoined { user, .. } | Event::RoomUserLeft { user, .. } => Some(user),
            Event::RoomMicChanged { change, .. } => match change {
                room_domain::MicChange::Up { user, .. }
                | room_domain::MicChange::Down { user, .. }
                | room_domain::MicChange::Published { user, .. } => Some(user),
                room_domain::MicChange::Muted { .. } => None,
            },
            _ => None,
        };
        if !envelope.event.is_robot() {
            return true;
        }
        let key = match robot {
            Some(user) => format!("{}\u{0}{user}", envelope.room_id),
            None => envelope.event_id.clone(),
        };
        let digest = Sha256::digest(key.as_bytes());
        let draw = u64::from_be_bytes(digest[..8].try_into().expect("a SHA-256 has 32 bytes"));
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

/// Creates a new room's IM group from its creation fact (every other fact is none of its
/// business): handed the creation early, as soon as the room is committed, and again by
/// [`GroupEffects`] from the durable fact.
#[derive(Clone)]
pub(crate) struct GroupCreation {
    client: ImClient,
}

impl GroupCreation {
    /// Creation over `client`.
    pub(crate) fn new(client: ImClient) -> Self {
        GroupCreation { client }
    }
}

#[async_trait::async_trait]
impl FactHandler for GroupCreation {
    async fn handle(&self, envelope: &EventEnvelope) -> Result<(), FactError> {
        let Event::RoomCreated { name, .. } = &envelope.event else {
            return Ok(());
        };
        let result = self
            .client
            .create_group(&group_id(&envelope.room_id), name)
            .await
            .map_err(EffectError::from);
        settle("create_group", result)
    }
}

/// Applies durable facts to IM groups.
#[derive(Clone)]
pub(crate) struct GroupEffects {
    creation: GroupCreation,
    /// Reads a room's members and settings when its chat setting matters.
    service: Arc<RoomService>,
    /// Off once Tencent answered that the app's plan has no bans (10007).
    bans: Arc<AtomicBool>,
}

impl GroupEffects {
    /// The effects over `client`, reading rooms through `service`.
    pub(crate) fn new(client: ImClient, service: Arc<RoomService>) -> Self {
        GroupEffects {
            creation: GroupCreation::new(client),
            service,
            bans: Arc::new(AtomicBool::new(true)),
        }
    }

    fn client(&self) -> &ImClient {
        &self.creation.client
    }
}

/// Counts an effect's outcome in `room_im_group_effects_total{effect, outcome}` and says
/// whether it is done, to be tried again, or refused for good.
fn settle(effect: &'static str, result: Result<(), EffectError>) -> Result<(), FactError> {
    let outcome = match &result {
        Ok(()) => "done",
        Err(EffectError::Room(_)) => "room_unreadable",
        Err(error) if error.is_retryable() => "retried",
        Err(_) => "refused",
    };
    metrics::counter!("room_im_group_effects_total", "effect" => effect, "outcome" => outcome)
        .increment(1);
    match result {
        Ok(()) => Ok(()),
        Err(error) => {
            let retryable = error.is_retryable();
            let error = EffectFailed { effect, error };
            Err(if retryable {
                FactError::retryable(error)
            } else {
                FactError::permanent(error)
            })
        }
    }
}

/// An effect that did not happen, named.
#[derive(Debug, thiserror::Error)]
#[error("{effect} failed")]
struct EffectFailed {
    effect: &'static str,
    #[source]
    error: EffectError,
}

/// Why a group effect did not happen: the room could not be read, or IM refused.
#[derive(Debug, thiserror::Error)]
enum EffectError {
    #[error("room unreadable")]
    Room(#[source] room_app::Error),
    #[error(transparent)]
    Im(#[from] ImError),
}

impl EffectError {
    fn is_retryable(&self) -> bool {
        match self {
            EffectError::Room(error) => error.is_retryable(),
            EffectError::Im(error) => error.is_retryable(),
        }
    }
}

/// The group mute `user` should hold now, in seconds (0: none), or `None` when they are not a
/// member: their own chat mute, or, while chat is off, [`CHAT_OFF_MUTE_SECS`] for all but the
/// owner and the admins.
fn mute_of(state: &RoomState, user: &UserId, now: Timestamp) -> Option<u64> {
    state.members.get(user)?;
    let moderator = state.owner.as_ref() == Some(user) || state.admins.contains(user);
    if !state.settings.chat_enabled && !moderator {
        return Some(CHAT_OFF_MUTE_SECS);
    }
    let own = state
        .chat_mutes
        .get(user)
        .and_then(|until| seconds_between(now, *until));
    Some(own.unwrap_or(0))
}

/// Whole seconds from `now` until `until`, rounded up; `None` when it has passed.
fn seconds_between(now: Timestamp, until: Timestamp) -> Option<u64> {
    let left = until.0.saturating_sub(now.0);
    (left > 0).then(|| u64::try_from(left).unwrap_or(0).div_ceil(1000).max(1))
}

impl GroupEffects {
    /// Sets the group mute of `only`, or of every member, to what the room says now
    /// ([`mute_of`]). The room is read as it is when the fact is handled, not as it was at the
    /// fact: a fact handled late (a worker that restarts reads facts again) then sets what
    /// holds today.
    async fn sync_chat(
        &self,
        room: &RoomId,
        group: &str,
        only: Option<&UserId>,
    ) -> Result<(), EffectError> {
        let now = self.service.ports().clock.now();
        let only = only.cloned();
        let read = move |state: &RoomState| -> Vec<(UserId, u64)> {
            match &only {
                Some(user) => mute_of(state, user, now)
                    .map(|secs| (user.clone(), secs))
                    .into_iter()
                    .collect(),
                None => state
                    .members
                    .keys()
                    .filter_map(|user| Some((user.clone(), mute_of(state, user, now)?)))
                    .collect(),
            }
        };
        let mutes = match self.service.runtime().query(room, read).await {
            Ok(mutes) => mutes,
            Err(error) if error.is_retryable() => return Err(EffectError::Room(error)),
            // A room that is gone has no members to mute.
            Err(_) => return Ok(()),
        };
        let mut by_secs: HashMap<u64, Vec<&str>> = HashMap::new();
        for (user, secs) in &mutes {
            by_secs.entry(*secs).or_default().push(user.as_str());
        }
        for (secs, users) in by_secs {
            self.client().forbid_send_msg(group, &users, secs).await?;
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl FactHandler for GroupEffects {
    /// Does what `envelope` asks of its room's group. A retryable failure is returned as
    /// such, so that the consumer tries the same fact again (and passes nothing after it); a
    /// permanent one is passed over (logged and counted by the consumer).
    async fn handle(&self, envelope: &EventEnvelope) -> Result<(), FactError> {
        let group = group_id(&envelope.room_id);
        let client = self.client();
        let (effect, result) = match &envelope.event {
            Event::RoomCreated { .. } => return self.creation.handle(envelope).await,
            Event::RoomClosed { .. } => (
                "destroy_group",
                client
                    .destroy_group(&group)
                    .await
                    .map_err(EffectError::from),
            ),
            Event::RoomUserMuted { user, .. }
            | Event::RoomUserJoined { user, .. }
            | Event::RoomAdminChanged { user, .. } => (
                "forbid_send_msg",
                self.sync_chat(&envelope.room_id, &group, Some(user)).await,
            ),
            Event::RoomChatEnabledChanged { .. } => (
                "forbid_send_msg",
                self.sync_chat(&envelope.room_id, &group, None).await,
            ),
            Event::RoomUserKicked {
                user,
                ban_until: Some(until),
                ..
            } if self.bans.load(Ordering::Relaxed) => {
                let now = self.service.ports().clock.now();
                match seconds_between(now, *until) {
                    Some(secs) => (
                        "ban_group_member",
                        client
                            .ban_group_member(
                                &group,
                                &[user.as_str()],
                                secs,
                                "banned from the room",
                            )
                            .await
                            .map_err(EffectError::from),
                    ),
                    None => return Ok(()),
                }
            }
            Event::RoomUserUnbanned { user, .. } if self.bans.load(Ordering::Relaxed) => (
                "unban_group_member",
                client
                    .unban_group_member(&group, &[user.as_str()])
                    .await
                    .map_err(EffectError::from),
            ),
            _ => return Ok(()),
        };
        if let Err(EffectError::Im(ImError::NotPermitted { info })) = &result
            && effect.ends_with("ban_group_member")
        {
            metrics::counter!("room_im_group_effects_total", "effect" => effect, "outcome" => "refused")
                .increment(1);
            if self.bans.swap(false, Ordering::Relaxed) {
                tracing::warn!(
                    info = %info,
                    "Tencent IM refuses bans for this app (10007): IM bans are off until \
                     restart; kicked users are still kept out of the room"
                );
            }
            return Ok(());
        }
        settle(effect, result)
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
            user: UserId::new(if robot {
                format!("robot-{seq}")
            } else {
                "alice".to_owned()
            })
            .unwrap(),
            role: Role::Member,
            vip_level: 0,
            joined_at: Timestamp(0),
            robot,
            nickname: None,
            avatar_url: None,
            entry_effect_id: None,
            vehicle_id: None,
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

    #[test]
    fn a_members_group_mute_is_their_own_or_chat_off_for_all_but_moderators() {
        let id = |name: &str| UserId::new(name).unwrap();
        let mut state = RoomState::new(RoomId::new("room-1").unwrap());
        state.owner = Some(id("owner"));
        for name in ["owner", "admin", "alice", "bob"] {
            state.members.insert(
                id(name),
                room_domain::Member {
                    role: Role::Member,
                    vip_level: 0,
                    joined_at: Timestamp(0),
                    robot: false,
                },
            );
        }
        state.admins.insert(id("admin"));
        let now = Timestamp(1_000_000);
        state
            .chat_mutes
            .insert(id("alice"), Timestamp(now.0 + 90_500));
        state.chat_mutes.insert(id("bob"), Timestamp(now.0 - 1));
        state.settings.chat_enabled = true;
        assert_eq!(
            mute_of(&state, &id("alice"), now),
            Some(91),
            "her own, rounded up"
        );
        assert_eq!(
            mute_of(&state, &id("bob"), now),
            Some(0),
            "a mute that ran out"
        );
        assert_eq!(mute_of(&state, &id("admin"), now), Some(0));
        assert_eq!(mute_of(&state, &id("carol"), now), None, "not a member");
        state.settings.chat_enabled = false;
        for name in ["alice", "bob"] {
            assert_eq!(mute_of(&state, &id(name), now), Some(CHAT_OFF_MUTE_SECS));
        }
        for name in ["owner", "admin"] {
            assert_eq!(mute_of(&state, &id(name), now), Some(0), "{name} may speak");
        }
    }

    #[tokio::test]
    async fn a_robots_join_and_leave_in_a_room_are_kept_or_dropped_together() {
        let counting = Arc::new(Counting::default());
        let sampling = RobotSampling {
            inner: counting.clone(),
            per_million: 500_000,
        };
        let room = RoomId::new("room-1").unwrap();
        let mut kept_joins = Vec::new();
        for n in 0..200u64 {
            let robot = UserId::new(format!("robot-{n}")).unwrap();
            let joined = Event::RoomUserJoined {
                user: robot.clone(),
                role: Role::Member,
                vip_level: 0,
                joined_at: Timestamp(0),
                robot: true,
                nickname: None,
                avatar_url: None,
                entry_effect_id: None,
                vehicle_id: None,
            };
            let left = Event::RoomUserLeft {
                user: robot,
                reason: room_domain::LeaveReason::Left,
                robot: true,
            };
            for (seq, event) in [(2 * n + 1, joined), (2 * n + 2, left)] {
                let message = DisplayMessage {
                    envelope: EventEnvelope::new(room.clone(), seq, Timestamp(0), &event),
                    priority: ImPriority::Normal,
                    coalesce_key: None,
                };
                sampling.publish(&room, vec![message]).await;
            }
            kept_joins.push(2 * n + 1);
        }
        let seen = counting.0.lock().unwrap().clone();
        assert!(
            !seen.is_empty() && seen.len() < 400,
            "a share: {}",
            seen.len()
        );
        for join in kept_joins {
            assert_eq!(
                seen.contains(&join),
                seen.contains(&(join + 1)),
                "join {join} and its leave go together"
            );
        }
    }
}
