//! [`MySqlStore`]: the connection pool (opened by [`connect`](crate::connect)), the schema
//! check on opening and the schema step ([`MySqlStore::migrate`]), and the retry of
//! transactions that lost a row-lock race, which the port implementations share.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use room_app::Error;

use crate::Result;
use crate::codec::{TxError, db, is_lock_failure};
use crate::connect::{MySqlSettings, connect};
use crate::pool::Pool;
use crate::schema::{self, SchemaStatus};

/// The storage ports of the room service on one MySQL or MariaDB database.
///
/// Cheap to clone: clones share the pool. Create or update the schema with
/// [`MySqlStore::migrate`], open with [`MySqlStore::open`], and
/// [`close`](MySqlStore::close) on shutdown.
#[derive(Clone)]
pub struct MySqlStore {
    pub(crate) pool: Pool,
    /// The connections of the in-process consumers of the durable facts (their outbox reads,
    /// positions and income credits): [`BACKGROUND_CONNECTIONS`] of their own, so that work
    /// behind the gifts never takes a connection the requests wait for.
    pub(crate) background: Pool,
    lock_attempts: u32,
    lock_retries: Arc<AtomicU64>,
}

/// The connections a store keeps for the in-process consumers of the durable facts, beside
/// [`MySqlSettings::max_connections`]: one reads the outbox while another credits income.
pub const BACKGROUND_CONNECTIONS: u32 = 2;

impl std::fmt::Debug for MySqlStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MySqlStore")
            .field("connections", &self.pool.size())
            .field("lock_retries", &self.lock_retries())
            .finish_non_exhaustive()
    }
}

impl MySqlStore {
    /// Connects to the database and checks that its schema is this build's: every migration
    /// compiled in applied, successfully and unchanged, and no other. It never migrates: run
    /// [`MySqlStore::migrate`] first. Fails with [`Error::Invalid`] for a malformed url and
    /// for a schema that does not fit, with the message of [`SchemaStatus::problem`] (for a
    /// schema that is behind, or an empty database: "the MySQL schema is behind this build:
    /// at version X of Y; run `room-api migrate`"), and with [`Error::Unavailable`] when the
    /// server cannot be reached. A schema that does not fit is not retryable: it needs a
    /// migration or another build.
    pub async fn open(settings: &MySqlSettings) -> Result<Self> {
        let pool = connect(settings, settings.max_connections).await?;
        if let Err(error) = schema::check(&pool).await {
            pool.close().await;
            return Err(error);
        }
        let background = connect(settings, BACKGROUND_CONNECTIONS).await?;
        Ok(MySqlStore {
            pool,
            background,
            lock_attempts: settings.lock_attempts.max(1),
            lock_retries: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Closes every connection. Later calls fail with [`Error::Unavailable`].
    pub async fn close(&self) {
        self.pool.close().await;
        self.background.close().await;
    }

    /// How many times so far a transaction was run again after a deadlock or a lock wait
    /// timeout (also the counter `room_mysql_lock_retries_total`).
    pub fn lock_retries(&self) -> u64 {
        self.lock_retries.load(Ordering::Relaxed)
    }

    /// Runs `attempt` (one whole transaction, or one statement) until it succeeds, fails with
    /// anything but a lock failure, or has failed on locks [`MySqlSettings::lock_attempts`]
    /// times. The server has rolled the failed attempt back (the adapter drops the
    /// transaction), so running it again is safe.
    pub(crate) async fn retrying<T, F, Fut>(&self, what: &'static str, mut attempt: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, TxError>>,
    {
        let mut attempts = 1;
        loop {
            match attempt().await {
                Ok(value) => return Ok(value),
                Err(TxError::Port(error)) => return Err(error),
                Err(TxError::Db(error))
                    if is_lock_failure(&error) && attempts < self.lock_attempts =>
                {
                    tracing::debug!(operation = what, attempts, %error, "retrying after a lock failure");
                    self.lock_retries.fetch_add(1, Ordering::Relaxed);
                    metrics::counter!("room_mysql_lock_retries_total", "operation" => what)
                        .increment(1);
                    // A short pause lets the transaction that won the lock finish first.
                    tokio::time::sleep(Duration::from_millis(5 * u64::from(attempts))).await;
                    attempts += 1;
                }
                Err(TxError::Db(error)) => {
                    let error = db(error);
                    return Err(match error {
                        Error::Unavailable(message) if attempts > 1 => Error::Unavailable(format!(
                            "{message}; gave up after {attempts} attempts"
                        )),
                        other => other,
                    });
                }
            }
        }
    }
}

impl MySqlStore {
    /// Applies the migrations of this build that the database lacks, and returns when the
    /// schema is current; nothing happens when it already is. Several processes may run it
    /// at once: each migration is applied once. A store does not migrate by itself
    /// ([`MySqlStore::open`] refuses a schema that is behind): deployments run this as a
    /// step of its own (`room-api migrate`) before starting the new build.
    ///
    /// Fails with [`Error::Invalid`] for a malformed url and for a schema migrating cannot
    /// mend (ahead of this build, a failed or an edited migration: see
    /// [`SchemaStatus::problem`]) or a url that names no database, with [`Error::Internal`]
    /// when a migration's SQL fails, and with [`Error::Unavailable`] when the server cannot
    /// be reached or another migration of the database has held its lock for 10 minutes.
    pub async fn migrate(settings: &MySqlSettings) -> Result<()> {
        schema::migrate(settings).await
    }

    /// How the schema of the database in `settings` compares with this build's migrations,
    /// without changing anything. Fails with [`Error::Invalid`] for a malformed url and with
    /// [`Error::Unavailable`] when the server cannot be reached.
    pub async fn schema_status(settings: &MySqlSettings) -> Result<SchemaStatus> {
        schema::status(settings).await
    }
}
