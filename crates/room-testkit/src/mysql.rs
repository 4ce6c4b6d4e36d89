//! A MySQL / MariaDB server for tests, from `ROOM_TEST_MYSQL_URL` (as
//! `mysql://root@127.0.0.1:3306`), and throwaway databases on it: each
//! [`MySqlServer::database`] creates `room_test_<unique>` and drops it when the
//! [`TestDatabase`] is dropped, even when the test panics. Tests therefore never share
//! tables and run in parallel.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sqlx::{AssertSqlSafe, Connection, Executor, MySqlConnection};

use room_app::testkit;

/// The variable naming the server.
pub const MYSQL_URL: &str = "ROOM_TEST_MYSQL_URL";

/// A reachable server.
#[derive(Debug, Clone)]
pub struct MySqlServer {
    /// `scheme://user@host:port`, without a database or options.
    base: String,
    /// The url's options (`?ssl-mode=...`), if any, with their `?`.
    options: String,
}

impl MySqlServer {
    /// The server in `ROOM_TEST_MYSQL_URL`, after checking it answers; `None` when `test`
    /// skips (see [`testkit::service_url`]).
    pub async fn from_env(test: &str) -> Option<Self> {
        let url = testkit::service_url(MYSQL_URL)?;
        let (without_options, options) = match url.split_once('?') {
            Some((head, options)) => (head.to_owned(), format!("?{options}")),
            None => (url.clone(), String::new()),
        };
        let authority_start = without_options.find("://").map_or(0, |i| i + 3);
        let base = match without_options[authority_start..].find('/') {
            Some(slash) => without_options[..authority_start + slash].to_owned(),
            None => without_options,
        };
        let server = MySqlServer { base, options };
        let reached = tokio::time::timeout(
            Duration::from_secs(10),
            MySqlConnection::connect(&server.url_of("")),
        )
        .await;
        match reached {
            Ok(Ok(conn)) => {
                let _ = conn.close().await;
                Some(server)
            }
            Ok(Err(e)) => {
                testkit::service_unreachable(&format!("{MYSQL_URL} ({test})"), e);
                None
            }
            Err(_) => {
                testkit::service_unreachable(
                    &format!("{MYSQL_URL} ({test})"),
                    "no answer within 10 s",
                );
                None
            }
        }
    }

    /// The url of `database` on this server (the server itself for `""`).
    pub fn url_of(&self, database: &str) -> String {
        format!("{}/{database}{}", self.base, self.options)
    }

    /// A connection to the server, without a database.
    pub async fn connect(&self) -> MySqlConnection {
        MySqlConnection::connect(&self.url_of(""))
            .await
            .expect("the test server accepts a connection")
    }

    /// Creates a new, empty database: no tables, not even sqlx's `_sqlx_migrations`, so a
    /// store opens on it only after `MySqlStore::migrate`.
    pub async fn database(&self) -> TestDatabase {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let name = format!(
            "room_test_{}_{nanos}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let mut conn = self.connect().await;
        conn.execute(AssertSqlSafe(format!("CREATE DATABASE `{name}`")))
            .await
            .expect("CREATE DATABASE on the test server");
        let _ = conn.close().await;
        TestDatabase {
            url: self.url_of(&name),
            server: self.clone(),
            name,
        }
    }
}

/// A database of one test, dropped with this value.
#[derive(Debug)]
pub struct TestDatabase {
    /// Its url.
    pub url: String,
    /// Its name.
    pub name: String,
    server: MySqlServer,
}

impl TestDatabase {
    /// A connection to this database, for looking at its rows or holding its locks.
    pub async fn connect(&self) -> MySqlConnection {
        MySqlConnection::connect(&self.url)
            .await
            .expect("the test database accepts a connection")
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        // Drop runs outside async code, maybe on a runtime's thread: drop the database from a
        // thread and a runtime of its own.
        let server = self.server.clone();
        let name = self.name.clone();
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime to drop the test database");
            runtime.block_on(async move {
                let mut conn = MySqlConnection::connect(&server.url_of("")).await?;
                conn.execute(AssertSqlSafe(format!("DROP DATABASE IF EXISTS `{name}`")))
                    .await?;
                conn.close().await
            })
        })
        .join();
        if !matches!(dropped, Ok(Ok(()))) {
            eprintln!(
                "could not drop the test database {}: {dropped:?}",
                self.name
            );
        }
    }
}
