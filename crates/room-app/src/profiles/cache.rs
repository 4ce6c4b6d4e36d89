//! [`ProfileCache`]: a node's bounded, time-limited copy of the profiles it reads, so that the
//! rooms' views and display events get nicknames and avatars without a store read each.
//!
//! An entry (a profile, or the directory's answer that the user has none) is served for at
//! most the TTL after it was read, then read again: a change made on another node reaches this
//! node's views within the TTL. A write through this node drops the entry at once. The map
//! holds at most its capacity: inserting into a full map drops the entry read longest ago
//! (every entry lives as long, so the expired ones go first), in constant time.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use room_domain::{Timestamp, UserId};

use crate::error::Result;
use crate::ports::{ClockRef, MAX_PROFILE_BATCH, UserDirectoryRef, UserProfile};
use crate::ttl_map::TtlMap;

/// How the cache is bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProfileCacheConfig {
    /// The most users the cache holds (0 turns it off: every read goes to the directory).
    pub capacity: usize,
    /// How long an entry is served after it was read: the longest a change made through
    /// another node takes to show here.
    pub ttl: Duration,
}

impl Default for ProfileCacheConfig {
    /// 50,000 users for 10 seconds.
    fn default() -> Self {
        ProfileCacheConfig {
            capacity: 50_000,
            ttl: Duration::from_secs(10),
        }
    }
}

/// Lookups the cache answered, and those it read from the directory, since it was made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Answered from the cache.
    pub hits: u64,
    /// Read from the directory.
    pub misses: u64,
}

/// A bounded, time-limited cache of the user directory. See the [module](self).
pub struct ProfileCache {
    directory: UserDirectoryRef,
    clock: ClockRef,
    config: ProfileCacheConfig,
    inner: Mutex<TtlMap<UserId, Option<UserProfile>>>,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl ProfileCache {
    /// A cache of `directory`, whose entries age by `clock`.
    pub fn new(directory: UserDirectoryRef, clock: ClockRef, config: ProfileCacheConfig) -> Self {
        ProfileCache {
            directory,
            clock,
            config,
            inner: Mutex::new(TtlMap::new(config.capacity, config.ttl)),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// How the cache is bounded.
    pub fn config(&self) -> ProfileCacheConfig {
        self.config
    }

    /// Lookups answered and read so far.
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
        }
    }

    /// How many users the cache holds now (expired entries included until they are dropped).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether the cache holds nobody.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, TtlMap<UserId, Option<UserProfile>>> {
        // Every change of the map is complete before the lock is released.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn count(&self, hits: u64, misses: u64) {
        if hits > 0 {
            self.hits.fetch_add(hits, Ordering::Relaxed);
            metrics::counter!("room_profile_cache_lookups_total", "result" => "hit")
                .increment(hits);
        }
        if misses > 0 {
            self.misses.fetch_add(misses, Ordering::Relaxed);
            metrics::counter!("room_profile_cache_lookups_total", "result" => "miss")
                .increment(misses);
        }
    }

    /// The cached answer for `user`, if there is one not expired at `now`.
    fn cached(
        inner: &TtlMap<UserId, Option<UserProfile>>,
        user: &UserId,
        now: Timestamp,
    ) -> Option<Option<UserProfile>> {
        inner.get(user, now).cloned()
    }

    /// The profile of `user`: from the cache while its entry is fresh, else from the directory
    /// (and then kept).
    pub async fn get(&self, user: &UserId) -> Result<Option<UserProfile>> {
        let now = self.clock.now();
        if let Some(profile) = Self::cached(&self.lock(), user, now) {
            self.count(1, 0);
            return Ok(profile);
        }
        self.count(0, 1);
        let profile = self.directory.get_profile(user).await?;
        self.lock().insert(user.clone(), profile.clone(), now);
        Ok(profile)
    }

    /// The profiles of `users` that have one, by user id: the fresh entries from the cache,
    /// the others read from the directory in batches of at most [`MAX_PROFILE_BATCH`].
    pub async fn get_many(&self, users: &[UserId]) -> Result<HashMap<UserId, UserProfile>> {
        let now = self.clock.now();
        let mut found = HashMap::new();
        let mut missing = Vec::new();
        let mut seen = std::collections::HashSet::new();
        {
            let inner = self.lock();
            for user in users {
                if !seen.insert(user) {
                    continue;
                }
                match Self::cached(&inner, user, now) {
                    Some(Some(profile)) => {
                        found.insert(user.clone(), profile);
                    }
                    Some(None) => {}
                    None => missing.push(user.clone()),
                }
            }
        }
        let hits = seen.len().saturating_sub(missing.len()) as u64;
        self.count(hits, missing.len() as u64);
        for chunk in missing.chunks(MAX_PROFILE_BATCH) {
            let mut read: HashMap<UserId, UserProfile> = self
                .directory
                .get_profiles(chunk)
                .await?
                .into_iter()
                .map(|profile| (profile.user_id.clone(), profile))
                .collect();
            let mut inner = self.lock();
            for user in chunk {
                let profile = read.remove(user);
                inner.insert(user.clone(), profile.clone(), now);
                if let Some(profile) = profile {
                    found.insert(user.clone(), profile);
                }
            }
        }
        Ok(found)
    }

    /// Drops the entry of `user` (after a write through this node), so that the next read
    /// here sees the change.
    pub fn forget(&self, user: &UserId) {
        self.lock().remove(user);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::AtomicI64;

    use super::*;
    use crate::memory::InMemoryStore;
    use crate::ports::{Change, Clock, ProfilePatch, UserDirectory};

    struct TestClock(AtomicI64);

    impl Clock for TestClock {
        fn now(&self) -> Timestamp {
            Timestamp(self.0.load(Ordering::SeqCst))
        }
    }

    fn user(id: &str) -> UserId {
        UserId::new(id).unwrap()
    }

    fn named(nickname: &str) -> ProfilePatch {
        ProfilePatch {
            nickname: Change::Set(nickname.to_owned()),
            ..ProfilePatch::default()
        }
    }

    fn cache(capacity: usize, ttl_ms: u64) -> (Arc<InMemoryStore>, Arc<TestClock>, ProfileCache) {
        let store = Arc::new(InMemoryStore::new());
        let clock = Arc::new(TestClock(AtomicI64::new(1_000_000)));
        let cache = ProfileCache::new(
            store.clone(),
            clock.clone(),
            ProfileCacheConfig {
                capacity,
                ttl: Duration::from_millis(ttl_ms),
            },
        );
        (store, clock, cache)
    }

    fn nickname(profile: Option<UserProfile>) -> Option<String> {
        profile.and_then(|p| p.nickname)
    }

    #[tokio::test]
    async fn a_change_elsewhere_shows_once_the_ttl_has_passed() {
        let (store, clock, cache) = cache(10, 1_000);
        store
            .upsert_profile(&user("a"), &named("one"))
            .await
            .unwrap();
        assert_eq!(
            nickname(cache.get(&user("a")).await.unwrap()).as_deref(),
            Some("one")
        );
        // Another node writes the directory: this cache serves its entry until the TTL.
        store
            .upsert_profile(&user("a"), &named("two"))
            .await
            .unwrap();
        clock.0.fetch_add(999, Ordering::SeqCst);
        assert_eq!(
            nickname(cache.get(&user("a")).await.unwrap()).as_deref(),
            Some("one")
        );
        clock.0.fetch_add(1, Ordering::SeqCst);
        assert_eq!(
            nickname(cache.get(&user("a")).await.unwrap()).as_deref(),
            Some("two")
        );
        assert_eq!(cache.stats(), CacheStats { hits: 1, misses: 2 });
    }

    #[tokio::test]
    async fn absence_is_cached_and_forget_drops_an_entry() {
        let (store, _clock, cache) = cache(10, 60_000);
        assert_eq!(cache.get(&user("a")).await.unwrap(), None);
        store
            .upsert_profile(&user("a"), &named("new"))
            .await
            .unwrap();
        assert_eq!(
            cache.get(&user("a")).await.unwrap(),
            None,
            "the absence is served"
        );
        cache.forget(&user("a"));
        assert_eq!(
            nickname(cache.get(&user("a")).await.unwrap()).as_deref(),
            Some("new")
        );
        assert_eq!(cache.stats(), CacheStats { hits: 1, misses: 2 });
    }

    #[tokio::test]
    async fn the_cache_never_holds_more_than_its_capacity() {
        let (store, _clock, cache) = cache(3, 60_000);
        for i in 0..10 {
            let id = user(&format!("u{i}"));
            store
                .upsert_profile(&id, &named(&format!("n{i}")))
                .await
                .unwrap();
            cache.get(&id).await.unwrap();
            // Reading the first user again keeps re-inserting nobody: it is a hit while held.
            cache.get(&user("u0")).await.unwrap();
            assert!(cache.len() <= 3, "{} entries after {i}", cache.len());
        }
        assert_eq!(cache.len(), 3);
        let many: Vec<_> = (0..10).map(|i| user(&format!("m{i}"))).collect();
        let found = cache.get_many(&many).await.unwrap();
        assert!(found.is_empty());
        assert_eq!(cache.len(), 3, "a batch read stays within the capacity too");
        // The oldest entries went first: the newest reads are held.
        let before = cache.stats();
        cache.get(&user("m9")).await.unwrap();
        assert_eq!(cache.stats().hits, before.hits + 1);
        cache.get(&user("m0")).await.unwrap();
        assert_eq!(cache.stats().misses, before.misses + 1);
    }

    #[tokio::test]
    async fn the_insertion_queue_stays_bounded_under_repeated_refreshes() {
        let (_store, clock, cache) = cache(2, 10);
        for _ in 0..100 {
            clock.0.fetch_add(10, Ordering::SeqCst);
            cache.get(&user("a")).await.unwrap();
        }
        assert!(
            cache.lock().queue_len() <= 4,
            "{}",
            cache.lock().queue_len()
        );
    }

    #[tokio::test]
    async fn capacity_zero_reads_every_time() {
        let (store, _clock, cache) = cache(0, 60_000);
        store.upsert_profile(&user("a"), &named("x")).await.unwrap();
        cache.get(&user("a")).await.unwrap();
        cache.get(&user("a")).await.unwrap();
        assert_eq!(cache.stats(), CacheStats { hits: 0, misses: 2 });
        assert!(cache.is_empty());
    }

    #[tokio::test]
    async fn get_many_mixes_hits_and_reads() {
        let (store, _clock, cache) = cache(10, 60_000);
        store.upsert_profile(&user("a"), &named("A")).await.unwrap();
        store.upsert_profile(&user("b"), &named("B")).await.unwrap();
        cache.get(&user("a")).await.unwrap();
        let found = cache
            .get_many(&[user("a"), user("b"), user("c"), user("a")])
            .await
            .unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!(found[&user("b")].nickname.as_deref(), Some("B"));
        // a was a hit (once, though named twice), b and c were read.
        assert_eq!(cache.stats(), CacheStats { hits: 1, misses: 3 });
    }
}
