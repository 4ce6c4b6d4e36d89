//! [`RedisRateBudgets`]: the per-user request budgets shared by every node, one GCRA bucket
//! per key in Redis; and [`RedisOpenStreams`], the event streams users hold over the cluster.
//!
//! Key: `{prefix}room:budget:{key}`, a string holding the bucket's theoretical arrival time
//! (ms, Redis's own clock, so that the nodes' clocks do not matter), with a TTL of the time
//! until the bucket is full again: what Redis holds is one small string per user and class
//! that sent a request lately. Taking is one Lua script, one round trip.

use std::time::Duration;

use async_trait::async_trait;
use redis::Script;
use room_app::ports::{OpenStreams, RateBudgets};
use room_domain::{Timestamp, UserId};

use crate::Result;
use crate::client::Client;

/// One GCRA step on Redis's clock. KEYS: the bucket. ARGV: the interval in ms, the burst.
/// Answers 0 when the request was let through, else the wait in ms (at least 1).
const TAKE: &str = r"
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local interval, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
local next = tat + interval
local allowance = interval * burst
if next - now > allowance then
  return next - now - allowance
end
redis.call('SET', KEYS[1], next, 'PX', next - now)
return 0
";

/// What a [`RedisRateBudgets`] needs. `Debug` leaves the URL out: it may hold a password.
#[derive(Clone)]
pub struct RedisRateBudgetsSettings {
    /// `redis://host:port/db`.
    pub url: String,
    /// Prepended to every key (tests use one per test; empty in production). Every node of a
    /// cluster uses the same.
    pub key_prefix: String,
    /// The most connections the pool opens.
    pub pool_size: usize,
    /// How long one call may take before it fails as unavailable (the caller then falls back
    /// to its own limits).
    pub op_timeout: Duration,
}

impl std::fmt::Debug for RedisRateBudgetsSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisRateBudgetsSettings")
            .field("url", &"[REDACTED]")
            .field("key_prefix", &self.key_prefix)
            .field("pool_size", &self.pool_size)
            .field("op_timeout", &self.op_timeout)
            .finish()
    }
}

impl RedisRateBudgetsSettings {
    /// Settings with the defaults: no key prefix, 8 connections, 100 ms per call (a limiter
    /// must not hold a request long).
    pub fn new(url: impl Into<String>) -> Self {
        RedisRateBudgetsSettings {
            url: url.into(),
            key_prefix: String::new(),
            pool_size: 8,
            op_timeout: Duration::from_millis(100),
        }
    }
}

/// GCRA buckets in Redis, shared by every node on the same server and key prefix. Cheap to
/// clone (the pool is shared).
#[derive(Clone)]
pub struct RedisRateBudgets {
    client: Client,
    prefix: String,
    take: std::sync::Arc<Script>,
}

impl std::fmt::Debug for RedisRateBudgets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisRateBudgets")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl RedisRateBudgets {
    /// Connects to Redis and checks that it answers.
    pub async fn connect(settings: &RedisRateBudgetsSettings) -> Result<Self> {
        let client =
            Client::connect(&settings.url, settings.pool_size, settings.op_timeout).await?;
        Ok(RedisRateBudgets {
            client,
            prefix: format!("{}room:budget:", settings.key_prefix),
            take: std::sync::Arc::new(Script::new(TAKE)),
        })
    }
}

#[async_trait]
impl RateBudgets for RedisRateBudgets {
    async fn take(&self, key: &str, interval: Duration, burst: u32) -> Result<Option<Duration>> {
        let mut call = self.take.key(format!("{}{key}", self.prefix));
        call.arg(
            u64::try_from(interval.as_millis())
                .unwrap_or(u64::MAX)
                .max(1),
        )
        .arg(burst.max(1));
        let wait: u64 = self.client.invoke(&call).await?;
        Ok((wait > 0).then(|| Duration::from_millis(wait)))
    }
}

/// Counts a stream if the user has fewer than the cap unexpired (a stream counted already
/// is renewed). KEYS: the user's sorted set (stream -> expiry). ARGV: now, the entry's
/// expiry, the cap, the stream, 1 to count whatever the cap (a renewal). Answers 1 when
/// counted, 0 when refused. The key expires with its last entry.
const OPEN: &str = r"
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if ARGV[5] ~= '1' and not redis.call('ZSCORE', KEYS[1], ARGV[4])
   and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  return 0
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
redis.call('PEXPIRE', KEYS[1], math.max(1, tonumber(last[2]) - tonumber(ARGV[1])))
return 1
";

/// The event streams users hold open over the cluster, in Redis: key
/// `{prefix}room:streams:{user_id}`, a sorted set of the user's streams scored by expiry,
/// expiring with its last entry. Opening is one Lua script, so opens racing on several nodes
/// are counted one at a time. Shares the settings of [`RedisRateBudgets`].
#[derive(Clone)]
pub struct RedisOpenStreams {
    client: Client,
    prefix: String,
    open: std::sync::Arc<Script>,
}

impl std::fmt::Debug for RedisOpenStreams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisOpenStreams")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl RedisOpenStreams {
    /// Connects to Redis and checks that it answers.
    pub async fn connect(settings: &RedisRateBudgetsSettings) -> Result<Self> {
        let client =
            Client::connect(&settings.url, settings.pool_size, settings.op_timeout).await?;
        Ok(RedisOpenStreams {
            client,
            prefix: format!("{}room:streams:", settings.key_prefix),
            open: std::sync::Arc::new(Script::new(OPEN)),
        })
    }

    async fn count(
        &self,
        user: &UserId,
        stream: &str,
        max: u32,
        now: Timestamp,
        ttl: Duration,
        renewal: bool,
    ) -> Result<bool> {
        let ttl = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
        let mut call = self.open.key(format!("{}{user}", self.prefix));
        call.arg(now.0)
            .arg(now.0.saturating_add(ttl))
            .arg(max)
            .arg(stream)
            .arg(u8::from(renewal));
        let counted: i64 = self.client.invoke(&call).await?;
        Ok(counted == 1)
    }
}

#[async_trait]
impl OpenStreams for RedisOpenStreams {
    async fn open(
        &self,
        user: &UserId,
        stream: &str,
        max: u32,
        now: Timestamp,
        ttl: Duration,
    ) -> Result<bool> {
        self.count(user, stream, max, now, ttl, false).await
    }

    async fn renew(
        &self,
        user: &UserId,
        stream: &str,
        now: Timestamp,
        ttl: Duration,
    ) -> Result<()> {
        self.count(user, stream, 0, now, ttl, true)
            .await
            .map(|_| ())
    }

    async fn close(&self, user: &UserId, stream: &str) -> Result<()> {
        let mut cmd = redis::cmd("ZREM");
        cmd.arg(format!("{}{user}", self.prefix)).arg(stream);
        let _: i64 = self.client.query(&cmd).await?;
        Ok(())
    }
}
