//! `[storage]`: the backend (SQLite, MySQL or memory) and its tuning.

use serde::Deserialize;

/// `[storage]`: the backend. `Debug` hides a password in the URL.
#[derive(Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StorageSettings {
    /// `sqlite://path/to/file.db` (created if missing), `mysql://user:password@host:3306/db`
    /// (shared by every node; migrated by `room-api migrate`) or `memory://` (nothing survives
    /// a restart; for tests) (`ROOM__STORAGE__URL`).
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
            .finish()
    }
}

impl StorageSettings {
    /// The URL with any password replaced by `***`, for logs and messages.
    pub fn redacted_url(&self) -> String {
        let url = &self.url;
        let Some((scheme, rest)) = url.split_once("://") else {
            return url.clone();
        };
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        match authority.rsplit_once('@') {
            Some((user_info, host)) if user_info.contains(':') => {
                let user = user_info.split(':').next().unwrap_or_default();
                format!("{scheme}://{user}:***@{host}{path}")
            }
            _ => url.clone(),
        }
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
        }
    }
}
