//! WAL checkpoints on a thread of their own.
//!
//! SQLite normally checkpoints inside the commit that pushes the WAL past its threshold: the
//! writer then copies pages into the database file and syncs it before it can answer anyone,
//! which shows up as a latency spike for every request of that group. Here the writer never
//! checkpoints (`wal_autocheckpoint = 0`); this thread runs a PASSIVE checkpoint on its own
//! connection at a fixed period instead, concurrently with the writer and the readers.

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::{Connection, OpenFlags};

use crate::Result;
use crate::codec::sql;

/// The checkpoint thread; stops when asked or when dropped.
pub(crate) struct Checkpointer {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Checkpointer {
    /// Starts checkpointing the database at `path` every `period`.
    pub(crate) fn spawn(path: &Path, busy_timeout: Duration, period: Duration) -> Result<Self> {
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(sql)?;
        conn.busy_timeout(busy_timeout).map_err(sql)?;
        // The database file is synced at every checkpoint: what the WAL held stays durable.
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(sql)?;
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let signal = stop.clone();
        let thread = std::thread::Builder::new()
            .name("sqlite-checkpoint".into())
            .spawn(move || run(conn, &signal, period))
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

fn run(conn: Connection, stop: &(Mutex<bool>, Condvar), period: Duration) {
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
        checkpoint(&conn);
        stopped = flag.lock().unwrap_or_else(|e| e.into_inner());
    }
}

fn checkpoint(conn: &Connection) {
    let started = Instant::now();
    // (busy, frames in the WAL, frames checkpointed)
    let result = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
        Ok((
            row.get::<_, i64>(0)?,
            row.get::<_, i64>(1)?,
            row.get::<_, i64>(2)?,
        ))
    });
    metrics::histogram!("room_sqlite_checkpoint_seconds").record(started.elapsed().as_secs_f64());
    match result {
        Ok((_, wal_frames, _)) => {
            metrics::gauge!("room_sqlite_wal_frames").set(wal_frames as f64);
        }
        Err(error) => {
            metrics::counter!("room_sqlite_checkpoint_errors_total").increment(1);
            tracing::warn!(error = %error, "WAL checkpoint failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoints_move_the_wal_into_the_database_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        let writer = Connection::open(&path).unwrap();
        writer
            .execute_batch(
                "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;
                 CREATE TABLE t (x BLOB);",
            )
            .unwrap();
        for _ in 0..50 {
            writer
                .execute("INSERT INTO t VALUES (zeroblob(4096))", [])
                .unwrap();
        }
        let db_size = || std::fs::metadata(&path).unwrap().len();
        let before = db_size();
        let checkpointer =
            Checkpointer::spawn(&path, Duration::from_secs(1), Duration::from_millis(10)).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while db_size() < before + 50 * 4096 {
            assert!(Instant::now() < deadline, "no checkpoint reached the file");
            std::thread::sleep(Duration::from_millis(5));
        }
        checkpointer.stop();
        // Stopping twice (and dropping) is harmless.
        checkpointer.stop();
    }
}
