//! [`BoardRewards`] (migration 0131), with the semantics of the in-memory store's.
//!
//! `board_reward_tables` is a table of versions ([`Versions::BoardRewards`]), like the
//! rocket's: a row (version, body) per version, the body the whole [`RewardTables`] as JSON,
//! read and put (by compare-and-set on the version, one statement) on the request
//! connections. `board_reward_periods` holds one row per board period whose payouts were
//! recorded (also when it paid nobody), keyed like a board of `board_entries` (period code,
//! number, kind code, room id: '' for the whole app), with when it was recorded: its key is
//! what refuses a second record. `board_payouts` holds one row per rank a recorded period pays,
//! keyed by its board and rank, `paid_at` NULL while it is owed; it repeats its period's
//! `recorded_at`, and the server keeps `owed_since` (`recorded_at` while owed, NULL once paid),
//! whose index `board_payouts_owed` holds the payouts owed in the order they are paid.
//!
//! The payouts are written and read on the background connections (the reward pass's work),
//! each call run again by [`MySqlStore::retrying`] after a deadlock or a lock wait timeout:
//! - a record is one transaction: `BEGIN`, the period's row (a duplicate key means it was
//!   recorded before: `ROLLBACK`, and `false`), every payout in one multi-row `INSERT` (one
//!   more for each [`ROWS_PER_STATEMENT`] past the first), `COMMIT`: four round trips, three
//!   for a period recorded before. A record of no payout is the period's row alone, one
//!   statement outside a transaction. Of two records of one period at once, the second waits
//!   on the first's key: when the first commits, the second finds the key taken and answers
//!   `false`; when it rolls back, the second records.
//! - a period's payouts are one statement (one read view) that reads its row and its payouts
//!   through both primary keys: no row when it was not recorded, one row of NULLs when it paid
//!   nobody;
//! - the payouts owed are one statement along `board_payouts_owed` from its start, unsorted,
//!   that never walks the paid ones;
//! - marking a payout paid is one `UPDATE` whose condition is that it is not paid yet.

use async_trait::async_trait;
use room_app::ports::{
    BoardId, BoardPayout, BoardRewards, MAX_PAYOUT_PAGE, RewardTables, check_board_payouts,
};
use room_domain::{Coins, Timestamp};
use sqlx::mysql::MySqlRow;
use sqlx::{MySql, QueryBuilder};

use crate::codec::{TxError, col, id_col, is_duplicate_key, to_i64, u64_col};
use crate::versions::Versions;
use crate::{MySqlStore, Result};

/// The most payouts one `INSERT` writes (eleven values a row, under the protocol's 65,535; a
/// period pays at most `MAX_REWARD_RANKS` ranks, so one statement in practice).
const ROWS_PER_STATEMENT: usize = 5_000;

const _: () = assert!(ROWS_PER_STATEMENT * 11 <= u16::MAX as usize);

/// Records the board period (period, number, kind, room id) at `?`; a duplicate key when it
/// was recorded before.
const RECORD_PERIOD: &str =
    "INSERT INTO board_reward_periods (period, number, kind, room_id, recorded_at)
     VALUES (?, ?, ?, ?, ?)";

/// The payouts of the board period (period, number, kind, room id) by rank: no row when the
/// period was not recorded, one row of NULLs when it was and paid nobody.
const PAYOUTS: &str = "SELECT p.payout_rank, p.subject, p.score, p.user_id, p.coins,
         p.rewards_version, p.paid_at
     FROM board_reward_periods AS r
     LEFT JOIN board_payouts AS p
         ON p.period = r.period AND p.number = r.number AND p.kind = r.kind
         AND p.room_id = r.room_id
     WHERE r.period = ? AND r.number = ? AND r.kind = ? AND r.room_id = ?
     ORDER BY p.payout_rank";

/// The first `?` payouts owed, in the order they are paid, off `board_payouts_owed`.
const OWED: &str = "SELECT period, number, kind, room_id, payout_rank, subject, score, user_id,
         coins, rewards_version, paid_at
     FROM board_payouts
     WHERE owed_since IS NOT NULL
     ORDER BY owed_since, period, number, kind, room_id, payout_rank
     LIMIT ?";

/// Marks rank `?` of the board period (period, number, kind, room id) paid at the first `?`,
/// unless it is paid.
const MARK_PAID: &str = "UPDATE board_payouts SET paid_at = ?
     WHERE period = ? AND number = ? AND kind = ? AND room_id = ? AND payout_rank = ?
       AND paid_at IS NULL";

/// One payout's row, beside its board's columns: rank, subject, score, user id, coins,
/// rewards version.
type PayoutRow<'a> = (u32, &'a str, i64, &'a str, i64, i64);

/// The rows of `payouts`, by rank.
fn payout_rows(payouts: &[BoardPayout]) -> Result<Vec<PayoutRow<'_>>> {
    let mut rows = payouts
        .iter()
        .map(|payout| {
            Ok((
                payout.rank,
                payout.subject.as_str(),
                payout.score.0,
                payout.user.as_str(),
                payout.coins.0,
                to_i64(payout.rewards_version, "reward tables version")?,
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    rows.sort_unstable_by_key(|row| row.0);
    Ok(rows)
}

/// A multi-row `INSERT` of `rows`, the payouts of `board` recorded at `at`, unpaid.
fn insert_payouts<'a>(board: &'a BoardId, rows: &[PayoutRow<'a>], at: i64) -> QueryBuilder<MySql> {
    let mut insert = QueryBuilder::<MySql>::new(
        "INSERT INTO board_payouts (period, number, kind, room_id, payout_rank, subject, score,
             user_id, coins, rewards_version, recorded_at) ",
    );
    insert.push_values(
        rows.iter().copied(),
        |mut row, (rank, subject, score, user, coins, version)| {
            row.push_bind(board.period.code())
                .push_bind(board.number)
                .push_bind(board.kind.code())
                .push_bind(board.room_key())
                .push_bind(rank)
                .push_bind(subject)
                .push_bind(score)
                .push_bind(user)
                .push_bind(coins)
                .push_bind(version)
                .push_bind(at);
        },
    );
    insert
}

/// One try of a record of `board`'s `rows` at `at`: `false` when the period was recorded
/// before.
async fn record_once(
    store: &MySqlStore,
    board: &BoardId,
    rows: &[PayoutRow<'_>],
    at: i64,
) -> Result<bool, TxError> {
    let period = || {
        sqlx::query(RECORD_PERIOD)
            .bind(board.period.code())
            .bind(board.number)
            .bind(board.kind.code())
            .bind(board.room_key())
            .bind(at)
    };
    if rows.is_empty() {
        // The period's row alone: one statement, atomic by itself.
        return match period().execute(&store.background).await {
            Ok(_) => Ok(true),
            Err(error) if is_duplicate_key(&error) => Ok(false),
            Err(error) => Err(error.into()),
        };
    }
    let mut tx = store.background.begin().await?;
    match period().execute(&mut *tx).await {
        Ok(_) => {}
        Err(error) if is_duplicate_key(&error) => {
            tx.rollback().await?;
            return Ok(false);
        }
        Err(error) => return Err(error.into()),
    }
    for chunk in rows.chunks(ROWS_PER_STATEMENT) {
        insert_payouts(board, chunk, at)
            .build()
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(true)
}

/// The payout of a row that has one (`payout_rank` not NULL).
fn payout_from(row: &MySqlRow, rank: u32) -> Result<BoardPayout> {
    let paid_at: Option<i64> = col(row, "paid_at")?;
    Ok(BoardPayout {
        rank,
        subject: col(row, "subject")?,
        score: Coins(col(row, "score")?),
        user: id_col(row, "user_id")?,
        coins: Coins(col(row, "coins")?),
        rewards_version: u64_col(row, "rewards_version")?,
        paid_at: paid_at.map(Timestamp),
    })
}

/// The board of a row of `board_payouts`.
fn board_from(row: &MySqlRow) -> Result<BoardId> {
    let period: i8 = col(row, "period")?;
    let kind: i8 = col(row, "kind")?;
    BoardId::from_stored(
        i64::from(kind),
        col(row, "room_id")?,
        i64::from(period),
        col(row, "number")?,
    )
}

#[async_trait]
impl BoardRewards for MySqlStore {
    async fn current_board_rewards(&self) -> Result<Option<RewardTables>> {
        self.newest_version(Versions::BoardRewards).await
    }

    async fn put_board_rewards(&self, tables: &RewardTables) -> Result<()> {
        self.put_version(Versions::BoardRewards, tables.version, tables)
            .await
    }

    async fn record_board_payouts(
        &self,
        board: &BoardId,
        payouts: &[BoardPayout],
        at: Timestamp,
    ) -> Result<bool> {
        check_board_payouts(board, payouts)?;
        let rows = payout_rows(payouts)?;
        self.retrying("record_board_payouts", || {
            record_once(self, board, &rows, at.as_millis())
        })
        .await
    }

    async fn board_payouts(&self, board: &BoardId) -> Result<Option<Vec<BoardPayout>>> {
        let rows = self
            .retrying("board_payouts", || async {
                Ok(sqlx::query(PAYOUTS)
                    .bind(board.period.code())
                    .bind(board.number)
                    .bind(board.kind.code())
                    .bind(board.room_key())
                    .fetch_all(&self.background)
                    .await?)
            })
            .await?;
        if rows.is_empty() {
            return Ok(None);
        }
        let mut payouts = Vec::with_capacity(rows.len());
        for row in &rows {
            // The row of NULLs of a period that paid nobody.
            if let Some(rank) = col::<Option<u32>>(row, "payout_rank")? {
                payouts.push(payout_from(row, rank)?);
            }
        }
        Ok(Some(payouts))
    }

    async fn unpaid_board_payouts(&self, limit: u32) -> Result<Vec<(BoardId, BoardPayout)>> {
        let limit = limit.min(MAX_PAYOUT_PAGE);
        let rows = self
            .retrying("unpaid_board_payouts", || async {
                Ok(sqlx::query(OWED)
                    .bind(limit)
                    .fetch_all(&self.background)
                    .await?)
            })
            .await?;
        rows.iter()
            .map(|row| {
                let rank = col(row, "payout_rank")?;
                Ok((board_from(row)?, payout_from(row, rank)?))
            })
            .collect()
    }

    async fn mark_board_payout_paid(
        &self,
        board: &BoardId,
        rank: u32,
        at: Timestamp,
    ) -> Result<()> {
        self.retrying("mark_board_payout_paid", || async {
            sqlx::query(MARK_PAID)
                .bind(at.as_millis())
                .bind(board.period.code())
                .bind(board.number)
                .bind(board.kind.code())
                .bind(board.room_key())
                .bind(rank)
                .execute(&self.background)
                .await?;
            Ok(())
        })
        .await
    }
}
