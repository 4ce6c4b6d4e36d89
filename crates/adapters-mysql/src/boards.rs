//! [`Boards`] (migration 0130), with the semantics of the in-memory store's.
//!
//! `board_entries` holds one row per entry of a board, keyed by the board (period, number,
//! kind, room id: '' for the whole app) and the subject, with an index in rank order (score
//! descending, then `reached_at`, then subject) that pages and standings read along.
//! `board_keys` holds the key (room, position) of each gift counted, under the UTC day of its
//! fact ([`BoardGift::key_day`]), with an index by day that pruning reads along.
//!
//! A count, on the background connections, takes a few round trips whatever its size. It first
//! reads which of its gifts' keys are stored, with one statement outside any transaction (a
//! key it finds is committed; one it misses and another count commits meanwhile is caught by
//! the insert below), and sums what the other gifts add ([`BoardSums`], which refuses a sum
//! past `i64::MAX` within the count before anything is written). Then one transaction, run
//! again by [`MySqlStore::retrying`] after a deadlock, inserts their keys with one plain
//! multi-row `INSERT` in key order: of two counts of one gift at once, the second waits on the
//! first's key and, once the first commits, fails on it; it is rolled back and the whole count
//! is tried again (at most [`COUNT_TRIES`] times), and then finds the key. Then it adds to
//! each entry with multi-row upserts in key order (the score added, `reached_at` the later of
//! the two; counts adding to the same entries of the app's boards lock them in the same
//! order). A score past `BIGINT` once added to what is stored is refused by the server (error
//! 1690) and rolls the whole count back as [`Error::Invalid`]: nothing is counted and no key is
//! kept.
//!
//! Round trips of a count: none for an empty one; one (the read) when every gift was counted
//! before; five (the read, `BEGIN`, the keys, the entries, `COMMIT`) when it adds to at most
//! [`ROWS_PER_STATEMENT`] entries, one more for each [`ROWS_PER_STATEMENT`] past them, four
//! when it counts only gifts of no value; a count that lost a key to a concurrent one pays a
//! `ROLLBACK` and its try again.
//!
//! Pages and standings are one statement each on the request connections. A page reads the
//! rank index from its cursor on: after a cursor, one `UNION ALL` of two arms that each seek
//! the index, the entries tied with the cursor's score past it (by `reached_at`, subject),
//! then the entries of lower scores, each arm at most a page (put in rank order and cut to the
//! page here); so a page costs at most twice its own entries, however many share the cursor's
//! score. A standing reads the entry and counts the
//! entries above it along the rank index, at most [`MAX_COUNTED_RANK`] of them. A board is
//! replaced by one transaction that deletes its rows and inserts the new ones; old periods,
//! and old keys, are pruned by a bounded `DELETE` along an index.

use std::collections::HashSet;

use async_trait::async_trait;
use room_app::Error;
use room_app::ports::{
    BoardEntry, BoardGift, BoardId, BoardPeriod, BoardStanding, BoardSums, Boards, MAX_BOARD_GIFTS,
    MAX_BOARD_PAGE, MAX_COUNTED_RANK, check_board_entries, check_board_gifts,
};
use room_domain::{Coins, DayKey, Timestamp};
use sqlx::mysql::MySqlArguments;
use sqlx::query::QueryAs;
use sqlx::{MySql, QueryBuilder};

use crate::codec::{TxError, db, is_arithmetic_overflow, is_duplicate_key, stored_u64, to_i64};
use crate::{MySqlStore, Result};

/// How many times a count is tried when another count inserted one of its gifts' keys
/// meanwhile.
const COUNT_TRIES: u32 = 5;

/// The most rows one upsert or insert of entries writes (seven values a row, under the
/// protocol's 65,535; a statement of a few hundred kilobytes, well under the server's
/// `max_allowed_packet`).
const ROWS_PER_STATEMENT: usize = 5_000;

const _: () = assert!(ROWS_PER_STATEMENT * 7 <= u16::MAX as usize);
// The keys of one count are read (two values a key), and inserted (three), in one statement
// each.
const _: () = assert!(MAX_BOARD_GIFTS * 3 <= u16::MAX as usize);

/// Which of some keys are stored, read by the primary key; followed by the keys, as tuples
/// (room id, position).
const SELECT_KEYS: &str = "SELECT room_id, seq FROM board_keys WHERE (room_id, seq) IN ";

/// The first page of a board: board (4), limit.
const FIRST_PAGE: &str = "SELECT subject, score, reached_at FROM board_entries
     WHERE period = ? AND number = ? AND kind = ? AND room_id = ?
     ORDER BY score DESC, reached_at, subject LIMIT ?";

/// A page after a cursor (score s, reached at r, subject u): the entries tied at s past the
/// cursor, then those below s, each arm a range of the rank index read in its order and cut at
/// the page. Binds: board (4), s, r, r, u, limit; board (4), s, limit. The rows of the first
/// arm rank above the second's; the caller puts them in rank order all the same, as a union
/// promises no order.
const PAGE_AFTER: &str = "(SELECT subject, score, reached_at
      FROM board_entries FORCE INDEX (board_entries_rank)
      WHERE period = ? AND number = ? AND kind = ? AND room_id = ? AND score = ?
        AND (reached_at > ? OR (reached_at = ? AND subject > ?))
      ORDER BY reached_at, subject LIMIT ?)
     UNION ALL
     (SELECT subject, score, reached_at
      FROM board_entries FORCE INDEX (board_entries_rank)
      WHERE period = ? AND number = ? AND kind = ? AND room_id = ? AND score < ?
      ORDER BY score DESC, reached_at, subject LIMIT ?)";

/// A subject's entry and the entries above it, at most a limit of them, in one statement (one
/// read view). The subject's row `s` is read by its primary key, so the planner reads it first
/// and takes its values as constants: the entries above are then the ranges of the rank index
/// above it (higher scores; the same score and an earlier `reached_at`; the same both and a
/// smaller subject), read in order and cut at the limit. Binds: board (4), subject, limit;
/// board (4), subject.
const STANDING: &str = "SELECT e.score, e.reached_at,
         (SELECT COUNT(*) FROM (
              SELECT 1 FROM board_entries AS s
                  JOIN board_entries AS o FORCE INDEX (board_entries_rank)
                      ON o.period = s.period AND o.number = s.number AND o.kind = s.kind
                     AND o.room_id = s.room_id
                     AND (o.score > s.score
                          OR (o.score = s.score
                              AND (o.reached_at < s.reached_at
                                   OR (o.reached_at = s.reached_at AND o.subject < s.subject))))
              WHERE s.period = ? AND s.number = ? AND s.kind = ? AND s.room_id = ?
                AND s.subject = ?
              LIMIT ?) AS above)
     FROM board_entries AS e
     WHERE e.period = ? AND e.number = ? AND e.kind = ? AND e.room_id = ? AND e.subject = ?";

/// Deletes the entries of one period's boards numbered before a number, at most a limit of
/// them, along the primary key. Binds: period, number, limit.
const PRUNE_ENTRIES: &str = "DELETE FROM board_entries WHERE period = ? AND number < ?
     ORDER BY period, number LIMIT ?";

/// Forgets the keys of days before a day, at most a limit of them, oldest first along
/// `board_keys_day` (whose entries end with the primary key: the order is total). Binds: day,
/// limit.
const PRUNE_KEYS: &str = "DELETE FROM board_keys WHERE day < ? ORDER BY day, room_id, seq LIMIT ?";

/// Maps a sum the server refused to [`Error::Invalid`].
fn refused_sum(error: sqlx::Error) -> TxError {
    if is_arithmetic_overflow(&error) {
        TxError::Port(Error::Invalid("board score overflow".into()))
    } else {
        TxError::Db(error)
    }
}

/// One entry's row, in the order of the table's key: period, number, kind, room id
/// (`board.room_key()`), subject, score, reached at.
type EntryRow<'a> = (u8, i64, u8, &'a str, &'a str, i64, i64);

/// The row of `subject`'s entry on `board`.
fn entry_row<'a>(
    board: &'a BoardId,
    subject: &'a str,
    score: i64,
    reached_at: Timestamp,
) -> EntryRow<'a> {
    (
        board.period.code(),
        board.number,
        board.kind.code(),
        board.room_key(),
        subject,
        score,
        reached_at.as_millis(),
    )
}

/// A multi-row `INSERT` of `rows` into `board_entries`, followed by `tail`.
fn insert_entries(rows: &[EntryRow<'_>], tail: &str) -> QueryBuilder<MySql> {
    let mut insert = QueryBuilder::<MySql>::new(
        "INSERT INTO board_entries (period, number, kind, room_id, subject, score, reached_at) ",
    );
    insert.push_values(
        rows.iter().copied(),
        |mut row, (period, number, kind, room, subject, score, reached_at)| {
            row.push_bind(period)
                .push_bind(number)
                .push_bind(kind)
                .push_bind(room)
                .push_bind(subject)
                .push_bind(score)
                .push_bind(reached_at);
        },
    );
    insert.push(tail);
    insert
}

/// The keys of `gifts` that are stored: (room id, position).
async fn stored_keys(store: &MySqlStore, gifts: &[BoardGift]) -> Result<HashSet<(String, u64)>> {
    let mut keys = Vec::with_capacity(gifts.len());
    for gift in gifts {
        keys.push((gift.room_id.as_str(), to_i64(gift.seq, "gift position")?));
    }
    keys.sort_unstable();
    keys.dedup();
    let mut select = QueryBuilder::<MySql>::new(SELECT_KEYS);
    select.push_tuples(keys, |mut row, (room, seq)| {
        row.push_bind(room).push_bind(seq);
    });
    // A plain read outside the count's transaction: a key it finds was committed, and one it
    // misses that another count commits meanwhile makes the insert of the keys fail.
    let rows: Vec<(String, i64)> = select
        .build_query_as()
        .fetch_all(&store.background)
        .await
        .map_err(db)?;
    let mut stored = HashSet::with_capacity(rows.len());
    for (room, seq) in rows {
        stored.insert((room, stored_u64(seq, "board key position")?));
    }
    Ok(stored)
}

/// One try of a count: reads which of `gifts`' keys are stored, then inserts the others' keys
/// and adds what their gifts add. `None` when another count inserted one of those keys
/// meanwhile: this try counted nothing.
async fn count_once(store: &MySqlStore, gifts: &[BoardGift]) -> Result<Option<u32>> {
    let stored = stored_keys(store, gifts).await?;
    let (counted, sums) = BoardSums::of(gifts, |room, seq| {
        Ok(stored.contains(&(room.as_str().to_owned(), seq)))
    })?;
    if counted == 0 {
        return Ok(Some(0));
    }
    let mut keys = Vec::with_capacity(sums.keys.len());
    for ((room, seq), day) in &sums.keys {
        keys.push((room.as_str(), to_i64(*seq, "gift position")?, day.0));
    }
    let mut rows: Vec<EntryRow<'_>> = sums
        .entries
        .iter()
        .map(|((board, subject), (score, at))| entry_row(board, subject, *score, *at))
        .collect();
    // Key order, the same for every count, so that counts adding to the same entries lock
    // them in the same order.
    rows.sort_unstable();
    let written = store
        .retrying("add_to_boards", || write_count(store, &keys, &rows))
        .await?;
    Ok(written.then_some(counted))
}

/// The transaction of a count: inserts `keys` (room id, position, day; in key order), then adds
/// `rows` to the entries. `false` when one of `keys` is stored already (another count inserted
/// it since it was read): the transaction is rolled back.
async fn write_count(
    store: &MySqlStore,
    keys: &[(&str, i64, i64)],
    rows: &[EntryRow<'_>],
) -> Result<bool, TxError> {
    let mut tx = store.background.begin().await?;
    // A plain insert: a key another count inserted and has not committed yet is waited on,
    // and once that count commits, refused (then this count is tried again, and finds it).
    let mut insert = QueryBuilder::<MySql>::new("INSERT INTO board_keys (room_id, seq, day) ");
    insert.push_values(keys.iter(), |mut row, (room, seq, day)| {
        row.push_bind(*room).push_bind(*seq).push_bind(*day);
    });
    match insert.build().execute(&mut *tx).await {
        Ok(_) => {}
        Err(error) if is_duplicate_key(&error) => {
            tx.rollback().await?;
            return Ok(false);
        }
        Err(error) => return Err(error.into()),
    }
    for chunk in rows.chunks(ROWS_PER_STATEMENT) {
        insert_entries(
            chunk,
            " ON DUPLICATE KEY UPDATE score = score + VALUES(score),
              reached_at = GREATEST(reached_at, VALUES(reached_at))",
        )
        .build()
        .execute(&mut *tx)
        .await
        .map_err(refused_sum)?;
    }
    tx.commit().await?;
    Ok(true)
}

/// One replace of `board` by `rows`: deletes its rows, then inserts `rows`.
async fn replace_once(
    store: &MySqlStore,
    board: &BoardId,
    rows: &[EntryRow<'_>],
) -> Result<(), TxError> {
    let mut tx = store.background.begin().await?;
    sqlx::query(
        "DELETE FROM board_entries WHERE period = ? AND number = ? AND kind = ? AND room_id = ?",
    )
    .bind(board.period.code())
    .bind(board.number)
    .bind(board.kind.code())
    .bind(board.room_key())
    .execute(&mut *tx)
    .await?;
    for chunk in rows.chunks(ROWS_PER_STATEMENT) {
        insert_entries(chunk, "").build().execute(&mut *tx).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// The page of `board` after `after` (from the top without it), at most `limit` entries: the
/// rows of [`FIRST_PAGE`] or [`PAGE_AFTER`], with their binds.
fn page_query<'q>(
    board: &'q BoardId,
    after: Option<&'q BoardEntry>,
    limit: u32,
) -> QueryAs<'q, MySql, (String, i64, i64), MySqlArguments> {
    let query = sqlx::query_as(match after {
        None => FIRST_PAGE,
        Some(_) => PAGE_AFTER,
    })
    .bind(board.period.code())
    .bind(board.number)
    .bind(board.kind.code())
    .bind(board.room_key());
    let Some(after) = after else {
        return query.bind(limit);
    };
    query
        .bind(after.score.0)
        .bind(after.reached_at.as_millis())
        .bind(after.reached_at.as_millis())
        .bind(after.subject.as_str())
        .bind(limit)
        .bind(board.period.code())
        .bind(board.number)
        .bind(board.kind.code())
        .bind(board.room_key())
        .bind(after.score.0)
        .bind(limit)
}

/// The row of [`STANDING`] for `subject` on `board`, with its binds: score, reached at, and
/// the entries above (at most [`MAX_COUNTED_RANK`]).
fn standing_query<'q>(
    board: &'q BoardId,
    subject: &'q str,
) -> QueryAs<'q, MySql, (i64, i64, i64), MySqlArguments> {
    sqlx::query_as(STANDING)
        .bind(board.period.code())
        .bind(board.number)
        .bind(board.kind.code())
        .bind(board.room_key())
        .bind(subject)
        .bind(MAX_COUNTED_RANK)
        .bind(board.period.code())
        .bind(board.number)
        .bind(board.kind.code())
        .bind(board.room_key())
        .bind(subject)
}

/// An entry as stored.
fn entry_from((subject, score, reached_at): (String, i64, i64)) -> BoardEntry {
    BoardEntry {
        subject,
        score: Coins(score),
        reached_at: Timestamp(reached_at),
    }
}

#[async_trait]
impl Boards for MySqlStore {
    async fn add_to_boards(&self, gifts: &[BoardGift]) -> Result<u32> {
        check_board_gifts(gifts)?;
        if gifts.is_empty() {
            return Ok(0);
        }
        for _ in 0..COUNT_TRIES {
            if let Some(counted) = count_once(self, gifts).await? {
                return Ok(counted);
            }
            metrics::counter!("room_mysql_lock_retries_total", "operation" => "add_to_boards")
                .increment(1);
        }
        Err(Error::Unavailable(format!(
            "board count: a concurrent count of the same gifts won {COUNT_TRIES} times"
        )))
    }

    async fn board_page(
        &self,
        board: &BoardId,
        after: Option<BoardEntry>,
        limit: u32,
    ) -> Result<Vec<BoardEntry>> {
        let limit = limit.min(MAX_BOARD_PAGE);
        let rows: Vec<(String, i64, i64)> = self
            .retrying("board_page", || async {
                Ok(page_query(board, after.as_ref(), limit)
                    .fetch_all(&self.pool)
                    .await?)
            })
            .await?;
        let mut entries: Vec<BoardEntry> = rows.into_iter().map(entry_from).collect();
        if after.is_some() {
            // Up to a page from each arm of the union.
            entries.sort_by(BoardEntry::rank_order);
            entries.truncate(limit as usize);
        }
        Ok(entries)
    }

    async fn board_standing(
        &self,
        board: &BoardId,
        subject: &str,
    ) -> Result<Option<BoardStanding>> {
        let row: Option<(i64, i64, i64)> = self
            .retrying("board_standing", || async {
                Ok(standing_query(board, subject)
                    .fetch_optional(&self.pool)
                    .await?)
            })
            .await?;
        let Some((score, reached_at, above)) = row else {
            return Ok(None);
        };
        Ok(Some(BoardStanding::new(
            stored_u64(above, "entries above")?,
            entry_from((subject.to_owned(), score, reached_at)),
        )))
    }

    async fn replace_board(&self, board: &BoardId, entries: &[BoardEntry]) -> Result<()> {
        check_board_entries(board, entries)?;
        let mut rows: Vec<EntryRow<'_>> = entries
            .iter()
            .map(|entry| entry_row(board, &entry.subject, entry.score.0, entry.reached_at))
            .collect();
        rows.sort_unstable();
        self.retrying("replace_board", || replace_once(self, board, &rows))
            .await
    }

    async fn prune_boards(&self, period: BoardPeriod, before: i64, limit: u32) -> Result<u64> {
        self.retrying("prune_boards", || async {
            let deleted = sqlx::query(PRUNE_ENTRIES)
                .bind(period.code())
                .bind(before)
                .bind(limit)
                .execute(&self.background)
                .await?;
            Ok(deleted.rows_affected())
        })
        .await
    }

    async fn prune_board_keys(&self, before: DayKey, limit: u32) -> Result<u64> {
        self.retrying("prune_board_keys", || async {
            let deleted = sqlx::query(PRUNE_KEYS)
                .bind(before.0)
                .bind(limit)
                .execute(&self.background)
                .await?;
            Ok(deleted.rows_affected())
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use room_app::ports::BoardKind;
    use room_testkit::mysql as test_server;
    use serde_json::Value;
    use sqlx::{AssertSqlSafe, Executor, MySqlConnection};

    use super::*;
    use crate::MySqlSettings;

    /// `statement` with its placeholders filled with `values`, in order.
    fn filled(statement: &str, values: &[&str]) -> String {
        let mut parts = statement.split('?');
        let mut text = parts.next().unwrap_or_default().to_owned();
        for (part, value) in parts.zip(values.iter().chain(std::iter::repeat(&"0"))) {
            text.push_str(value);
            text.push_str(part);
        }
        text
    }

    /// The tables `statement` reads, as its plan says: (name or alias, access type, key).
    async fn plan(conn: &mut MySqlConnection, statement: &str) -> (String, Vec<[String; 3]>) {
        fn tables(node: &Value, found: &mut Vec<[String; 3]>) {
            match node {
                Value::Object(fields) => {
                    if let Some(table) = fields.get("table").and_then(Value::as_object) {
                        let text = |name: &str| {
                            table
                                .get(name)
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_owned()
                        };
                        found.push([text("table_name"), text("access_type"), text("key")]);
                    }
                    fields.values().for_each(|value| tables(value, found));
                }
                Value::Array(values) => values.iter().for_each(|value| tables(value, found)),
                _ => {}
            }
        }
        let text: String =
            sqlx::query_scalar(AssertSqlSafe(format!("EXPLAIN FORMAT=JSON {statement}")))
                .fetch_one(&mut *conn)
                .await
                .unwrap();
        let mut found = Vec::new();
        tables(&serde_json::from_str(&text).unwrap(), &mut found);
        (text, found)
    }

    /// The index entries this session has read so far (lookups, and steps along an index).
    async fn index_reads(conn: &mut MySqlConnection) -> i64 {
        let reads: Option<f64> = sqlx::query_scalar(
            "SELECT SUM(VARIABLE_VALUE) FROM information_schema.SESSION_STATUS
             WHERE VARIABLE_NAME IN ('HANDLER_READ_KEY', 'HANDLER_READ_NEXT',
                 'HANDLER_READ_PREV', 'HANDLER_READ_FIRST', 'HANDLER_READ_LAST')",
        )
        .fetch_one(&mut *conn)
        .await
        .unwrap();
        reads.unwrap_or_default() as i64
    }

    fn board(number: i64) -> BoardId {
        BoardId {
            kind: BoardKind::Senders,
            room: None,
            period: BoardPeriod::Day,
            number,
        }
    }

    fn entry(subject: String, score: i64, reached_at: i64) -> BoardEntry {
        BoardEntry {
            subject,
            score: Coins(score),
            reached_at: Timestamp(reached_at),
        }
    }

    /// The board `TIED` of the test: 3,000 entries tied at score 50 (u00000 reached first),
    /// then 1,000 of lower scores.
    const TIED: i64 = 20_000;

    fn tied_board() -> Vec<BoardEntry> {
        let mut entries: Vec<BoardEntry> = (0..4_000)
            .map(|i| {
                let score = if i < 3_000 { 50 } else { 49 - (i % 40) };
                entry(format!("u{i:05}"), score, i)
            })
            .collect();
        entries.sort_by(BoardEntry::rank_order);
        entries
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn pages_standings_and_pruning_read_along_indexes() {
        let Some(server) = test_server::MySqlServer::from_env("boards::plans").await else {
            return;
        };
        let database = server.database().await;
        let settings = MySqlSettings::new(database.url.clone());
        MySqlStore::migrate(&settings).await.unwrap();
        let store = MySqlStore::open(&settings).await.unwrap();
        let mut conn = database.connect().await;
        // A board with many entries tied at one score, boards of other days around it, a
        // board longer than MAX_COUNTED_RANK, keys of many days, and the statistics a
        // long-running database has, so that the planner weighs the indexes against real
        // tables.
        let tied = tied_board();
        store.replace_board(&board(TIED), &tied).await.unwrap();
        for number in [TIED - 1, TIED + 1] {
            let other: Vec<BoardEntry> = (0..2_000)
                .map(|i| entry(format!("u{i:05}"), i % 60, i))
                .collect();
            store.replace_board(&board(number), &other).await.unwrap();
        }
        let long = MAX_COUNTED_RANK as i64 + 2;
        let keys = (0..3_000)
            .map(|i| format!("('room-{}', {i}, {})", i % 50, 20_000 + i % 30))
            .collect::<Vec<_>>()
            .join(", ");
        for statement in [
            "SET SESSION max_recursive_iterations = 1000000".to_owned(),
            format!(
                "INSERT INTO board_entries (period, number, kind, room_id, subject, score,
                     reached_at)
                 WITH RECURSIVE n (i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < {})
                 SELECT 1, 30000, 1, '', CONCAT('s', LPAD(i, 6, '0')), 1000000 - i, i FROM n",
                long - 1
            ),
            format!("INSERT INTO board_keys (room_id, seq, day) VALUES {keys}"),
            "ANALYZE TABLE board_entries, board_keys".to_owned(),
        ] {
            conn.execute(AssertSqlSafe(statement)).await.unwrap();
        }
        let rank_range = |table: &str| {
            [
                table.to_owned(),
                "range".into(),
                "board_entries_rank".into(),
            ]
        };

        // A page after a cursor amid the ties: each arm of the union seeks the rank index and
        // reads its range in order, unsorted.
        let cursor = &tied[1_500];
        let (score, reached_at) = (cursor.score.0.to_string(), cursor.reached_at.0.to_string());
        let subject = format!("'{}'", cursor.subject);
        let board_values = ["1", "20000", "1", "''"];
        let after_values: Vec<&str> = board_values
            .iter()
            .copied()
            .chain([&*score, &*reached_at, &*reached_at, &*subject, "10"])
            .chain(board_values.iter().copied())
            .chain([&*score, "10"])
            .collect();
        let page_after = filled(PAGE_AFTER, &after_values);
        let (text, tables) = plan(&mut conn, &page_after).await;
        assert_eq!(
            tables,
            [rank_range("board_entries"), rank_range("board_entries")],
            "both arms seek the rank index\n{text}"
        );
        assert!(
            !text.contains("filesort"),
            "the rows come in index order\n{text}"
        );
        // The page costs its own entries (at most a page from each arm), not the 1,500 entries
        // tied at the cursor's score before it.
        let before = index_reads(&mut conn).await;
        let page = page_query(&board(TIED), Some(cursor), 10)
            .fetch_all(&mut conn)
            .await
            .unwrap();
        let reads = index_reads(&mut conn).await - before;
        assert_eq!(page.len(), 20, "up to a page from each arm");
        assert!(
            reads <= 2 * 11,
            "{reads} index entries read for a page of 10"
        );
        // Pages across the end of the ties, and after a cursor no longer on the board.
        for (at, limit) in [(1_500, 10), (2_995, 10), (2_999, 3), (3_990, 100)] {
            let page = store
                .board_page(&board(TIED), Some(tied[at].clone()), limit)
                .await
                .unwrap();
            let end = (at + 1 + limit as usize).min(tied.len());
            assert_eq!(page, tied[at + 1..end], "the page after entry {at}");
        }
        let gone = entry("u01500x".into(), 50, 1_500);
        let page = store.board_page(&board(TIED), Some(gone), 5).await.unwrap();
        assert_eq!(
            page,
            tied[1_501..1_506],
            "after an entry no longer on the board"
        );

        // A standing reads the subject's row by its key, then counts along the ranges of the
        // rank index above it, and stops at MAX_COUNTED_RANK.
        let standing_values = |number: &str, subject: &str| -> Vec<String> {
            let board = ["1", number, "1", "''"].map(str::to_owned);
            let subject = format!("'{subject}'");
            board
                .iter()
                .cloned()
                .chain([subject.clone(), MAX_COUNTED_RANK.to_string()])
                .chain(board.iter().cloned())
                .chain([subject])
                .collect()
        };
        let standing = |number: &str, subject: &str| {
            let values = standing_values(number, subject);
            filled(
                STANDING,
                &values.iter().map(String::as_str).collect::<Vec<_>>(),
            )
        };
        let (text, tables) = plan(&mut conn, &standing("20000", &cursor.subject)).await;
        let read: Vec<&[String; 3]> = tables.iter().filter(|t| t[0] != "<derived3>").collect();
        assert_eq!(
            read,
            [
                &["e".to_owned(), "const".into(), "PRIMARY".into()],
                &["s".to_owned(), "const".into(), "PRIMARY".into()],
                &rank_range("o"),
            ],
            "the entry by its key, the entries above along the rank index\n{text}"
        );
        assert!(!text.contains("filesort"), "nothing is sorted\n{text}");
        let before = index_reads(&mut conn).await;
        let row = standing_query(&board(TIED), &cursor.subject)
            .fetch_one(&mut conn)
            .await
            .unwrap();
        let reads = index_reads(&mut conn).await - before;
        assert_eq!(row.2, 1_500, "the entries above");
        assert!(
            reads <= 1_500 + 8,
            "{reads} index entries read to count 1,500 above, not every tie"
        );
        let ranked = store
            .board_standing(&board(TIED), &cursor.subject)
            .await
            .unwrap();
        assert_eq!(ranked, Some(BoardStanding::new(1_500, cursor.clone())));
        let last = format!("s{:06}", long - 1);
        let before = index_reads(&mut conn).await;
        let row = standing_query(&board(30_000), &last)
            .fetch_one(&mut conn)
            .await
            .unwrap();
        let reads = index_reads(&mut conn).await - before;
        assert_eq!(
            row.2, MAX_COUNTED_RANK as i64,
            "the entries above, counted to the limit"
        );
        assert!(
            reads <= MAX_COUNTED_RANK as i64 + 8,
            "{reads} index entries read: the count stops at MAX_COUNTED_RANK"
        );
        for (i, rank, beyond) in [
            (0, 1, false),
            (MAX_COUNTED_RANK as i64 - 1, MAX_COUNTED_RANK, false),
            (MAX_COUNTED_RANK as i64, MAX_COUNTED_RANK + 1, true),
            (long - 1, MAX_COUNTED_RANK + 1, true),
        ] {
            let standing = store
                .board_standing(&board(30_000), &format!("s{i:06}"))
                .await
                .unwrap()
                .unwrap();
            assert_eq!(
                (standing.rank, standing.beyond()),
                (rank, beyond),
                "the standing of entry {i}"
            );
        }

        // A count reads its keys by the primary key; pruning reads the keys of old days along
        // their index, oldest first, and sorts nothing.
        let (text, tables) = plan(
            &mut conn,
            &format!("{SELECT_KEYS} (('room-1', 1), ('room-2', 52), ('room-9', 7))"),
        )
        .await;
        assert_eq!(
            tables,
            [["board_keys".to_owned(), "range".into(), "PRIMARY".into()]],
            "{text}"
        );
        let (text, tables) = plan(&mut conn, &filled(PRUNE_KEYS, &["20003", "100"])).await;
        assert_eq!(
            tables,
            [[
                "board_keys".to_owned(),
                "range".into(),
                "board_keys_day".into()
            ]],
            "{text}"
        );
        assert!(
            !text.contains("filesort"),
            "the keys come in index order\n{text}"
        );
        assert_eq!(
            store.prune_board_keys(DayKey(20_003), 250).await.unwrap(),
            250,
            "at most the limit"
        );
        assert_eq!(
            store.prune_board_keys(DayKey(20_003), 1_000).await.unwrap(),
            50,
            "the keys of days 20000 to 20002 only"
        );
        let days: Vec<i64> =
            sqlx::query_scalar("SELECT DISTINCT day FROM board_keys ORDER BY day LIMIT 1")
                .fetch_all(&mut conn)
                .await
                .unwrap();
        assert_eq!(days, [20_003], "the later days kept");
    }
}
