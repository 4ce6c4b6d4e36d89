//! Events: the facts a room records. `evolve` applies them to the state; the runtime delivers
//! them to IM (display) and to the outbox (durable facts) as [`Event::delivery`] says.

use serde::{Deserialize, Serialize};

use crate::ids::{GiftId, OrderId, RocketId, RoomId, SeatIndex, SeatSessionId, UserId};
use crate::money::Coins;
use crate::state::{PasswordHash, Role, RoomResource};
use crate::time::{DayKey, Timestamp, WeekKey};

/// The version of the event format: the `v` of every [`EventEnvelope`]. Golden files pin it.
pub const EVENT_SCHEMA_VERSION: u16 = 1;

/// Something that happened in a room. Serialized adjacently tagged: `{"type": "RoomGiftSent",
/// "payload": {...}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", content = "payload")]
#[non_exhaustive]
pub enum Event {
    /// The room was created.
    RoomCreated {
        /// Its owner.
        owner: UserId,
        /// Its name.
        name: String,
        /// Its mic seats.
        seat_count: u8,
        /// Its region.
        region: String,
        /// When.
        created_at: Timestamp,
    },
    /// Name, notice or cover changed; carries the whole new profile text.
    RoomProfileUpdated {
        /// The name.
        name: String,
        /// The notice.
        notice: String,
        /// The cover URL.
        cover_url: Option<String>,
        /// Who changed it.
        by: Option<UserId>,
    },
    /// The background changed.
    RoomBackgroundChanged {
        /// The new background, or none.
        background_url: Option<String>,
        /// Who changed it.
        by: Option<UserId>,
    },
    /// The public chat was allowed or forbidden.
    RoomChatEnabledChanged {
        /// Whether chat is allowed now.
        enabled: bool,
        /// Who changed it.
        by: Option<UserId>,
    },
    /// The room was locked or unlocked. The hash never leaves the service: see
    /// [`Event::redacted`].
    RoomLockChanged {
        /// Whether the room is locked now.
        locked: bool,
        /// The password hash while locked.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        password_hash: Option<PasswordHash>,
        /// Who changed it.
        by: Option<UserId>,
    },
    /// A message from the platform to the room.
    RoomSystemMessage {
        /// The text.
        text: String,
        /// The platform admin who sent it; `None` for the system.
        by: Option<UserId>,
    },
    /// A platform admin reset parts of the room's profile to their defaults.
    RoomResourcesRevoked {
        /// What was reset.
        resources: Vec<RoomResource>,
        /// The name the room has now, when its name was reset.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// Why, as the admin gave it.
        reason: String,
        /// The admin.
        by: Option<UserId>,
    },
    /// The room closed for good; everyone is out.
    RoomClosed {
        /// Who closed it; `None` for the system.
        by: Option<UserId>,
    },
    /// A user joined.
    RoomUserJoined {
        /// Who.
        user: UserId,
        /// Their role in this room.
        role: Role,
        /// Their VIP level.
        vip_level: u8,
        /// When.
        joined_at: Timestamp,
        /// A robot joined ([`Actor::Robot`](crate::Actor::Robot)): displayed, not durable.
        /// Absent for users.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        robot: bool,
        /// The user's nickname as of the join; absent when they have none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        nickname: Option<String>,
        /// The user's avatar URL as of the join; absent when they have none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        avatar_url: Option<String>,
        /// The entry animation of the user's VIP level as of the join, for the client to
        /// play; absent when the level has none (or the user no VIP level).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        entry_effect_id: Option<String>,
        /// The vehicle of the user's VIP level as of the join; absent when it has none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        vehicle_id: Option<String>,
    },
    /// A user left (by themselves, by eviction, or to another room).
    RoomUserLeft {
        /// Who.
        user: UserId,
        /// Why.
        reason: LeaveReason,
        /// A robot member left: displayed, not durable. Absent for users.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        robot: bool,
    },
    /// A moderator removed a user, maybe with a ban.
    RoomUserKicked {
        /// Who.
        user: UserId,
        /// By whom; `None` for the system.
        by: Option<UserId>,
        /// Banned until then, if banned.
        ban_until: Option<Timestamp>,
        /// The kicked member is a robot. The kick stays durable (a moderator's act), but
        /// whoever counts departures from it can tell a robot's apart. Absent for users.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        robot: bool,
    },
    /// A ban was lifted.
    RoomUserUnbanned {
        /// Who.
        user: UserId,
        /// By whom.
        by: Option<UserId>,
    },
    /// A user was muted on the public screen, or unmuted (`until: None`).
    RoomUserMuted {
        /// Who.
        user: UserId,
        /// Muted until then; `None` unmutes.
        until: Option<Timestamp>,
        /// By whom.
        by: Option<UserId>,
    },
    /// An admin was appointed or dismissed.
    RoomAdminChanged {
        /// Who.
        user: UserId,
        /// Appointed (`true`) or dismissed.
        admin: bool,
        /// By whom.
        by: Option<UserId>,
    },
    /// Something happened on a mic seat.
    RoomMicChanged {
        /// Which seat.
        seat: SeatIndex,
        /// What.
        change: MicChange,
    },
    /// A seat was locked or unlocked.
    RoomMicSeatLocked {
        /// Which seat.
        seat: SeatIndex,
        /// Locked now or not.
        locked: bool,
        /// By whom.
        by: Option<UserId>,
    },
    /// A seat was reserved for VIP or opened to everyone again.
    RoomMicSeatVip {
        /// Which seat.
        seat: SeatIndex,
        /// Reserved for VIP now or not.
        vip_only: bool,
        /// By whom.
        by: Option<UserId>,
    },
    /// A user was invited to the room, or to a seat held for them until the invite expires.
    RoomUserInvited {
        /// The invitee.
        user: UserId,
        /// The seat held for them, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        seat: Option<SeatIndex>,
        /// When the invite was made.
        invited_at: Timestamp,
        /// When it expires (exclusive).
        expires_at: Timestamp,
        /// Who invited them.
        by: Option<UserId>,
    },
    /// Another room's big gift, shown in this room (display only).
    RoomGiftBroadcast(GiftBroadcast),
    /// A paid gift was applied, or a robot sent a free one ([`GiftSent::robot`]).
    RoomGiftSent(GiftSent),
    /// The room's heat changed.
    RoomHeatChanged {
        /// The new heat.
        heat: i64,
        /// By how much.
        delta: i64,
    },
    /// A user's contribution changed; carries the new totals of the day and week.
    RoomRankChanged {
        /// Who gave.
        user: UserId,
        /// The day `day_total` counts.
        day_key: DayKey,
        /// The week `week_total` counts.
        week_key: WeekKey,
        /// Coins given today.
        day_total: Coins,
        /// Coins given this week.
        week_total: Coins,
    },
    /// The rocket took fuel.
    RoomRocketFuelChanged {
        /// The level being fuelled.
        level: u32,
        /// The fuel now.
        fuel: i64,
        /// The fuel the level needs.
        threshold: i64,
    },
    /// The rocket reached its level's threshold and counts down.
    RoomRocketIgnited {
        /// This ignition.
        rocket_id: RocketId,
        /// Its level.
        level: u32,
        /// When it ignited.
        ignited_at: Timestamp,
        /// When it launches.
        launch_at: Timestamp,
        /// What its launch gives away, from its level as it ignited. Absent in events written
        /// before the levels could change at run time: the launch then takes its level's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prize: Option<crate::rules::RocketPrize>,
    },
    /// The rocket launched and rewarded members present.
    RoomRocketLaunched {
        /// The ignition that launched.
        rocket_id: RocketId,
        /// Its level.
        level: u32,
        /// Who won how much; the amounts add up to the level's pool (or nothing if the room was
        /// empty).
        rewards: Vec<RocketReward>,
        /// The level the rocket goes on with; `None` after the top level.
        next_level: Option<u32>,
    },
    /// The rocket went back to level 1 for a new day (a rocket ignited before midnight right
    /// after its launch).
    RoomRocketReset {
        /// The new day.
        day_key: DayKey,
    },
}

/// A paid gift applied to the room, or a robot's free gift.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GiftSent {
    /// The order; for a robot gift, its command id (there is no order).
    pub order_id: OrderId,
    /// Who paid.
    pub sender: UserId,
    /// Who received, each `count` units.
    pub recipients: Vec<UserId>,
    /// The gift.
    pub gift_id: GiftId,
    /// Units per recipient.
    pub count: u32,
    /// Coins per unit.
    pub unit_price: Coins,
    /// `unit_price × count × recipients`: what the sender paid (for a robot gift, the value
    /// shown; nothing was paid).
    pub total_value: Coins,
    /// Heat the gift added.
    pub heat_added: i64,
    /// Fuel the gift carried (added to the rocket unless it was counting down or done); 0
    /// for a robot gift.
    pub fuel_added: i64,
    /// The lucky draw, for lucky gifts; never for a robot gift.
    pub lucky: Option<LuckyOutcome>,
    /// A robot's free gift ([`RobotGift`](crate::RobotGift)): no coins moved, no fuel or
    /// contribution was added, and it is displayed but not durable, so that no consumer
    /// counts it as money, activity or growth. Absent for paid gifts.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub robot: bool,
    /// The version of the billing policy the order was placed under, which splits its value
    /// ([`BillingPolicy`](crate::BillingPolicy)). Absent for robot gifts and in facts written
    /// before billing, which are billed under
    /// [`FIRST_BILLING_VERSION`](crate::FIRST_BILLING_VERSION) ([`GiftSent::billed_under`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub billing_version: Option<u64>,
    /// The sender's nickname as of the order; absent when they have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_nickname: Option<String>,
    /// The sender's avatar URL as of the order; absent when they have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_avatar_url: Option<String>,
}

/// A big gift of one room as other rooms show it ([`Event::RoomGiftBroadcast`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GiftBroadcast {
    /// The room the gift was sent in.
    pub from_room: RoomId,
    /// Who sent it.
    pub sender: UserId,
    /// The sender's nickname as of the gift; absent when they have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_nickname: Option<String>,
    /// The sender's avatar URL as of the gift; absent when they have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_avatar_url: Option<String>,
    /// The gift.
    pub gift_id: GiftId,
    /// Units per recipient.
    pub count: u32,
    /// What the sender paid for it.
    pub total_value: Coins,
}

impl GiftSent {
    /// Coins each recipient received: `unit_price × count`.
    pub fn value_per_recipient(&self) -> Coins {
        Coins(self.unit_price.0.saturating_mul(i64::from(self.count)))
    }
}

/// What a lucky gift won.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LuckyOutcome {
    /// The drawn multiplier.
    pub multiplier: u32,
    /// Coins won: `total_value × multiplier`, credited to the sender by the gift saga.
    pub reward: Coins,
}

/// One winner of a rocket launch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RocketReward {
    /// Who.
    pub user: UserId,
    /// How much.
    pub coins: Coins,
}

/// Why a user left.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LeaveReason {
    /// They left.
    Left,
    /// Their heartbeat stopped.
    Evicted,
}

/// What happened on a seat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum MicChange {
    /// A user took the seat; audio must start before the deadline.
    Up {
        /// Who.
        user: UserId,
        /// This stay.
        session: SeatSessionId,
        /// When they sat down.
        since: Timestamp,
        /// Publish audio by then (never enforced for a robot, which publishes none).
        publish_deadline: Timestamp,
        /// The user is a robot: displayed, not durable (no mic time counts), and no publish
        /// deadline is armed. Absent for users.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        robot: bool,
        /// The user's nickname as of taking the seat; absent when they have none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        nickname: Option<String>,
        /// The user's avatar URL as of taking the seat; absent when they have none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        avatar_url: Option<String>,
    },
    /// A user left the seat.
    Down {
        /// Who.
        user: UserId,
        /// The stay that ended.
        session: SeatSessionId,
        /// Why.
        reason: MicDownReason,
        /// The user is a robot: displayed, not durable. Absent for users.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        robot: bool,
    },
    /// The RTC vendor confirmed the holder publishes audio.
    Published {
        /// Who.
        user: UserId,
        /// This stay.
        session: SeatSessionId,
        /// The user is a robot: displayed, not durable. Absent for users.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        robot: bool,
    },
    /// The seat was muted or unmuted.
    Muted {
        /// Muted now or not.
        muted: bool,
        /// Whether a moderator did it (then only a moderator may unmute).
        by_moderator: bool,
        /// Who.
        by: Option<UserId>,
    },
}

impl MicChange {
    /// Whether a robot took, left or published on the seat.
    pub fn is_robot(&self) -> bool {
        match self {
            MicChange::Up { robot, .. }
            | MicChange::Down { robot, .. }
            | MicChange::Published { robot, .. } => *robot,
            MicChange::Muted { .. } => false,
        }
    }
}

/// Why a user left a seat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MicDownReason {
    /// They left it.
    Left,
    /// They took another seat.
    Moved,
    /// A moderator took them off.
    Removed,
    /// The seat was locked.
    SeatLocked,
    /// They left the room (or were evicted).
    LeftRoom,
    /// They were kicked.
    Kicked,
    /// They did not publish audio in time.
    PublishTimeout,
    /// The RTC vendor saw them leave the audio room.
    RtcLeft,
    /// The room closed.
    RoomClosed,
}

/// How urgently IM should show an event (Tencent's `MsgPriority`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ImPriority {
    /// Likes, fuel, heat: first to drop under the per-room rate limit.
    Low,
    /// Ordinary display.
    Normal,
    /// Gifts, kicks, closing.
    High,
}

/// Where an event goes after commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivery {
    /// Sent to the room's IM group with this priority; `None`: not displayed.
    pub im: Option<ImPriority>,
    /// Written to the outbox in the commit and published to Kafka.
    pub durable: bool,
    /// Display events with the same key in one room may be coalesced to the newest.
    pub coalesce_key: Option<&'static str>,
}

impl Event {
    /// The event's type name, as in its JSON `type`.
    pub fn type_name(&self) -> &'static str {
        match self {
            Event::RoomCreated { .. } => "RoomCreated",
            Event::RoomProfileUpdated { .. } => "RoomProfileUpdated",
            Event::RoomBackgroundChanged { .. } => "RoomBackgroundChanged",
            Event::RoomChatEnabledChanged { .. } => "RoomChatEnabledChanged",
            Event::RoomLockChanged { .. } => "RoomLockChanged",
            Event::RoomResourcesRevoked { .. } => "RoomResourcesRevoked",
            Event::RoomSystemMessage { .. } => "RoomSystemMessage",
            Event::RoomClosed { .. } => "RoomClosed",
            Event::RoomUserJoined { .. } => "RoomUserJoined",
            Event::RoomUserLeft { .. } => "RoomUserLeft",
            Event::RoomUserKicked { .. } => "RoomUserKicked",
            Event::RoomUserUnbanned { .. } => "RoomUserUnbanned",
            Event::RoomUserMuted { .. } => "RoomUserMuted",
            Event::RoomAdminChanged { .. } => "RoomAdminChanged",
            Event::RoomMicChanged { .. } => "RoomMicChanged",
            Event::RoomMicSeatLocked { .. } => "RoomMicSeatLocked",
            Event::RoomMicSeatVip { .. } => "RoomMicSeatVip",
            Event::RoomUserInvited { .. } => "RoomUserInvited",
            Event::RoomGiftBroadcast(_) => "RoomGiftBroadcast",
            Event::RoomGiftSent(_) => "RoomGiftSent",
            Event::RoomHeatChanged { .. } => "RoomHeatChanged",
            Event::RoomRankChanged { .. } => "RoomRankChanged",
            Event::RoomRocketFuelChanged { .. } => "RoomRocketFuelChanged",
            Event::RoomRocketIgnited { .. } => "RoomRocketIgnited",
            Event::RoomRocketLaunched { .. } => "RoomRocketLaunched",
            Event::RoomRocketReset { .. } => "RoomRocketReset",
        }
    }

    /// Where this event goes after commit: DESIGN §4's table.
    pub fn delivery(&self) -> Delivery {
        use ImPriority::{High, Low, Normal};
        let (im, durable, coalesce_key) = match self {
            // Other services learn of new rooms; IM has no group to show it in yet.
            Event::RoomCreated { .. } => (None, true, None),
            Event::RoomHeatChanged { .. } => (Some(Low), false, Some("heat")),
            Event::RoomRankChanged { .. } => (Some(Low), false, Some("rank")),
            Event::RoomRocketFuelChanged { .. } => (Some(Low), false, Some("rocket_fuel")),
            Event::RoomRocketIgnited { .. } => (Some(High), false, None),
            Event::RoomRocketLaunched { .. } => (Some(High), true, None),
            Event::RoomRocketReset { .. } => (Some(Normal), false, None),
            // Display only: another room's gift (its own room made the fact), and an invite
            // (no fact for other services; the invitee's stream shows it).
            Event::RoomGiftBroadcast(_) => (Some(Low), false, None),
            Event::RoomUserInvited { .. } => (Some(Normal), false, None),
            // Robot gifts, joins and leaves are shown like a user's, but are no facts for
            // other services: no consumer may count them as money, activity or growth.
            Event::RoomGiftSent(gift) => (Some(High), !gift.robot, None),
            Event::RoomUserJoined { robot, .. } | Event::RoomUserLeft { robot, .. } => {
                (Some(Normal), !robot, None)
            }
            // A robot's mic time is no fact for other services either.
            Event::RoomMicChanged { change, .. } => (Some(Normal), !change.is_robot(), None),
            // The lock state is display; the snapshot repairs it, and the hash stays inside.
            Event::RoomLockChanged { .. } => (Some(Normal), false, None),
            Event::RoomUserKicked { .. } | Event::RoomClosed { .. } => (Some(High), true, None),
            Event::RoomMicSeatLocked { .. }
            | Event::RoomMicSeatVip { .. }
            | Event::RoomUserUnbanned { .. }
            | Event::RoomUserMuted { .. }
            | Event::RoomProfileUpdated { .. }
            | Event::RoomBackgroundChanged { .. }
            | Event::RoomResourcesRevoked { .. }
            | Event::RoomSystemMessage { .. }
            | Event::RoomChatEnabledChanged { .. }
            | Event::RoomAdminChanged { .. } => (Some(Normal), true, None),
        };
        Delivery {
            im,
            durable,
            coalesce_key,
        }
    }

    /// Whether this is a robot's display event: a robot gift, a robot's join or a robot
    /// member's leave. These are never durable ([`Event::delivery`]); the display side samples
    /// them (a configured fraction) before IM, so that robot rooms do not eat the IM budget.
    /// What follows from a robot gift (its heat change) is not marked: it is coalesced anyway.
    pub fn is_robot(&self) -> bool {
        match self {
            Event::RoomGiftSent(gift) => gift.robot,
            Event::RoomUserJoined { robot, .. } | Event::RoomUserLeft { robot, .. } => *robot,
            Event::RoomMicChanged { change, .. } => change.is_robot(),
            _ => false,
        }
    }

    /// The event as it may leave the service: without secrets (the lock's password hash).
    /// Everything sent to IM or the outbox goes through this.
    pub fn redacted(&self) -> std::borrow::Cow<'_, Event> {
        match self {
            Event::RoomLockChanged {
                locked,
                password_hash: Some(_),
                by,
            } => std::borrow::Cow::Owned(Event::RoomLockChanged {
                locked: *locked,
                password_hash: None,
                by: by.clone(),
            }),
            _ => std::borrow::Cow::Borrowed(self),
        }
    }
}

/// An event as published to Kafka (`room.events.v1`, key = room id) and read by other services:
/// `{"event_id","room_id","seq","v","occurred_at","type","payload"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventEnvelope {
    /// Unique per event: `"{room_id}:{seq}"`. Consumers deduplicate by it.
    pub event_id: String,
    /// The room; also the Kafka key.
    pub room_id: RoomId,
    /// The event's position in the room's history, from 1, without gaps.
    pub seq: u64,
    /// The schema version, [`EVENT_SCHEMA_VERSION`].
    pub v: u16,
    /// When the command that produced it was applied.
    pub occurred_at: Timestamp,
    /// The event: its `type` and `payload` sit at the top level of the envelope.
    #[serde(flatten)]
    pub event: Event,
}

impl EventEnvelope {
    /// Wraps an event of `room_id` at position `seq`, redacting secrets.
    pub fn new(room_id: RoomId, seq: u64, occurred_at: Timestamp, event: &Event) -> Self {
        EventEnvelope {
            event_id: format!("{room_id}:{seq}"),
            room_id,
            seq,
            v: EVENT_SCHEMA_VERSION,
            occurred_at,
            event: event.redacted().into_owned(),
        }
    }
}
