//! [`Boards`] of the [`InMemoryStore`]: each board's entries in a map by subject, the last
//! position counted by room, every count checked whole before anything changes.

use async_trait::async_trait;
use room_domain::{Coins, DayKey, RoomId, Timestamp};

use super::{BoardTables, InMemoryStore};
use crate::error::{Error, Result};
use crate::ports::{
    BoardEntry, BoardId, BoardPeriod, BoardStanding, BoardSums, Boards, MAX_BOARD_PAGE,
    check_board_entries, check_board_gifts,
};

fn entry(subject: &str, (score, reached_at): (i64, Timestamp)) -> BoardEntry {
    BoardEntry {
        subject: subject.to_owned(),
        score: Coins(score),
        reached_at,
    }
}

/// `board`'s entries in rank order.
fn ranked(tables: &BoardTables, board: &BoardId) -> Vec<BoardEntry> {
    let mut entries: Vec<BoardEntry> = tables
        .entries
        .get(board)
        .map(|subjects| {
            subjects
                .iter()
                .map(|(subject, value)| entry(subject, *value))
                .collect()
        })
        .unwrap_or_default();
    entries.sort_by(BoardEntry::rank_order);
    entries
}

#[async_trait]
impl Boards for InMemoryStore {
    async fn add_to_boards(&self, gifts: &[crate::ports::BoardGift]) -> Result<u32> {
        check_board_gifts(gifts)?;
        let mut t = self.lock();
        let tables = &mut t.boards;
        let (counted, sums) = BoardSums::of(gifts, |room, seq| {
            Ok(tables.keys.contains_key(&(room.clone(), seq)))
        })?;
        // Every new score is checked before anything changes.
        let mut scores = Vec::with_capacity(sums.entries.len());
        for ((board, subject), (added, at)) in sums.entries {
            let (old, reached_at) = tables
                .entries
                .get(&board)
                .and_then(|subjects| subjects.get(&subject))
                .copied()
                .unwrap_or((0, at));
            let score = old
                .checked_add(added)
                .ok_or_else(|| Error::Invalid(format!("board score overflow of {subject}")))?;
            scores.push((board, subject, (score, reached_at.max(at))));
        }
        for (board, subject, value) in scores {
            tables
                .entries
                .entry(board)
                .or_default()
                .insert(subject, value);
        }
        tables.keys.extend(sums.keys);
        Ok(counted)
    }

    async fn board_page(
        &self,
        board: &BoardId,
        after: Option<BoardEntry>,
        limit: u32,
    ) -> Result<Vec<BoardEntry>> {
        let limit = limit.min(MAX_BOARD_PAGE) as usize;
        let t = self.lock();
        Ok(ranked(&t.boards, board)
            .into_iter()
            .filter(|entry| after.as_ref().is_none_or(|after| after.ranks_above(entry)))
            .take(limit)
            .collect())
    }

    async fn board_standing(
        &self,
        board: &BoardId,
        subject: &str,
    ) -> Result<Option<BoardStanding>> {
        let t = self.lock();
        let Some(value) = t
            .boards
            .entries
            .get(board)
            .and_then(|subjects| subjects.get(subject))
        else {
            return Ok(None);
        };
        let entry = entry(subject, *value);
        let above = t.boards.entries[board]
            .iter()
            .filter(|(other, value)| self::entry(other, **value).ranks_above(&entry))
            .count();
        Ok(Some(BoardStanding::new(above as u64, entry)))
    }

    async fn replace_board(&self, board: &BoardId, entries: &[BoardEntry]) -> Result<()> {
        check_board_entries(board, entries)?;
        let mut t = self.lock();
        let subjects = entries
            .iter()
            .map(|entry| (entry.subject.clone(), (entry.score.0, entry.reached_at)))
            .collect();
        t.boards.entries.insert(board.clone(), subjects);
        Ok(())
    }

    async fn prune_boards(&self, period: BoardPeriod, before: i64, limit: u32) -> Result<u64> {
        let mut t = self.lock();
        let mut left = u64::from(limit);
        let mut deleted = 0;
        let boards: Vec<BoardId> = t
            .boards
            .entries
            .keys()
            .filter(|board| board.period == period && board.number < before)
            .cloned()
            .collect();
        for board in boards {
            if left == 0 {
                break;
            }
            let subjects = t.boards.entries.get_mut(&board).expect("listed above");
            let doomed: Vec<String> = subjects
                .keys()
                .take(usize::try_from(left).unwrap_or(usize::MAX))
                .cloned()
                .collect();
            for subject in &doomed {
                subjects.remove(subject);
            }
            if subjects.is_empty() {
                t.boards.entries.remove(&board);
            }
            left -= doomed.len() as u64;
            deleted += doomed.len() as u64;
        }
        Ok(deleted)
    }

    async fn prune_board_keys(&self, before: DayKey, limit: u32) -> Result<u64> {
        let mut t = self.lock();
        let doomed: Vec<(RoomId, u64)> = t
            .boards
            .keys
            .iter()
            .filter(|(_, day)| **day < before)
            .map(|(key, _)| key.clone())
            .take(limit as usize)
            .collect();
        for key in &doomed {
            t.boards.keys.remove(key);
        }
        Ok(doomed.len() as u64)
    }
}
