//! [`Boards`] (migration 0130), with the semantics of the in-memory store's.
//!
//! `board_entries` holds one row per entry of a board, keyed by the board (period, number,
//! kind, room id: '' for the whole app) and the subject, with an index in rank order (score
//! descending, then `reached_at`, then subject) that pages and standings read along.
//! `board_marks` holds, by room, the last position of its facts counted.
//!
//! A count is one transaction on the background connections, run again by
//! [`MySqlStore::retrying`] after a deadlock, in a few round trips whatever its size: it
//! locks the marks of its rooms, in room order, with one multi-row upsert that creates the
//! missing ones at 0 (of two counts of one room at once, the second waits there until the
//! first commits), reads them (a plain read: they are locked already), and sums what the
//! gifts past them add ([`BoardSums`], which refuses a sum past `i64::MAX` within the count
//! before anything is written). Then it adds to each entry with multi-row upserts in key order
//! (the score added, `reached_at` the later of the two; counts of other rooms adding to the
//! same entries of the app's boards lock them in the same order), and moves the marks with one
//! more upsert. That is six round trips (`BEGIN`, four statements, `COMMIT`) for a count that
//! adds to at most [`ROWS_PER_STATEMENT`] entries, one more for each [`ROWS_PER_STATEMENT`]
//! past them, and four for a count that counts nothing (it rolls back after the read). A
//! score past `BIGINT` once added to what is stored is refused by the server (error 1690) and
//! rolls the whole count back: nothing is counted and no mark moves.
//!
//! Pages and standings are one statement each on the request connections: a page reads the
//! rank index from its cursor on, a standing counts the entries above the subject's along it.
//! A board is replaced by one transaction that deletes its rows and inserts the new ones;
//! old periods are pruned by a bounded `DELETE` along the key.

use std::collections::HashMap;

use async_trait::async_trait;
use room_app::Error;
use room_app::ports::{
    BoardEntry, BoardGift, BoardId, BoardPeriod, BoardStanding, BoardSums, Boards, MAX_BOARD_GIFTS,
    MAX_BOARD_PAGE, check_board_entries, check_board_gifts,
};
use room_domain::{Coins, RoomId, Timestamp};
use sqlx::{MySql, QueryBuilder};

use crate::codec::{TxError, is_arithmetic_overflow, stored_u64, to_i64};
use crate::{MySqlStore, Result};

/// The most rows one upsert or insert of entries writes (seven values a row, under the
/// protocol's 65,535; a statement of a few hundred kilobytes, well under the server's
/// `max_allowed_packet`).
const ROWS_PER_STATEMENT: usize = 5_000;

const _: () = assert!(ROWS_PER_STATEMENT * 7 <= u16::MAX as usize);
// The marks of one count's rooms are locked, and moved, in one statement each.
const _: () = assert!(MAX_BOARD_GIFTS * 2 <= u16::MAX as usize);

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

/// One try of a count: locks and reads the marks of `rooms` (sorted, without repeats), then
/// adds what `gifts` add past them and moves them.
async fn count_once(
    store: &MySqlStore,
    gifts: &[BoardGift],
    rooms: &[&RoomId],
) -> Result<u32, TxError> {
    let mut tx = store.background.begin().await?;
    // The upsert locks each room's mark (exclusively, also when it exists and changes
    // nothing) in room order, until the commit.
    let mut lock = QueryBuilder::<MySql>::new("INSERT INTO board_marks (room_id, seq) ");
    lock.push_values(rooms.iter(), |mut row, room| {
        row.push_bind(room.as_str()).push_bind(0_i64);
    });
    lock.push(" ON DUPLICATE KEY UPDATE seq = seq");
    lock.build().execute(&mut *tx).await?;
    // A plain read: the marks are locked, so this statement's view (a new one under READ
    // COMMITTED) holds their latest values. A locking read would lock every row it scans,
    // and on a small table the server scans them all: other counts' rooms too, out of order.
    let mut select =
        QueryBuilder::<MySql>::new("SELECT room_id, seq FROM board_marks WHERE room_id IN (");
    let mut list = select.separated(", ");
    for room in rooms {
        list.push_bind(room.as_str());
    }
    select.push(")");
    let rows: Vec<(String, i64)> = select.build_query_as().fetch_all(&mut *tx).await?;
    let mut marks = HashMap::with_capacity(rows.len());
    for (room, seq) in rows {
        marks.insert(room, stored_u64(seq, "board mark")?);
    }
    let (counted, sums) = BoardSums::of(gifts, |room| {
        marks
            .get(room.as_str())
            .copied()
            .ok_or_else(|| Error::internal(format!("the board mark of room {room} is not locked")))
    })?;
    if counted == 0 {
        tx.rollback().await?;
        return Ok(0);
    }
    let mut moved = Vec::with_capacity(sums.marks.len());
    for (room, seq) in &sums.marks {
        moved.push((room.as_str(), to_i64(*seq, "gift position")?));
    }
    let mut rows: Vec<EntryRow<'_>> = sums
        .entries
        .iter()
        .map(|((board, subject), (score, at))| entry_row(board, subject, *score, *at))
        .collect();
    // Key order, the same for every count, so that counts adding to the same entries lock
    // them in the same order.
    rows.sort_unstable();
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
    let mut update = QueryBuilder::<MySql>::new("INSERT INTO board_marks (room_id, seq) ");
    update.push_values(moved, |mut row, (room, seq)| {
        row.push_bind(room).push_bind(seq);
    });
    update.push(" ON DUPLICATE KEY UPDATE seq = GREATEST(seq, VALUES(seq))");
    update.build().execute(&mut *tx).await?;
    tx.commit().await?;
    Ok(counted)
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
        let mut rooms: Vec<&RoomId> = gifts.iter().map(|gift| &gift.room_id).collect();
        rooms.sort_unstable();
        rooms.dedup();
        if rooms.is_empty() {
            return Ok(0);
        }
        self.retrying("add_to_boards", || count_once(self, gifts, &rooms))
            .await
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
                let query = match &after {
                    None => sqlx::query_as(
                        "SELECT subject, score, reached_at FROM board_entries
                         WHERE period = ? AND number = ? AND kind = ? AND room_id = ?
                         ORDER BY score DESC, reached_at, subject LIMIT ?",
                    )
                    .bind(board.period.code())
                    .bind(board.number)
                    .bind(board.kind.code())
                    .bind(board.room_key())
                    .bind(limit),
                    // `score <= ?` bounds the scan of the rank index from the cursor on.
                    Some(after) => sqlx::query_as(
                        "SELECT subject, score, reached_at FROM board_entries
                         WHERE period = ? AND number = ? AND kind = ? AND room_id = ?
                           AND score <= ?
                           AND (score < ? OR reached_at > ?
                                OR (reached_at = ? AND subject > ?))
                         ORDER BY score DESC, reached_at, subject LIMIT ?",
                    )
                    .bind(board.period.code())
                    .bind(board.number)
                    .bind(board.kind.code())
                    .bind(board.room_key())
                    .bind(after.score.0)
                    .bind(after.score.0)
                    .bind(after.reached_at.as_millis())
                    .bind(after.reached_at.as_millis())
                    .bind(after.subject.as_str())
                    .bind(limit),
                };
                Ok(query.fetch_all(&self.pool).await?)
            })
            .await?;
        Ok(rows.into_iter().map(entry_from).collect())
    }

    async fn board_standing(
        &self,
        board: &BoardId,
        subject: &str,
    ) -> Result<Option<BoardStanding>> {
        // The entry and the entries ranking above it, in one statement (one read view); the
        // count scans the rank index from the top of the board down to the entry only.
        let row: Option<(i64, i64, i64)> = self
            .retrying("board_standing", || async {
                Ok(sqlx::query_as(
                    "SELECT e.score, e.reached_at,
                         (SELECT COUNT(*) FROM board_entries AS o
                              FORCE INDEX (board_entries_rank)
                          WHERE o.period = e.period AND o.number = e.number
                            AND o.kind = e.kind AND o.room_id = e.room_id
                            AND o.score >= e.score
                            AND (o.score > e.score OR o.reached_at < e.reached_at
                                 OR (o.reached_at = e.reached_at AND o.subject < e.subject)))
                     FROM board_entries AS e
                     WHERE e.period = ? AND e.number = ? AND e.kind = ? AND e.room_id = ?
                       AND e.subject = ?",
                )
                .bind(board.period.code())
                .bind(board.number)
                .bind(board.kind.code())
                .bind(board.room_key())
                .bind(subject)
                .fetch_optional(&self.pool)
                .await?)
            })
            .await?;
        let Some((score, reached_at, above)) = row else {
            return Ok(None);
        };
        Ok(Some(BoardStanding {
            rank: stored_u64(above, "entries above")? + 1,
            entry: entry_from((subject.to_owned(), score, reached_at)),
        }))
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
            let deleted = sqlx::query(
                "DELETE FROM board_entries WHERE period = ? AND number < ?
                 ORDER BY period, number LIMIT ?",
            )
            .bind(period.code())
            .bind(before)
            .bind(limit)
            .execute(&self.background)
            .await?;
            Ok(deleted.rows_affected())
        })
        .await
    }
}
