//! The bodies of the gift value and turnover routes.

use room_app::gift_value::GiftValueView;
use room_app::ports::{RoomTurnover, ValueTotals};
use serde::Serialize;
use utoipa::ToSchema;

/// Coins sent and received, all time.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ValueTotalsBody {
    /// The coin value of the gifts the user sent.
    pub sent: i64,
    /// The coin value the user received.
    pub received: i64,
}

impl From<ValueTotals> for ValueTotalsBody {
    fn from(totals: ValueTotals) -> Self {
        ValueTotalsBody {
            sent: totals.sent.0,
            received: totals.received.0,
        }
    }
}

/// Coins sent and received in one period.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PeriodValueBody {
    /// The period: `YYYY-MM-DD` for a day, the week's Monday `YYYY-MM-DD` for a week,
    /// `YYYY-MM` for a month.
    pub period: String,
    /// The coin value of the gifts the user sent in it.
    pub sent: i64,
    /// The coin value the user received in it.
    pub received: i64,
}

fn in_period(period: String, totals: ValueTotals) -> PeriodValueBody {
    PeriodValueBody {
        period,
        sent: totals.sent.0,
        received: totals.received.0,
    }
}

/// `GET /v1/users/{user_id}/gift-value`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct GiftValueResponse {
    /// Whose.
    pub user_id: String,
    /// The zone the periods are in (`ROOM__BILLING__TIME_ZONE`).
    pub time_zone: String,
    /// Since the first gift counted.
    pub lifetime: ValueTotalsBody,
    /// In the day.
    pub day: PeriodValueBody,
    /// In the day's week (Monday to Sunday).
    pub week: PeriodValueBody,
    /// In the day's month.
    pub month: PeriodValueBody,
}

impl GiftValueResponse {
    /// The answer for `user_id` in `time_zone`.
    pub fn new(user_id: String, time_zone: String, view: GiftValueView) -> Self {
        let periods = view.periods;
        GiftValueResponse {
            user_id,
            time_zone,
            lifetime: view.values.lifetime.into(),
            day: in_period(periods.day.to_string(), view.values.day),
            week: in_period(periods.week.monday().to_string(), view.values.week),
            month: in_period(periods.month.to_string(), view.values.month),
        }
    }
}

/// A closed day's turnover settlement: the owner's reward, credited as income.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TurnoverSettlementBody {
    /// The room's owner, credited the reward.
    pub owner: String,
    /// The owner's share at the latest settlement, in basis points.
    pub share_bp: u32,
    /// Every reward recorded for the day: `settled_turnover × share_bp / 10000`, rounded
    /// down (never less than an earlier settlement recorded).
    pub reward: i64,
    /// The turnover the latest settlement settled on.
    pub settled_turnover: i64,
    /// How many settlements the day had (more than 1 when gifts were counted after it was
    /// first settled).
    pub settlements: u32,
    /// Recorded and not yet credited (0 once paid).
    pub owed: i64,
    /// The billing policy version of the latest settlement.
    pub billing_version: u64,
    /// When the latest settlement was recorded (ms since the epoch).
    pub settled_at: i64,
}

/// `GET /v1/admin/rooms/{room_id}/turnover`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TurnoverResponse {
    /// The room.
    pub room_id: String,
    /// The day, `YYYY-MM-DD` in the billing time zone.
    pub day: String,
    /// The zone the day is in (`ROOM__BILLING__TIME_ZONE`).
    pub time_zone: String,
    /// The coin value of the gifts applied in the room that day.
    pub turnover: i64,
    /// How many gifts (orders) that was.
    pub gifts: u64,
    /// The settlement, once the day closed and was settled; absent before.
    pub settlement: Option<TurnoverSettlementBody>,
}

impl TurnoverResponse {
    /// The answer for `turnover` in `time_zone`.
    pub fn new(turnover: RoomTurnover, time_zone: String) -> Self {
        TurnoverResponse {
            room_id: turnover.room_id.to_string(),
            day: turnover.day.to_string(),
            time_zone,
            turnover: turnover.turnover.0,
            gifts: turnover.gifts,
            settlement: turnover.settlement.map(|s| TurnoverSettlementBody {
                owner: s.owner.to_string(),
                share_bp: s.share_bp,
                reward: s.reward.0,
                settled_turnover: turnover.settled_turnover.0,
                settlements: turnover.settlements,
                owed: turnover.owed.0,
                billing_version: s.billing_version,
                settled_at: s.settled_at.0,
            }),
        }
    }
}
