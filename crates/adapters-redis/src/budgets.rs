//! [`RedisRateBudgets`]: the per-user request budgets shared by every node, one GCRA bucket
//! per key in Redis.
//!
//! Key: `{prefix}room:budget:{key}`, a string holding the bucket's theoretical arrival time
//! (ms, Redis's own clock, so that the nodes' clocks do not matter), with a TTL of the time
//! until the bucket is full again: what Redis holds is one small string per user and class
//! that sent a request lately. Taking is one Lua script, one round trip.

use std::time::Duration;

use async_trait::async_trait;
use redis::Script;
use room_app::ports::RateBudgets;

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
