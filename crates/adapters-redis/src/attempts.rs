//! [`RedisPasswordAttempts`]: the wrong-password counts shared by every node, so that a
//! guesser spreading joins over the nodes behind a load balancer is locked out after
//! [`MAX_WRONG_PASSWORDS`] all the same.
//!
//! Key: `{prefix}room:attempts:{user_id}/{room_id}` (ids never hold a `/`), a hash of the
//! window's `count` and its start `since` (milliseconds, the callers' clock), created by the
//! window's first wrong password with a TTL of the window ([`PASSWORD_WINDOW_MS`]): what Redis
//! holds is one small hash per user and room with a wrong password in the last minute. Checking,
//! counting and taking back are each one Lua script, so guesses racing on several nodes are
//! counted one at a time.

use std::time::Duration;

use async_trait::async_trait;
use redis::Script;
use room_app::ports::{Counted, PasswordAttempts};
use room_app::{Error, MAX_WRONG_PASSWORDS, PASSWORD_WINDOW_MS};
use room_domain::{RoomId, Timestamp, UserId};

use crate::Result;
use crate::client::Client;

/// [`CHECK`]'s verdict when the user is locked out.
const REFUSED: i64 = 0;
/// [`CHECK`]'s verdict when the attempt was let through without counting.
const NOT_COUNTED: i64 = 1;
/// [`CHECK`]'s verdict when the attempt was counted.
const COUNTED: i64 = 2;

/// Refuses while the window holds the most wrong passwords, else counts the attempt if asked,
/// beginning a new window (with the window as TTL) when none is running. KEYS: the pair's
/// hash. ARGV: now, window in ms, most wrong passwords, 1 to count. Answers `{0, since}`
/// (refused), `{1, ''}` (not counted) or `{2, since}` (counted).
const CHECK: &str = r"
local entry = redis.call('HMGET', KEYS[1], 'count', 'since')
local count, since = tonumber(entry[1]), entry[2]
local now, window = tonumber(ARGV[1]), tonumber(ARGV[2])
if not count or not since or now >= tonumber(since) + window then
  count, since = 0, nil
end
if count >= tonumber(ARGV[3]) then
  return {0, since}
end
if ARGV[4] ~= '1' then
  return {1, ''}
end
if since then
  redis.call('HINCRBY', KEYS[1], 'count', 1)
else
  since = ARGV[1]
  redis.call('DEL', KEYS[1])
  redis.call('HSET', KEYS[1], 'count', 1, 'since', since)
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return {2, since}
";

/// Takes one attempt back if the window is still the one it was counted in. KEYS: the pair's
/// hash. ARGV: the window's start.
const UNCOUNT: &str = r"
local entry = redis.call('HMGET', KEYS[1], 'count', 'since')
if entry[2] == ARGV[1] and tonumber(entry[1]) > 0 then
  redis.call('HINCRBY', KEYS[1], 'count', -1)
  return 1
end
return 0
";

/// What a [`RedisPasswordAttempts`] needs. `Debug` leaves the URL out: it may hold a password.
#[derive(Clone)]
pub struct RedisPasswordAttemptsSettings {
    /// `redis://host:port/db`.
    pub url: String,
    /// Prepended to every key (tests use one per test; empty in production). Every node of a
    /// cluster uses the same.
    pub key_prefix: String,
    /// The most connections the pool opens.
    pub pool_size: usize,
    /// How long one call may take before it fails as unavailable.
    pub op_timeout: Duration,
}

impl std::fmt::Debug for RedisPasswordAttemptsSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisPasswordAttemptsSettings")
            .field("url", &"[REDACTED]")
            .field("key_prefix", &self.key_prefix)
            .field("pool_size", &self.pool_size)
            .field("op_timeout", &self.op_timeout)
            .finish()
    }
}

impl RedisPasswordAttemptsSettings {
    /// Settings with the defaults: no key prefix, 8 connections, 1 s per call.
    pub fn new(url: impl Into<String>) -> Self {
        RedisPasswordAttemptsSettings {
            url: url.into(),
            key_prefix: String::new(),
            pool_size: 8,
            op_timeout: Duration::from_secs(1),
        }
    }
}

/// Wrong-password counts in Redis, shared by every node on the same server and key prefix.
/// Cheap to clone (the pool is shared).
#[derive(Clone)]
pub struct RedisPasswordAttempts {
    client: Client,
    pair_prefix: String,
    check: std::sync::Arc<Script>,
    uncount: std::sync::Arc<Script>,
}

impl std::fmt::Debug for RedisPasswordAttempts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisPasswordAttempts")
            .field("pair_prefix", &self.pair_prefix)
            .finish_non_exhaustive()
    }
}

impl RedisPasswordAttempts {
    /// Connects to Redis and checks that it answers.
    pub async fn connect(settings: &RedisPasswordAttemptsSettings) -> Result<Self> {
        let client =
            Client::connect(&settings.url, settings.pool_size, settings.op_timeout).await?;
        Ok(RedisPasswordAttempts {
            client,
            pair_prefix: format!("{}room:attempts:", settings.key_prefix),
            check: std::sync::Arc::new(Script::new(CHECK)),
            uncount: std::sync::Arc::new(Script::new(UNCOUNT)),
        })
    }

    fn pair_key(&self, user: &UserId, room: &RoomId) -> String {
        format!("{}{user}/{room}", self.pair_prefix)
    }
}

fn window_start(stored: &str) -> Result<Timestamp> {
    stored
        .parse()
        .map(Timestamp)
        .map_err(|error| Error::corrupt(format!("password window start {stored:?}: {error}")))
}

#[async_trait]
impl PasswordAttempts for RedisPasswordAttempts {
    async fn check(
        &self,
        user: &UserId,
        room: &RoomId,
        now: Timestamp,
        counts: bool,
    ) -> Result<Option<Counted>> {
        let mut call = self.check.key(self.pair_key(user, room));
        call.arg(now.0)
            .arg(PASSWORD_WINDOW_MS)
            .arg(MAX_WRONG_PASSWORDS)
            .arg(u8::from(counts));
        let (verdict, since): (i64, String) = self.client.invoke(&call).await?;
        match verdict {
            REFUSED => Err(Error::TooManyAttempts {
                retry_at: Timestamp(window_start(&since)?.0 + PASSWORD_WINDOW_MS),
            }),
            COUNTED => Ok(Some(Counted {
                user: user.clone(),
                room: room.clone(),
                since: window_start(&since)?,
            })),
            NOT_COUNTED => Ok(None),
            other => Err(Error::Internal(format!(
                "the password check script answered {other}"
            ))),
        }
    }

    async fn uncount(&self, counted: Counted) -> Result<()> {
        let mut call = self
            .uncount
            .key(self.pair_key(&counted.user, &counted.room));
        call.arg(counted.since.0);
        let _: i64 = self.client.invoke(&call).await?;
        Ok(())
    }
}
