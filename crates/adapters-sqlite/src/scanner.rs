//! The scanner: one read-only rusqlite connection for the reads that go over thousands of
//! rows at once (the room lists' scan of every open room). The pool's sqlx connections hand
//! each row from their worker thread to the async caller one at a time, copying its values
//! and waking the caller per row; a scan through them cost most of a refresh of the lists.
//! The scanner reads on a blocking thread of its own, straight into the caller's values. WAL
//! readers never block the writer, nor the writer them.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use room_app::Error;
use rusqlite::{Connection, OpenFlags};

use crate::Result;
use crate::codec::sql;

/// The scanner's connection, opened at its first use and closed with the store. Cheap to
/// clone: clones share it.
#[derive(Clone)]
pub(crate) struct Scanner {
    path: Arc<PathBuf>,
    busy_timeout: Duration,
    /// The connection, once opened and until closed; scans take turns on it.
    conn: Arc<Mutex<Slot>>,
}

enum Slot {
    Unopened,
    Open(Connection),
    Closed,
}

impl Scanner {
    /// A scanner of the database at `path`; opens nothing yet.
    pub(crate) fn new(path: &Path, busy_timeout: Duration) -> Self {
        Scanner {
            path: Arc::new(path.to_owned()),
            busy_timeout,
            conn: Arc::new(Mutex::new(Slot::Unopened)),
        }
    }

    /// Runs `work` on the scanner's connection, on a blocking thread; one scan at a time.
    /// Fails with [`Error::Unavailable`] once the store is closed.
    pub(crate) async fn scan<T, F>(&self, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        let scanner = self.clone();
        tokio::task::spawn_blocking(move || {
            let mut slot = scanner.conn.lock().unwrap_or_else(|e| e.into_inner());
            if matches!(*slot, Slot::Unopened) {
                *slot = Slot::Open(open_read_only(&scanner.path, scanner.busy_timeout)?);
            }
            match &*slot {
                Slot::Open(conn) => work(conn),
                _ => Err(Error::Unavailable("the SQLite store is closed".into())),
            }
        })
        .await
        .map_err(|e| Error::unavailable(format!("a SQLite scan stopped: {e}")))?
    }

    /// Closes the connection (after the scan running, if any); later scans fail.
    pub(crate) fn close(&self) {
        *self.conn.lock().unwrap_or_else(|e| e.into_inner()) = Slot::Closed;
    }
}

fn open_read_only(path: &Path, busy_timeout: Duration) -> Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(sql)?;
    conn.busy_timeout(busy_timeout).map_err(sql)?;
    Ok(conn)
}
