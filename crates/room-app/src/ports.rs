//! The ports: every way the application reaches outside itself. Adapters implement them; use
//! cases and the Room Cell runtime hold them as `Arc<dyn Port>`.
//!
//! Verbs are fixed: `get_*` returns `Ok(None)` for absence, `create` fails with
//! [`Error::AlreadyExists`](crate::Error::AlreadyExists), `create_or_get` is idempotent, lists
//! are `list_*`. Every adapter passes the conformance suite of its port in
//! `testkit` (feature `testkit`).

use std::sync::Arc;

use async_trait::async_trait;
use room_domain::{
    Actor, Coins, Command, CommandId, CommandKind, Event, EventEnvelope, Field, GiftId, GiftOrder,
    OrderId, OrderStatus, Rejection, RoomId, RoomState, Snapshot, Timestamp, UserId,
};
use serde::{Deserialize, Serialize};

use crate::Result;

/// An event as stored in a room's log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredEvent {
    /// Position in the room's history, from 1, without gaps.
    pub seq: u64,
    /// When the command that caused it was applied.
    pub occurred_at: Timestamp,
    /// The event (unredacted: the log is internal).
    pub event: Event,
}

/// A command as stored in a room's log, with the range of events it produced. A command with
/// no events (a no-op) or a rejection is not stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandRecord {
    /// The command's id; unique within the room.
    pub command_id: CommandId,
    /// The command.
    pub command: Command,
    /// Who issued it.
    pub actor: Actor,
    /// When it was applied.
    pub applied_at: Timestamp,
    /// The seq of its first event.
    pub first_seq: u64,
    /// The seq of its last event.
    pub last_seq: u64,
}

/// A durable fact waiting in the outbox for the publisher.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxMessage {
    /// Assigned by the store, rising in commit order.
    pub id: i64,
    /// The envelope to publish (already redacted).
    pub envelope: EventEnvelope,
}

/// A durable timer: at `due_at`, `command` is sent to the room as the system.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timer {
    /// Deterministic id (`"{room}:launch:{rocket}"`), so re-arming replaces.
    pub timer_id: String,
    /// The room.
    pub room_id: RoomId,
    /// When it fires.
    pub due_at: Timestamp,
    /// What it sends.
    pub command: CommandKind,
}

/// A credit owed by a commit (a rocket reward), paid by the payout worker with
/// [`Wallet::credit`] under `op_id`, then deleted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Payout {
    /// The wallet operation id: unique per reward.
    pub op_id: String,
    /// Why.
    pub kind: CreditKind,
    /// Who gets it.
    pub user: UserId,
    /// How much.
    pub amount: Coins,
    /// The room that owes it.
    pub room_id: RoomId,
}

/// Credits owed by commits.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait Payouts: Send + Sync {
    /// Owed credits, oldest first, at most `limit`: those owed after the one with op id
    /// `after` when it is given and still owed (a pass goes on past credits it cannot pay),
    /// from the oldest otherwise.
    async fn list_pending(&self, after: Option<String>, limit: u32) -> Result<Vec<Payout>>;
    /// Forgets a paid credit.
    async fn delete(&self, op_id: &str) -> Result<()>;
}

/// What the room directory shows of a room; written in every commit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoomSummary {
    /// The room.
    pub room_id: RoomId,
    /// Its owner.
    pub owner: UserId,
    /// Its name.
    pub name: String,
    /// Whether it is open.
    pub open: bool,
    /// Its heat.
    pub heat: i64,
    /// Members present.
    pub online: u32,
    /// Whether it is locked.
    pub locked: bool,
    /// Its version.
    pub version: u64,
}

/// Everything one group commit writes, in ONE transaction, only if the room's epoch is still
/// `epoch` and its version still `expected_version`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitBatch {
    /// The room.
    pub room_id: RoomId,
    /// The epoch this node activated the room with.
    pub epoch: u64,
    /// The room's version before the batch.
    pub expected_version: u64,
    /// The accepted commands.
    pub commands: Vec<CommandRecord>,
    /// Their events, seq `expected_version + 1` onwards.
    pub events: Vec<StoredEvent>,
    /// Envelopes of the durable events, for the outbox.
    pub outbox: Vec<EventEnvelope>,
    /// Gift orders the batch applied (now APPLIED or COMPLETED). Each must be stored and
    /// still await its room ([`GiftOrder::awaits_room`]): else the batch is refused,
    /// [`Error::NotFound`](crate::Error::NotFound) or
    /// [`Error::OrderSettled`](crate::Error::OrderSettled).
    pub orders: Vec<GiftOrder>,
    /// Timers to arm (replacing any with the same id).
    pub timers: Vec<Timer>,
    /// Credits the batch owes (rocket rewards), for the payout worker. A payout already owed
    /// under the same op id is kept as first recorded.
    pub payouts: Vec<Payout>,
    /// The room as the directory shows it after the batch.
    pub summary: Option<RoomSummary>,
}

impl CommitBatch {
    /// The room's version after the batch.
    pub fn new_version(&self) -> u64 {
        self.expected_version + self.events.len() as u64
    }

    /// A command id that stands twice in the batch: every store refuses such a batch as
    /// [`Error::AlreadyExists`](crate::Error::AlreadyExists).
    pub fn repeated_command(&self) -> Option<&CommandId> {
        let mut seen = std::collections::HashSet::new();
        self.commands
            .iter()
            .map(|c| &c.command_id)
            .find(|id| !seen.insert(*id))
    }

    /// Why the events' seqs do not follow `expected_version` without gaps, if they do not:
    /// every store refuses such a batch as [`Error::Invalid`](crate::Error::Invalid).
    pub fn seq_problem(&self) -> Option<String> {
        self.events
            .iter()
            .enumerate()
            .find(|(i, e)| e.seq != self.expected_version + 1 + *i as u64)
            .map(|(_, e)| format!("event seq {} does not follow the version", e.seq))
    }
}

/// The room's position when this node activated it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Activation {
    /// The new epoch: every commit of this activation must carry it.
    pub epoch: u64,
    /// The newest committed version.
    pub version: u64,
}

/// The command log: activation with an epoch bump, conditional group commits, replay.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait CellStore: Send + Sync {
    /// Bumps the room's epoch (creating its row if new), records `node` as owner, and returns
    /// the new epoch and the committed version. Every earlier activation is fenced from now on.
    async fn activate(&self, room_id: &RoomId, node: &str) -> Result<Activation>;

    /// Writes the batch in one transaction if the room's epoch and version are as the batch
    /// says: [`Error::NotOwner`](crate::Error::NotOwner) if the epoch moved,
    /// [`Error::Conflict`](crate::Error::Conflict) if the version moved,
    /// [`Error::AlreadyExists`](crate::Error::AlreadyExists) if a command id is already stored.
    /// Nothing is written on any error.
    async fn commit(&self, batch: &CommitBatch) -> Result<()>;

    /// Events with `seq > after`, in order, at most `limit`. Once the log was pruned
    /// ([`CellStore::prune_log`]) it starts past seq 1, so the first event returned may come
    /// after `after + 1`: a reader that needs every event after `after` checks for the gap.
    async fn list_events(
        &self,
        room_id: &RoomId,
        after: u64,
        limit: u32,
    ) -> Result<Vec<StoredEvent>>;

    /// A stored command by id, while its events (`first_seq..=last_seq`) are all stored too:
    /// a repeat of the command is answered with them. A command whose events
    /// [`CellStore::prune_log`] has begun to delete is absent, never answered without them.
    async fn get_command(
        &self,
        room_id: &RoomId,
        command_id: &CommandId,
    ) -> Result<Option<CommandRecord>>;

    /// Deletes the oldest part of room logs, at most `limit` rows (events and commands
    /// together) per call across all rooms; returns how many rows went. A caller loops until
    /// a call returns less than `limit`: nothing more could go then.
    ///
    /// The rule, for each room whose newest snapshot (as this store's [`SnapshotStore`]
    /// holds it) is at version `V`:
    ///
    /// - A command *expires* when it was applied before `older_than` and its events end at or
    ///   before the snapshot (`applied_at < older_than` and `last_seq <= V`).
    /// - Events go from the front of the log, up to `V` and up to the first event of the
    ///   room's first command that has not expired. The log stays one run of events, from
    ///   some seq to the room's version.
    /// - An expired command goes once its events are gone; from the moment the first of them
    ///   goes, [`CellStore::get_command`] no longer finds it.
    ///
    /// So nothing after `V` goes (activation loads the snapshot and replays the events after
    /// it), a room without a snapshot keeps everything, and a command applied at or after
    /// `older_than` stays with all of its events (and every event after them), so that a
    /// repeat of its id is answered from the log as the first time. An event's time is its
    /// command's (`occurred_at == applied_at`): an event younger than `older_than` belongs
    /// to a command that has not expired, and stays. A repeat of a command id that is older
    /// than `older_than` may not be recognised any more: `older_than` must lie further back
    /// than any client retries a command.
    async fn prune_log(&self, older_than: Timestamp, limit: u32) -> Result<u64>;
}

/// Snapshots of room state.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait SnapshotStore: Send + Sync {
    /// Stores a snapshot; an older one may be discarded. A snapshot older than the stored one is
    /// ignored.
    async fn put(&self, snapshot: &Snapshot) -> Result<()>;
    /// The newest snapshot of the room.
    async fn get_latest(&self, room_id: &RoomId) -> Result<Option<Snapshot>>;
}

/// The outbox the commit fills and the publisher drains.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait Outbox: Send + Sync {
    /// Undelivered messages in commit order (per room, seq order), at most `limit`.
    async fn list_pending(&self, limit: u32) -> Result<Vec<OutboxMessage>>;
    /// Marks messages delivered. Unknown ids are ignored.
    async fn mark_delivered(&self, ids: &[i64], at: Timestamp) -> Result<()>;
    /// Deletes at most `limit` messages delivered before `before`; returns how many.
    async fn delete_delivered_before(&self, before: Timestamp, limit: u32) -> Result<u64>;
}

/// What [`EventPublisher::publish`] got the broker to take.
#[derive(Debug, Default)]
pub struct Published {
    /// The ids of the messages the broker acknowledged, in the order given. A message it did
    /// not take leaves out every later message of the same room too, so that marking these
    /// delivered never puts a room's facts out of order.
    pub delivered: Vec<i64>,
    /// Why some message was not taken, if one was not.
    pub error: Option<crate::Error>,
}

/// The message broker durable facts go to from the outbox (Kafka's `room.events.v1`, keyed by
/// room id so each room's facts stay in order).
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait EventPublisher: Send + Sync {
    /// Publishes `messages` (outbox order) and waits until the broker has acknowledged each
    /// one or given up on it. A message may reach the broker twice when an acknowledgement is
    /// lost; consumers drop the repeat by its `event_id`.
    async fn publish(&self, messages: &[OutboxMessage]) -> Published;
}

/// Exclusive claims on named pieces of background work among the processes that share a
/// store, each with an expiry: a claimer that crashed loses its claims when they expire, and
/// the work comes back to whoever claims it next.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait WorkClaims: Send + Sync {
    /// Gives `name` to `owner` until `until` if nobody holds it, its claim expired by `now`,
    /// or `owner` holds it already (the claim is then extended); answers whether `owner`
    /// holds it now.
    async fn claim(
        &self,
        name: &str,
        owner: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> Result<bool>;
    /// Gives `name` up if `owner` holds it; another owner's claim is left alone.
    async fn release(&self, name: &str, owner: &str) -> Result<()>;
}

/// Gift orders, the saga's memory. An order is keyed by its sender and its order id: order ids
/// are chosen by clients, so two senders may use the same one, and neither can claim or probe
/// the other's.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait GiftOrders: Send + Sync {
    /// Stores a new order, or returns the stored one with this sender and order id. The flag
    /// says whether this call created it.
    async fn create_or_get(&self, order: &GiftOrder) -> Result<(GiftOrder, bool)>;
    /// The order of `sender` with this order id.
    async fn get(&self, sender: &UserId, order_id: &OrderId) -> Result<Option<GiftOrder>>;
    /// Replaces the order (found by its sender and order id) if its stored status is still
    /// `expected`, else [`Error::Conflict`](crate::Error::Conflict).
    async fn update(&self, order: &GiftOrder, expected: OrderStatus) -> Result<()>;
    /// Unfinished orders (not COMPLETED, FAILED or COMPENSATED) created before `before`, in
    /// [`OrderCursor`] order (oldest first, ties by order id, then sender), after `after` if
    /// given, at most `limit`. Paging with the cursor of each page's last order lists every
    /// order once, even while listed orders finish between pages.
    async fn list_unfinished(
        &self,
        before: Timestamp,
        after: Option<OrderCursor>,
        limit: u32,
    ) -> Result<Vec<GiftOrder>>;
}

/// A position in [`GiftOrders::list_unfinished`]: the creation time, order id and sender of
/// the last order seen. Orders sort by creation time, then by order id, then by sender (byte
/// order).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OrderCursor {
    /// The order's creation time.
    pub created_at: Timestamp,
    /// The order's id.
    pub order_id: OrderId,
    /// The order's sender.
    pub sender: UserId,
}

impl OrderCursor {
    /// The position of `order`: the next page starts after it.
    pub fn of(order: &GiftOrder) -> Self {
        OrderCursor {
            created_at: order.created_at,
            order_id: order.order_id.clone(),
            sender: order.sender.clone(),
        }
    }
}

/// What the wallet knows of a debit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DebitStatus {
    /// The debit happened.
    Debited,
    /// No debit happened, and none will: the operation id is void.
    Void,
}

/// Why coins move into an account.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CreditKind {
    /// A platform admin's top-up (coins enter the system).
    Admin,
    /// A refund of a gift the room refused.
    Refund,
    /// A lucky-gift reward.
    LuckyReward,
    /// A rocket-launch reward.
    RocketReward,
}

/// Coin balances. Every operation is idempotent by its operation id (per kind: a debit, an
/// admin credit, a refund, ... of one id are distinct): repeating it returns the first answer
/// and moves no more coins. Gift orders use [`GiftOrder::wallet_op_id`], which names the
/// sender.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait Wallet: Send + Sync {
    /// Takes `amount` from `user`; returns the balance after.
    /// [`Error::InsufficientFunds`](crate::Error::InsufficientFunds) if too low (nothing moves);
    /// [`Error::Conflict`](crate::Error::Conflict) if `op_id` was voided or used differently.
    async fn debit(&self, op_id: &str, user: &UserId, amount: Coins) -> Result<Coins>;
    /// Gives `amount` to `user`; returns the balance after.
    async fn credit(
        &self,
        op_id: &str,
        kind: CreditKind,
        user: &UserId,
        amount: Coins,
    ) -> Result<Coins>;
    /// Settles a debit of unknown outcome, atomically: [`DebitStatus::Debited`] if it
    /// happened, else voids `op_id` so a late debit with it fails, and returns
    /// [`DebitStatus::Void`].
    async fn settle_debit(&self, op_id: &str) -> Result<DebitStatus>;
    /// The user's balance (zero for an unknown user).
    async fn balance(&self, user: &UserId) -> Result<Coins>;
}

/// One entry of the gift catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogGift {
    /// The gift.
    pub gift_id: GiftId,
    /// Display name.
    pub name: String,
    /// Coins per unit.
    pub price: Coins,
    /// Heat per unit and recipient.
    pub heat: i64,
    /// Rocket fuel per unit and recipient.
    pub fuel: i64,
    /// Whether it is a lucky gift.
    pub lucky: bool,
    /// Whether it can be sent.
    pub enabled: bool,
}

impl CatalogGift {
    /// The gift as a gift command carries it (and its events show it).
    pub fn snapshot(&self) -> room_domain::GiftSnapshot {
        room_domain::GiftSnapshot {
            gift_id: self.gift_id.clone(),
            price: self.price,
            heat: self.heat,
            fuel: self.fuel,
            lucky: self.lucky,
        }
    }
}

/// The most a catalog gift's price, heat or fuel may be per unit. With at most 9,999 units
/// to each of at most 20 recipients, a gift's coins, heat and fuel then stay below 2 * 10^14,
/// far from the `i64` limits the totals, balances and rewards they feed are kept in.
pub const MAX_GIFT_UNIT_VALUE: i64 = 1_000_000_000;

/// The longest catalog gift name, in characters.
pub const MAX_GIFT_NAME_CHARS: usize = 64;

impl CatalogGift {
    /// Why this entry cannot be in the catalog, if it cannot: a name that is blank or longer
    /// than [`MAX_GIFT_NAME_CHARS`], a price, heat or fuel outside `0..=`[`MAX_GIFT_UNIT_VALUE`].
    pub fn problem(&self) -> Option<String> {
        if self.name.trim().is_empty() || self.name.chars().count() > MAX_GIFT_NAME_CHARS {
            return Some(format!(
                "a gift name has 1 to {MAX_GIFT_NAME_CHARS} characters"
            ));
        }
        [
            ("price", self.price.0),
            ("heat", self.heat),
            ("fuel", self.fuel),
        ]
        .into_iter()
        .find(|(_, value)| !(0..=MAX_GIFT_UNIT_VALUE).contains(value))
        .map(|(field, value)| format!("{field} {value} is outside 0..={MAX_GIFT_UNIT_VALUE}"))
    }
}

/// The gift catalog.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait GiftCatalog: Send + Sync {
    /// A gift by id.
    async fn get(&self, gift_id: &GiftId) -> Result<Option<CatalogGift>>;
    /// Every gift, by id.
    async fn list(&self) -> Result<Vec<CatalogGift>>;
    /// Creates or replaces a gift.
    async fn put(&self, gift: &CatalogGift) -> Result<()>;
}

/// Durable timers, armed in commits.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait Timers: Send + Sync {
    /// Timers due at or before `now`, earliest first, at most `limit`.
    async fn list_due(&self, now: Timestamp, limit: u32) -> Result<Vec<Timer>>;
    /// Removes a fired timer, if its `due_at` is still the one given (a re-armed timer stays).
    async fn delete(&self, timer_id: &str, due_at: Timestamp) -> Result<()>;
}

/// The room directory: short ids and the list of open rooms by heat.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait RoomDirectory: Send + Sync {
    /// Reserves `short_id` for `room_id`: `Ok(false)` if another room has it.
    async fn reserve_short_id(&self, room_id: &RoomId, short_id: u32) -> Result<bool>;
    /// The short id of a room.
    async fn get_short_id(&self, room_id: &RoomId) -> Result<Option<u32>>;
    /// The room with this short id.
    async fn get_by_short_id(&self, short_id: u32) -> Result<Option<RoomId>>;
    /// The summary of a room.
    async fn get_summary(&self, room_id: &RoomId) -> Result<Option<RoomSummary>>;
    /// Open rooms, hottest first (ties by room id), after `cursor` (heat, room id), at most
    /// `limit`.
    async fn list_open_by_heat(
        &self,
        cursor: Option<(i64, RoomId)>,
        limit: u32,
    ) -> Result<Vec<RoomSummary>>;
}

/// The most robots one robot room's pool may hold.
pub const MAX_ROBOTS: usize = 200;

/// The most gifts one robot room's gift mix may name.
pub const MAX_GIFT_MIX: usize = 20;

/// The most robot gifts a robot room may send per minute.
pub const MAX_ROBOT_GIFTS_PER_MINUTE: u32 = 600;

/// The greatest weight of one gift in a robot room's gift mix.
pub const MAX_GIFT_WEIGHT: u32 = 10_000;

/// The most configurations one [`RobotRooms::list`] call returns, whatever the limit asked.
pub const MAX_ROBOT_ROOM_PAGE: u32 = 500;

/// What a robot room shows: its profile, as the room API has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RobotProfile {
    /// The room's name, within the room's rule ([`Field::Name`]).
    pub name: String,
    /// The notice board, within the room's rule ([`Field::Notice`]).
    pub notice: String,
    /// The cover image, within the room's rule ([`Field::CoverUrl`]).
    pub cover_url: Option<String>,
}

/// One gift of a robot room's gift mix: robots send `gift_id` with a chance in proportion to
/// `weight` among the mix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GiftShare {
    /// The catalog gift.
    pub gift_id: GiftId,
    /// Its weight, 1 to [`MAX_GIFT_WEIGHT`].
    pub weight: u32,
}

/// How a robot room is run: which robots, how many listeners over the day, how many seats
/// they hold, and which gifts they send how often. Robots are users whose ids carry the
/// configured robot prefix; they act through the room's ordinary commands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RobotRoomConfig {
    /// The room (an ordinary room, owned by the pool's first robot at creation).
    pub room_id: RoomId,
    /// What the room shows.
    pub profile: RobotProfile,
    /// The room's seat count, fixed when the room was created.
    pub seat_count: u8,
    /// The robot pool: 1 to [`MAX_ROBOTS`] distinct robot user ids.
    pub robots: Vec<UserId>,
    /// Target robot listeners for each hour of the day (UTC), 24 numbers, each from 0 to the
    /// pool's size.
    pub audience: Vec<u32>,
    /// Target seats robots occupy, from 0 to `seat_count - 1`: robots never take the last
    /// free seat.
    pub seats: u8,
    /// Robot gifts per minute, 0 to [`MAX_ROBOT_GIFTS_PER_MINUTE`].
    pub gift_rate_per_minute: u32,
    /// Which gifts robots send: 1 to [`MAX_GIFT_MIX`] distinct gifts with their weights.
    pub gift_mix: Vec<GiftShare>,
    /// Whether the room is run at all.
    pub enabled: bool,
    /// Rises by one with every update, from 1: the condition of [`RobotRooms::update`].
    pub version: u64,
    /// When the configuration was created.
    pub created_at: Timestamp,
    /// When it was last changed.
    pub updated_at: Timestamp,
}

/// Why a [`RobotRoomConfig`] cannot be stored: the field (`robots[3]`, `audience[7]`,
/// `profile.name`) and the rule it breaks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct RobotRoomProblem {
    /// The field, as the API names it.
    pub field: String,
    /// The rule it breaks.
    pub reason: String,
}

impl RobotRoomProblem {
    fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        RobotRoomProblem {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

/// Checks `text` by the room's own rule for `kind` ([`Field::check`]), as `field` of a robot
/// room configuration.
fn check_text(field: &str, kind: Field, text: &str) -> Result<(), RobotRoomProblem> {
    kind.check(text).map_err(|rejection| {
        let reason = match rejection {
            Rejection::FieldTooLong { max, .. } => format!("must have at most {max} characters"),
            Rejection::FieldInvalidCharacter { character, .. } => {
                format!("must not contain U+{character:04X}")
            }
            other => other.to_string(),
        };
        RobotRoomProblem::new(field, reason)
    })
}

impl RobotRoomConfig {
    /// Checks every rule of a robot room configuration, the first broken one answered as a
    /// [`RobotRoomProblem`]:
    ///
    /// - `profile`: the room's own rules for its texts ([`Field::check`], with the limits of
    ///   [`Field::max_chars`]): a name that is not blank, a notice and a cover URL, each within
    ///   its length and without the characters the room refuses;
    /// - `seat_count`: 1 to [`room_domain::MAX_SEATS`];
    /// - `robots`: 1 to [`MAX_ROBOTS`] distinct ids, each starting with `id_prefix` and none
    ///   with `{id_prefix}visitor-` (the visitors of human rooms);
    /// - `audience`: 24 numbers, each from 0 to the pool's size;
    /// - `seats`: 0 to `seat_count - 1`, and no more than the pool's size;
    /// - `gift_rate_per_minute`: 0 to [`MAX_ROBOT_GIFTS_PER_MINUTE`];
    /// - `gift_mix`: 1 to [`MAX_GIFT_MIX`] distinct gifts, each weighing 1 to
    ///   [`MAX_GIFT_WEIGHT`].
    pub fn validate(&self, id_prefix: &str) -> Result<(), RobotRoomProblem> {
        let profile = &self.profile;
        if profile.name.trim().is_empty() {
            return Err(RobotRoomProblem::new("profile.name", "must not be blank"));
        }
        check_text("profile.name", Field::Name, &profile.name)?;
        check_text("profile.notice", Field::Notice, &profile.notice)?;
        if let Some(url) = &profile.cover_url {
            check_text("profile.cover_url", Field::CoverUrl, url)?;
        }
        if !(1..=room_domain::MAX_SEATS).contains(&self.seat_count) {
            return Err(RobotRoomProblem::new(
                "seat_count",
                format!("must be 1 to {}", room_domain::MAX_SEATS),
            ));
        }
        let pool = self.robots.len();
        if !(1..=MAX_ROBOTS).contains(&pool) {
            return Err(RobotRoomProblem::new(
                "robots",
                format!("must hold 1 to {MAX_ROBOTS} robots"),
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for (i, robot) in self.robots.iter().enumerate() {
            if !robot.as_str().starts_with(id_prefix) {
                return Err(RobotRoomProblem::new(
                    format!("robots[{i}]"),
                    format!("{robot} is not a robot id (robot ids start with {id_prefix:?})"),
                ));
            }
            if robot.as_str().starts_with(&format!("{id_prefix}visitor-")) {
                return Err(RobotRoomProblem::new(
                    format!("robots[{i}]"),
                    format!("{robot} is a visitor robot of human rooms ({id_prefix}visitor-...)"),
                ));
            }
            if !seen.insert(robot) {
                return Err(RobotRoomProblem::new(
                    format!("robots[{i}]"),
                    format!("{robot} is in the pool twice"),
                ));
            }
        }
        if self.audience.len() != 24 {
            return Err(RobotRoomProblem::new(
                "audience",
                "must hold 24 numbers, one for each hour of the day (UTC)",
            ));
        }
        if let Some((hour, listeners)) = self
            .audience
            .iter()
            .enumerate()
            .find(|(_, listeners)| **listeners as usize > pool)
        {
            return Err(RobotRoomProblem::new(
                format!("audience[{hour}]"),
                format!("{listeners} listeners is more than the pool's {pool} robots"),
            ));
        }
        if self.seats >= self.seat_count {
            return Err(RobotRoomProblem::new(
                "seats",
                format!(
                    "must be 0 to {} (the room's {} seats less one, left for people)",
                    self.seat_count - 1,
                    self.seat_count
                ),
            ));
        }
        if usize::from(self.seats) > pool {
            return Err(RobotRoomProblem::new(
                "seats",
                format!("{} seats is more than the pool's {pool} robots", self.seats),
            ));
        }
        if self.gift_rate_per_minute > MAX_ROBOT_GIFTS_PER_MINUTE {
            return Err(RobotRoomProblem::new(
                "gift_rate_per_minute",
                format!("must be 0 to {MAX_ROBOT_GIFTS_PER_MINUTE}"),
            ));
        }
        if !(1..=MAX_GIFT_MIX).contains(&self.gift_mix.len()) {
            return Err(RobotRoomProblem::new(
                "gift_mix",
                format!("must name 1 to {MAX_GIFT_MIX} gifts"),
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for (i, share) in self.gift_mix.iter().enumerate() {
            if !(1..=MAX_GIFT_WEIGHT).contains(&share.weight) {
                return Err(RobotRoomProblem::new(
                    format!("gift_mix[{i}].weight"),
                    format!("must be 1 to {MAX_GIFT_WEIGHT}"),
                ));
            }
            if !seen.insert(&share.gift_id) {
                return Err(RobotRoomProblem::new(
                    format!("gift_mix[{i}].gift_id"),
                    format!("{} is in the mix twice", share.gift_id),
                ));
            }
        }
        Ok(())
    }
}

/// Robot room configurations, one per room, keyed by room id.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait RobotRooms: Send + Sync {
    /// Stores a new configuration as given:
    /// [`Error::AlreadyExists`](crate::Error::AlreadyExists) if the room has one.
    async fn create(&self, config: &RobotRoomConfig) -> Result<()>;
    /// The configuration of a room.
    async fn get(&self, room_id: &RoomId) -> Result<Option<RobotRoomConfig>>;
    /// Configurations by room id (byte order), after `after` when given, at most `limit` and
    /// never more than [`MAX_ROBOT_ROOM_PAGE`].
    async fn list(&self, after: Option<RoomId>, limit: u32) -> Result<Vec<RobotRoomConfig>>;
    /// Replaces the room's configuration with `config` as given, if the stored one is at
    /// version `expected_version`: [`Error::NotFound`](crate::Error::NotFound) if the room
    /// has none, [`Error::Conflict`](crate::Error::Conflict) if its version moved. Nothing is
    /// written on an error.
    async fn update(&self, config: &RobotRoomConfig, expected_version: u64) -> Result<()>;
    /// Deletes the room's configuration; answers whether it had one.
    async fn delete(&self, room_id: &RoomId) -> Result<bool>;
}

/// The node holding a room's lease, as [`Lease::get_holder`] finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseHolder {
    /// The holder's node id.
    pub node_id: String,
    /// Where other nodes reach the holder, from the node registry; `None` when the holder's
    /// registration has expired (the node is not live, and its lease is about to expire too).
    pub url: Option<String>,
}

/// Room ownership among nodes: liveness only. Safety comes from the epoch every commit is
/// conditional on, so a node that lost its lease without noticing still cannot commit.
/// Embedded mode always owns.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait Lease: Send + Sync {
    /// Takes the room if free (or already ours, extending the hold).
    async fn acquire(&self, room_id: &RoomId) -> Result<bool>;
    /// Extends our hold on each of `rooms` and refreshes this node's registration, in one
    /// round trip to the backend; answers, room by room in order, whether we still hold it.
    async fn renew_all(&self, rooms: &[RoomId]) -> Result<Vec<bool>>;
    /// Gives the room up if we hold it; another node's hold is left alone.
    async fn release(&self, room_id: &RoomId) -> Result<()>;
    /// Who holds the room, if anyone.
    async fn get_holder(&self, room_id: &RoomId) -> Result<Option<LeaseHolder>>;
    /// Registers this node as a member of `group` for one lease TTL (calling again renews
    /// it) and answers the ids of the group's other live members, sorted: how the nodes
    /// that share some work (the orchestrators sharing the robot rooms) find each other.
    /// Embedded mode has no other node.
    async fn join_group(&self, group: &str) -> Result<Vec<String>>;
    /// Takes this node out of `group` at once (a node that stops in order), rather than
    /// after its registration's TTL.
    async fn leave_group(&self, group: &str) -> Result<()>;
    /// Takes the cluster-wide lock `name` for one lease TTL unless someone holds it, and
    /// answers the token that releases it (`None`: held). Every call is its own holder, two
    /// on one node included: what the lucky gifts of one sender take turns with, whichever
    /// node each lands on. Embedded mode has no other node: the in-process locks of its one
    /// node are the whole story, and the lock is always free.
    async fn try_lock(&self, name: &str) -> Result<Option<String>>;
    /// Releases the lock `name` if `token` still holds it (a lock that expired and was taken
    /// by another is left alone).
    async fn unlock(&self, name: &str, token: &str) -> Result<()>;
}

/// A command for a room whose cell runs on another node, as [`Forwarder::execute`] sends it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForwardedCommand {
    /// The command, with its id.
    pub command: Command,
    /// Who issued it (already authenticated by the node that received it).
    pub actor: Actor,
    /// The gift order an `ApplyGift` applies.
    pub order: Option<GiftOrder>,
}

/// Which state of a room [`Forwarder::read`] asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadKind {
    /// What storage holds ([`CellRuntime::query`](crate::CellRuntime::query)).
    Committed,
    /// The newest state, which may hold a batch in flight
    /// ([`CellRuntime::peek`](crate::CellRuntime::peek)).
    Newest,
}

/// Where a user stands in a room, as [`Forwarder::membership`] answers it: the few facts the
/// hottest checks need (a gift's pre-check, a heartbeat, an event stream's membership), so
/// that they do not ship the whole room between nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Membership {
    /// The room's status.
    pub status: room_domain::RoomStatus,
    /// Whether the user is a member.
    pub member: bool,
    /// The room's version.
    pub version: u64,
}

/// Reaches a room's cell on the node that owns it, through that node's internal endpoint
/// (the URL the node registered with its lease). The owner runs the request on its own cell
/// and never forwards it again: a node that does not own the room answers
/// [`Error::NotOwner`](crate::Error::NotOwner), and the sender looks the owner up once more.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait Forwarder: Send + Sync {
    /// Has the node at `url` apply `command` to its cell of `room_id`. The reply to a gift
    /// order's own apply ([`crate::gift_apply_command`] by the system, with its `order`) may
    /// hold only the gift's `RoomGiftSent` event of the events it produced: all the saga
    /// reads of it.
    async fn execute(
        &self,
        url: &str,
        room_id: &RoomId,
        command: &ForwardedCommand,
    ) -> Result<crate::CommandReply>;
    /// The state of `room_id` as the node at `url` holds it.
    async fn read(&self, url: &str, room_id: &RoomId, kind: ReadKind) -> Result<RoomState>;
    /// Where `user` stands in `room_id` on the node at `url`.
    async fn membership(
        &self,
        url: &str,
        room_id: &RoomId,
        user: &UserId,
        kind: ReadKind,
    ) -> Result<Membership>;
}

/// A display event on its way to the room's IM group (or the SSE stream in embedded mode).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DisplayMessage {
    /// The envelope (redacted).
    pub envelope: EventEnvelope,
    /// Its priority.
    pub priority: room_domain::ImPriority,
    /// Coalescing key, if display may keep only the newest.
    pub coalesce_key: Option<&'static str>,
}

/// Sends display events. Best effort: never blocks or fails a command.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait Messenger: Send + Sync {
    /// Hands over the display events of one commit of one room, in seq order.
    async fn publish(&self, room_id: &RoomId, messages: Vec<DisplayMessage>);
}

/// Who is where, by heartbeat. A user is recorded in one room at most, with the time of their
/// last heartbeat (or join) there.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait Presence: Send + Sync {
    /// Records that `user` is in `room_id` at `now`; returns the room they were in before, if
    /// another.
    async fn heartbeat(
        &self,
        room_id: &RoomId,
        user: &UserId,
        now: Timestamp,
    ) -> Result<Option<RoomId>>;
    /// Records `user` in `room_id` at `now` unless they are recorded anywhere already: a room
    /// loaded from storage restores its members this way, so that members whose clients are
    /// gone are evicted after the timeout like any other.
    async fn restore(&self, room_id: &RoomId, user: &UserId, now: Timestamp) -> Result<()>;
    /// Forgets `user` in `room_id` (a later heartbeat in another room is kept).
    async fn remove(&self, room_id: &RoomId, user: &UserId) -> Result<()>;
    /// Forgets `user` in `room_id` only if their last heartbeat there is still `seen` (as
    /// [`Presence::list_stale`] reported it), in one step: `Ok(false)`, changing nothing, when
    /// they heartbeat or joined anywhere since.
    async fn remove_if_seen(
        &self,
        room_id: &RoomId,
        user: &UserId,
        seen: Timestamp,
    ) -> Result<bool>;
    /// The room `user` is in.
    async fn get_current_room(&self, user: &UserId) -> Result<Option<RoomId>>;
    /// Users whose last heartbeat is before `before`, at most `limit`.
    async fn list_stale(&self, before: Timestamp, limit: u32) -> Result<Vec<StaleMember>>;
}

/// A user whose heartbeat stopped, as [`Presence::list_stale`] finds them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaleMember {
    /// The room they were last seen in.
    pub room_id: RoomId,
    /// Who.
    pub user: UserId,
    /// Their last heartbeat (or join).
    pub seen: Timestamp,
}

/// A join [`PasswordAttempts::check`] counted as a wrong password, to take back with
/// [`PasswordAttempts::uncount`] if the room answers otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub struct Counted {
    /// Who gave the password.
    pub user: UserId,
    /// The room it was for.
    pub room: RoomId,
    /// When the window the attempt was counted in began: its first wrong password.
    pub since: Timestamp,
}

/// Wrong room passwords, counted per user and room, so that a short password cannot be
/// guessed by brute force: past [`MAX_WRONG_PASSWORDS`](crate::MAX_WRONG_PASSWORDS) wrong
/// ones within [`PASSWORD_WINDOW_MS`](crate::PASSWORD_WINDOW_MS) of the first, that user's
/// joins of that room are refused until the window ends. Windows follow the `now` callers
/// give, not the backend's clock.
///
/// There is no limit per room across users: anyone could then shut a room's password holders
/// out with a few accounts, which is worse in a social app than the guesses that many
/// accounts add (5 a minute each).
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait PasswordAttempts: Send + Sync {
    /// Refuses a join of `room` by `user` (who needs its password) with
    /// [`Error::TooManyAttempts`](crate::Error::TooManyAttempts) (`retry_at`: when the window
    /// ends) while the user has given
    /// [`MAX_WRONG_PASSWORDS`](crate::MAX_WRONG_PASSWORDS) wrong ones within the window,
    /// whatever the password now (a right one let through would tell a guesser it is right).
    /// Otherwise, if `counts`, counts the attempt as wrong before the room decides, so that
    /// guesses sent at once cannot all pass the check first, and returns it as [`Counted`];
    /// the first wrong password after a window ended begins a new one.
    async fn check(
        &self,
        user: &UserId,
        room: &RoomId,
        now: Timestamp,
        counts: bool,
    ) -> Result<Option<Counted>>;
    /// Takes back an attempt counted as wrong that the room let in or refused for another
    /// reason; a window that has begun since keeps its count.
    async fn uncount(&self, counted: Counted) -> Result<()>;
}

/// The time.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
pub trait Clock: Send + Sync {
    /// Now.
    fn now(&self) -> Timestamp;
}

/// Ids and random values.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
pub trait IdGen: Send + Sync {
    /// A new unique id (for commands that have no client-chosen id).
    fn next_id(&self) -> String;
    /// A uniformly random value.
    fn random(&self) -> u64;
}

/// Shared handle to a [`CellStore`].
pub type CellStoreRef = Arc<dyn CellStore>;
/// Shared handle to a [`SnapshotStore`].
pub type SnapshotStoreRef = Arc<dyn SnapshotStore>;
/// Shared handle to an [`Outbox`].
pub type OutboxRef = Arc<dyn Outbox>;
/// Shared handle to an [`EventPublisher`].
pub type EventPublisherRef = Arc<dyn EventPublisher>;
/// Shared handle to [`WorkClaims`].
pub type WorkClaimsRef = Arc<dyn WorkClaims>;
/// Shared handle to [`GiftOrders`].
pub type GiftOrdersRef = Arc<dyn GiftOrders>;
/// Shared handle to a [`Wallet`].
pub type WalletRef = Arc<dyn Wallet>;
/// Shared handle to a [`GiftCatalog`].
pub type GiftCatalogRef = Arc<dyn GiftCatalog>;
/// Shared handle to [`Timers`].
pub type TimersRef = Arc<dyn Timers>;
/// Shared handle to a [`RoomDirectory`].
pub type RoomDirectoryRef = Arc<dyn RoomDirectory>;
/// Shared handle to [`Payouts`].
pub type PayoutsRef = Arc<dyn Payouts>;
/// Shared handle to [`RobotRooms`].
pub type RobotRoomsRef = Arc<dyn RobotRooms>;
/// Shared handle to a [`Lease`].
pub type LeaseRef = Arc<dyn Lease>;
/// Shared handle to a [`Messenger`].
pub type MessengerRef = Arc<dyn Messenger>;
/// Shared handle to a [`Forwarder`].
pub type ForwarderRef = Arc<dyn Forwarder>;
/// Shared handle to [`Presence`].
pub type PresenceRef = Arc<dyn Presence>;
/// Shared handle to [`PasswordAttempts`].
pub type PasswordAttemptsRef = Arc<dyn PasswordAttempts>;
/// Shared handle to a [`Clock`].
pub type ClockRef = Arc<dyn Clock>;
/// Shared handle to an [`IdGen`].
pub type IdGenRef = Arc<dyn IdGen>;
