//! The bodies of the leaderboard routes.

use room_app::ports::{BoardKind, BoardPayout, BoardPeriod, RewardTable, RewardTables};
use room_domain::Coins;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// One entry of a board: a user (on the boards of senders and receivers) or a room (on the
/// board of rooms), with the display fields the service has.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BoardItem {
    /// From 1: one more than the entries above it (a higher score, or the same score reached
    /// earlier).
    pub rank: u64,
    /// The user, on a board of senders or receivers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// The room, on the board of rooms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub room_id: Option<String>,
    /// The coin value of the paid gifts counted in the period.
    pub score: i64,
    /// When the score was reached (ms since the epoch): the latest gift counted in it.
    pub reached_at_ms: i64,
    /// The user's nickname, when their profile has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nickname: Option<String>,
    /// The user's avatar URL, when their profile has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub avatar_url: Option<String>,
    /// The room's name, on the board of rooms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The room's cover, on the board of rooms, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cover_url: Option<String>,
}

/// Which board an answer is of.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BoardOf {
    /// `senders`, `receivers` or `rooms`.
    pub board: String,
    /// The room, for a room's board; absent for the whole app's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub room_id: Option<String>,
    /// `day`, `week` or `month`.
    pub period: String,
    /// The period's first day, `YYYY-MM-DD` (a week's Monday, a month's first).
    pub period_start: String,
    /// The zone the periods are in (`ROOM__BILLING__TIME_ZONE`).
    pub time_zone: String,
}

/// `GET /v1/boards/{board}` and `GET /v1/rooms/{room_id}/boards/{board}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BoardResponse {
    /// Which board.
    #[serde(flatten)]
    pub of: BoardOf,
    /// The page's entries in rank order.
    pub items: Vec<BoardItem>,
    /// Pass as `cursor` for the next page; absent on the last.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// `GET /v1/boards/{board}/me` and `GET /v1/rooms/{room_id}/boards/{board}/me`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BoardStandingResponse {
    /// Which board.
    #[serde(flatten)]
    pub of: BoardOf,
    /// The caller.
    pub user_id: String,
    /// The caller's rank, absent when they have no score on the board. Ranks are counted up
    /// to 100,000: a caller further down is answered 100,001 with `rank_beyond`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<u64>,
    /// Present (true) when the caller ranks beyond the 100,000th entry.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub rank_beyond: bool,
    /// The caller's score (0 when they have none).
    pub score: i64,
    /// When the score was reached (ms since the epoch), absent without a score.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reached_at_ms: Option<i64>,
}

/// A board of the whole app, as the reward tables name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum BoardName {
    /// Users by the value they sent.
    Senders,
    /// Users by the value they received.
    Receivers,
    /// Rooms by the value sent in them.
    Rooms,
}

impl From<BoardName> for BoardKind {
    fn from(name: BoardName) -> Self {
        match name {
            BoardName::Senders => BoardKind::Senders,
            BoardName::Receivers => BoardKind::Receivers,
            BoardName::Rooms => BoardKind::Rooms,
        }
    }
}

impl From<BoardKind> for BoardName {
    fn from(kind: BoardKind) -> Self {
        match kind {
            BoardKind::Senders => BoardName::Senders,
            BoardKind::Receivers => BoardName::Receivers,
            BoardKind::Rooms => BoardName::Rooms,
        }
    }
}

/// A board's period.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PeriodName {
    /// A day.
    Day,
    /// A week, Monday to Sunday.
    Week,
    /// A month.
    Month,
}

impl From<PeriodName> for BoardPeriod {
    fn from(name: PeriodName) -> Self {
        match name {
            PeriodName::Day => BoardPeriod::Day,
            PeriodName::Week => BoardPeriod::Week,
            PeriodName::Month => BoardPeriod::Month,
        }
    }
}

impl From<BoardPeriod> for PeriodName {
    fn from(period: BoardPeriod) -> Self {
        match period {
            BoardPeriod::Day => PeriodName::Day,
            BoardPeriod::Week => PeriodName::Week,
            BoardPeriod::Month => PeriodName::Month,
        }
    }
}

/// What one board of the whole app pays its top ranks when a period closes.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RewardTableBody {
    /// The board.
    pub board: BoardName,
    /// The period whose close pays.
    pub period: PeriodName,
    /// Coins for rank 1, 2, ...; paid to the user, or on the board of rooms to the room's
    /// owner.
    #[schema(min_items = 1, max_items = 100, value_type = Vec<i64>)]
    pub ranks: Vec<RankCoins>,
}

/// Coins one rank is paid, 0 to 10^9.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(transparent)]
#[schema(minimum = 0, maximum = 1_000_000_000)]
pub struct RankCoins(pub i64);

impl From<RewardTableBody> for RewardTable {
    fn from(body: RewardTableBody) -> Self {
        RewardTable {
            board: body.board.into(),
            period: body.period.into(),
            ranks: body.ranks.into_iter().map(|coins| Coins(coins.0)).collect(),
        }
    }
}

impl From<&RewardTable> for RewardTableBody {
    fn from(table: &RewardTable) -> Self {
        RewardTableBody {
            board: table.board.into(),
            period: table.period.into(),
            ranks: table.ranks.iter().map(|coins| RankCoins(coins.0)).collect(),
        }
    }
}

/// `GET` and `PUT /v1/admin/board-rewards`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BoardRewardsResponse {
    /// The version (from 1).
    pub version: u64,
    /// The tables; a board and period without one pays nothing.
    pub tables: Vec<RewardTableBody>,
}

impl From<RewardTables> for BoardRewardsResponse {
    fn from(tables: RewardTables) -> Self {
        BoardRewardsResponse {
            version: tables.version,
            tables: tables.tables.iter().map(Into::into).collect(),
        }
    }
}

/// `PUT /v1/admin/board-rewards`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PutBoardRewardsRequest {
    /// The version this change is based on: the current one's, else 409.
    pub expected_version: u64,
    /// The new tables: at most one per board and period.
    #[schema(max_items = 9)]
    pub tables: Vec<RewardTableBody>,
}

/// One rank's reward of a closed period.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BoardPayoutItem {
    /// The rank, from 1.
    pub rank: u32,
    /// Who held it: a user, or on the board of rooms a room.
    pub subject: String,
    /// Their score at the close.
    pub score: i64,
    /// Who is paid: the user, or the room's owner.
    pub user_id: String,
    /// Coins paid.
    pub coins: i64,
    /// The version of the reward tables that paid it.
    pub rewards_version: u64,
    /// When it was credited (ms since the epoch); absent while it is owed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paid_at_ms: Option<i64>,
}

impl From<BoardPayout> for BoardPayoutItem {
    fn from(payout: BoardPayout) -> Self {
        BoardPayoutItem {
            rank: payout.rank,
            subject: payout.subject,
            score: payout.score.0,
            user_id: payout.user.to_string(),
            coins: payout.coins.0,
            rewards_version: payout.rewards_version,
            paid_at_ms: payout.paid_at.map(|at| at.0),
        }
    }
}

/// `GET /v1/admin/boards/{board}/payouts`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BoardPayoutsResponse {
    /// Which board.
    #[serde(flatten)]
    pub of: BoardOf,
    /// Whether the period's rewards were recorded (once it closed and the delay passed).
    pub recorded: bool,
    /// What each rank was paid or is owed, by rank.
    pub payouts: Vec<BoardPayoutItem>,
}
