//! Gift value and room turnover ([`GiftTallies`]): the coin value of applied gifts counted by
//! user (sent and received) and by room (its daily turnover), by period, and the settlement
//! of each closed day's turnover.

use std::sync::Arc;

use async_trait::async_trait;
use room_domain::{Coins, DayKey, OrderId, Periods, RoomId, Timestamp, UserId};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The most gifts one [`GiftTallies::count_gifts`] call takes.
pub const MAX_TALLY_COUNT: usize = 200;

/// The most turnovers one [`GiftTallies::unsettled_turnovers`] answers, whatever `limit`
/// asks.
pub const MAX_TURNOVER_PAGE: u32 = 500;

/// One applied gift, as it is counted: once, by its order (sender, order id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GiftTally {
    /// The gift's sender.
    pub sender: UserId,
    /// The sender's order.
    pub order_id: OrderId,
    /// The room it was sent in.
    pub room_id: RoomId,
    /// Who received it, each [`value_per_recipient`](Self::value_per_recipient).
    pub recipients: Vec<UserId>,
    /// Coins each recipient received (unit price × count; never negative).
    pub value_per_recipient: Coins,
    /// When it was applied: the instant its fact was committed.
    pub at: Timestamp,
    /// The day, week and month it counts in (in the billing time zone).
    pub periods: Periods,
}

impl GiftTally {
    /// What the sender gave: the value per recipient times the recipients, `None` past
    /// `i64::MAX`.
    pub fn total(&self) -> Option<Coins> {
        let recipients = i64::try_from(self.recipients.len()).ok()?;
        self.value_per_recipient
            .0
            .checked_mul(recipients)
            .map(Coins)
    }

    /// The UTC day the gift's order key is kept under until
    /// [`GiftTallies::prune_counted`] forgets it: it depends on the fact alone, not on the
    /// configured time zone.
    pub fn key_day(&self) -> DayKey {
        self.at.day_key(0)
    }
}

/// Coins sent and received in one period.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValueTotals {
    /// The value of the gifts the user sent.
    pub sent: Coins,
    /// The value the user received.
    pub received: Coins,
}

/// A user's gift value: all time and in one day, week and month.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GiftValues {
    /// Since the first gift counted.
    pub lifetime: ValueTotals,
    /// In the day asked about.
    pub day: ValueTotals,
    /// In the week asked about.
    pub week: ValueTotals,
    /// In the month asked about.
    pub month: ValueTotals,
}

/// What a closed day's turnover paid the room's owner so far, as its latest settlement
/// recorded it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnoverSettlement {
    /// The room's owner, credited the reward.
    pub owner: UserId,
    /// The owner's share of the turnover, in basis points, at the latest settlement.
    pub share_bp: u32,
    /// Every reward recorded for the day so far: what the turnover settled on earned (never
    /// less than what earlier settlements recorded).
    pub reward: Coins,
    /// The billing policy version of the latest settlement.
    pub billing_version: u64,
    /// When the latest settlement was recorded.
    pub settled_at: Timestamp,
}

/// One room's gift turnover of one day, and how far it is settled.
///
/// A closed day is settled once its turnover is counted; a gift counted after that (the
/// consumers fell behind) makes it pending again, and the next settlement pays what the
/// larger turnover earns beyond what was recorded. Each settlement is recorded first, with
/// what it owes, and marked paid once the owner was credited, so a pass stopped in between
/// pays what is recorded when it runs again, once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoomTurnover {
    /// The room.
    pub room_id: RoomId,
    /// The day (in the billing time zone).
    pub day: DayKey,
    /// The coin value of the gifts applied in the room that day.
    pub turnover: Coins,
    /// How many gifts (orders) that was.
    pub gifts: u64,
    /// How many settlements were recorded (0: none yet).
    pub settlements: u32,
    /// The turnover the latest settlement settled on (zero before the first).
    pub settled_turnover: Coins,
    /// What the latest settlement owes the owner and has not been marked paid.
    pub owed: Coins,
    /// The latest settlement, once there is one.
    pub settlement: Option<TurnoverSettlement>,
}

impl RoomTurnover {
    /// A turnover of `room` on `day` with nothing counted.
    pub fn empty(room_id: RoomId, day: DayKey) -> Self {
        RoomTurnover {
            room_id,
            day,
            turnover: Coins::ZERO,
            gifts: 0,
            settlements: 0,
            settled_turnover: Coins::ZERO,
            owed: Coins::ZERO,
            settlement: None,
        }
    }
}

/// Gift value by user and turnover by room and day, counted from applied gifts, each gift
/// once by its order (sender, order id) however often it is counted; and closed days'
/// turnovers settled, each settlement recorded once and then marked paid.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait GiftTallies: Send + Sync {
    /// Counts every gift whose order was not counted yet, atomically (all of them or none),
    /// and returns how many it counted. A gift counted adds its total to the sender's sent
    /// value and its value per recipient to each recipient's received value, all time and in
    /// its day, week and month, and its total and one gift to its room's turnover of its day,
    /// which it makes pending settlement.
    /// A repeat of a call counts nothing; of two calls with one gift at once, one counts it.
    /// A negative value, a total, value or turnover past `i64::MAX`, or more than
    /// [`MAX_TALLY_COUNT`] gifts: [`Error::Invalid`], and nothing is counted.
    async fn count_gifts(&self, tallies: &[GiftTally]) -> Result<u32>;
    /// `user`'s gift value all time and in the day, week and month of `periods` (zeros for
    /// what holds no gift).
    async fn gift_values(&self, user: &UserId, periods: &Periods) -> Result<GiftValues>;
    /// `room`'s turnover of `day`, or `None` when no gift was counted in it that day.
    async fn room_turnover(&self, room: &RoomId, day: DayKey) -> Result<Option<RoomTurnover>>;
    /// Turnovers pending settlement (never settled, counted further since their latest
    /// settlement, or owed and not marked paid) of days before `before`, by day and then room
    /// id, after `after` when it is given, at most `limit` (and at most
    /// [`MAX_TURNOVER_PAGE`]).
    async fn unsettled_turnovers(
        &self,
        before: DayKey,
        after: Option<(DayKey, RoomId)>,
        limit: u32,
    ) -> Result<Vec<RoomTurnover>>;
    /// Records settlement number `settlements + 1` of `room`'s turnover of `day`, settled on
    /// `settled_turnover` and owing `owed`, if the turnover still has exactly `settlements`
    /// settlements and owes nothing (a compare and set): `true` when this call recorded it.
    /// [`Error::NotFound`] when the room has no turnover that day.
    async fn record_settlement(
        &self,
        room: &RoomId,
        day: DayKey,
        settlements: u32,
        settled_turnover: Coins,
        owed: Coins,
        settlement: &TurnoverSettlement,
    ) -> Result<bool>;
    /// Marks settlement number `settlements` of `room`'s turnover of `day` paid: it owes
    /// nothing more, and the turnover is no longer pending unless gifts were counted beyond
    /// what it settled on. Nothing changes when another settlement was recorded since.
    async fn mark_settlement_paid(
        &self,
        room: &RoomId,
        day: DayKey,
        settlements: u32,
    ) -> Result<()>;
    /// Forgets the order keys of gifts whose [`GiftTally::key_day`] is before `before`, at
    /// most `limit` of them; returns how many. A gift whose key is forgotten would be
    /// counted again: only keys older than any fact a consumer can still be handed go.
    async fn prune_counted(&self, before: DayKey, limit: u32) -> Result<u64>;
}

/// Shared handle to [`GiftTallies`].
pub type GiftTalliesRef = Arc<dyn GiftTallies>;

/// The checks every store makes before counting `tallies` ([`GiftTallies::count_gifts`]).
pub fn check_tallies(tallies: &[GiftTally]) -> Result<()> {
    if tallies.len() > MAX_TALLY_COUNT {
        return Err(Error::Invalid(format!(
            "{} gifts in one count: at most {MAX_TALLY_COUNT}",
            tallies.len()
        )));
    }
    for tally in tallies {
        if tally.value_per_recipient.is_negative() {
            return Err(Error::Invalid(format!(
                "negative gift value {} of order {}",
                tally.value_per_recipient, tally.order_id
            )));
        }
        if tally.total().is_none() {
            return Err(Error::Invalid(format!(
                "the value of order {} passes the largest amount",
                tally.order_id
            )));
        }
    }
    Ok(())
}

/// The amounts one count adds, gathered so that a store writes each row once and checks each
/// sum before it writes anything: by (user, period) and by (room, day).
#[derive(Debug, Default)]
pub struct TallySums {
    /// Added to users' values: (user, period code, period number) → (sent, received).
    pub values: std::collections::BTreeMap<(UserId, u8, i64), (i64, i64)>,
    /// Added to rooms' turnovers: (day, room) → (turnover, gifts).
    pub turnovers: std::collections::BTreeMap<(i64, RoomId), (i64, u64)>,
}

/// The period codes stores keep gift values under: all time, day, week, month.
pub const PERIOD_LIFETIME: u8 = 0;
/// See [`PERIOD_LIFETIME`].
pub const PERIOD_DAY: u8 = 1;
/// See [`PERIOD_LIFETIME`].
pub const PERIOD_WEEK: u8 = 2;
/// See [`PERIOD_LIFETIME`].
pub const PERIOD_MONTH: u8 = 3;

/// The (code, number) of each period a gift of `periods` counts in.
pub fn period_keys(periods: &Periods) -> [(u8, i64); 4] {
    [
        (PERIOD_LIFETIME, 0),
        (PERIOD_DAY, periods.day.0),
        (PERIOD_WEEK, periods.week.0),
        (PERIOD_MONTH, periods.month.0),
    ]
}

impl TallySums {
    /// Adds what `tally` adds; [`Error::Invalid`] when a sum passes `i64::MAX`.
    pub fn add(&mut self, tally: &GiftTally) -> Result<()> {
        let overflow =
            || Error::Invalid(format!("gift value overflow at order {}", tally.order_id));
        let total = tally.total().ok_or_else(overflow)?.0;
        let each = tally.value_per_recipient.0;
        for (code, number) in period_keys(&tally.periods) {
            let sender = self
                .values
                .entry((tally.sender.clone(), code, number))
                .or_default();
            sender.0 = sender.0.checked_add(total).ok_or_else(overflow)?;
            for recipient in &tally.recipients {
                let entry = self
                    .values
                    .entry((recipient.clone(), code, number))
                    .or_default();
                entry.1 = entry.1.checked_add(each).ok_or_else(overflow)?;
            }
        }
        let room = self
            .turnovers
            .entry((tally.periods.day.0, tally.room_id.clone()))
            .or_default();
        room.0 = room.0.checked_add(total).ok_or_else(overflow)?;
        room.1 += 1;
        Ok(())
    }
}
