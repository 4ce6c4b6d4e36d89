//! [`SqliteStore`]: opening the database (file, pragmas, migrations), the single writer and
//! the pool of read-only connections that the port implementations share.

use std::str::FromStr;
use std::time::Duration;

use room_app::Error;
use serde::{Deserialize, Serialize};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{ConnectOptions, SqliteConnection};

use crate::Result;
use crate::codec::db;
use crate::writer::{Isolation, JobFuture, WriteStats, Writer};

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
}

impl Default for SqliteSettings {
    fn default() -> Self {
        SqliteSettings {
            url: "sqlite://data/room.db".into(),
            max_read_connections: 4,
            max_jobs_per_transaction: 256,
            busy_timeout_ms: 5_000,
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
/// Writes go through one writer task that commits queued jobs together (see the crate docs);
/// reads use a pool of read-only connections. Cheap to clone: clones share the writer and the
/// pool. Open with [`SqliteStore::open`], and [`close`](SqliteStore::close) on shutdown.
#[derive(Clone)]
pub struct SqliteStore {
    pub(crate) writer: Writer,
    pub(crate) readers: SqlitePool,
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

        let write_options = options
            .clone()
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // Every acknowledged commit is on disk: WAL plus FULL syncs the log at each commit.
            .synchronous(SqliteSynchronous::Full);
        let mut writer: SqliteConnection = write_options.connect().await.map_err(db)?;
        MIGRATOR
            .run(&mut writer)
            .await
            .map_err(|e| Error::unavailable(format!("migrating the SQLite database: {e}")))?;

        let readers = SqlitePoolOptions::new()
            .max_connections(settings.max_read_connections.max(1))
            .connect_with(options.read_only(true))
            .await
            .map_err(db)?;
        Ok(SqliteStore {
            writer: Writer::spawn(writer, settings.max_jobs_per_transaction),
            readers,
        })
    }

    /// Finishes the queued writes and closes every connection. Later calls fail with
    /// [`Error::Unavailable`].
    pub async fn close(&self) {
        self.writer.close().await;
        self.readers.close().await;
    }

    /// What the writer has done so far: how many transactions, how many jobs in them.
    pub fn write_stats(&self) -> WriteStats {
        self.writer.stats()
    }

    /// Runs `work` as one job of the writer's next transaction. `work` must write with ONE
    /// statement and fail only when that statement failed or wrote nothing (reads before and
    /// after are fine): it gets no savepoint, SQLite's own statement rollback isolates it.
    pub(crate) async fn write_statement<T, F>(&self, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut SqliteConnection) -> JobFuture<'c, T> + Send + 'static,
    {
        self.writer.submit(Isolation::Statement, work).await
    }
}
