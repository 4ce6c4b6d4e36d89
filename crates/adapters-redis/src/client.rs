//! What every adapter of the crate shares: a connection pool checked to answer, a timeout on
//! every call, and the translation of Redis failures into port errors.

use std::time::Duration;

use deadpool_redis::{Connection, Manager, Pool, PoolConfig, Runtime};
use redis::{AsyncConnectionConfig, FromRedisValue, ScriptInvocation};
use room_app::Error;

use crate::Result;

/// The shortest per-call timeout: below it, calls would fail before a round trip.
const MIN_OP_TIMEOUT: Duration = Duration::from_millis(10);

/// A pool of connections to one server, with the per-call timeout. Cheap to clone (the pool
/// is shared).
#[derive(Clone)]
pub(crate) struct Client {
    pool: Pool,
    op_timeout: Duration,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("op_timeout", &self.op_timeout)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A pool of at most `pool_size` connections to `url`, once the server answered a `PING`
    /// within `op_timeout` (at least 10 ms).
    pub(crate) async fn connect(url: &str, pool_size: usize, op_timeout: Duration) -> Result<Self> {
        let op_timeout = op_timeout.max(MIN_OP_TIMEOUT);
        // The driver's own wait for an answer (500 ms unless set) would cut a call short of
        // the per-call timeout, and large values take longer to move: the per-call timeout
        // is the one limit.
        let manager = Manager::new_with_config(
            url,
            AsyncConnectionConfig::new().set_response_timeout(Some(op_timeout)),
        )
        .map_err(|error| Error::Invalid(format!("bad Redis URL: {error}")))?;
        let pool = Pool::builder(manager)
            .config(PoolConfig::new(pool_size.max(1)))
            .runtime(Runtime::Tokio1)
            .build()
            .map_err(|error| Error::Invalid(format!("bad Redis pool: {error}")))?;
        let client = Client { pool, op_timeout };
        client
            .timed(async {
                let mut conn = client.connection().await?;
                redis::cmd("PING")
                    .query_async::<String>(&mut conn)
                    .await
                    .map_err(unavailable)
            })
            .await?;
        Ok(client)
    }

    /// A connection from the pool.
    pub(crate) async fn connection(&self) -> Result<Connection> {
        self.pool.get().await.map_err(unavailable)
    }

    /// Runs `call` within the per-call timeout.
    pub(crate) async fn timed<T>(&self, call: impl Future<Output = Result<T>>) -> Result<T> {
        tokio::time::timeout(self.op_timeout, call)
            .await
            .unwrap_or_else(|_| {
                Err(Error::Unavailable(format!(
                    "Redis did not answer within {:?}",
                    self.op_timeout
                )))
            })
    }

    /// Runs a script on a pooled connection within the per-call timeout (loading it first if
    /// the server does not know it).
    pub(crate) async fn invoke<T: FromRedisValue>(&self, call: &ScriptInvocation<'_>) -> Result<T> {
        self.timed(async {
            let mut conn = self.connection().await?;
            call.invoke_async(&mut conn).await.map_err(unavailable)
        })
        .await
    }

    /// Runs one command on a pooled connection within the per-call timeout.
    pub(crate) async fn query<T: FromRedisValue>(&self, cmd: &redis::Cmd) -> Result<T> {
        self.timed(async {
            let mut conn = self.connection().await?;
            cmd.query_async(&mut conn).await.map_err(unavailable)
        })
        .await
    }
}

/// Whether the server did not know a script sent by hash (it restarted, or was flushed).
pub(crate) fn is_no_script(error: &redis::RedisError) -> bool {
    error.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript)
}

/// Every Redis failure is one a retry can get past: the server, the network or the pool.
pub(crate) fn unavailable(error: impl std::fmt::Display) -> Error {
    Error::Unavailable(format!("Redis: {error}"))
}

/// A milliseconds count for a script argument, saturated at `u64::MAX`.
pub(crate) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
