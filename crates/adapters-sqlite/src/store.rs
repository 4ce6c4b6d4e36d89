//! [`SqliteStore`]: opening the database (file, pragmas, migrations), the single writer and
//! the pool of read-only connections that the port implementations share.

use std::path::Path;
use std::str::FromStr;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use room_app::Error;
use rusqlite::Connection;
use serde::{Deserialize, Serialize};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};
use sqlx::{ConnectOptions, Connection as _, SqliteConnection};

use crate::Result;
use crate::checkpoint::Checkpointer;
use crate::codec::{db, sql};
use crate::connection::open_writer;
use crate::scanner::Scanner;
use crate::writer::{WriteStats, Writer};

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../../migrations/sqlite");

/// How to open a [`SqliteStore`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SqliteSettings {
    /// The database file, as `sqlite://data/room.db` (relative to the working directory) or
    /// `sqlite:///var/lib/room/room.db`. The file and its parent directories are created if
    /// missing. In-memory databases are refused: the writer and the readers are separate
    /// connections that must see one database.
    pub url: String,
    /// Read-only connections in the reader pool (WAL readers never block the writer).
    pub max_read_connections: u32,
    /// The most write jobs the writer runs in one transaction.
    pub max_jobs_per_transaction: usize,
    /// How long a connection waits for a lock held by another process, in milliseconds.
    pub busy_timeout_ms: u64,
    /// How often the WAL is checkpointed into the database file, in milliseconds (on a thread
    /// of its own, never inside a commit).
    pub checkpoint_every_ms: u64,
    /// The size, in bytes, the write-ahead log file is cut back to once a checkpoint has
    /// copied it (SQLite's `journal_size_limit`): the file otherwise keeps its largest size
    /// for good. Under load the writer's next commit after the log starts over cuts it; when
    /// the log is all copied and the file is larger, the checkpointer truncates it to zero.
    pub wal_size_limit_bytes: u64,
}

impl Default for SqliteSettings {
    fn default() -> Self {
        SqliteSettings {
            url: "sqlite://data/room.db".into(),
            max_read_connections: 4,
            max_jobs_per_transaction: 256,
            busy_timeout_ms: 5_000,
            checkpoint_every_ms: 1_000,
            wal_size_limit_bytes: 64 * 1024 * 1024,
        }
    }
}

impl SqliteSettings {
    /// The default settings for the database file at `url`.
    pub fn new(url: impl Into<String>) -> Self {
        SqliteSettings {
            url: url.into(),
            ..SqliteSettings::default()
        }
    }
}

/// Every storage port of the room service on one SQLite database file.
///
/// Writes go through one writer thread that commits queued jobs together (see the crate docs);
/// reads use a pool of read-only connections. Cheap to clone: clones share the writer and the
/// pool. Open with [`SqliteStore::open`], and [`close`](SqliteStore::close) on shutdown.
#[derive(Clone)]
pub struct SqliteStore {
    pub(crate) writer: Writer,
    pub(crate) readers: SqlitePool,
    /// The read-only connection of scans over thousands of rows.
    pub(crate) scanner: Scanner,
    checkpointer: Arc<Checkpointer>,
    /// The file's exclusive advisory lock, held until [`SqliteStore::close`] (or the last
    /// clone is dropped, or the process ends, however it ends).
    owner: Arc<Mutex<Option<std::fs::File>>>,
}

/// Takes an exclusive advisory lock on `<database>-lock` (created if missing), so that one
/// process at a time serves the database. The embedded store is single-process by design: the
/// rooms' leases and the gift saga's per-order locks live in that process's memory, and a
/// second process on the same file could drive one gift order concurrently. The lock is on a
/// file of its own because closing any descriptor of the database file itself would drop
/// SQLite's own POSIX locks on it.
fn claim(database: &Path) -> Result<std::fs::File> {
    let mut name = database.as_os_str().to_owned();
    name.push("-lock");
    let path = Path::new(&name);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| Error::unavailable(format!("cannot open {}: {e}", path.display())))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(Error::Unavailable(format!(
            "{} is in use by another process (one room service per database file)",
            database.display()
        ))),
        Err(std::fs::TryLockError::Error(e)) => Err(Error::unavailable(format!(
            "cannot lock {}: {e}",
            path.display()
        ))),
    }
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("writes", &self.writer.stats())
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens (creating if missing) the database, applies the pending migrations, and starts
    /// the writer. Must be called inside a tokio runtime.
    pub async fn open(settings: &SqliteSettings) -> Result<Self> {
        if !settings.url.starts_with("sqlite:") {
            return Err(Error::Invalid(format!(
                "the SQLite url must start with sqlite:, got {:?}",
                settings.url
            )));
        }
        if settings.url.contains(":memory:") || settings.url.contains("mode=memory") {
            return Err(Error::Invalid(
                "the SQLite store needs a database file, not an in-memory database".into(),
            ));
        }
        let options = SqliteConnectOptions::from_str(&settings.url)
            .map_err(|e| Error::Invalid(format!("bad SQLite url {:?}: {e}", settings.url)))?
            .busy_timeout(Duration::from_millis(settings.busy_timeout_ms))
            .foreign_keys(true);
        if let Some(parent) = options.get_filename().parent()
            && !parent.as_os_str().is_empty()
        {
            std::fs::create_dir_all(parent).map_err(|e| {
                Error::unavailable(format!("cannot create {}: {e}", parent.display()))
            })?;
        }
        let owner = claim(options.get_filename())?;

        // Create the file in WAL mode (a setting the file keeps) and migrate it, with sqlx.
        let mut setup: SqliteConnection = options
            .clone()
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .connect()
            .await
            .map_err(db)?;
        MIGRATOR
            .run(&mut setup)
            .await
            .map_err(|e| Error::unavailable(format!("migrating the SQLite database: {e}")))?;
        setup.close().await.map_err(db)?;

        let path = options.get_filename().to_owned();
        let busy_timeout = Duration::from_millis(settings.busy_timeout_ms);
        let scanner = Scanner::new(&path, busy_timeout);
        let restart_wanted = Arc::new(AtomicBool::new(false));
        let wal_limit = i64::try_from(settings.wal_size_limit_bytes).unwrap_or(i64::MAX);
        let checkpointer = Arc::new(Checkpointer::spawn(
            &path,
            busy_timeout,
            Duration::from_millis(settings.checkpoint_every_ms.max(1)),
            wal_limit,
            restart_wanted.clone(),
        )?);
        let writer =
            tokio::task::spawn_blocking(move || open_writer(&path, busy_timeout, wal_limit))
                .await
                .map_err(|e| Error::unavailable(format!("opening the SQLite writer: {e}")))??;
        let readers = SqlitePoolOptions::new()
            .max_connections(settings.max_read_connections.max(1))
            .connect_with(options.read_only(true))
            .await
            .map_err(db)?;
        Ok(SqliteStore {
            writer: Writer::spawn(
                writer,
                settings.max_jobs_per_transaction,
                restart_wanted,
                busy_timeout,
            )?,
            readers,
            scanner,
            checkpointer,
            owner: Arc::new(Mutex::new(Some(owner))),
        })
    }

    /// Finishes the queued writes and closes every connection. Later calls fail with
    /// [`Error::Unavailable`].
    pub async fn close(&self) {
        self.writer.close().await;
        self.readers.close().await;
        let scanner = self.scanner.clone();
        let _ = tokio::task::spawn_blocking(move || scanner.close()).await;
        let checkpointer = self.checkpointer.clone();
        let _ = tokio::task::spawn_blocking(move || checkpointer.stop()).await;
        // Another process may open the file now.
        drop(self.owner.lock().unwrap_or_else(|e| e.into_inner()).take());
    }

    /// What the writer has done so far: how many transactions, how many jobs in them.
    pub fn write_stats(&self) -> WriteStats {
        self.writer.stats()
    }

    /// Runs `work` as one job of the writer's next transaction (in its own savepoint) and
    /// returns its result once the transaction is committed.
    pub(crate) async fn write<T, F>(&self, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        self.writer.submit(work).await
    }

    /// Runs one statement as a job of the writer; returns how many rows it changed.
    pub(crate) async fn execute<P>(&self, statement: &'static str, params: P) -> Result<usize>
    where
        P: rusqlite::Params + Send + 'static,
    {
        self.write(move |conn| {
            conn.prepare_cached(statement)
                .and_then(|mut prepared| prepared.execute(params))
                .map_err(sql)
        })
        .await
    }
}
