//! [`Boards`] (migration 0130). `board_entries` holds one row per (board, subject): the
//! board's period code and number, its kind code and its room (`''` for the whole app), keyed
//! in that order, with the subject's score and when it was reached; its index
//! `board_entries_by_rank` keeps each board's rows in rank order, so that a page or a
//! standing reads a range of it and sorts nothing. `board_marks` holds the last position
//! counted of each room's facts.
//!
//! A count is one job of the single writer, in its own savepoint: it reads the rooms' marks
//! in that job (so that of two counts of one gift, the second sees the first), sums what the
//! gifts past them add ([`BoardSums`]), checks every new score against the stored one for
//! overflow before it writes anything, then writes each entry once and moves the marks. A
//! replace is one job too (the board's rows deleted, the given ones inserted), and so is a
//! prune. Reads use the reader pool, each one statement (one snapshot).

use async_trait::async_trait;
use room_app::Error;
use room_app::ports::{
    BoardEntry, BoardGift, BoardId, BoardPeriod, BoardStanding, BoardSums, Boards, MAX_BOARD_PAGE,
    check_board_entries, check_board_gifts,
};
use room_domain::{Coins, Timestamp};
use rusqlite::{Connection, OptionalExtension, params};
use sqlx::sqlite::SqliteRow;

use crate::codec::{col, db, sql, stored_u64, to_i64};
use crate::{Result, SqliteStore};

/// Room `?1`'s last position counted.
const MARK: &str = "SELECT seq FROM board_marks WHERE room_id = ?1";

/// Room `?1`'s last position counted is `?2`, unless it is past that already.
const MOVE_MARK: &str = "INSERT INTO board_marks (room_id, seq) VALUES (?1, ?2)
     ON CONFLICT (room_id) DO UPDATE SET seq = max(seq, excluded.seq)";

/// The score and instant of subject `?5` on the board (period `?1`, number `?2`, kind `?3`,
/// room `?4`), through the primary key.
const ENTRY: &str = "SELECT score, reached_at FROM board_entries
     WHERE period = ?1 AND number = ?2 AND kind = ?3 AND room_id = ?4 AND subject = ?5";

/// Subject `?5`'s entry on the board (`?1` to `?4`, as in [`ENTRY`]) is score `?6`, reached at
/// `?7`.
const WRITE_ENTRY: &str =
    "INSERT INTO board_entries (period, number, kind, room_id, subject, score, reached_at)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
     ON CONFLICT (period, number, kind, room_id, subject)
     DO UPDATE SET score = excluded.score, reached_at = excluded.reached_at";

/// Deletes every entry of the board (`?1` to `?4`, as in [`ENTRY`]).
const DELETE_BOARD: &str = "DELETE FROM board_entries
     WHERE period = ?1 AND number = ?2 AND kind = ?3 AND room_id = ?4";

/// The first page of the board (`?1` to `?4`, as in [`ENTRY`]), at most `?5` entries, off
/// `board_entries_by_rank` in its order.
const FIRST_PAGE: &str = "SELECT subject, score, reached_at FROM board_entries
     WHERE period = ?1 AND number = ?2 AND kind = ?3 AND room_id = ?4
     ORDER BY score DESC, reached_at, subject LIMIT ?5";

/// The page of the board (`?1` to `?4`, as in [`ENTRY`]) after the entry of score `?5`
/// reached at `?6` by subject `?7`, at most `?8` entries. `score <= ?5` starts the range of
/// `board_entries_by_rank` at the cursor; the rest of the condition passes over the entries
/// of that score up to it.
const PAGE_AFTER: &str = "SELECT subject, score, reached_at FROM board_entries
     WHERE period = ?1 AND number = ?2 AND kind = ?3 AND room_id = ?4
       AND score <= ?5 AND (score < ?5 OR (reached_at, subject) > (?6, ?7))
     ORDER BY score DESC, reached_at, subject LIMIT ?8";

/// Subject `?5`'s entry on the board (`?1` to `?4`, as in [`ENTRY`]) and how many entries
/// rank above it, in one statement (one snapshot): the count reads the range of
/// `board_entries_by_rank` from the board's top to the entry.
const STANDING: &str = "SELECT e.score, e.reached_at, (
         SELECT COUNT(*) FROM board_entries AS o
         WHERE o.period = e.period AND o.number = e.number AND o.kind = e.kind
           AND o.room_id = e.room_id AND o.score >= e.score
           AND (o.score > e.score OR (o.reached_at, o.subject) < (e.reached_at, e.subject))
     ) AS above
     FROM board_entries AS e
     WHERE e.period = ?1 AND e.number = ?2 AND e.kind = ?3 AND e.room_id = ?4
       AND e.subject = ?5";

/// Deletes at most `?3` entries of period `?1` numbered before `?2`, oldest first: the
/// subquery reads their keys off the primary key in its order, and each is deleted through
/// the whole primary key.
const PRUNE: &str = "DELETE FROM board_entries
     WHERE (period, number, kind, room_id, subject) IN (
         SELECT period, number, kind, room_id, subject FROM board_entries
         WHERE period = ?1 AND number < ?2
         ORDER BY number, kind, room_id, subject LIMIT ?3)";

/// The columns that key `board`: its period code, number, kind code and room (`''` for the
/// whole app). The rewards' tables key a board alike.
pub(crate) fn key(board: &BoardId) -> (i64, i64, i64, &str) {
    (
        i64::from(board.period.code()),
        board.number,
        i64::from(board.kind.code()),
        board.room_key(),
    )
}

/// Counts `gifts` past their rooms' marks: every sum checked before anything is written.
fn count(conn: &Connection, gifts: &[BoardGift]) -> Result<u32> {
    let (counted, sums) = BoardSums::of(gifts, |room| {
        let mark: Option<i64> = conn
            .prepare_cached(MARK)
            .and_then(|mut select| {
                select
                    .query_row([room.as_str()], |row| row.get(0))
                    .optional()
            })
            .map_err(sql)?;
        mark.map_or(Ok(0), |seq| stored_u64(seq, "board mark"))
    })?;
    if counted == 0 {
        return Ok(0);
    }
    let mut entries = Vec::with_capacity(sums.entries.len());
    for ((board, subject), (added, at)) in &sums.entries {
        let (period, number, kind, room) = key(board);
        let old: Option<(i64, i64)> = conn
            .prepare_cached(ENTRY)
            .and_then(|mut select| {
                select
                    .query_row(params![period, number, kind, room, subject], |row| {
                        Ok((row.get(0)?, row.get(1)?))
                    })
                    .optional()
            })
            .map_err(sql)?;
        let (score, reached_at) = match old {
            Some((score, reached_at)) => (
                score
                    .checked_add(*added)
                    .ok_or_else(|| Error::Invalid(format!("board score overflow of {subject}")))?,
                reached_at.max(at.as_millis()),
            ),
            None => (*added, at.as_millis()),
        };
        entries.push((board, subject, score, reached_at));
    }
    let marks = sums
        .marks
        .iter()
        .map(|(room, seq)| Ok((room.as_str(), to_i64(*seq, "board position")?)))
        .collect::<Result<Vec<_>>>()?;
    for (board, subject, score, reached_at) in entries {
        let (period, number, kind, room) = key(board);
        conn.prepare_cached(WRITE_ENTRY)
            .and_then(|mut upsert| {
                upsert.execute(params![
                    period, number, kind, room, subject, score, reached_at
                ])
            })
            .map_err(sql)?;
    }
    for (room, seq) in marks {
        conn.prepare_cached(MOVE_MARK)
            .and_then(|mut upsert| upsert.execute(params![room, seq]))
            .map_err(sql)?;
    }
    Ok(counted)
}

/// An entry from a row of [`FIRST_PAGE`] or [`PAGE_AFTER`].
fn entry_from(row: &SqliteRow) -> Result<BoardEntry> {
    Ok(BoardEntry {
        subject: col(row, "subject")?,
        score: Coins(col(row, "score")?),
        reached_at: Timestamp(col(row, "reached_at")?),
    })
}

#[async_trait]
impl Boards for SqliteStore {
    async fn add_to_boards(&self, gifts: &[BoardGift]) -> Result<u32> {
        check_board_gifts(gifts)?;
        if gifts.is_empty() {
            return Ok(0);
        }
        let gifts = gifts.to_vec();
        self.write(move |conn| count(conn, &gifts)).await
    }

    async fn board_page(
        &self,
        board: &BoardId,
        after: Option<BoardEntry>,
        limit: u32,
    ) -> Result<Vec<BoardEntry>> {
        let (period, number, kind, room) = key(board);
        let limit = i64::from(limit.min(MAX_BOARD_PAGE));
        let rows = match &after {
            None => sqlx::query(FIRST_PAGE)
                .bind(period)
                .bind(number)
                .bind(kind)
                .bind(room)
                .bind(limit),
            Some(after) => sqlx::query(PAGE_AFTER)
                .bind(period)
                .bind(number)
                .bind(kind)
                .bind(room)
                .bind(after.score.0)
                .bind(after.reached_at.as_millis())
                .bind(after.subject.as_str())
                .bind(limit),
        }
        .fetch_all(&self.readers)
        .await
        .map_err(db)?;
        rows.iter().map(entry_from).collect()
    }

    async fn board_standing(
        &self,
        board: &BoardId,
        subject: &str,
    ) -> Result<Option<BoardStanding>> {
        let (period, number, kind, room) = key(board);
        let row = sqlx::query(STANDING)
            .bind(period)
            .bind(number)
            .bind(kind)
            .bind(room)
            .bind(subject)
            .fetch_optional(&self.readers)
            .await
            .map_err(db)?;
        let Some(row) = row else {
            return Ok(None);
        };
        let above = stored_u64(col(&row, "above")?, "board rank")?;
        Ok(Some(BoardStanding {
            rank: above.saturating_add(1),
            entry: BoardEntry {
                subject: subject.to_owned(),
                score: Coins(col(&row, "score")?),
                reached_at: Timestamp(col(&row, "reached_at")?),
            },
        }))
    }

    async fn replace_board(&self, board: &BoardId, entries: &[BoardEntry]) -> Result<()> {
        check_board_entries(board, entries)?;
        let (board, entries) = (board.clone(), entries.to_vec());
        self.write(move |conn| {
            let (period, number, kind, room) = key(&board);
            conn.prepare_cached(DELETE_BOARD)
                .and_then(|mut delete| delete.execute(params![period, number, kind, room]))
                .map_err(sql)?;
            for entry in &entries {
                conn.prepare_cached(WRITE_ENTRY)
                    .and_then(|mut insert| {
                        insert.execute(params![
                            period,
                            number,
                            kind,
                            room,
                            entry.subject,
                            entry.score.0,
                            entry.reached_at.as_millis(),
                        ])
                    })
                    .map_err(sql)?;
            }
            Ok(())
        })
        .await
    }

    async fn prune_boards(&self, period: BoardPeriod, before: i64, limit: u32) -> Result<u64> {
        let period = i64::from(period.code());
        self.write(move |conn| {
            conn.prepare_cached(PRUNE)
                .and_then(|mut delete| delete.execute(params![period, before, limit]))
                .map(|rows| rows as u64)
                .map_err(sql)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SqliteSettings;
    use crate::plans::query_plan as plan;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn boards_are_read_and_pruned_through_their_indexes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("room.db");
        let url = format!("sqlite://{}", path.display());
        let store = SqliteStore::open(&SqliteSettings::new(url)).await.unwrap();
        store.close().await;
        // Many boards of many periods, many entries with tied scores, and the statistics a
        // long-running database has, so that the planner weighs the indexes against real
        // tables.
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 19999)
             INSERT INTO board_entries
                 (period, number, kind, room_id, subject, score, reached_at)
                 SELECT 1 + i % 3, i % 30, 1 + (i / 3) % 2, 'room-' || (i % 40), 'u' || i,
                     i % 97, i FROM n;
             INSERT INTO board_marks (room_id, seq)
                 SELECT DISTINCT room_id, 1 FROM board_entries;
             ANALYZE;",
        )
        .unwrap();
        for (statement, index) in [
            (MARK, "PRIMARY KEY"),
            (ENTRY, "PRIMARY KEY"),
            (DELETE_BOARD, "board_entries"),
            (FIRST_PAGE, "board_entries_by_rank"),
            (PAGE_AFTER, "board_entries_by_rank"),
            (STANDING, "board_entries_by_rank"),
            (PRUNE, "PRIMARY KEY"),
        ] {
            let steps = plan(&conn, statement);
            assert!(
                steps.iter().all(|step| !step.starts_with("SCAN")),
                "no table is scanned whole: {statement}\n{steps:#?}"
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
        // The page after a cursor starts its range at the cursor's score.
        let steps = plan(&conn, PAGE_AFTER);
        assert!(
            steps.iter().any(|step| step.contains("score<?")),
            "the cursor bounds the range: {steps:#?}"
        );
        // A pruned entry is found through its whole key, not a range of its board.
        let steps = plan(&conn, PRUNE);
        assert!(
            steps
                .iter()
                .any(|step| step.contains("PRIMARY KEY") && step.contains("subject=?")),
            "each pruned entry is looked up by its key: {steps:#?}"
        );
    }
}
