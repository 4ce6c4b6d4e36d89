//! Commands: what a client, a moderator or the system asks of a room; and the context that
//! `decide` is given with each one.

use serde::{Deserialize, Serialize};

use crate::actor::Actor;
use crate::display::UserDisplay;
use crate::event::GiftBroadcast;
use crate::ids::{CommandId, GiftId, OrderId, RocketId, SeatIndex, SeatSessionId, UserId};
use crate::money::Coins;
use crate::rejection::Rejection;
use crate::rules::RoomRules;
use crate::state::{GiftScope, PasswordHash, RoomResource};
use crate::time::Timestamp;
use crate::vip::VipStanding;

/// How far the RTC vendor's clock may lag ours, in milliseconds: an RTC event dated earlier
/// than a seat session's start by more than this is taken to be about an earlier session.
pub const RTC_CLOCK_SKEW_MS: i64 = 5_000;

/// The version of the command format written to the command log.
pub const COMMAND_SCHEMA_VERSION: u16 = 1;

/// A command to one room, with the id that makes it idempotent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Command {
    /// A repeated id is the same command. Gifts use their order id.
    pub command_id: CommandId,
    /// What is asked.
    #[serde(flatten)]
    pub kind: CommandKind,
    /// How the user the command is about is shown, as the service looked it up before it
    /// sent the command: the acting user of `join` and `take_seat`, the sender of
    /// `apply_gift`. The room copies it into the display event (`RoomUserJoined`, the `up` of
    /// `RoomMicChanged`, `RoomGiftSent`) and keeps nothing of it. Absent when the user has no
    /// display fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display: Option<UserDisplay>,
    /// The VIP standing of the user the command is about, as the service looked it up before
    /// it sent the command: the joining user of `join` (their entry effect and vehicle go into
    /// `RoomUserJoined`), the target of `kick` and of a `chat_mute` that mutes (their shields
    /// against room admins). Absent when the service did not look it up: a kick then falls
    /// back on the member's level at their join and
    /// [`RoomRules::vip_kick_protection_level`], and a mute has no shield.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vip: Option<VipStanding>,
}

impl Command {
    /// A command with the given id.
    pub fn new(command_id: CommandId, kind: CommandKind) -> Self {
        Command {
            command_id,
            kind,
            display: None,
            vip: None,
        }
    }

    /// The command with the display fields of the user it is about.
    pub fn with_display(mut self, display: Option<UserDisplay>) -> Self {
        self.display = display;
        self
    }

    /// The command with the VIP standing of the user it is about.
    pub fn with_vip(mut self, vip: Option<VipStanding>) -> Self {
        self.vip = vip;
        self
    }
}

/// Everything a room can be asked to do. Serialized with a `"type"` tag.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum CommandKind {
    /// Create the room; the actor owns it.
    CreateRoom {
        /// 1 to 30 characters.
        name: String,
        /// 1 to 20; the rules' default when absent.
        seat_count: Option<u8>,
        /// Region code, up to 32 characters (may be empty).
        region: String,
    },
    /// Change name, notice or cover (owner, admins). Absent fields stay as they are.
    UpdateProfile {
        /// New name.
        name: Option<String>,
        /// New notice.
        notice: Option<String>,
        /// New cover URL; `Some("")` removes it.
        cover_url: Option<String>,
    },
    /// Change the background (owner, admins); `None` removes it.
    ChangeBackground {
        /// New background URL.
        background_url: Option<String>,
    },
    /// A message from the platform to the room (platform admins, the system): shown as a
    /// display event, kept with who sent it.
    SystemMessage {
        /// 1 to 500 characters; line breaks and tabs allowed.
        text: String,
    },
    /// Reset parts of the room's profile to their defaults, with a reason the room is shown
    /// (platform admins): content that breaks the platform's rules.
    RevokeResources {
        /// What to reset: 1 to 4 distinct resources.
        resources: Vec<RoomResource>,
        /// Why: 1 to 200 characters.
        reason: String,
    },
    /// Allow or forbid the public chat (owner, admins).
    SetChatEnabled {
        /// Whether chat is allowed.
        enabled: bool,
    },
    /// Lock with a password hash, or unlock with `None` (owner, admins).
    SetLock {
        /// The salted hash of the new password.
        password_hash: Option<PasswordHash>,
    },
    /// Close the room for good (owner, platform admins, system).
    CloseRoom,
    /// The actor joins. The password, if any, was checked outside the domain.
    Join {
        /// Whether the caller presented the right password of a locked room.
        password_verified: bool,
        /// The lock the password was checked against. When given, the verdict holds only
        /// while the room still has this lock: a password changed between the check and the
        /// join makes the join a wrong password.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        verified_lock: Option<PasswordHash>,
    },
    /// The actor leaves.
    Leave,
    /// The system removes a member whose heartbeat stopped.
    Evict {
        /// Who.
        user: UserId,
        /// The last heartbeat the eviction saw. A member who joined after it (left and came
        /// back since) is not the one whose heartbeat stopped, and stays.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        seen: Option<Timestamp>,
    },
    /// The actor takes a seat (moving from another seat if they sit on one).
    TakeSeat {
        /// Which seat.
        seat: SeatIndex,
    },
    /// The actor leaves the seat they sit on.
    LeaveSeat {
        /// Which seat.
        seat: SeatIndex,
    },
    /// Lock or unlock a seat (owner, admins); locking frees it.
    LockSeat {
        /// Which seat.
        seat: SeatIndex,
        /// Locked or not.
        locked: bool,
    },
    /// Reserve a seat for VIP or open it to everyone again (owner, admins). A VIP seat's
    /// holder stays on it.
    SetSeatVip {
        /// Which seat.
        seat: SeatIndex,
        /// Reserved for VIP or not.
        vip_only: bool,
    },
    /// Invite a user to the room, or to a seat of it (owner, admins), for the rules'
    /// [`RoomRules::invite_ttl_secs`]: meanwhile the invitee joins without the password, and
    /// an invited seat is held for them (nobody else may take it).
    Invite {
        /// Who.
        user: UserId,
        /// The seat held for them, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        seat: Option<SeatIndex>,
    },
    /// Show another room's big gift in this room (system): display only.
    ShowGiftBroadcast(GiftBroadcast),
    /// Mute or unmute a seat (owner, admins, or its holder).
    MuteSeat {
        /// Which seat.
        seat: SeatIndex,
        /// Muted or not.
        muted: bool,
    },
    /// Take a user off a seat (owner, admins).
    RemoveFromSeat {
        /// Which seat.
        seat: SeatIndex,
    },
    /// The RTC vendor saw the user publish audio (system).
    ConfirmMicPublish {
        /// Who.
        user: UserId,
        /// When the vendor saw it, if it said. An event from before the user's current seat
        /// session (beyond [`RTC_CLOCK_SKEW_MS`]) is about an earlier one and changes nothing.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at: Option<Timestamp>,
    },
    /// The publish deadline of one seat session passed (system timer).
    MicPublishTimeout {
        /// Which seat.
        seat: SeatIndex,
        /// The seat session the timer was armed for.
        session: SeatSessionId,
    },
    /// The RTC vendor saw the user leave the audio room (system): frees their seat.
    RtcUserLeft {
        /// Who.
        user: UserId,
        /// When the vendor saw it, if it said. An event from before the user's current seat
        /// session (beyond [`RTC_CLOCK_SKEW_MS`]) is about an earlier one and changes nothing.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        at: Option<Timestamp>,
    },
    /// Remove a member, optionally banning them (owner, admins).
    Kick {
        /// Who.
        user: UserId,
        /// Ban for this many seconds; without it the user may join again at once.
        ban_seconds: Option<u32>,
    },
    /// Lift a ban (owner, admins).
    Unban {
        /// Who.
        user: UserId,
    },
    /// Mute a member on the public screen for `seconds`, or unmute with 0 (owner, admins).
    ChatMute {
        /// Who.
        user: UserId,
        /// How long; 0 unmutes.
        seconds: u32,
    },
    /// Appoint or dismiss an admin (owner).
    SetAdmin {
        /// Who.
        user: UserId,
        /// Appoint or dismiss.
        admin: bool,
    },
    /// Apply a paid gift whose coins were already debited (gift saga; system or the sender).
    ApplyGift(ApplyGift),
    /// Launch an ignited rocket (system timer).
    LaunchRocket {
        /// The ignition the timer was armed for.
        rocket_id: RocketId,
        /// Its level.
        level: u32,
        /// The launch time the timer was armed for.
        scheduled_at: Timestamp,
    },
    /// Put the rocket back to level 1 at the day boundary (system timer).
    ResetRocket,
    /// A free gift from the acting robot ([`Actor::Robot`] only, a member of the room) to
    /// members of the room. See [`RobotGift`].
    RobotGift(RobotGift),
}

/// A gift as the catalog priced it when the order was placed: the room applies this snapshot,
/// not the catalog of the moment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GiftSnapshot {
    /// The catalog entry.
    pub gift_id: GiftId,
    /// Coins per unit.
    pub price: Coins,
    /// Heat per unit and recipient.
    pub heat: i64,
    /// Rocket fuel per unit and recipient.
    pub fuel: i64,
    /// Whether the sender takes part in the lucky draw.
    pub lucky: bool,
    /// The version of the billing policy current when the order was placed, which bills it
    /// ([`BillingPolicy`](crate::BillingPolicy)); absent in orders placed before billing and
    /// in robot gifts. Left out of JSON when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub billing_version: Option<u64>,
}

/// Apply one paid gift order to the room.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApplyGift {
    /// The order; with the sender, it names the command (see [`GiftOrder::keys`]).
    ///
    /// [`GiftOrder::keys`]: crate::GiftOrder::keys
    pub order_id: OrderId,
    /// Who paid.
    pub sender: UserId,
    /// Who receives, each `count` units; 1 to 20 distinct members.
    pub recipients: Vec<UserId>,
    /// The gift as priced.
    pub gift: GiftSnapshot,
    /// Units per recipient.
    pub count: u32,
    /// The random input of the lucky draw, fixed when the order was created so that every
    /// retry draws the same.
    pub lucky_draw: u64,
    /// A batch gift: the room gives it to whom the scope names as it applies the gift
    /// ([`RoomState::batch_recipients`]), at most as many as `recipients` (whom the sender
    /// paid for, resolved when the order was placed). Absent for a gift to the listed
    /// recipients; left out of JSON then.
    ///
    /// [`RoomState::batch_recipients`]: crate::RoomState::batch_recipients
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<GiftScope>,
}

impl ApplyGift {
    /// The checks that need no room state: count and recipients within the rules, no
    /// recipient named twice, the sender not among the recipients (a gift to oneself would
    /// turn paid coins into the sender's own gift income and heat), no negative price, heat or
    /// fuel, a total that fits. Returns the
    /// total. `decide` runs them first; the gift saga runs them before it debits anything.
    /// A batch gift ([`ApplyGift::scope`]) may name up to the rules' `max_batch_recipients`.
    pub fn check_shape(&self, rules: &RoomRules) -> Result<Coins, Rejection> {
        let most = match self.scope {
            None => rules.max_recipients,
            Some(_) => rules.max_batch_recipients,
        };
        check_gift_shape(
            &self.gift,
            self.count,
            &self.recipients,
            &self.sender,
            rules.max_gift_count,
            most,
        )
    }

    /// The coins the order costs: `price × count × recipients`, or `None` on overflow.
    pub fn total_value(&self) -> Option<Coins> {
        total_value(&self.gift, self.count, self.recipients.len())
    }
}

/// A free gift a robot sends to make a robot room look lively. The acting robot is the
/// sender; the recipient rules are those of [`ApplyGift`] (1 to the rules' maximum distinct
/// members, not the sender, a count within the rules).
///
/// A robot gift never touches the wallet: there is no order and no debit, and its command id
/// stands for the order id in [`GiftSent`]. It shows as a gift (the animation, the public
/// screen) and adds its heat, for the room to look lively; but it adds **no rocket fuel and no
/// contribution**. A rocket launch pays real coins to the members present, so free gifts must
/// never fill the rocket; and the contribution ranks are leaderboards of coins given. Nor does
/// it draw a lucky reward, which is coins too: the snapshot's `lucky` is ignored.
///
/// [`GiftSent`]: crate::GiftSent
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RobotGift {
    /// The gift as the catalog has it; its price is shown, never paid.
    pub gift: GiftSnapshot,
    /// Units per recipient.
    pub count: u32,
    /// Who receives, each `count` units; 1 to 20 distinct members.
    pub recipients: Vec<UserId>,
}

impl RobotGift {
    /// The checks of [`ApplyGift::check_shape`] for a gift `sender` sends: returns the value
    /// shown, `price × count × recipients`.
    pub fn check_shape(&self, sender: &UserId, rules: &RoomRules) -> Result<Coins, Rejection> {
        check_gift_shape(
            &self.gift,
            self.count,
            &self.recipients,
            sender,
            rules.max_gift_count,
            rules.max_recipients,
        )
    }
}

/// The rule of a system message's text ([`CommandKind::SystemMessage`]): 1 to 500 characters,
/// not all whitespace, line breaks and tabs allowed, no other control character and no
/// bidirectional embedding, override or isolate. Public so that a service sending one message
/// to many rooms checks it once, before any room.
pub fn check_system_message(text: &str) -> Result<(), Rejection> {
    if text.trim().is_empty() {
        return Err(Rejection::FieldEmpty {
            field: crate::rejection::Field::Message,
        });
    }
    crate::rejection::Field::Message.check(text)
}

/// The state-free checks shared by paid and robot gifts; returns the total value.
fn check_gift_shape(
    gift: &GiftSnapshot,
    count: u32,
    recipients: &[UserId],
    sender: &UserId,
    max_count: u32,
    max_recipients: u32,
) -> Result<Coins, Rejection> {
    if !(1..=max_count).contains(&count) {
        return Err(Rejection::InvalidGiftCount {
            count,
            max: max_count,
        });
    }
    let recipient_count = recipients.len();
    if recipient_count == 0 || recipient_count > max_recipients as usize {
        return Err(Rejection::InvalidRecipientCount {
            count: u32::try_from(recipient_count).unwrap_or(u32::MAX),
            max: max_recipients,
        });
    }
    if recipients.contains(sender) {
        return Err(Rejection::SelfGift);
    }
    if gift.price.is_negative() || gift.heat < 0 || gift.fuel < 0 {
        return Err(Rejection::InvalidGift);
    }
    for (i, recipient) in recipients.iter().enumerate() {
        if recipients[..i].contains(recipient) {
            return Err(Rejection::DuplicateRecipient {
                user: recipient.clone(),
            });
        }
    }
    total_value(gift, count, recipients.len()).ok_or(Rejection::AmountOverflow)
}

/// `price × count × recipients`, or `None` on overflow.
fn total_value(gift: &GiftSnapshot, count: u32, recipients: usize) -> Option<Coins> {
    let recipients = i64::try_from(recipients).ok()?;
    gift.price
        .checked_mul(i64::from(count))?
        .checked_mul(recipients)
}

/// What `decide` may not fetch itself: the time, the actor, a random value, the rules.
#[derive(Debug, Clone, Copy)]
pub struct Ctx<'a> {
    /// The current time.
    pub now: Timestamp,
    /// Who acts.
    pub actor: &'a Actor,
    /// A uniformly random value, for rules that are random (rocket winners).
    pub random: u64,
    /// The deployment's rules.
    pub rules: &'a RoomRules,
}
