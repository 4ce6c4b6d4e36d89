//! [`RedisLease`]: `SET NX PX` to acquire, compare-and-extend to renew, compare-and-delete to
//! release, and the holder's address from the node registry.

use std::time::Duration;

use async_trait::async_trait;
use redis::Script;
use room_app::Error;
use room_app::ports::{Lease, LeaseHolder};
use room_domain::RoomId;

use crate::Result;
use crate::client::{Client, is_no_script, millis, unavailable};

/// The default lease TTL: a dead node's rooms move within this time.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(10);

/// Rooms renewed by one script call; a keeper tick sends all its calls in one pipeline.
const RENEW_CHUNK: usize = 1_000;

/// Takes the room if free (`SET NX PX`), or extends it if this node holds it; registers the
/// node. KEYS: lease, node registration. ARGV: node id, TTL in ms, URL.
const ACQUIRE: &str = r"
redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[2])
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 1
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
";

/// Compare-and-extend of many leases. KEYS: leases. ARGV: node id, TTL in ms. Answers 1 or 0
/// per key.
const RENEW: &str = r"
local held = {}
for i, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[1] then
    redis.call('PEXPIRE', key, ARGV[2])
    held[i] = 1
  else
    held[i] = 0
  end
end
return held
";

/// Compare-and-delete. KEYS: lease (or lock). ARGV: node id (or the lock's token).
const RELEASE: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
";

/// The holder and its registered URL. KEYS: lease. ARGV: the node key prefix.
const HOLDER: &str = r"
local holder = redis.call('GET', KEYS[1])
if not holder then
  return {}
end
local url = redis.call('GET', ARGV[1] .. holder)
if not url then
  return {holder}
end
return {holder, url}
";

/// Registers a node in a group until now + TTL, drops expired members, answers the others.
/// KEYS: the group's sorted set (member = node id, score = expiry in ms). ARGV: node id, TTL
/// in ms. Redis's own clock dates the entries, so nodes' clocks need not agree.
const JOIN_GROUP: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) * 2)
local others = {}
for _, node in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if node ~= ARGV[1] then
    table.insert(others, node)
  end
end
return others
";

/// What a [`RedisLease`] needs. `Debug` leaves the URL out: it may hold a password.
#[derive(Clone)]
pub struct RedisLeaseSettings {
    /// `redis://host:port/db`.
    pub url: String,
    /// This node's id (unique per node).
    pub node_id: String,
    /// Where other nodes reach this node's internal endpoint.
    pub advertise_url: String,
    /// How long a lease and a registration last unless renewed.
    pub ttl: Duration,
    /// Prepended to every key (tests use one per test; empty in production).
    pub key_prefix: String,
    /// The most connections the pool opens.
    pub pool_size: usize,
    /// How long one call may take before it fails as unavailable: a renewal that hangs must
    /// not outlive the lease it renews.
    pub op_timeout: Duration,
}

impl std::fmt::Debug for RedisLeaseSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisLeaseSettings")
            .field("url", &"[REDACTED]")
            .field("node_id", &self.node_id)
            .field("advertise_url", &self.advertise_url)
            .field("ttl", &self.ttl)
            .field("key_prefix", &self.key_prefix)
            .field("pool_size", &self.pool_size)
            .field("op_timeout", &self.op_timeout)
            .finish()
    }
}

impl RedisLeaseSettings {
    /// Settings with the defaults: 10 s TTL, no key prefix, 8 connections, 1 s per call.
    pub fn new(
        url: impl Into<String>,
        node_id: impl Into<String>,
        advertise_url: impl Into<String>,
    ) -> Self {
        RedisLeaseSettings {
            url: url.into(),
            node_id: node_id.into(),
            advertise_url: advertise_url.into(),
            ttl: DEFAULT_LEASE_TTL,
            key_prefix: String::new(),
            pool_size: 8,
            op_timeout: Duration::from_secs(1),
        }
    }
}

/// Room leases in Redis. Cheap to clone (the pool is shared).
#[derive(Clone)]
pub struct RedisLease {
    client: Client,
    node_id: String,
    advertise_url: String,
    ttl_ms: u64,
    lease_prefix: String,
    node_prefix: String,
    acquire: std::sync::Arc<Script>,
    renew: std::sync::Arc<Script>,
    release: std::sync::Arc<Script>,
    holder: std::sync::Arc<Script>,
    join_group: std::sync::Arc<Script>,
    /// `{prefix}room:group:`: a sorted set of members per group.
    group_prefix: String,
    /// `{prefix}room:lock:`: one key per lock, its value the holder's token.
    lock_prefix: String,
    /// Makes every lock token of this process its own: the node id, when the process
    /// started, and a count.
    tokens: std::sync::Arc<(String, std::sync::atomic::AtomicU64)>,
}

impl std::fmt::Debug for RedisLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisLease")
            .field("node_id", &self.node_id)
            .field("ttl_ms", &self.ttl_ms)
            .finish_non_exhaustive()
    }
}

impl RedisLease {
    /// Connects to Redis and checks that it answers.
    pub async fn connect(settings: &RedisLeaseSettings) -> Result<Self> {
        if settings.node_id.is_empty() || settings.ttl < Duration::from_millis(10) {
            return Err(Error::Invalid(
                "a Redis lease needs a node id and a TTL of at least 10 ms".into(),
            ));
        }
        // A renewal that may take half the TTL could let the lease lapse while it waits.
        if settings.op_timeout.saturating_mul(2) >= settings.ttl {
            return Err(Error::Invalid(format!(
                "the Redis call timeout ({:?}) must be under half the lease TTL ({:?})",
                settings.op_timeout, settings.ttl
            )));
        }
        let client =
            Client::connect(&settings.url, settings.pool_size, settings.op_timeout).await?;
        let prefix = &settings.key_prefix;
        Ok(RedisLease {
            client,
            node_id: settings.node_id.clone(),
            advertise_url: settings.advertise_url.clone(),
            ttl_ms: millis(settings.ttl),
            lease_prefix: format!("{prefix}room:lease:"),
            node_prefix: format!("{prefix}room:node:"),
            acquire: std::sync::Arc::new(Script::new(ACQUIRE)),
            renew: std::sync::Arc::new(Script::new(RENEW)),
            release: std::sync::Arc::new(Script::new(RELEASE)),
            holder: std::sync::Arc::new(Script::new(HOLDER)),
            join_group: std::sync::Arc::new(Script::new(JOIN_GROUP)),
            group_prefix: format!("{prefix}room:group:"),
            lock_prefix: format!("{prefix}room:lock:"),
            tokens: std::sync::Arc::new((
                format!(
                    "{}:{}",
                    settings.node_id,
                    std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .unwrap_or_default()
                        .as_nanos()
                ),
                std::sync::atomic::AtomicU64::new(0),
            )),
        })
    }

    /// The lease of another node id over the same connections and key prefix: several nodes
    /// in one process, as tests run them.
    pub fn for_node(&self, node_id: impl Into<String>, advertise_url: impl Into<String>) -> Self {
        RedisLease {
            node_id: node_id.into(),
            advertise_url: advertise_url.into(),
            ..self.clone()
        }
    }

    fn lease_key(&self, room_id: &RoomId) -> String {
        format!("{}{}", self.lease_prefix, room_id)
    }

    fn node_key(&self) -> String {
        format!("{}{}", self.node_prefix, self.node_id)
    }

    /// The renewal pipeline: every script call by hash. `None` when Redis does not know the
    /// script yet (a restarted or new server): the caller loads it and sends again.
    async fn try_renew_all(
        &self,
        conn: &mut deadpool_redis::Connection,
        rooms: &[RoomId],
    ) -> Result<Option<Vec<bool>>> {
        let mut pipe = redis::pipe();
        pipe.cmd("SET")
            .arg(self.node_key())
            .arg(&self.advertise_url)
            .arg("PX")
            .arg(self.ttl_ms)
            .ignore();
        for chunk in rooms.chunks(RENEW_CHUNK) {
            let cmd = pipe
                .cmd("EVALSHA")
                .arg(self.renew.get_hash())
                .arg(chunk.len());
            for room_id in chunk {
                cmd.arg(self.lease_key(room_id));
            }
            cmd.arg(&self.node_id).arg(self.ttl_ms);
        }
        match pipe.query_async::<Vec<Vec<i64>>>(conn).await {
            Ok(answers) => Ok(Some(
                answers
                    .into_iter()
                    .flatten()
                    .map(|held| held == 1)
                    .collect(),
            )),
            Err(error) if is_no_script(&error) => Ok(None),
            Err(error) => Err(unavailable(error)),
        }
    }
}

#[async_trait]
impl Lease for RedisLease {
    async fn acquire(&self, room_id: &RoomId) -> Result<bool> {
        let mut call = self.acquire.key(self.lease_key(room_id));
        call.key(self.node_key())
            .arg(&self.node_id)
            .arg(self.ttl_ms)
            .arg(&self.advertise_url);
        let taken: i64 = self.client.invoke(&call).await?;
        Ok(taken == 1)
    }

    async fn renew_all(&self, rooms: &[RoomId]) -> Result<Vec<bool>> {
        self.client
            .timed(async {
                let mut conn = self.client.connection().await?;
                if let Some(held) = self.try_renew_all(&mut conn, rooms).await? {
                    return Ok(held);
                }
                self.renew
                    .load_async(&mut conn)
                    .await
                    .map_err(unavailable)?;
                self.try_renew_all(&mut conn, rooms)
                    .await?
                    .ok_or_else(|| Error::Unavailable("Redis forgot the renewal script".into()))
            })
            .await
    }

    async fn release(&self, room_id: &RoomId) -> Result<()> {
        let mut call = self.release.key(self.lease_key(room_id));
        call.arg(&self.node_id);
        let _: i64 = self.client.invoke(&call).await?;
        Ok(())
    }

    async fn get_holder(&self, room_id: &RoomId) -> Result<Option<LeaseHolder>> {
        let mut call = self.holder.key(self.lease_key(room_id));
        call.arg(&self.node_prefix);
        let found: Vec<String> = self.client.invoke(&call).await?;
        let mut found = found.into_iter();
        Ok(found.next().map(|node_id| LeaseHolder {
            node_id,
            url: found.next(),
        }))
    }

    async fn join_group(&self, group: &str) -> Result<Vec<String>> {
        let mut call = self.join_group.key(format!("{}{group}", self.group_prefix));
        call.arg(&self.node_id).arg(self.ttl_ms);
        let mut others: Vec<String> = self.client.invoke(&call).await?;
        others.sort();
        Ok(others)
    }

    async fn leave_group(&self, group: &str) -> Result<()> {
        let mut cmd = redis::cmd("ZREM");
        cmd.arg(format!("{}{group}", self.group_prefix))
            .arg(&self.node_id);
        let _: i64 = self.client.query(&cmd).await?;
        Ok(())
    }

    async fn try_lock(&self, name: &str) -> Result<Option<String>> {
        let (origin, count) = &*self.tokens;
        let token = format!(
            "{origin}:{}",
            count.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let mut cmd = redis::cmd("SET");
        cmd.arg(format!("{}{name}", self.lock_prefix))
            .arg(&token)
            .arg("NX")
            .arg("PX")
            .arg(self.ttl_ms);
        let taken: Option<String> = self.client.query(&cmd).await?;
        Ok(taken.map(|_| token))
    }

    async fn unlock(&self, name: &str, token: &str) -> Result<()> {
        let mut call = self.release.key(format!("{}{name}", self.lock_prefix));
        call.arg(token);
        let _: i64 = self.client.invoke(&call).await?;
        Ok(())
    }
}
