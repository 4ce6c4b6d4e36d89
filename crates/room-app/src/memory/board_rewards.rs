//! [`BoardRewards`] of the [`InMemoryStore`]: the versions in a map, each board's recorded
//! payouts with the instant they were recorded.

use async_trait::async_trait;
use room_domain::Timestamp;

use super::InMemoryStore;
use crate::error::{Error, Result};
use crate::ports::{
    BoardId, BoardPayout, BoardRewards, MAX_PAYOUT_PAGE, RewardTables, check_board_payouts,
};

/// The order unpaid payouts are listed in: recorded, period, number, kind, room, rank.
fn order_key(
    board: &BoardId,
    recorded: Timestamp,
    rank: u32,
) -> (Timestamp, u8, i64, u8, String, u32) {
    (
        recorded,
        board.period.code(),
        board.number,
        board.kind.code(),
        board.room_key().to_owned(),
        rank,
    )
}

#[async_trait]
impl BoardRewards for InMemoryStore {
    async fn current_board_rewards(&self) -> Result<Option<RewardTables>> {
        let t = self.lock();
        Ok(t.rewards.versions.values().next_back().cloned())
    }

    async fn put_board_rewards(&self, tables: &RewardTables) -> Result<()> {
        if tables.version == 0 {
            return Err(Error::Invalid("reward tables version 0".into()));
        }
        let mut t = self.lock();
        let newest = t.rewards.versions.keys().next_back().copied().unwrap_or(0);
        if newest != tables.version - 1 {
            return Err(Error::Conflict(format!(
                "reward tables version {} is not the next after {newest}",
                tables.version
            )));
        }
        t.rewards.versions.insert(tables.version, tables.clone());
        Ok(())
    }

    async fn record_board_payouts(
        &self,
        board: &BoardId,
        payouts: &[BoardPayout],
        at: Timestamp,
    ) -> Result<bool> {
        check_board_payouts(board, payouts)?;
        let mut t = self.lock();
        if t.rewards.payouts.contains_key(board) {
            return Ok(false);
        }
        let mut payouts: Vec<BoardPayout> = payouts
            .iter()
            .cloned()
            .map(|payout| BoardPayout {
                paid_at: None,
                ..payout
            })
            .collect();
        payouts.sort_by_key(|payout| payout.rank);
        t.rewards.payouts.insert(board.clone(), (at, payouts));
        Ok(true)
    }

    async fn board_payouts(&self, board: &BoardId) -> Result<Option<Vec<BoardPayout>>> {
        let t = self.lock();
        Ok(t.rewards
            .payouts
            .get(board)
            .map(|(_, payouts)| payouts.clone()))
    }

    async fn unpaid_board_payouts(&self, limit: u32) -> Result<Vec<(BoardId, BoardPayout)>> {
        let t = self.lock();
        let mut unpaid: Vec<(BoardId, BoardPayout, Timestamp)> = t
            .rewards
            .payouts
            .iter()
            .flat_map(|(board, (at, payouts))| {
                payouts
                    .iter()
                    .filter(|payout| payout.paid_at.is_none())
                    .map(move |payout| (board.clone(), payout.clone(), *at))
            })
            .collect();
        unpaid.sort_by_key(|(board, payout, at)| order_key(board, *at, payout.rank));
        Ok(unpaid
            .into_iter()
            .take(limit.min(MAX_PAYOUT_PAGE) as usize)
            .map(|(board, payout, _)| (board, payout))
            .collect())
    }

    async fn mark_board_payout_paid(
        &self,
        board: &BoardId,
        rank: u32,
        at: Timestamp,
    ) -> Result<()> {
        let mut t = self.lock();
        if let Some(payout) = t
            .rewards
            .payouts
            .get_mut(board)
            .and_then(|(_, payouts)| payouts.iter_mut().find(|payout| payout.rank == rank))
            && payout.paid_at.is_none()
        {
            payout.paid_at = Some(at);
        }
        Ok(())
    }
}
