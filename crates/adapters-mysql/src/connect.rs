//! How the adapter reaches its database: [`MySqlSettings`], and the pool of connections they
//! open, each with the session settings every statement of the adapter relies on. Both the
//! store and the schema step ([`MySqlStore::migrate`](crate::MySqlStore::migrate)) connect
//! through here.

use std::str::FromStr;
use std::time::Duration;

use room_app::Error;
use serde::{Deserialize, Serialize};
use sqlx::mysql::MySqlConnectOptions;

use crate::Result;
use crate::codec::db;
use crate::pool::Pool;

/// How to open a [`MySqlStore`](crate::MySqlStore).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct MySqlSettings {
    /// The database, as `mysql://user:password@host:3306/room`. The database must exist; its
    /// tables are created by [`MySqlStore::migrate`](crate::MySqlStore::migrate). A secret:
    /// `Debug` hides the password.
    pub url: String,
    /// The most connections the pool opens.
    pub max_connections: u32,
    /// How long a call waits for a free connection before it fails with
    /// [`Error::Unavailable`], in milliseconds.
    pub acquire_timeout_ms: u64,
    /// How long a statement waits for a row lock before the server gives up
    /// (`innodb_lock_wait_timeout`, whole seconds, at least 1).
    pub lock_wait_timeout_secs: u32,
    /// How many times a transaction runs when the server rolls it back as a deadlock victim
    /// or after a lock wait timeout (at least 1). The last failure is [`Error::Unavailable`].
    pub lock_attempts: u32,
    /// How long the server lets a connection sit idle inside a transaction before it closes
    /// it and rolls the transaction back, in whole seconds (MariaDB's
    /// `idle_transaction_timeout`; MySQL has no such setting and runs without it). A node
    /// frozen in the middle of a commit (a paused process, a stalled VM) then holds its rows'
    /// locks this long at most, not until it wakes: the node that takes its rooms over is
    /// not blocked behind them. Keep it under the lease. 0 leaves the server's own.
    pub idle_transaction_timeout_secs: u32,
}

impl Default for MySqlSettings {
    fn default() -> Self {
        MySqlSettings {
            url: "mysql://room@127.0.0.1:3306/room".into(),
            max_connections: 16,
            acquire_timeout_ms: 5_000,
            // Attempts × wait stays well under the 10 s lease: a commit that waits longer
            // would outlive the ownership it commits for.
            lock_wait_timeout_secs: 2,
            lock_attempts: 3,
            // A commit's statements follow each other within milliseconds; seconds of
            // silence inside one is a node that stopped, and the lease (10 s) is lost
            // after it.
            idle_transaction_timeout_secs: 4,
        }
    }
}

impl MySqlSettings {
    /// The default settings for the database at `url`.
    pub fn new(url: impl Into<String>) -> Self {
        MySqlSettings {
            url: url.into(),
            ..MySqlSettings::default()
        }
    }
}

/// `url` with its password, if any, replaced.
fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let Some((credentials, host)) = rest.rsplit_once('@') else {
        return url.to_owned();
    };
    match credentials.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_owned(),
    }
}

impl std::fmt::Debug for MySqlSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MySqlSettings")
            .field("url", &redacted(&self.url))
            .field("max_connections", &self.max_connections)
            .field("acquire_timeout_ms", &self.acquire_timeout_ms)
            .field("lock_wait_timeout_secs", &self.lock_wait_timeout_secs)
            .field("lock_attempts", &self.lock_attempts)
            .field(
                "idle_transaction_timeout_secs",
                &self.idle_transaction_timeout_secs,
            )
            .finish()
    }
}

/// A pool of at most `max_connections` to the database in `settings`, each connection with
/// the session settings the store's statements need. Fails with [`Error::Invalid`] for a
/// malformed url and [`Error::Unavailable`] when the server cannot be reached.
pub(crate) async fn connect(settings: &MySqlSettings, max_connections: u32) -> Result<Pool> {
    if !(settings.url.starts_with("mysql://") || settings.url.starts_with("mariadb://")) {
        return Err(Error::Invalid(format!(
            "the MySQL url must start with mysql:// or mariadb://, got {:?}",
            redacted(&settings.url)
        )));
    }
    let options = MySqlConnectOptions::from_str(&settings.url)
        .map_err(|e| Error::Invalid(format!("bad MySQL url {:?}: {e}", redacted(&settings.url))))?;
    let lock_wait = settings.lock_wait_timeout_secs.max(1);
    // READ COMMITTED: no gap locks, so upserts of neighbouring keys by different rooms'
    // commits do not deadlock each other; every check that needs a stable row locks it.
    // Strict mode: a value its column cannot hold is an error, never silently truncated.
    // The idle transaction bound is in a comment only MariaDB (10.3 and later) executes.
    let idle = match settings.idle_transaction_timeout_secs {
        0 => String::new(),
        secs => format!("/*M!100300 SESSION idle_transaction_timeout = {secs}, */"),
    };
    let session = format!(
        "SET SESSION innodb_lock_wait_timeout = {lock_wait}, {idle}
             SESSION sql_mode = CONCAT(@@SESSION.sql_mode, ',STRICT_ALL_TABLES')"
    );
    Pool::open(
        options,
        &[
            "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
            &session,
        ],
        max_connections,
        Duration::from_millis(settings.acquire_timeout_ms),
    )
    .await
    .map_err(db)
}

#[cfg(test)]
mod tests {
    use room_testkit::mysql::MySqlServer;
    use sqlx::Executor;

    use super::*;

    /// A node frozen in the middle of a commit (its transaction open, its rows locked, its
    /// connection alive) blocks the node that takes its rooms over no longer than the idle
    /// transaction bound: the server rolls the frozen transaction back and closes its
    /// connection.
    #[tokio::test]
    async fn a_transaction_left_idle_by_a_frozen_node_stops_holding_its_rows() {
        let Some(server) = MySqlServer::from_env("idle_transaction").await else {
            return;
        };
        let database = server.database().await;
        let mut settings = MySqlSettings::new(database.url.clone());
        settings.idle_transaction_timeout_secs = 1;
        let frozen = connect(&settings, 1).await.expect("a pool");
        sqlx::query("CREATE TABLE t (id INT PRIMARY KEY, v INT)")
            .execute(&frozen)
            .await
            .expect("a table");
        sqlx::query("INSERT INTO t VALUES (1, 0)")
            .execute(&frozen)
            .await
            .expect("a row");
        let mut commit = frozen.begin().await.expect("a transaction");
        sqlx::query("UPDATE t SET v = 1 WHERE id = 1")
            .execute(&mut *commit)
            .await
            .expect("the row locked");

        // The next owner waits for the row longer than the bound, and no longer.
        let mut next = database.connect().await;
        next.execute("SET SESSION innodb_lock_wait_timeout = 10")
            .await
            .expect("a setting");
        let v: i32 = sqlx::query_scalar("SELECT v FROM t WHERE id = 1 FOR UPDATE")
            .fetch_one(&mut next)
            .await
            .expect("the frozen transaction let the row go");
        assert_eq!(v, 0, "the frozen transaction was rolled back");
        assert!(
            commit.commit().await.is_err(),
            "the frozen node's commit fails when it wakes"
        );
    }

    #[test]
    fn debug_hides_the_password() {
        let settings = MySqlSettings::new("mysql://room:s3cret@db.internal:3306/room");
        let shown = format!("{settings:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(
            shown.contains("mysql://room:***@db.internal:3306/room"),
            "{shown}"
        );
        assert_eq!(
            redacted("mysql://root@127.0.0.1:3306"),
            "mysql://root@127.0.0.1:3306"
        );
    }
}
