//! [`RedisListCache`]: the room lists' cache every node of a cluster reads, in one Redis hash.
//!
//! Key: `{prefix}room:lists`, a hash of the stored lists' `generation` (a decimal string) and
//! their `body` (the encoded lists, bytes as given). Storing and reading are each one Lua
//! script: a put compares the stored generation and writes both fields in one step, and a read
//! answers both fields of one generation, so that a reader never pairs a generation with
//! another's body. A read that finds nothing newer than the reader's generation answers without
//! the body: the nodes' polls every few hundred milliseconds move a few bytes until the
//! refresher stores new lists. Generations are compared as decimal strings, not as Lua numbers,
//! so that the whole `u64` range compares exactly. The key has no TTL: the newest lists stay
//! until newer ones replace them.

use std::time::Duration;

use async_trait::async_trait;
use redis::Script;
use room_app::Error;
use room_app::ports::{CachedLists, ListCache, MAX_LIST_CACHE_BYTES};

use crate::Result;
use crate::client::Client;

/// What both scripts begin with: `canonical(s)`, whether `s` is a generation as written
/// (a decimal without leading zeros, at most 20 digits), and `above(a, b)`, whether generation
/// `a` is larger than generation `b`, digit by digit.
const GENERATIONS: &str = r"
local function canonical(s)
  return #s <= 20 and (s == '0' or string.match(s, '^[1-9]%d*$') ~= nil)
end
local function above(a, b)
  if #a ~= #b then
    return #a > #b
  end
  for i = 1, #a do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then
      return x > y
    end
  end
  return false
end
";

/// [`PUT`]'s answer when the stored generation is unreadable.
const UNREADABLE: i64 = -1;

/// Stores generation and body unless the stored generation is as new or newer. KEYS: the
/// hash. ARGV: the generation, the body. Answers 1 (stored), 0 (refused) or -1 (the stored
/// generation is unreadable; nothing stored).
const PUT: &str = r"
local stored = redis.call('HGET', KEYS[1], 'generation')
if stored then
  if not canonical(stored) then
    return -1
  end
  if not above(ARGV[1], stored) then
    return 0
  end
end
redis.call('HSET', KEYS[1], 'generation', ARGV[1], 'body', ARGV[2])
return 1
";

/// The stored generation and body if the generation is newer than ARGV[1] (anything stored
/// when ARGV[1] is empty). KEYS: the hash. Answers `{}` (nothing newer), `{generation}` (an
/// unreadable generation, or a generation without body) or `{generation, body}`.
const GET_NEWER: &str = r"
local stored = redis.call('HGET', KEYS[1], 'generation')
if not stored then
  return {}
end
if not canonical(stored) then
  return {stored}
end
if ARGV[1] ~= '' and not above(stored, ARGV[1]) then
  return {}
end
local body = redis.call('HGET', KEYS[1], 'body')
if not body then
  return {stored}
end
return {stored, body}
";

/// What a [`RedisListCache`] needs. `Debug` leaves the URL out: it may hold a password.
#[derive(Clone)]
pub struct RedisListCacheSettings {
    /// `redis://host:port/db`.
    pub url: String,
    /// Prepended to every key (tests use one per test; empty in production). Every node of a
    /// cluster uses the same.
    pub key_prefix: String,
    /// The most connections the pool opens.
    pub pool_size: usize,
    /// How long one call may take before it fails as unavailable, body transfer included.
    pub op_timeout: Duration,
}

impl std::fmt::Debug for RedisListCacheSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisListCacheSettings")
            .field("url", &"[REDACTED]")
            .field("key_prefix", &self.key_prefix)
            .field("pool_size", &self.pool_size)
            .field("op_timeout", &self.op_timeout)
            .finish()
    }
}

impl RedisListCacheSettings {
    /// Settings with the defaults: no key prefix, 4 connections (a node's poller and, on one
    /// node, the refresher), 5 s per call (a body may be tens of megabytes).
    pub fn new(url: impl Into<String>) -> Self {
        RedisListCacheSettings {
            url: url.into(),
            key_prefix: String::new(),
            pool_size: 4,
            op_timeout: Duration::from_secs(5),
        }
    }
}

/// The room lists' cache in Redis: one hash, `{prefix}room:lists`, of the generation and the
/// body, compared and written by one script and read by another, so that a generation is
/// never paired with another's body. Shared by every node on the same server and key prefix.
/// Cheap to clone (the pool is shared).
#[derive(Clone)]
pub struct RedisListCache {
    client: Client,
    key: String,
    put: std::sync::Arc<Script>,
    get_newer: std::sync::Arc<Script>,
}

impl std::fmt::Debug for RedisListCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisListCache")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl RedisListCache {
    /// Connects to Redis and checks that it answers.
    pub async fn connect(settings: &RedisListCacheSettings) -> Result<Self> {
        let client =
            Client::connect(&settings.url, settings.pool_size, settings.op_timeout).await?;
        Ok(RedisListCache {
            client,
            key: format!("{}room:lists", settings.key_prefix),
            put: std::sync::Arc::new(Script::new(&format!("{GENERATIONS}{PUT}"))),
            get_newer: std::sync::Arc::new(Script::new(&format!("{GENERATIONS}{GET_NEWER}"))),
        })
    }

    fn unreadable(&self, generation: &[u8]) -> Error {
        Error::corrupt(format!(
            "the room lists' generation in {}: {:?}",
            self.key,
            String::from_utf8_lossy(generation)
        ))
    }
}

#[async_trait]
impl ListCache for RedisListCache {
    async fn put(&self, generation: u64, body: &[u8]) -> Result<bool> {
        if body.len() > MAX_LIST_CACHE_BYTES {
            return Err(Error::Invalid(format!(
                "room lists of {} bytes are over the cache's {MAX_LIST_CACHE_BYTES}",
                body.len()
            )));
        }
        let mut call = self.put.key(&self.key);
        call.arg(generation).arg(body);
        match self.client.invoke::<i64>(&call).await? {
            1 => Ok(true),
            0 => Ok(false),
            UNREADABLE => Err(Error::corrupt(format!(
                "the room lists' generation in {} is unreadable",
                self.key
            ))),
            other => Err(Error::Internal(format!(
                "the list cache's put script answered {other}"
            ))),
        }
    }

    async fn get_newer(&self, newer_than: Option<u64>) -> Result<Option<CachedLists>> {
        let mut call = self.get_newer.key(&self.key);
        call.arg(newer_than.map(|g| g.to_string()).unwrap_or_default());
        let found: Vec<Vec<u8>> = self.client.invoke(&call).await?;
        let mut found = found.into_iter();
        let Some(stored) = found.next() else {
            return Ok(None);
        };
        let generation = std::str::from_utf8(&stored)
            .ok()
            .and_then(|g| g.parse::<u64>().ok())
            .ok_or_else(|| self.unreadable(&stored))?;
        let body = found.next().ok_or_else(|| {
            Error::corrupt(format!(
                "the room lists of generation {generation} in {} have no body",
                self.key
            ))
        })?;
        Ok(Some(CachedLists { generation, body }))
    }
}
