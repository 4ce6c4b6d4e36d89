//! The adapter's own pool of connections, which lends a connection and takes it back without a
//! round trip to the server.
//!
//! A general pool pings a connection when it lends it and again when it takes it back, to learn
//! that the connection still works. On the gift path that was two of every few round trips. This
//! pool learns it from what the connection just did instead:
//!
//! - A connection comes back **known good** when its last use ended with the server's answer:
//!   a statement run through [`&Pool`](Pool) that succeeded or that the server refused (a
//!   duplicate key, a deadlock), a transaction that committed or rolled back, or a
//!   [`Conn::release`]. It is lent again as it is.
//! - A connection that comes back any other way (dropped on an error or a cancelled call) is
//!   pinged once, in the background, before the pool takes it; a transaction dropped before it
//!   ended is rolled back there, so its row locks never wait for the connection's next user.
//!   If that fails, the connection is closed.
//! - A connection idle for longer than [`IDLE_CHECK`] is pinged before it is lent: after a
//!   quiet spell the server may have closed it.
//!
//! So a connection the server dropped fails at most the one call that found out, and is then
//! gone; calls that follow open a fresh one. The pool holds at most `max_connections`, lent or
//! idle, and a caller waits at most the acquire timeout for one.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use futures_util::{StreamExt, TryStreamExt, stream};
use sqlx::mysql::{MySql, MySqlConnectOptions, MySqlConnection, MySqlQueryResult, MySqlRow};
use sqlx::{AssertSqlSafe, Connection, Database, Describe, Either, Execute, Executor, SqlStr};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How long a connection may sit idle before the pool pings it before lending it.
pub(crate) const IDLE_CHECK: Duration = Duration::from_secs(30);

/// A pool of connections to one MySQL or MariaDB database. Cheap to clone: clones share the
/// connections.
#[derive(Clone)]
pub(crate) struct Pool {
    shared: Arc<Shared>,
}

struct Shared {
    options: MySqlConnectOptions,
    /// The statements each new connection runs first.
    session: Vec<String>,
    acquire_timeout: Duration,
    /// One permit per connection that may be lent: at most `max_connections` are open.
    permits: Arc<Semaphore>,
    idle: Mutex<Vec<Idle>>,
    /// Connections open, lent or idle.
    open: AtomicU32,
    closed: AtomicBool,
}

struct Idle {
    conn: MySqlConnection,
    since: Instant,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool").field("open", &self.size()).finish()
    }
}

impl Pool {
    /// A pool of at most `max_connections` to `options`; each new connection runs the
    /// statements of `session` first. Opens one connection to learn that
    /// the server is there.
    pub(crate) async fn open(
        options: MySqlConnectOptions,
        session: &[&str],
        max_connections: u32,
        acquire_timeout: Duration,
    ) -> Result<Pool, sqlx::Error> {
        let pool = Pool {
            shared: Arc::new(Shared {
                options,
                session: session.iter().map(|s| (*s).to_owned()).collect(),
                acquire_timeout,
                permits: Arc::new(Semaphore::new(max_connections.max(1) as usize)),
                idle: Mutex::new(Vec::new()),
                open: AtomicU32::new(0),
                closed: AtomicBool::new(false),
            }),
        };
        pool.acquire().await?.release();
        Ok(pool)
    }

    /// Connections open now, lent or idle.
    pub(crate) fn size(&self) -> u32 {
        self.shared.open.load(Ordering::Relaxed)
    }

    /// Closes the idle connections and refuses every later acquire; lent connections close when
    /// they come back.
    pub(crate) async fn close(&self) {
        self.shared.closed.store(true, Ordering::Release);
        self.shared.permits.close();
        let idle = std::mem::take(&mut *self.shared.idle.lock().expect("pool lock"));
        for idle in idle {
            self.shared.open.fetch_sub(1, Ordering::Relaxed);
            let _ = idle.conn.close().await;
        }
    }

    /// A connection of the pool: an idle one, or a new one when none is idle and fewer than
    /// `max_connections` are open. Waits at most the acquire timeout
    /// ([`sqlx::Error::PoolTimedOut`]).
    pub(crate) async fn acquire(&self) -> Result<Conn, sqlx::Error> {
        let shared = &self.shared;
        let permit = match tokio::time::timeout(
            shared.acquire_timeout,
            shared.permits.clone().acquire_owned(),
        )
        .await
        {
            Ok(Ok(permit)) => permit,
            Ok(Err(_)) => return Err(sqlx::Error::PoolClosed),
            Err(_) => return Err(sqlx::Error::PoolTimedOut),
        };
        loop {
            let idle = shared.idle.lock().expect("pool lock").pop();
            let Some(Idle { mut conn, since }) = idle else {
                break;
            };
            if since.elapsed() < IDLE_CHECK || conn.ping().await.is_ok() {
                return Ok(self.lend(conn, permit));
            }
            shared.open.fetch_sub(1, Ordering::Relaxed);
        }
        let conn = tokio::time::timeout(shared.acquire_timeout, self.connect())
            .await
            .map_err(|_| sqlx::Error::PoolTimedOut)??;
        shared.open.fetch_add(1, Ordering::Relaxed);
        Ok(self.lend(conn, permit))
    }

    /// A connection in a transaction that [`Tx::commit`] ends.
    pub(crate) async fn begin(&self) -> Result<Tx, sqlx::Error> {
        let mut conn = self.acquire().await?;
        conn.execute("BEGIN").await?;
        Ok(Tx { conn, done: false })
    }

    async fn connect(&self) -> Result<MySqlConnection, sqlx::Error> {
        let mut conn = MySqlConnection::connect_with(&self.shared.options).await?;
        for statement in &self.shared.session {
            conn.execute(AssertSqlSafe(statement.clone())).await?;
        }
        Ok(conn)
    }

    fn lend(&self, conn: MySqlConnection, permit: OwnedSemaphorePermit) -> Conn {
        Conn {
            conn: Some(conn),
            known_good: false,
            pool: self.shared.clone(),
            permit: Some(permit),
        }
    }
}

impl Shared {
    /// Takes `conn` back as idle, or closes it when the pool is closed.
    fn take_back(&self, conn: MySqlConnection) {
        if self.closed.load(Ordering::Acquire) {
            self.open.fetch_sub(1, Ordering::Relaxed);
            return;
        }
        self.idle.lock().expect("pool lock").push(Idle {
            conn,
            since: Instant::now(),
        });
    }

    fn forget(&self) {
        self.open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A connection lent by the [`Pool`]; it goes back when dropped. Use it as `&mut *conn`.
pub(crate) struct Conn {
    conn: Option<MySqlConnection>,
    /// Whether the connection's last use ended with the server's answer.
    known_good: bool,
    pool: Arc<Shared>,
    /// Held until the connection is back (or closed), so the pool's bound counts it.
    permit: Option<OwnedSemaphorePermit>,
}

impl Conn {
    /// Gives the connection back as known good: its last statement got the server's answer.
    pub(crate) fn release(mut self) {
        self.known_good = true;
    }
}

impl std::ops::Deref for Conn {
    type Target = MySqlConnection;
    fn deref(&self) -> &MySqlConnection {
        self.conn.as_ref().expect("a lent connection")
    }
}

impl std::ops::DerefMut for Conn {
    fn deref_mut(&mut self) -> &mut MySqlConnection {
        self.conn.as_mut().expect("a lent connection")
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else {
            return;
        };
        let permit = self.permit.take();
        if self.known_good {
            self.pool.take_back(conn);
            drop(permit);
            return;
        }
        settle(self.pool.clone(), conn, None, permit);
    }
}

/// Checks `conn` (rolling back first when `statement` is `ROLLBACK`) in the background and
/// gives it back if it answers; closes it otherwise. Without a runtime to run on, closes it.
fn settle(
    pool: Arc<Shared>,
    mut conn: MySqlConnection,
    statement: Option<&'static str>,
    permit: Option<OwnedSemaphorePermit>,
) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        pool.forget();
        return;
    };
    runtime.spawn(async move {
        let answered = match statement {
            Some(statement) => conn.execute(statement).await.is_ok(),
            None => conn.ping().await.is_ok(),
        };
        if answered {
            pool.take_back(conn);
        } else {
            pool.forget();
        }
        drop(permit);
    });
}

/// A connection in a transaction. Commit with [`Tx::commit`]; a transaction dropped before it
/// ended is rolled back in the background.
pub(crate) struct Tx {
    conn: Conn,
    done: bool,
}

impl Tx {
    /// Commits; the connection goes back known good.
    pub(crate) async fn commit(mut self) -> Result<(), sqlx::Error> {
        self.end("COMMIT").await
    }

    /// Rolls back; the connection goes back known good.
    pub(crate) async fn rollback(mut self) -> Result<(), sqlx::Error> {
        self.end("ROLLBACK").await
    }

    async fn end(&mut self, statement: &'static str) -> Result<(), sqlx::Error> {
        self.done = true;
        self.conn.execute(statement).await?;
        self.conn.known_good = true;
        Ok(())
    }
}

impl std::ops::Deref for Tx {
    type Target = MySqlConnection;
    fn deref(&self) -> &MySqlConnection {
        &self.conn
    }
}

impl std::ops::DerefMut for Tx {
    fn deref_mut(&mut self) -> &mut MySqlConnection {
        &mut self.conn
    }
}

impl Drop for Tx {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let Some(conn) = self.conn.conn.take() else {
            return;
        };
        let permit = self.conn.permit.take();
        settle(self.conn.pool.clone(), conn, Some("ROLLBACK"), permit);
    }
}

/// Whether the server answered: the connection that got `error` still works.
fn answered(error: &sqlx::Error) -> bool {
    !matches!(
        error,
        sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::Protocol(_)
            | sqlx::Error::WorkerCrashed
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
    )
}

/// A statement on a connection of the pool, which goes back as soon as the statement ended.
impl<'p> Executor<'p> for &'_ Pool {
    type Database = MySql;

    fn fetch_many<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxStream<'e, Result<Either<MySqlQueryResult, MySqlRow>, sqlx::Error>>
    where
        E: 'q + Execute<'q, MySql>,
    {
        let pool = self.clone();
        // The adapter's reads are bounded batches: the rows are read whole, then handed on.
        stream::once(async move {
            let mut conn = pool.acquire().await?;
            let items: Result<Vec<_>, sqlx::Error> = conn.fetch_many(query).try_collect().await;
            conn.known_good = items.as_ref().err().is_none_or(answered);
            items
        })
        .map_ok(|items| stream::iter(items.into_iter().map(Ok)))
        .try_flatten()
        .boxed()
    }

    fn fetch_optional<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxFuture<'e, Result<Option<MySqlRow>, sqlx::Error>>
    where
        E: 'q + Execute<'q, MySql>,
    {
        let pool = self.clone();
        Box::pin(async move {
            let mut conn = pool.acquire().await?;
            let row = conn.fetch_optional(query).await;
            conn.known_good = row.as_ref().err().is_none_or(answered);
            row
        })
    }

    fn prepare_with<'e>(
        self,
        sql: SqlStr,
        parameters: &'e [<MySql as Database>::TypeInfo],
    ) -> BoxFuture<'e, Result<<MySql as Database>::Statement, sqlx::Error>>
    where
        'p: 'e,
    {
        let pool = self.clone();
        Box::pin(async move {
            let mut conn = pool.acquire().await?;
            let statement = conn.prepare_with(sql, parameters).await;
            conn.known_good = statement.as_ref().err().is_none_or(answered);
            statement
        })
    }

    fn describe<'e>(self, sql: SqlStr) -> BoxFuture<'e, Result<Describe<MySql>, sqlx::Error>> {
        let pool = self.clone();
        Box::pin(async move {
            let mut conn = pool.acquire().await?;
            let described = conn.describe(sql).await;
            conn.known_good = described.as_ref().err().is_none_or(answered);
            described
        })
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use room_testkit::mysql::{MySqlServer, TestDatabase};

    use super::*;

    async fn pool(test: &str, max: u32) -> Option<(TestDatabase, Pool)> {
        let server = MySqlServer::from_env(test).await?;
        let database = server.database().await;
        let options = MySqlConnectOptions::from_str(&database.url).expect("a test url");
        let pool = Pool::open(options, &[], max, Duration::from_millis(300))
            .await
            .expect("the pool opens");
        Some((database, pool))
    }

    async fn scalar(pool: &Pool, sql: &'static str) -> i64 {
        sqlx::query_scalar::<_, i64>(sql)
            .fetch_one(pool)
            .await
            .expect("a scalar")
    }

    async fn pings_of_this_connection(pool: &Pool) -> i64 {
        let row: (String, String) = sqlx::query_as("SHOW SESSION STATUS LIKE 'Com_admin_commands'")
            .fetch_one(pool)
            .await
            .expect("the session's status");
        row.1.parse().expect("a count")
    }

    #[tokio::test]
    async fn a_connection_that_answered_is_lent_again_without_a_ping() {
        let Some((_db, pool)) = pool("pool_no_ping", 1).await else {
            return;
        };
        let id = scalar(&pool, "SELECT CAST(CONNECTION_ID() AS SIGNED)").await;
        for _ in 0..20 {
            assert_eq!(scalar(&pool, "SELECT 1").await, 1);
            let mut tx = pool.begin().await.expect("a transaction");
            sqlx::query("SELECT 1")
                .execute(&mut *tx)
                .await
                .expect("a statement");
            tx.commit().await.expect("the commit");
        }
        // A statement the server refuses still leaves a working connection.
        let refused = sqlx::query("SELECT * FROM no_such_table")
            .execute(&pool)
            .await;
        assert!(refused.is_err());
        assert_eq!(
            scalar(&pool, "SELECT CAST(CONNECTION_ID() AS SIGNED)").await,
            id,
            "one connection served every call"
        );
        assert_eq!(pings_of_this_connection(&pool).await, 0);
        assert_eq!(pool.size(), 1);
    }

    #[tokio::test]
    async fn a_connection_the_server_closed_fails_one_call_at_most() {
        let Some((db, pool)) = pool("pool_killed", 1).await else {
            return;
        };
        let id = scalar(&pool, "SELECT CAST(CONNECTION_ID() AS SIGNED)").await;
        let mut other = db.connect().await;
        sqlx::query("KILL ?")
            .bind(id)
            .execute(&mut other)
            .await
            .expect("KILL");
        // The first call may find the dead connection; the one after it gets a new one.
        let _ = sqlx::query("SELECT 1").execute(&pool).await;
        let mut answered = None;
        for _ in 0..50 {
            match sqlx::query_scalar::<_, i64>("SELECT CAST(CONNECTION_ID() AS SIGNED)")
                .fetch_one(&pool)
                .await
            {
                Ok(new_id) => {
                    answered = Some(new_id);
                    break;
                }
                // The dead connection is still being checked in the background.
                Err(sqlx::Error::PoolTimedOut) => tokio::task::yield_now().await,
                Err(other) => panic!("a second failure: {other}"),
            }
        }
        let new_id = answered.expect("a new connection");
        assert_ne!(new_id, id);
        assert_eq!(pool.size(), 1, "the dead connection is gone");
    }

    #[tokio::test]
    async fn a_transaction_dropped_unfinished_releases_its_locks() {
        let Some((db, pool)) = pool("pool_dropped_tx", 2).await else {
            return;
        };
        sqlx::query("CREATE TABLE t (id INT PRIMARY KEY, v INT)")
            .execute(&pool)
            .await
            .expect("a table");
        sqlx::query("INSERT INTO t VALUES (1, 0)")
            .execute(&pool)
            .await
            .expect("a row");
        {
            let mut tx = pool.begin().await.expect("a transaction");
            sqlx::query("UPDATE t SET v = 1 WHERE id = 1")
                .execute(&mut *tx)
                .await
                .expect("the row locked");
            // Dropped here, as a failed or cancelled call drops it.
        }
        // Taking both connections waits for the rolled-back one to come back.
        let first = pool.acquire().await.expect("a connection");
        let second = pool.acquire().await.expect("the rolled-back connection");
        drop((first, second));
        let mut other = db.connect().await;
        sqlx::query("SET SESSION innodb_lock_wait_timeout = 1")
            .execute(&mut other)
            .await
            .expect("a setting");
        let v: i32 = sqlx::query_scalar("SELECT v FROM t WHERE id = 1 FOR UPDATE")
            .fetch_one(&mut other)
            .await
            .expect("the lock is free");
        assert_eq!(v, 0, "the update was rolled back");
    }

    #[tokio::test]
    async fn the_pool_holds_at_most_its_connections_and_refuses_once_closed() {
        let Some((_db, pool)) = pool("pool_bound", 2).await else {
            return;
        };
        let first = pool.acquire().await.expect("one");
        let second = pool.acquire().await.expect("two");
        assert!(matches!(
            pool.acquire().await.err(),
            Some(sqlx::Error::PoolTimedOut)
        ));
        assert_eq!(pool.size(), 2);
        second.release();
        let third = pool.acquire().await.expect("the released one");
        drop((first, third));
        pool.close().await;
        assert!(matches!(
            pool.acquire().await.err(),
            Some(sqlx::Error::PoolClosed)
        ));
    }
}
