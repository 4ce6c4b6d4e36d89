//! `[storage]`: the backend (SQLite, MySQL or memory) and its tuning.

use serde::{Deserialize, Serialize, Serializer};

use super::reference::Section;

/// `[storage]`: the backend. `Debug` hides a password in the URL.
#[derive(Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct StorageSettings {
    /// `sqlite://path/to/file.db` (created if missing), `mysql://user:password@host:3306/db`
    /// (shared by every node; migrated by `room-api migrate`) or `memory://` (nothing survives
    /// a restart; for tests) (`ROOM__STORAGE__URL`). Serialized with any password replaced
    /// by `***`.
    #[serde(serialize_with = "redacted_url")]
    pub url: String,
    /// MySQL: the most connections of this node.
    pub max_connections: u32,
    /// SQLite: read-only connections beside the single writer.
    pub max_read_connections: u32,
    /// SQLite: the most write jobs committed in one transaction.
    pub max_jobs_per_transaction: usize,
    /// SQLite: how long to wait for a lock held by another process, in milliseconds.
    pub busy_timeout_ms: u64,
    /// SQLite: how often the WAL is checkpointed into the database file, in milliseconds.
    pub checkpoint_every_ms: u64,
    /// SQLite: the size in bytes the write-ahead log file is cut back to once it is copied.
    pub wal_size_limit_bytes: u64,
}

impl Default for StorageSettings {
    fn default() -> Self {
        let sqlite = adapters_sqlite::SqliteSettings::default();
        StorageSettings {
            url: "sqlite://data/room.db".into(),
            max_connections: adapters_mysql::MySqlSettings::default().max_connections,
            max_read_connections: sqlite.max_read_connections,
            max_jobs_per_transaction: sqlite.max_jobs_per_transaction,
            busy_timeout_ms: sqlite.busy_timeout_ms,
            checkpoint_every_ms: sqlite.checkpoint_every_ms,
            wal_size_limit_bytes: sqlite.wal_size_limit_bytes,
        }
    }
}

impl std::fmt::Debug for StorageSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StorageSettings")
            .field("url", &self.redacted_url())
            .field("max_connections", &self.max_connections)
            .field("max_read_connections", &self.max_read_connections)
            .field("max_jobs_per_transaction", &self.max_jobs_per_transaction)
            .field("busy_timeout_ms", &self.busy_timeout_ms)
            .field("checkpoint_every_ms", &self.checkpoint_every_ms)
            .field("wal_size_limit_bytes", &self.wal_size_limit_bytes)
            .finish()
    }
}

impl StorageSettings {
    /// The URL with any password replaced by `***`, for logs and messages.
    pub fn redacted_url(&self) -> String {
        redact(&self.url)
    }

    /// The MySQL adapter's settings.
    pub fn mysql(&self) -> adapters_mysql::MySqlSettings {
        adapters_mysql::MySqlSettings {
            max_connections: self.max_connections.max(1),
            ..adapters_mysql::MySqlSettings::new(self.url.clone())
        }
    }

    /// The SQLite adapter's settings.
    pub fn sqlite(&self) -> adapters_sqlite::SqliteSettings {
        adapters_sqlite::SqliteSettings {
            url: self.url.clone(),
            max_read_connections: self.max_read_connections,
            max_jobs_per_transaction: self.max_jobs_per_transaction,
            busy_timeout_ms: self.busy_timeout_ms,
            checkpoint_every_ms: self.checkpoint_every_ms,
            wal_size_limit_bytes: self.wal_size_limit_bytes,
        }
    }
}

/// `url` with any password replaced by `***`.
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((user_info, host)) if user_info.contains(':') => {
            let user = user_info.split(':').next().unwrap_or_default();
            format!("{scheme}://{user}:***@{host}{path}")
        }
        _ => url.to_owned(),
    }
}

/// Serializes a storage URL without its password.
fn redacted_url<S: Serializer>(url: &str, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&redact(url))
}

/// What `[storage]` and each of its keys are for, in the reference (`docs/configuration.md`).
pub(super) const SECTION: Section = Section {
    name: "storage",
    about: "Where rooms, orders and balances are stored.",
    keys: &[
        (
            "url",
            "`sqlite://path` (created and migrated if missing; one process at a time serves it, \
             holding a lock on `path-lock`), `mysql://user:password@host:3306/database` (MariaDB \
             10.11 or MySQL 8, shared by the nodes; `room-api migrate` applies the migrations, and \
             the service refuses to start on a schema that is behind) or `memory://` (nothing \
             survives a restart; tests, demos).",
        ),
        (
            "max_connections",
            "MySQL: the most connections of this node's requests and room commits. Two more \
             are kept apart for the in-process consumers of the durable facts (reading the \
             outbox, crediting income), so that they never hold a connection a request waits \
             for.",
        ),
        (
            "max_read_connections",
            "SQLite: read-only connections beside the single writer (write-ahead log readers never \
             block it).",
        ),
        (
            "max_jobs_per_transaction",
            "SQLite: the most write jobs (room commits, wallet operations, ...) committed in one \
             transaction.",
        ),
        (
            "busy_timeout_ms",
            "SQLite: how long to wait for a lock held by another process, in milliseconds.",
        ),
        (
            "checkpoint_every_ms",
            "SQLite: how often the write-ahead log is copied into the database file, in \
             milliseconds, on a thread of its own (once the log has passed 16 MiB, the writer then \
             starts it over between two transactions, a pause of about 15 ms). The log peaks at \
             about one period of writes (up to 200 MB at 5,000 gifts/s in the benchmark); past 256 \
             MiB it is started over whatever readers hold. A shorter period keeps it smaller but, \
             measured at 250 ms on a machine with a slower disk (see `docs/benchmarks.md`), \
             brought 100–500 ms stalls into the open loop.",
        ),
        (
            "wal_size_limit_bytes",
            "SQLite: the size in bytes the write-ahead log file is cut back to once a checkpoint \
             has copied it (SQLite's `journal_size_limit`; without it the file keeps the largest \
             size it ever reached). Under load the first commit after the log starts over cuts \
             it; an idle log that is all copied and larger is truncated to zero by the \
             checkpointer. Between two starts the log may pass it (see `checkpoint_every_ms`). \
             The gauge `room_sqlite_wal_bytes` shows the file's size.",
        ),
    ],
};
