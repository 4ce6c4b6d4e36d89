//! [`BoardRewards`] (migration 0131). `board_reward_tables` is a table of versions
//! ([`Versions::BoardRewards`]), like the rocket's: a row (version, body) per version, the
//! body the whole [`RewardTables`] as JSON. `board_reward_periods` holds one row per board
//! period whose payouts were recorded (also when it paid nobody), keyed like a board of
//! `board_entries` (period code, number, kind code, room, `''` for the whole app), with when
//! it was recorded: its key is what refuses a second record. `board_payouts` holds one row per
//! rank a recorded period pays, keyed by its board and rank, `paid_at` NULL while it is owed;
//! it repeats its period's `recorded_at` so that its partial index `board_payouts_unpaid`
//! (unpaid rows only) lists the payouts owed in the order they are paid, unsorted.
//!
//! A record is one job of the single writer, in its own savepoint: it inserts the period's row
//! unless it is there (then it answers `false` and writes nothing else; of two records of one
//! period, the second sees the first's row), then every payout. Marking a payout paid is one
//! `UPDATE` whose condition is that it is not paid yet. Reads use the reader pool, each one
//! statement (one snapshot).

use async_trait::async_trait;
use room_app::ports::{
    BoardId, BoardPayout, BoardRewards, MAX_PAYOUT_PAGE, RewardTables, check_board_payouts,
};
use room_domain::{Coins, Timestamp};
use rusqlite::{Connection, params};
use sqlx::sqlite::SqliteRow;

use crate::boards::key;
use crate::codec::{col, db, id_col, sql, stored_u32, to_i64, u64_col};
use crate::versions::Versions;
use crate::{Result, SqliteStore};

/// Records the board period (period `?1`, number `?2`, kind `?3`, room `?4`) at `?5`, unless it
/// was recorded before.
const RECORD_PERIOD: &str =
    "INSERT INTO board_reward_periods (period, number, kind, room_id, recorded_at)
     VALUES (?1, ?2, ?3, ?4, ?5)
     ON CONFLICT (period, number, kind, room_id) DO NOTHING";

/// Records rank `?5` of the board period (`?1` to `?4`, as in [`RECORD_PERIOD`]), recorded at
/// `?11`, unpaid: held by subject `?6` with score `?7`, paying user `?8` `?9` coins under
/// version `?10` of the reward tables.
const RECORD_PAYOUT: &str = "INSERT INTO board_payouts
         (period, number, kind, room_id, rank, subject, score, user_id, coins, rewards_version,
          recorded_at)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)";

/// The payouts of the board period (`?1` to `?4`, as in [`RECORD_PERIOD`]) by rank, in one
/// statement (one snapshot): no row when the period was not recorded, one row of NULLs when it
/// was and paid nobody. Both tables are read through their primary keys, the payouts in rank
/// order.
const PAYOUTS: &str = "SELECT p.rank, p.subject, p.score, p.user_id, p.coins, p.rewards_version,
         p.paid_at
     FROM board_reward_periods AS r
     LEFT JOIN board_payouts AS p
         ON p.period = r.period AND p.number = r.number AND p.kind = r.kind
         AND p.room_id = r.room_id
     WHERE r.period = ?1 AND r.number = ?2 AND r.kind = ?3 AND r.room_id = ?4
     ORDER BY p.rank";

/// The first `?1` payouts owed, off `board_payouts_unpaid` in its order: recorded earliest
/// first, then by period, number, kind, room and rank.
const UNPAID: &str = "SELECT period, number, kind, room_id, rank, subject, score, user_id, coins,
         rewards_version, paid_at
     FROM board_payouts WHERE paid_at IS NULL
     ORDER BY recorded_at, period, number, kind, room_id, rank LIMIT ?1";

/// Marks rank `?5` of the board period (`?1` to `?4`, as in [`RECORD_PERIOD`]) paid at `?6`,
/// unless it was marked before.
const MARK_PAID: &str = "UPDATE board_payouts SET paid_at = ?6
     WHERE period = ?1 AND number = ?2 AND kind = ?3 AND room_id = ?4 AND rank = ?5
       AND paid_at IS NULL";

/// Records `board`'s period at `at` with `payouts` (each with its reward tables' version as
/// stored, in `versions`): `false`, and nothing written, when it was recorded before.
fn record(
    conn: &Connection,
    board: &BoardId,
    payouts: &[BoardPayout],
    versions: &[i64],
    at: i64,
) -> Result<bool> {
    let (period, number, kind, room) = key(board);
    let recorded = conn
        .prepare_cached(RECORD_PERIOD)
        .and_then(|mut insert| insert.execute(params![period, number, kind, room, at]))
        .map_err(sql)?;
    if recorded == 0 {
        return Ok(false);
    }
    for (payout, version) in payouts.iter().zip(versions) {
        conn.prepare_cached(RECORD_PAYOUT)
            .and_then(|mut insert| {
                insert.execute(params![
                    period,
                    number,
                    kind,
                    room,
                    payout.rank,
                    payout.subject,
                    payout.score.0,
                    payout.user.as_str(),
                    payout.coins.0,
                    version,
                    at,
                ])
            })
            .map_err(sql)?;
    }
    Ok(true)
}

/// The payout of a row of [`PAYOUTS`] or [`UNPAID`].
fn payout_from(row: &SqliteRow) -> Result<BoardPayout> {
    Ok(BoardPayout {
        rank: stored_u32(col(row, "rank")?, "board payout rank")?,
        subject: col(row, "subject")?,
        score: Coins(col(row, "score")?),
        user: id_col(row, "user_id")?,
        coins: Coins(col(row, "coins")?),
        rewards_version: u64_col(row, "rewards_version")?,
        paid_at: col::<Option<i64>>(row, "paid_at")?.map(Timestamp),
    })
}

/// The board of a row of [`UNPAID`]; a code no board has is [`Error::Corrupt`].
fn board_from(row: &SqliteRow) -> Result<BoardId> {
    let room: String = col(row, "room_id")?;
    BoardId::from_stored(
        col(row, "kind")?,
        &room,
        col(row, "period")?,
        col(row, "number")?,
    )
}

#[async_trait]
impl BoardRewards for SqliteStore {
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
        let versions = payouts
            .iter()
            .map(|payout| to_i64(payout.rewards_version, "reward tables version"))
            .collect::<Result<Vec<_>>>()?;
        let (board, payouts, at) = (board.clone(), payouts.to_vec(), at.as_millis());
        self.write(move |conn| record(conn, &board, &payouts, &versions, at))
            .await
    }

    async fn board_payouts(&self, board: &BoardId) -> Result<Option<Vec<BoardPayout>>> {
        let (period, number, kind, room) = key(board);
        let rows = sqlx::query(PAYOUTS)
            .bind(period)
            .bind(number)
            .bind(kind)
            .bind(room)
            .fetch_all(&self.readers)
            .await
            .map_err(db)?;
        if rows.is_empty() {
            return Ok(None);
        }
        // A period that paid nobody joins no payout: its one row has no rank.
        if col::<Option<i64>>(&rows[0], "rank")?.is_none() {
            return Ok(Some(Vec::new()));
        }
        rows.iter()
            .map(payout_from)
            .collect::<Result<_>>()
            .map(Some)
    }

    async fn unpaid_board_payouts(&self, limit: u32) -> Result<Vec<(BoardId, BoardPayout)>> {
        let rows = sqlx::query(UNPAID)
            .bind(i64::from(limit.min(MAX_PAYOUT_PAGE)))
            .fetch_all(&self.readers)
            .await
            .map_err(db)?;
        rows.iter()
            .map(|row| Ok((board_from(row)?, payout_from(row)?)))
            .collect()
    }

    async fn mark_board_payout_paid(
        &self,
        board: &BoardId,
        rank: u32,
        at: Timestamp,
    ) -> Result<()> {
        let (period, number, kind, room) = key(board);
        self.execute(
            MARK_PAID,
            (period, number, kind, room.to_owned(), rank, at.as_millis()),
        )
        .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SqliteSettings;
    use crate::plans::query_plan as plan;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn payouts_are_read_and_marked_through_their_indexes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("room.db");
        let url = format!("sqlite://{}", path.display());
        let store = SqliteStore::open(&SqliteSettings::new(url)).await.unwrap();
        store.close().await;
        // Many recorded periods, most of their payouts paid, and the statistics a long-running
        // database has, so that the planner weighs the indexes against real tables.
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 2999)
             INSERT INTO board_reward_periods (period, number, kind, room_id, recorded_at)
                 SELECT 1 + i % 3, i / 9, 1 + (i / 3) % 3, '', i FROM n;
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20)
             INSERT INTO board_payouts
                 (period, number, kind, room_id, rank, subject, score, user_id, coins,
                  rewards_version, recorded_at, paid_at)
                 SELECT r.period, r.number, r.kind, r.room_id, n.i, 'u' || n.i, 100 - n.i,
                     'u' || n.i, 10, 1, r.recorded_at,
                     CASE WHEN r.recorded_at < 2990 THEN r.recorded_at + 1 END
                 FROM board_reward_periods AS r, n;
             ANALYZE;",
        )
        .unwrap();
        for (statement, index) in [
            (PAYOUTS, "PRIMARY KEY"),
            (UNPAID, "board_payouts_unpaid"),
            (MARK_PAID, "PRIMARY KEY"),
        ] {
            let steps = plan(&conn, statement);
            assert!(
                steps.iter().all(|step| !step.starts_with("SCAN")
                    || step.ends_with("USING INDEX board_payouts_unpaid")),
                "no table is scanned whole, only the index of unpaid rows: {statement}\n{steps:#?}"
            );
            assert!(
                steps.iter().all(|step| !step.contains("TEMP B-TREE")),
                "the rows come in index order, unsorted: {statement}\n{steps:#?}"
            );
            assert!(
                steps.iter().any(|step| step.contains(index)),
                "{index} serves {statement}\n{steps:#?}"
            );
        }
        // The payouts of a period are one range of the primary key of each table.
        let steps = plan(&conn, PAYOUTS);
        assert!(
            steps
                .iter()
                .all(|step| step.contains("PRIMARY KEY") && step.contains("room_id=?")),
            "both tables are searched by the whole board: {steps:#?}"
        );
    }
}
