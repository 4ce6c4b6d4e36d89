//! WAL checkpoints on a thread of their own.
//!
//! SQLite normally checkpoints inside the commit that pushes the WAL past its threshold: the
//! writer then copies pages into the database file and syncs it before it can answer anyone,
//! which shows up as a latency spike for every request of that group. Here the writer never
//! checkpoints (`wal_autocheckpoint = 0`); this thread checkpoints on its own connection at a
//! fixed period instead.
//!
//! A PASSIVE checkpoint runs concurrently with the writer and the readers and copies the bulk
//! of the log. It cannot by itself keep the log small under a steady load: the writer starts
//! the log over only when every frame has been copied at the moment it begins a transaction,
//! and under load it has always appended more frames meanwhile. The log then grows without
//! bound (a gigabyte in seconds), and every append lands on fresh file pages, which costs more
//! than overwriting cached ones. So when the log still holds more than [`RESTART_FRAMES`]
//! after a PASSIVE pass that copied nearly all of it, this thread asks the writer to start it
//! over: between two groups, the writer runs a RESTART checkpoint ([`restart_log`]), which
//! copies the few frames the PASSIVE pass left and waits for readers to leave the old log.
//! The RESTART runs on the writer's own connection because only there it never waits for the
//! write lock: from another connection it would compete with a writer that takes the lock
//! again as soon as it lets it go, and wait for seconds.
//!
//! Starting the log over reuses the file from its beginning; it does not make it smaller. The
//! writer's connection has a `journal_size_limit`, so its first commit into a started-over
//! log cuts the file back to that limit. An idle store commits nothing, so when a PASSIVE pass
//! finds the whole log copied and the file still larger than the limit, this thread runs a
//! TRUNCATE checkpoint, which empties the file (waiting at most [`RESTART_READER_WAIT`] for
//! readers and the writer). Each period sets the gauge `room_sqlite_wal_bytes` to the file's
//! size.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::Connection;

use crate::Result;
use crate::connection::open_read_write;

/// The checkpoint thread; stops when asked or when dropped.
pub(crate) struct Checkpointer {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Checkpointer {
    /// Starts checkpointing the database at `path` every `period`; sets `restart_wanted` when
    /// the writer should start the log over, and truncates a copied log file larger than
    /// `wal_limit` bytes.
    pub(crate) fn spawn(
        path: &Path,
        busy_timeout: Duration,
        period: Duration,
        wal_limit: i64,
        restart_wanted: Arc<AtomicBool>,
    ) -> Result<Self> {
        let conn = open_read_write(path, busy_timeout)?;
        let wal = WalFile::of(path, wal_limit, busy_timeout);
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let signal = stop.clone();
        let thread = std::thread::Builder::new()
            .name("sqlite-checkpoint".into())
            .spawn(move || run(conn, &signal, period, &wal, &restart_wanted))
            .map_err(|e| crate::Error::unavailable(format!("starting the checkpointer: {e}")))?;
        Ok(Checkpointer {
            stop,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Asks the thread to stop and waits for it (at most one checkpoint).
    pub(crate) fn stop(&self) {
        let (flag, wake) = &*self.stop;
        *flag.lock().unwrap_or_else(|e| e.into_inner()) = true;
        wake.notify_all();
        let thread = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(thread) = thread {
            let _ = thread.join();
        }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The write-ahead log file of a database and the size it is kept to.
pub(crate) struct WalFile {
    path: PathBuf,
    /// The limit in bytes; negative: none.
    limit: i64,
    /// The checkpointer connection's usual busy timeout, put back after a TRUNCATE.
    busy_timeout: Duration,
}

impl WalFile {
    /// The log of the database at `database` (`<database>-wal`), kept to `limit` bytes.
    pub(crate) fn of(database: &Path, limit: i64, busy_timeout: Duration) -> Self {
        let mut name = database.as_os_str().to_owned();
        name.push("-wal");
        WalFile {
            path: PathBuf::from(name),
            limit,
            busy_timeout,
        }
    }

    /// The file's size in bytes now (0 when it does not exist).
    pub(crate) fn size(&self) -> u64 {
        std::fs::metadata(&self.path).map_or(0, |meta| meta.len())
    }

    /// Whether the file is larger than the limit.
    fn too_large(&self, size: u64) -> bool {
        self.limit >= 0 && size > self.limit as u64
    }
}

fn run(
    conn: Connection,
    stop: &(Mutex<bool>, Condvar),
    period: Duration,
    wal: &WalFile,
    restart_wanted: &AtomicBool,
) {
    let (flag, wake) = stop;
    let mut stopped = flag.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let (guard, _) = wake
            .wait_timeout_while(stopped, period, |stopped| !*stopped)
            .unwrap_or_else(|e| e.into_inner());
        stopped = guard;
        if *stopped {
            return;
        }
        // Checkpoint without holding the lock, so `stop` is never kept waiting on it.
        drop(stopped);
        checkpoint(&conn, RESTART_FRAMES, wal, restart_wanted);
        stopped = flag.lock().unwrap_or_else(|e| e.into_inner());
    }
}

/// A log larger than this (in frames of one page each) after a PASSIVE checkpoint is
/// started over by the writer. 4,096 frames of 4 KiB pages is 16 MiB.
pub(crate) const RESTART_FRAMES: i64 = 4_096;

/// The most frames a PASSIVE pass may leave uncopied for the writer's RESTART to copy: 4 MiB
/// of 4 KiB pages, a few milliseconds of copying.
const RESTART_LEFT_FRAMES: i64 = 1_024;

/// A restart that takes longer than this is logged.
const SLOW_RESTART: Duration = Duration::from_millis(50);

/// A log this large (256 MiB of 4 KiB pages) is started over even if the PASSIVE passes left
/// more than [`RESTART_LEFT_FRAMES`]: the writer's RESTART then copies the rest.
const HARD_CAP_FRAMES: i64 = 65_536;

/// The pause between two PASSIVE passes of one checkpoint.
const BETWEEN_PASSES: Duration = Duration::from_millis(5);

/// The most PASSIVE passes in a row while a large log has too much left uncopied.
const MAX_PASSES: usize = 8;

/// How long the writer's RESTART waits for readers to leave the old log before it gives up
/// until the next request (readers hold a snapshot for the length of one query).
const RESTART_READER_WAIT: Duration = Duration::from_millis(100);

/// A PASSIVE checkpoint; asks the writer to start the log over if it is still large, and
/// truncates the file if all of it was copied and it is larger than its limit.
fn checkpoint(conn: &Connection, restart_frames: i64, wal: &WalFile, restart_wanted: &AtomicBool) {
    let started = Instant::now();
    // A pass copies up to the oldest reader's snapshot, so under load it leaves the frames
    // written meanwhile and those readers still see. Passes right after it find readers on
    // newer snapshots and copy the rest: the remainder shrinks to what one short pass misses.
    for _ in 0..MAX_PASSES {
        let pass = Instant::now();
        let passive = run_checkpoint(conn, "PASSIVE");
        metrics::histogram!("room_sqlite_checkpoint_seconds", "mode" => "passive")
            .record(pass.elapsed().as_secs_f64());
        let Some(log) = passive else {
            return;
        };
        tracing::debug!(
            ms = started.elapsed().as_secs_f64() * 1e3,
            wal_frames = log.wal_frames,
            copied = log.copied,
            "WAL checkpoint"
        );
        metrics::gauge!("room_sqlite_wal_frames").set(log.wal_frames as f64);
        let size = wal.size();
        if log.wal_frames == log.copied && wal.too_large(size) {
            truncate_log(conn, wal, size);
            return;
        }
        metrics::gauge!("room_sqlite_wal_bytes").set(size as f64);
        if log.wal_frames <= restart_frames {
            return;
        }
        // Only when the PASSIVE pass has nearly caught up: the writer's RESTART copies what is
        // left while every write waits, so a large remainder is left to another pass.
        // Past the hard cap, the log must start over whatever the remainder: a reader query
        // that outlasts every pass must not let it grow again without bound.
        if log.wal_frames - log.copied <= RESTART_LEFT_FRAMES || log.wal_frames > HARD_CAP_FRAMES {
            restart_wanted.store(true, Ordering::Release);
            return;
        }
        // Give the reader that held this pass back time to finish its query.
        std::thread::sleep(BETWEEN_PASSES);
    }
}

/// A RESTART checkpoint on the writer's connection, between two groups: copies what the last
/// PASSIVE pass left and makes the next transaction start the log from its beginning. Waits
/// at most [`RESTART_READER_WAIT`] for readers, then leaves it to the next request.
pub(crate) fn restart_log(conn: &Connection, busy_timeout: Duration) {
    let started = Instant::now();
    if conn.busy_timeout(RESTART_READER_WAIT).is_err() {
        return;
    }
    let restarted = run_checkpoint(conn, "RESTART");
    let _ = conn.busy_timeout(busy_timeout);
    let elapsed = started.elapsed();
    metrics::histogram!("room_sqlite_checkpoint_seconds", "mode" => "restart")
        .record(elapsed.as_secs_f64());
    if let Some(log) = restarted {
        if elapsed >= SLOW_RESTART {
            // Every write waited this long.
            tracing::warn!(
                ms = elapsed.as_secs_f64() * 1e3,
                wal_frames = log.wal_frames,
                copied = log.copied,
                "slow WAL restart"
            );
        } else {
            tracing::debug!(
                ms = elapsed.as_secs_f64() * 1e3,
                wal_frames = log.wal_frames,
                "WAL restart"
            );
        }
    }
}

/// A TRUNCATE checkpoint on the checkpointer's connection: the log was all copied (nothing
/// was written since, or only what this copies in a moment), so it waits at most
/// [`RESTART_READER_WAIT`] for the writer and the readers, and empties the file.
fn truncate_log(conn: &Connection, wal: &WalFile, size: u64) {
    let started = Instant::now();
    if conn.busy_timeout(RESTART_READER_WAIT).is_err() {
        return;
    }
    let truncated = run_checkpoint(conn, "TRUNCATE");
    let _ = conn.busy_timeout(wal.busy_timeout);
    metrics::histogram!("room_sqlite_checkpoint_seconds", "mode" => "truncate")
        .record(started.elapsed().as_secs_f64());
    let after = wal.size();
    metrics::gauge!("room_sqlite_wal_bytes").set(after as f64);
    if truncated.is_some() {
        tracing::debug!(
            ms = started.elapsed().as_secs_f64() * 1e3,
            before = size,
            after,
            "WAL truncated"
        );
    }
}

/// What a checkpoint reports: frames in the log, and how many of them are in the database
/// file now.
#[derive(Debug, Clone, Copy)]
struct LogState {
    wal_frames: i64,
    copied: i64,
}

/// Runs one checkpoint in `mode`; counts and logs a failure. A busy RESTART (a reader that
/// stayed past the busy timeout) is not a failure: the next period tries again.
fn run_checkpoint(conn: &Connection, mode: &str) -> Option<LogState> {
    let result = conn.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |row| {
        Ok((
            row.get::<_, i64>(0)?,
            LogState {
                wal_frames: row.get(1)?,
                copied: row.get(2)?,
            },
        ))
    });
    match result {
        Ok((busy, state)) => {
            if busy != 0 {
                metrics::counter!("room_sqlite_checkpoint_busy_total").increment(1);
            }
            Some(state)
        }
        Err(error) => {
            metrics::counter!("room_sqlite_checkpoint_errors_total").increment(1);
            tracing::warn!(error = %error, mode, "WAL checkpoint failed");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A WAL database in `dir` that never checkpoints by itself, with one table of pages.
    fn database(dir: &tempfile::TempDir) -> (PathBuf, Connection) {
        let path = dir.path().join("c.db");
        let writer = Connection::open(&path).unwrap();
        writer
            .execute_batch(
                "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;
                 CREATE TABLE t (x BLOB);",
            )
            .unwrap();
        (path, writer)
    }

    /// Appends `n` rows of one page each, each in its own transaction.
    fn insert(writer: &Connection, n: usize) {
        for _ in 0..n {
            writer
                .execute("INSERT INTO t VALUES (zeroblob(4096))", [])
                .unwrap();
        }
    }

    #[test]
    fn checkpoints_move_the_wal_into_the_database_file() {
        let dir = tempfile::tempdir().unwrap();
        let (path, writer) = database(&dir);
        insert(&writer, 50);
        let db_size = || std::fs::metadata(&path).unwrap().len();
        let before = db_size();
        let checkpointer = Checkpointer::spawn(
            &path,
            Duration::from_secs(1),
            Duration::from_millis(10),
            -1,
            Arc::new(AtomicBool::new(false)),
        )
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while db_size() < before + 50 * 4096 {
            assert!(Instant::now() < deadline, "no checkpoint reached the file");
            std::thread::sleep(Duration::from_millis(5));
        }
        checkpointer.stop();
        // Stopping twice (and dropping) is harmless.
        checkpointer.stop();
    }

    /// Frames in the log now, as a PASSIVE checkpoint reports them.
    fn wal_frames(conn: &Connection) -> i64 {
        conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| row.get(1))
            .unwrap()
    }

    /// A reader on an old snapshot keeps a PASSIVE checkpoint from copying the whole log, as a
    /// steady load does; the writer then appends forever. A large log makes the checkpoint
    /// ask for a restart, and the writer's RESTART makes its next write start the log over.
    /// Returns whether the restart was asked for and the log's frames after one more write.
    fn log_after_a_checkpoint_with_an_old_reader(restart_frames: i64) -> (bool, i64) {
        let dir = tempfile::tempdir().unwrap();
        let (path, writer) = database(&dir);
        insert(&writer, 100);
        let reader = Connection::open(&path).unwrap();
        reader.execute_batch("BEGIN").unwrap();
        let _: i64 = reader
            .query_row("SELECT count(*) FROM t", [], |row| row.get(0))
            .unwrap();
        insert(&writer, 100);
        let checkpointer = Connection::open(&path).unwrap();
        let wanted = AtomicBool::new(false);
        let wal = WalFile::of(&path, -1, Duration::from_secs(1));
        checkpoint(&checkpointer, restart_frames, &wal, &wanted);
        reader.execute_batch("COMMIT").unwrap();
        let wanted = wanted.load(Ordering::Acquire);
        if wanted {
            restart_log(&writer, Duration::from_secs(5));
        }
        insert(&writer, 1);
        (wanted, wal_frames(&writer))
    }

    #[test]
    fn a_large_log_starts_over_although_a_reader_held_an_old_snapshot() {
        let (wanted, frames) = log_after_a_checkpoint_with_an_old_reader(64);
        assert!(wanted);
        assert!(frames < 10, "the log did not start over: {frames} frames");
    }

    #[test]
    fn a_small_log_is_left_to_passive_checkpoints() {
        // Below the threshold no RESTART runs: the old reader kept the PASSIVE pass short, so
        // the next write appends to the log instead of starting it over.
        let (wanted, frames) = log_after_a_checkpoint_with_an_old_reader(i64::MAX);
        assert!(!wanted);
        assert!(frames > 100, "the log was started over: {frames} frames");
    }

    /// The limit of the tests below: 16 pages.
    const LIMIT: i64 = 16 * 4096;

    #[test]
    fn an_idle_log_larger_than_its_limit_is_truncated_once_copied() {
        let dir = tempfile::tempdir().unwrap();
        let (path, writer) = database(&dir);
        writer
            .pragma_update(None, "journal_size_limit", LIMIT)
            .unwrap();
        insert(&writer, 100);
        let wal = WalFile::of(&path, LIMIT, Duration::from_secs(1));
        assert!(
            wal.size() > LIMIT as u64,
            "the burst grew the log past its limit: {} bytes",
            wal.size()
        );
        // No write follows: only the checkpointer can make the file smaller.
        let checkpointer = open_read_write(&path, Duration::from_secs(1)).unwrap();
        let wanted = AtomicBool::new(false);
        checkpoint(&checkpointer, RESTART_FRAMES, &wal, &wanted);
        assert!(
            wal.size() <= LIMIT as u64,
            "the copied log was cut to its limit: {} bytes",
            wal.size()
        );
        // Nothing was lost: the rows are in the database file.
        let rows: i64 = writer
            .query_row("SELECT count(*) FROM t", [], |row| row.get(0))
            .unwrap();
        assert_eq!(rows, 100);
    }

    #[test]
    fn under_load_the_first_commit_after_a_restart_cuts_the_log_to_its_limit() {
        let dir = tempfile::tempdir().unwrap();
        let (path, writer) = database(&dir);
        writer
            .pragma_update(None, "journal_size_limit", LIMIT)
            .unwrap();
        insert(&writer, 100);
        // A reader on an old snapshot: the PASSIVE pass cannot copy everything, so the
        // checkpointer leaves the file alone and asks the writer to start the log over.
        let reader = Connection::open(&path).unwrap();
        reader.execute_batch("BEGIN").unwrap();
        let _: i64 = reader
            .query_row("SELECT count(*) FROM t", [], |row| row.get(0))
            .unwrap();
        insert(&writer, 100);
        let wal = WalFile::of(&path, LIMIT, Duration::from_secs(1));
        let checkpointer = open_read_write(&path, Duration::from_secs(1)).unwrap();
        let wanted = AtomicBool::new(false);
        checkpoint(&checkpointer, 64, &wal, &wanted);
        assert!(wanted.load(Ordering::Acquire));
        assert!(wal.size() > LIMIT as u64, "{} bytes", wal.size());
        reader.execute_batch("COMMIT").unwrap();
        restart_log(&writer, Duration::from_secs(5));
        insert(&writer, 1);
        assert!(
            wal.size() <= LIMIT as u64,
            "the commit cut the log to its limit: {} bytes",
            wal.size()
        );
    }
}
