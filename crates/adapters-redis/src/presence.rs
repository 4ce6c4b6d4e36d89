//! [`RedisPresence`]: who is in which room, by heartbeat, shared by every node, so that the
//! one-room-per-user rule, the current room and the eviction pass hold across the cluster.
//!
//! Keys: `{prefix}room:presence:user:{user_id}`, a hash of the user's `room` and last `seen`
//! (milliseconds), and `{prefix}room:presence:seen`, a sorted set of user ids scored by
//! `seen`, which [`Presence::list_stale`] reads oldest first. Every change that touches both is
//! one Lua script, so a user is never in one and not the other, and the compare-and-remove of
//! [`Presence::remove_if_seen`] cannot interleave with a heartbeat.
//!
//! The record's room changes only by [`Presence::compare_and_set`], one script keyed by the
//! user: two nodes changing one user's room at once serialise on it.
//!
//! What Redis holds stays bounded: a removed or evicted user's hash and set member are
//! deleted (the set with its last member). As a safety net for a cluster that stops for good,
//! every write gives the user's hash a TTL of
//! [`entry_ttl`](RedisPresenceSettings::entry_ttl), and the set at least as much, so nothing
//! outlives the last heartbeat by more than that. A set member whose hash has expired is
//! dropped by the next listing. The TTL must be well above the presence timeout plus the
//! eviction interval: an entry that expires before the eviction pass saw it leaves its user a
//! member of the room until the room is loaded again (which restores its members).

use std::time::Duration;

use async_trait::async_trait;
use redis::Script;
use room_app::Error;
use room_app::ports::{Presence, StaleCursor, StaleMember};
use room_domain::{RoomId, Timestamp, UserId};

use crate::Result;
use crate::client::{Client, millis};

/// The default [`RedisPresenceSettings::entry_ttl`]: ten times the service's default
/// presence timeout (90 s).
pub const DEFAULT_PRESENCE_ENTRY_TTL: Duration = Duration::from_secs(15 * 60);

/// The shortest [`RedisPresenceSettings::entry_ttl`] accepted.
const MIN_ENTRY_TTL: Duration = Duration::from_millis(100);

/// A Lua function the writing scripts start with: gives the stale set a TTL of at least `ttl`
/// ms, so that it never expires before a user's hash, whichever node (and settings) wrote
/// last.
const KEEP_SET: &str = r"
local function keep_set(set, ttl)
  if redis.call('PTTL', set) < tonumber(ttl) then
    redis.call('PEXPIRE', set, ttl)
  end
end
";

/// Records the user in the room unless recorded anywhere. KEYS: user hash, stale set. ARGV:
/// room, now, TTL in ms, user id.
const RESTORE: &str = r"
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('HSET', KEYS[1], 'room', ARGV[1], 'seen', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[4])
keep_set(KEYS[2], ARGV[3])
return 1
";

/// Forgets the user if recorded in the room. KEYS: user hash, stale set. ARGV: room, user id.
const REMOVE: &str = r"
if redis.call('HGET', KEYS[1], 'room') == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('ZREM', KEYS[2], ARGV[2])
  return 1
end
return 0
";

/// Forgets the user if recorded in the room with that last heartbeat. KEYS: user hash, stale
/// set. ARGV: room, seen, user id.
const REMOVE_IF_SEEN: &str = r"
local entry = redis.call('HMGET', KEYS[1], 'room', 'seen')
if entry[1] == ARGV[1] and entry[2] == ARGV[2] then
  redis.call('DEL', KEYS[1])
  redis.call('ZREM', KEYS[2], ARGV[3])
  return 1
end
return 0
";

/// The compare-and-set of the user's record: sets it to ARGV[2] (empty: forgets the user)
/// only if it names ARGV[1] now (empty: recorded nowhere); answers the room it named before
/// (false for none). KEYS: user hash, stale set. ARGV: expected room, next room, now, TTL in
/// ms, user id.
const COMPARE_AND_SET: &str = r"
local current = redis.call('HGET', KEYS[1], 'room')
local matches = (current == ARGV[1]) or (not current and ARGV[1] == '')
if matches then
  if ARGV[2] == '' then
    redis.call('DEL', KEYS[1])
    redis.call('ZREM', KEYS[2], ARGV[5])
  else
    redis.call('HSET', KEYS[1], 'room', ARGV[2], 'seen', ARGV[3])
    redis.call('PEXPIRE', KEYS[1], ARGV[4])
    redis.call('ZADD', KEYS[2], ARGV[3], ARGV[5])
    keep_set(KEYS[2], ARGV[4])
  end
end
return current
";

/// Users seen before ARGV[1], oldest first (ties by user id, as the sorted set orders them),
/// at most ARGV[2], as user, room, seen triples; with a cursor (ARGV[4] seen, ARGV[5] user,
/// both empty for none), only those after it. Drops members whose hash expired. KEYS: stale
/// set. ARGV: before, limit, user hash prefix, cursor seen, cursor user.
const LIST_STALE: &str = r"
local found = {}
local limit = tonumber(ARGV[2])
local from = '-inf'
if ARGV[4] ~= '' then
  from = ARGV[4]
end
local offset = 0
local listed = 0
while listed < limit do
  local users = redis.call('ZRANGEBYSCORE', KEYS[1], from, '(' .. ARGV[1], 'WITHSCORES', 'LIMIT', offset, limit)
  if #users == 0 then
    break
  end
  offset = offset + #users / 2
  for i = 1, #users, 2 do
    local user = users[i]
    -- Members at the cursor's own score come after it only if their id does.
    local past = ARGV[4] == '' or tonumber(users[i + 1]) > tonumber(ARGV[4]) or user > ARGV[5]
    if past and listed < limit then
      local entry = redis.call('HMGET', ARGV[3] .. user, 'room', 'seen')
      if entry[1] and entry[2] then
        table.insert(found, user)
        table.insert(found, entry[1])
        table.insert(found, entry[2])
        listed = listed + 1
      else
        redis.call('ZREM', KEYS[1], user)
        offset = offset - 1
      end
    end
  end
end
return found
";

/// What a [`RedisPresence`] needs. `Debug` leaves the URL out: it may hold a password.
#[derive(Clone)]
pub struct RedisPresenceSettings {
    /// `redis://host:port/db`.
    pub url: String,
    /// Prepended to every key (tests use one per test; empty in production). Every node of a
    /// cluster uses the same.
    pub key_prefix: String,
    /// The most connections the pool opens.
    pub pool_size: usize,
    /// How long one call may take before it fails as unavailable.
    pub op_timeout: Duration,
    /// How long a user's entry outlives their last heartbeat (or join) if no one removes it:
    /// the safety net for a cluster that stopped. Keep it well above the presence timeout
    /// plus the eviction interval, and the same on every node. At least 100 ms.
    pub entry_ttl: Duration,
}

impl std::fmt::Debug for RedisPresenceSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisPresenceSettings")
            .field("url", &"[REDACTED]")
            .field("key_prefix", &self.key_prefix)
            .field("pool_size", &self.pool_size)
            .field("op_timeout", &self.op_timeout)
            .field("entry_ttl", &self.entry_ttl)
            .finish()
    }
}

impl RedisPresenceSettings {
    /// Settings with the defaults: no key prefix, 8 connections, 1 s per call, entries
    /// kept [`DEFAULT_PRESENCE_ENTRY_TTL`] past their last heartbeat.
    pub fn new(url: impl Into<String>) -> Self {
        RedisPresenceSettings {
            url: url.into(),
            key_prefix: String::new(),
            pool_size: 8,
            op_timeout: Duration::from_secs(1),
            entry_ttl: DEFAULT_PRESENCE_ENTRY_TTL,
        }
    }
}

/// Presence in Redis, shared by every node on the same server and key prefix. Cheap to
/// clone (the pool is shared).
#[derive(Clone)]
pub struct RedisPresence {
    client: Client,
    entry_ttl_ms: u64,
    user_prefix: String,
    seen_key: String,
    restore: std::sync::Arc<Script>,
    remove: std::sync::Arc<Script>,
    remove_if_seen: std::sync::Arc<Script>,
    compare_and_set: std::sync::Arc<Script>,
    list_stale: std::sync::Arc<Script>,
}

impl std::fmt::Debug for RedisPresence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisPresence")
            .field("seen_key", &self.seen_key)
            .field("entry_ttl_ms", &self.entry_ttl_ms)
            .finish_non_exhaustive()
    }
}

impl RedisPresence {
    /// Connects to Redis and checks that it answers.
    pub async fn connect(settings: &RedisPresenceSettings) -> Result<Self> {
        if settings.entry_ttl < MIN_ENTRY_TTL {
            return Err(Error::Invalid(format!(
                "a Redis presence entry TTL of {:?} is under {MIN_ENTRY_TTL:?}",
                settings.entry_ttl
            )));
        }
        let client =
            Client::connect(&settings.url, settings.pool_size, settings.op_timeout).await?;
        let prefix = &settings.key_prefix;
        let with_keep_set = |body: &str| Script::new(&format!("{KEEP_SET}{body}"));
        Ok(RedisPresence {
            client,
            entry_ttl_ms: millis(settings.entry_ttl),
            user_prefix: format!("{prefix}room:presence:user:"),
            seen_key: format!("{prefix}room:presence:seen"),
            restore: std::sync::Arc::new(with_keep_set(RESTORE)),
            remove: std::sync::Arc::new(Script::new(REMOVE)),
            remove_if_seen: std::sync::Arc::new(Script::new(REMOVE_IF_SEEN)),
            compare_and_set: std::sync::Arc::new(with_keep_set(COMPARE_AND_SET)),
            list_stale: std::sync::Arc::new(Script::new(LIST_STALE)),
        })
    }

    fn user_key(&self, user: &UserId) -> String {
        format!("{}{}", self.user_prefix, user)
    }

    /// Runs [`RESTORE`].
    async fn record<T: redis::FromRedisValue>(
        &self,
        script: &Script,
        room_id: &RoomId,
        user: &UserId,
        now: Timestamp,
    ) -> Result<T> {
        let mut call = script.key(self.user_key(user));
        call.key(&self.seen_key)
            .arg(room_id.as_str())
            .arg(now.0)
            .arg(self.entry_ttl_ms)
            .arg(user.as_str());
        self.client.invoke(&call).await
    }
}

fn room_id(stored: String) -> Result<RoomId> {
    RoomId::new(&stored)
        .map_err(|error| Error::corrupt(format!("presence room id {stored:?}: {error}")))
}

#[async_trait]
impl Presence for RedisPresence {
    async fn restore(&self, room_id: &RoomId, user: &UserId, now: Timestamp) -> Result<()> {
        let _: i64 = self.record(&self.restore, room_id, user, now).await?;
        Ok(())
    }

    async fn remove(&self, room_id: &RoomId, user: &UserId) -> Result<()> {
        let mut call = self.remove.key(self.user_key(user));
        call.key(&self.seen_key)
            .arg(room_id.as_str())
            .arg(user.as_str());
        let _: i64 = self.client.invoke(&call).await?;
        Ok(())
    }

    async fn remove_if_seen(
        &self,
        room_id: &RoomId,
        user: &UserId,
        seen: Timestamp,
    ) -> Result<bool> {
        let mut call = self.remove_if_seen.key(self.user_key(user));
        call.key(&self.seen_key)
            .arg(room_id.as_str())
            .arg(seen.0)
            .arg(user.as_str());
        let removed: i64 = self.client.invoke(&call).await?;
        Ok(removed == 1)
    }

    async fn compare_and_set(
        &self,
        user: &UserId,
        expected: Option<RoomId>,
        next: Option<RoomId>,
        now: Timestamp,
    ) -> Result<Option<RoomId>> {
        let mut call = self.compare_and_set.key(self.user_key(user));
        call.key(&self.seen_key)
            .arg(expected.as_ref().map_or("", RoomId::as_str))
            .arg(next.as_ref().map_or("", RoomId::as_str))
            .arg(now.0)
            .arg(self.entry_ttl_ms)
            .arg(user.as_str());
        let before: Option<String> = self.client.invoke(&call).await?;
        before.map(room_id).transpose()
    }

    async fn get_current_room(&self, user: &UserId) -> Result<Option<RoomId>> {
        let mut cmd = redis::cmd("HGET");
        cmd.arg(self.user_key(user)).arg("room");
        let room: Option<String> = self.client.query(&cmd).await?;
        room.map(room_id).transpose()
    }

    async fn list_stale(
        &self,
        before: Timestamp,
        after: Option<StaleCursor>,
        limit: u32,
    ) -> Result<Vec<StaleMember>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let (after_seen, after_user) = match &after {
            Some((seen, user)) => (seen.0.to_string(), user.as_str()),
            None => (String::new(), ""),
        };
        let mut call = self.list_stale.key(&self.seen_key);
        call.arg(before.0)
            .arg(limit)
            .arg(&self.user_prefix)
            .arg(after_seen)
            .arg(after_user);
        let found: Vec<String> = self.client.invoke(&call).await?;
        let mut found = found.into_iter();
        let mut stale = Vec::new();
        while let (Some(user), Some(room), Some(seen)) = (found.next(), found.next(), found.next())
        {
            stale.push(StaleMember {
                room_id: room_id(room)?,
                user: UserId::new(&user).map_err(|error| {
                    Error::corrupt(format!("presence user id {user:?}: {error}"))
                })?,
                seen: Timestamp(
                    seen.parse().map_err(|error| {
                        Error::corrupt(format!("presence seen {seen:?}: {error}"))
                    })?,
                ),
            });
        }
        Ok(stale)
    }
}
