//! The leaderboards' rewards ([`BoardRewards`]): the reward tables by version, as operators
//! change them, and each closed period's payouts, recorded once and then marked paid.

use std::sync::Arc;

use async_trait::async_trait;
use room_domain::{Coins, Timestamp, UserId};
use serde::{Deserialize, Serialize};

use super::boards::{BoardId, BoardKind, BoardPeriod};
use crate::error::{Error, Result};

/// The most tables one version holds: one per board of the whole app and period.
pub const MAX_REWARD_TABLES: usize = 9;

/// The most ranks one table rewards.
pub const MAX_REWARD_RANKS: usize = 100;

/// The most coins one rank is paid.
pub const MAX_RANK_REWARD: i64 = 1_000_000_000;

/// The most unpaid payouts one [`BoardRewards::unpaid_board_payouts`] answers.
pub const MAX_PAYOUT_PAGE: u32 = 500;

/// What one board of the whole app pays its top ranks when a period closes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RewardTable {
    /// The board.
    pub board: BoardKind,
    /// The period whose close pays.
    pub period: BoardPeriod,
    /// Coins for rank 1, 2, ...: at most [`MAX_REWARD_RANKS`], each 0 to
    /// [`MAX_RANK_REWARD`].
    pub ranks: Vec<Coins>,
}

/// One version of the reward tables. A version, once stored, never changes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RewardTables {
    /// From 1.
    pub version: u64,
    /// The tables: at most one per board and period.
    pub tables: Vec<RewardTable>,
}

impl RewardTables {
    /// The table of `board`'s `period`, if it pays.
    pub fn table(&self, board: BoardKind, period: BoardPeriod) -> Option<&RewardTable> {
        self.tables
            .iter()
            .find(|table| table.board == board && table.period == period)
    }

    /// What is wrong with these tables, if anything: more than [`MAX_REWARD_TABLES`], a
    /// board and period given twice, a table of no rank or of more than
    /// [`MAX_REWARD_RANKS`], a reward out of 0 to [`MAX_RANK_REWARD`].
    pub fn problem(&self) -> Option<String> {
        if self.tables.len() > MAX_REWARD_TABLES {
            return Some(format!(
                "{} tables: at most {MAX_REWARD_TABLES}",
                self.tables.len()
            ));
        }
        for (i, table) in self.tables.iter().enumerate() {
            let name = format!("{} {}", table.board.as_str(), table.period.as_str());
            if self.tables[..i]
                .iter()
                .any(|other| other.board == table.board && other.period == table.period)
            {
                return Some(format!("the table of {name} is given twice"));
            }
            if table.ranks.is_empty() || table.ranks.len() > MAX_REWARD_RANKS {
                return Some(format!(
                    "the table of {name} rewards {} ranks: 1 to {MAX_REWARD_RANKS}",
                    table.ranks.len()
                ));
            }
            if let Some(rank) = table
                .ranks
                .iter()
                .position(|coins| !(0..=MAX_RANK_REWARD).contains(&coins.0))
            {
                return Some(format!(
                    "rank {} of {name} pays {}: 0 to {MAX_RANK_REWARD} coins",
                    rank + 1,
                    table.ranks[rank]
                ));
            }
        }
        None
    }
}

/// One rank's reward of a closed period.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BoardPayout {
    /// The rank, from 1.
    pub rank: u32,
    /// Who held it: a user, or on the board of rooms a room.
    pub subject: String,
    /// Their score at the close.
    pub score: Coins,
    /// Who is paid: the user, or the room's owner.
    pub user: UserId,
    /// What they are paid (more than zero).
    pub coins: Coins,
    /// The version of the reward tables it was paid under.
    pub rewards_version: u64,
    /// When it was paid; `None` while it is owed.
    pub paid_at: Option<Timestamp>,
}

/// The leaderboards' rewards: the reward tables by version, and each closed period's payouts,
/// recorded once (all of a board's period at once) and then marked paid one by one.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait BoardRewards: Send + Sync {
    /// The newest version of the reward tables, or `None` before any was stored.
    async fn current_board_rewards(&self) -> Result<Option<RewardTables>>;
    /// Stores `tables` as the next version, by compare-and-set: only if the newest stored
    /// version is `tables.version - 1` (none stored, for version 1); otherwise
    /// [`Error::Conflict`] and nothing is written. Of two puts of one version at once, one
    /// wins. Version 0 is [`Error::Invalid`]. The tables are stored as given: the caller
    /// validates them.
    async fn put_board_rewards(&self, tables: &RewardTables) -> Result<()>;
    /// Records the payouts of `board`'s closed period at `at`, once: `true` when this call
    /// recorded them (all of them, unpaid), `false` when the period's payouts were recorded
    /// before (nothing changes, whatever `payouts` holds). An empty `payouts` records that
    /// the period paid nobody. A rank given twice, a rank 0 or an amount not above zero:
    /// [`Error::Invalid`], and nothing is recorded.
    async fn record_board_payouts(
        &self,
        board: &BoardId,
        payouts: &[BoardPayout],
        at: Timestamp,
    ) -> Result<bool>;
    /// The payouts recorded for `board`'s period by rank, or `None` when none were recorded.
    async fn board_payouts(&self, board: &BoardId) -> Result<Option<Vec<BoardPayout>>>;
    /// Payouts recorded and not marked paid, of any board: those recorded earliest first
    /// (by the `at` of [`record_board_payouts`](Self::record_board_payouts)), then by period
    /// code, period number, board code, room and rank; at most `limit` (and at most
    /// [`MAX_PAYOUT_PAGE`]).
    async fn unpaid_board_payouts(&self, limit: u32) -> Result<Vec<(BoardId, BoardPayout)>>;
    /// Marks `rank` of `board`'s period paid at `at`; nothing changes when it was marked
    /// before or was never recorded.
    async fn mark_board_payout_paid(&self, board: &BoardId, rank: u32, at: Timestamp)
    -> Result<()>;
}

/// Shared handle to [`BoardRewards`].
pub type BoardRewardsRef = Arc<dyn BoardRewards>;

/// The checks every store makes before [`BoardRewards::record_board_payouts`].
pub fn check_board_payouts(board: &BoardId, payouts: &[BoardPayout]) -> Result<()> {
    board.check()?;
    let mut ranks = std::collections::HashSet::with_capacity(payouts.len());
    for payout in payouts {
        if payout.rank == 0 || !ranks.insert(payout.rank) {
            return Err(Error::Invalid(format!(
                "rank {} given twice or zero",
                payout.rank
            )));
        }
        if payout.coins.0 <= 0 {
            return Err(Error::Invalid(format!(
                "rank {} pays {}: more than zero",
                payout.rank, payout.coins
            )));
        }
    }
    Ok(())
}
