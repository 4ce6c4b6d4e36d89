//! [`Boards`] (migration 0130).
//!
//! `board_entries` holds one row per (board, subject): the board's period code and number,
//! its kind code and its room (`''` for the whole app), keyed in that order, with the
//! subject's score and when it was reached; its index `board_entries_by_rank` keeps each
//! board's rows in rank order, so that a page or a standing seeks ranges of it and sorts
//! nothing. `board_keys` holds the key of each gift counted (its room and its fact's
//! position) with the UTC day of its fact ([`BoardGift::key_day`]); its index
//! `board_keys_by_day` lets [`Boards::prune_board_keys`] delete the oldest days first.
//!
//! A gift is counted once by its key, whatever order a room's facts come in: a count is one
//! job of the single writer, in its own savepoint. It reads which of the call's keys are
//! stored in one statement (the keys travel as one JSON array, each looked up through the
//! primary key), so that of two counts of one gift, the second sees the first's key; sums
//! what the other gifts add ([`BoardSums`], which also passes over a key given twice in the
//! call); checks every new score against the stored one for overflow before it writes
//! anything; then writes each entry once and stores the counted gifts' keys. A replace is
//! one job too (the board's rows deleted, the given ones inserted), and so is each prune.
//!
//! Reads use the reader pool. The first page is one range of the index from the board's
//! top. A page after a cursor (score `s`, reached at `r`, subject `u`) seeks twice, in one
//! read transaction (one snapshot) on one connection: first the entries tied at `s` ranked
//! after the cursor, a range that starts at (`s`, `r`, `u`); then, when the page is not
//! full, the entries below `s`, a range that starts at the next score down. Neither reads
//! the tied entries ranked before the cursor, so a page costs its own entries however many
//! share the cursor's score. A standing is one statement: the subject's entry through the
//! primary key, and the entries above it counted off two ranges of the index (higher
//! scores; the same score reached earlier, or at once by a smaller subject), at most
//! [`MAX_COUNTED_RANK`] of them.

use std::collections::{HashMap, HashSet};

use async_trait::async_trait;
use room_app::Error;
use room_app::ports::{
    BoardEntry, BoardGift, BoardId, BoardPeriod, BoardStanding, BoardSums, Boards, MAX_BOARD_PAGE,
    MAX_COUNTED_RANK, check_board_entries, check_board_gifts,
};
use room_domain::{Coins, DayKey, Timestamp};
use rusqlite::{Connection, OptionalExtension, params};
use sqlx::sqlite::SqliteRow;

use crate::codec::{col, db, sql, stored_u64, to_i64, to_json};
use crate::{Result, SqliteStore};

/// Of the keys in the JSON array `?1` (each `[room_id, seq]`), those stored: the array is
/// read whole (it is the call's keys), and each of its keys looked up through the primary
/// key of `board_keys` (`CROSS JOIN` keeps the array the outer loop).
const STORED_KEYS: &str = "SELECT k.room_id, k.seq
     FROM json_each(?1) AS j CROSS JOIN board_keys AS k
     WHERE k.room_id = j.value ->> 0 AND k.seq = j.value ->> 1";

/// The gift at position `?2` of room `?1`, of UTC day `?3`, is counted.
const STORE_KEY: &str = "INSERT INTO board_keys (room_id, seq, day) VALUES (?1, ?2, ?3)";

/// Deletes at most `?2` keys of days before `?1`, oldest first: the subquery reads them off
/// `board_keys_by_day` in its order, and each is deleted through the primary key.
const PRUNE_KEYS: &str = "DELETE FROM board_keys
     WHERE (room_id, seq) IN (
         SELECT room_id, seq FROM board_keys WHERE day < ?1 ORDER BY day LIMIT ?2)";

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

/// The entries of the board (`?1` to `?4`, as in [`ENTRY`]) tied at score `?5` that rank
/// after the cursor reached at `?6` by subject `?7`, at most `?8`: the range of
/// `board_entries_by_rank` starts at the cursor itself (the row value seeks past it).
const TIED_AFTER: &str = "SELECT subject, score, reached_at FROM board_entries
     WHERE period = ?1 AND number = ?2 AND kind = ?3 AND room_id = ?4
       AND score = ?5 AND (reached_at, subject) > (?6, ?7)
     ORDER BY reached_at, subject LIMIT ?8";

/// The entries of the board (`?1` to `?4`, as in [`ENTRY`]) below score `?5`, at most `?6`,
/// off `board_entries_by_rank` in its order from the next score down.
const BELOW: &str = "SELECT subject, score, reached_at FROM board_entries
     WHERE period = ?1 AND number = ?2 AND kind = ?3 AND room_id = ?4 AND score < ?5
     ORDER BY score DESC, reached_at, subject LIMIT ?6";

/// Subject `?5`'s entry on the board (`?1` to `?4`, as in [`ENTRY`]) and how many entries
/// rank above it, at most `?6`, in one statement (one snapshot). The count reads two ranges
/// of `board_entries_by_rank`: from the board's top down to the entry's score, and the
/// entries of its score reached before it (the second bounded by the entry's instant); its
/// `LIMIT` stops both once `?6` are counted.
const STANDING: &str = "SELECT e.score, e.reached_at, (
         SELECT COUNT(*) FROM (
             SELECT 1 FROM board_entries AS o
             WHERE o.period = e.period AND o.number = e.number AND o.kind = e.kind
               AND o.room_id = e.room_id AND o.score > e.score
             UNION ALL
             SELECT 1 FROM board_entries AS o
             WHERE o.period = e.period AND o.number = e.number AND o.kind = e.kind
               AND o.room_id = e.room_id AND o.score = e.score
               AND (o.reached_at, o.subject) < (e.reached_at, e.subject)
             LIMIT ?6)
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

/// Of the keys of `gifts`, those stored already, by room, read in one statement.
fn stored_keys(conn: &Connection, gifts: &[BoardGift]) -> Result<HashMap<String, HashSet<u64>>> {
    let keys = gifts
        .iter()
        .map(|gift| Ok((gift.room_id.as_str(), to_i64(gift.seq, "board position")?)))
        .collect::<Result<Vec<_>>>()?;
    let mut select = conn.prepare_cached(STORED_KEYS).map_err(sql)?;
    let rows = select
        .query_map([to_json(&keys)?], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?))
        })
        .map_err(sql)?;
    let mut stored: HashMap<String, HashSet<u64>> = HashMap::new();
    for row in rows {
        let (room, seq) = row.map_err(sql)?;
        let seq = stored_u64(seq, "board key seq")?;
        stored.entry(room).or_default().insert(seq);
    }
    Ok(stored)
}

/// Counts the gifts whose keys are not stored: every sum checked before anything is
/// written.
fn count(conn: &Connection, gifts: &[BoardGift]) -> Result<u32> {
    let stored = stored_keys(conn, gifts)?;
    let (counted, sums) = BoardSums::of(gifts, |room, seq| {
        Ok(stored
            .get(room.as_str())
            .is_some_and(|seqs| seqs.contains(&seq)))
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
    for ((room, seq), day) in &sums.keys {
        let seq = to_i64(*seq, "board position")?;
        conn.prepare_cached(STORE_KEY)
            .and_then(|mut insert| insert.execute(params![room.as_str(), seq, day.0]))
            .map_err(sql)?;
    }
    Ok(counted)
}

/// An entry from a row of [`FIRST_PAGE`], [`TIED_AFTER`] or [`BELOW`].
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
        let limit = limit.min(MAX_BOARD_PAGE);
        if limit == 0 {
            return Ok(Vec::new());
        }
        let Some(after) = after else {
            let rows = sqlx::query(FIRST_PAGE)
                .bind(period)
                .bind(number)
                .bind(kind)
                .bind(room)
                .bind(i64::from(limit))
                .fetch_all(&self.readers)
                .await
                .map_err(db)?;
            return rows.iter().map(entry_from).collect();
        };
        // Both ranges in one read transaction: one snapshot, so that no entry moved between
        // them shows twice on the page or not at all.
        let mut read = self.readers.begin().await.map_err(db)?;
        let mut rows = sqlx::query(TIED_AFTER)
            .bind(period)
            .bind(number)
            .bind(kind)
            .bind(room)
            .bind(after.score.0)
            .bind(after.reached_at.as_millis())
            .bind(after.subject.as_str())
            .bind(i64::from(limit))
            .fetch_all(&mut *read)
            .await
            .map_err(db)?;
        let left = usize::try_from(limit)
            .unwrap_or(usize::MAX)
            .saturating_sub(rows.len());
        if left > 0 {
            let below = sqlx::query(BELOW)
                .bind(period)
                .bind(number)
                .bind(kind)
                .bind(room)
                .bind(after.score.0)
                .bind(i64::try_from(left).unwrap_or(i64::MAX))
                .fetch_all(&mut *read)
                .await
                .map_err(db)?;
            rows.extend(below);
        }
        read.commit().await.map_err(db)?;
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
            .bind(i64::try_from(MAX_COUNTED_RANK).unwrap_or(i64::MAX))
            .fetch_optional(&self.readers)
            .await
            .map_err(db)?;
        let Some(row) = row else {
            return Ok(None);
        };
        let above = stored_u64(col(&row, "above")?, "board rank")?;
        Ok(Some(BoardStanding::new(
            above,
            BoardEntry {
                subject: subject.to_owned(),
                score: Coins(col(&row, "score")?),
                reached_at: Timestamp(col(&row, "reached_at")?),
            },
        )))
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

    async fn prune_board_keys(&self, before: DayKey, limit: u32) -> Result<u64> {
        self.write(move |conn| {
            conn.prepare_cached(PRUNE_KEYS)
                .and_then(|mut delete| delete.execute(params![before.0, limit]))
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

    /// Whether `step` reads a stored table or index whole. A scan of the call's keys (the
    /// JSON array, a virtual table) is not, nor a scan of a subquery's rows, which the seeks
    /// listed under it produce.
    fn scans_a_table(step: &str) -> bool {
        step.starts_with("SCAN")
            && !step.contains("VIRTUAL TABLE")
            && !step.starts_with("SCAN (subquery-")
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn boards_are_read_and_pruned_through_their_indexes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("room.db");
        let url = format!("sqlite://{}", path.display());
        let store = SqliteStore::open(&SqliteSettings::new(url)).await.unwrap();
        store.close().await;
        // Many boards of many periods, many entries with tied scores, many keys of many
        // days, and the statistics a long-running database has, so that the planner weighs
        // the indexes against real tables.
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 19999)
             INSERT INTO board_entries
                 (period, number, kind, room_id, subject, score, reached_at)
                 SELECT 1 + i % 3, i % 30, 1 + (i / 3) % 2, 'room-' || (i % 40), 'u' || i,
                     i % 97, i FROM n;
             WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 19999)
             INSERT INTO board_keys (room_id, seq, day)
                 SELECT 'room-' || (i % 40), i, 20000 + i / 500 FROM n;
             ANALYZE;",
        )
        .unwrap();
        for (statement, index) in [
            (STORED_KEYS, "PRIMARY KEY"),
            (PRUNE_KEYS, "board_keys_by_day"),
            (ENTRY, "PRIMARY KEY"),
            (DELETE_BOARD, "board_entries"),
            (FIRST_PAGE, "board_entries_by_rank"),
            (TIED_AFTER, "board_entries_by_rank"),
            (BELOW, "board_entries_by_rank"),
            (STANDING, "board_entries_by_rank"),
            (PRUNE, "PRIMARY KEY"),
        ] {
            let steps = plan(&conn, statement);
            assert!(
                !steps.iter().any(|step| scans_a_table(step)),
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
        // The call's keys are each looked up through the whole primary key.
        let steps = plan(&conn, STORED_KEYS);
        assert!(
            steps.iter().any(|step| step.contains("VIRTUAL TABLE")),
            "the call's keys are the outer loop: {steps:#?}"
        );
        assert!(
            steps
                .iter()
                .any(|step| step.contains("PRIMARY KEY (room_id=? AND seq=?)")),
            "each key is looked up by its key: {steps:#?}"
        );
        // The page after a cursor: its ties after it, a range that starts at the cursor
        // itself; then the entries below its score, a range that starts at the next score.
        let steps = plan(&conn, TIED_AFTER);
        assert!(
            steps
                .iter()
                .any(|step| step.contains("board_entries_by_rank")
                    && step.contains("score=?")
                    && step.contains("(reached_at,subject)>(?,?)")),
            "the cursor starts the range of its ties: {steps:#?}"
        );
        let steps = plan(&conn, BELOW);
        assert!(
            steps
                .iter()
                .any(|step| step.contains("board_entries_by_rank") && step.contains("score<?")),
            "the cursor's score bounds the range below it: {steps:#?}"
        );
        // A standing counts off two ranges of the index: the higher scores, and the entry's
        // score up to its instant.
        let steps = plan(&conn, STANDING);
        assert!(
            steps
                .iter()
                .any(|step| step.contains("board_entries_by_rank") && step.contains("score>?")),
            "the higher scores are a range: {steps:#?}"
        );
        assert!(
            steps
                .iter()
                .any(|step| step.contains("board_entries_by_rank")
                    && step.contains("score=?")
                    && step.contains("reached_at<")),
            "the entry's ties before it are a range: {steps:#?}"
        );
        // A pruned entry or key is found through its whole key, not a range.
        let steps = plan(&conn, PRUNE);
        assert!(
            steps
                .iter()
                .any(|step| step.contains("PRIMARY KEY") && step.contains("subject=?")),
            "each pruned entry is looked up by its key: {steps:#?}"
        );
        let steps = plan(&conn, PRUNE_KEYS);
        assert!(
            steps
                .iter()
                .any(|step| step.contains("board_keys_by_day") && step.contains("day<?")),
            "the oldest keys are a range of their index: {steps:#?}"
        );
        assert!(
            steps
                .iter()
                .any(|step| step.contains("PRIMARY KEY (room_id=? AND seq=?)")),
            "each pruned key is looked up by its key: {steps:#?}"
        );
    }

    /// A subject further down than [`MAX_COUNTED_RANK`] is answered just past it; one within
    /// it, its rank, also among many entries tied at its score.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_standing_counts_at_most_the_counted_ranks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("room.db");
        let url = format!("sqlite://{}", path.display());
        let settings = SqliteSettings::new(url);
        SqliteStore::open(&settings).await.unwrap().close().await;
        let board = BoardId {
            kind: room_app::ports::BoardKind::Senders,
            room: None,
            period: BoardPeriod::Day,
            number: 7,
        };
        let (period, number, kind, room) = key(&board);
        let entries = MAX_COUNTED_RANK + 10;
        // Every entry tied at score 5 but the last three: ranked by instant, then subject.
        let conn = Connection::open(&path).unwrap();
        conn.execute(
            "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ?5 - 1)
             INSERT INTO board_entries
                 (period, number, kind, room_id, subject, score, reached_at)
                 SELECT ?1, ?2, ?3, ?4, printf('u%07d', i),
                     CASE WHEN i < ?5 - 3 THEN 5 ELSE 1 END, i / 2 FROM n",
            params![
                period,
                number,
                kind,
                room,
                to_i64(entries, "entries").unwrap()
            ],
        )
        .unwrap();
        drop(conn);
        let store = SqliteStore::open(&settings).await.unwrap();
        let standing = |n: u64| {
            let (store, board) = (&store, &board);
            async move {
                store
                    .board_standing(board, &format!("u{n:07}"))
                    .await
                    .unwrap()
                    .unwrap()
            }
        };
        let first = standing(0).await;
        assert_eq!(first.rank, 1);
        let tied = standing(1234).await;
        assert_eq!(tied.rank, 1235, "ranked after the ties before it");
        let last_counted = standing(MAX_COUNTED_RANK - 1).await;
        assert_eq!(last_counted.rank, MAX_COUNTED_RANK);
        assert!(!last_counted.beyond());
        let beyond = standing(MAX_COUNTED_RANK + 5).await;
        assert_eq!(beyond.rank, MAX_COUNTED_RANK + 1);
        assert!(beyond.beyond());
        assert_eq!(
            beyond.entry,
            BoardEntry {
                subject: format!("u{:07}", MAX_COUNTED_RANK + 5),
                score: Coins(5),
                reached_at: Timestamp(i64::try_from((MAX_COUNTED_RANK + 5) / 2).unwrap()),
            }
        );
        let lowest = standing(entries - 1).await;
        assert_eq!(
            lowest.rank,
            MAX_COUNTED_RANK + 1,
            "below every tie, still counted at most"
        );
        // A page after a cursor deep among the ties reads from it, in rank order.
        let cursor = standing(50_000).await.entry;
        let page = store
            .board_page(&board, Some(cursor), 3)
            .await
            .unwrap()
            .into_iter()
            .map(|entry| entry.subject)
            .collect::<Vec<_>>();
        assert_eq!(page, ["u0050001", "u0050002", "u0050003"]);
        let cursor = standing(entries - 5).await.entry;
        let page = store
            .board_page(&board, Some(cursor), 10)
            .await
            .unwrap()
            .into_iter()
            .map(|entry| (entry.subject, entry.score.0))
            .collect::<Vec<_>>();
        let subject = |n: u64| format!("u{n:07}");
        assert_eq!(
            page,
            [
                (subject(entries - 4), 5),
                (subject(entries - 3), 1),
                (subject(entries - 2), 1),
                (subject(entries - 1), 1),
            ],
            "the rest of the ties, then the entries below their score"
        );
        store.close().await;
    }
}
