//! [`VipCache`]: a node's bounded, time-limited copy of the VIP grants and the level table it
//! reads, so that joins, kicks and mutes learn a user's VIP standing without a store read
//! each.
//!
//! A user's entry keeps their grant (or its absence) with its expiry, and the standing is
//! decided against the clock at every lookup: a grant ends its privileges at the instant it
//! expires, cached or not. An entry, and the level table, are served for less than the TTL
//! after they were read, then read again: a grant, a revocation or a table change made
//! through another node counts on this node within the TTL. A write through this node drops
//! the entry at once. The users' map holds at most its capacity.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use room_domain::{Timestamp, UserId, VipStanding};

use crate::error::Result;
use crate::ports::{ClockRef, VipGrant, VipGrantsRef, VipLevels};
use crate::profiles::CacheStats;
use crate::ttl_map::TtlMap;

/// How the cache is bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VipCacheConfig {
    /// The most users the cache holds (0 turns it off: every lookup reads the store).
    pub capacity: usize,
    /// How long an entry (and the level table) is served after it was read: the longest a
    /// change made through another node takes to count here.
    pub ttl: Duration,
}

impl Default for VipCacheConfig {
    /// 50,000 users for 5 seconds.
    fn default() -> Self {
        VipCacheConfig {
            capacity: 50_000,
            ttl: Duration::from_secs(5),
        }
    }
}

/// A bounded, time-limited cache of VIP grants and the level table. See the [module](self).
pub struct VipCache {
    grants: VipGrantsRef,
    clock: ClockRef,
    config: VipCacheConfig,
    users: Mutex<TtlMap<UserId, Option<VipGrant>>>,
    /// The level table and when it was read.
    levels: Mutex<Option<(VipLevels, Timestamp)>>,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl VipCache {
    /// A cache of `grants`, whose entries age by `clock`.
    pub fn new(grants: VipGrantsRef, clock: ClockRef, config: VipCacheConfig) -> Self {
        VipCache {
            grants,
            clock,
            config,
            users: Mutex::new(TtlMap::new(config.capacity, config.ttl)),
            levels: Mutex::new(None),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// How the cache is bounded.
    pub fn config(&self) -> VipCacheConfig {
        self.config
    }

    /// User lookups answered and read so far.
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
        }
    }

    /// How many users the cache holds now (expired entries included until they are dropped).
    pub fn len(&self) -> usize {
        lock(&self.users).len()
    }

    /// Whether the cache holds nobody.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn count(&self, hit: bool) {
        let (counter, result) = if hit {
            (&self.hits, "hit")
        } else {
            (&self.misses, "miss")
        };
        counter.fetch_add(1, Ordering::Relaxed);
        metrics::counter!("room_vip_cache_lookups_total", "result" => result).increment(1);
    }

    fn ttl_ms(&self) -> i64 {
        i64::try_from(self.config.ttl.as_millis()).unwrap_or(i64::MAX)
    }

    /// `user`'s grant, from the cache while its entry is fresh, else from the store.
    async fn grant(&self, user: &UserId, now: Timestamp) -> Result<Option<VipGrant>> {
        if let Some(grant) = lock(&self.users).get(user, now).copied() {
            self.count(true);
            return Ok(grant);
        }
        self.count(false);
        let grant = self.grants.get_vip_grant(user).await?;
        lock(&self.users).insert(user.clone(), grant, now);
        Ok(grant)
    }

    /// The level table, from the cache while fresh, else from the store.
    async fn levels(&self, now: Timestamp) -> Result<VipLevels> {
        let kept = lock(&self.levels)
            .as_ref()
            .filter(|(_, read_at)| now.0.saturating_sub(read_at.0) < self.ttl_ms())
            .map(|(levels, _)| levels.clone());
        if let Some(levels) = kept {
            return Ok(levels);
        }
        let levels = self.grants.vip_levels().await?;
        if self.config.capacity > 0 {
            *lock(&self.levels) = Some((levels.clone(), now));
        }
        Ok(levels)
    }

    /// `user`'s standing at the clock's now: the level of a grant in force (0 without one)
    /// and what the table gives it.
    pub async fn standing(&self, user: &UserId) -> Result<VipStanding> {
        let now = self.clock.now();
        let Some(level) = self
            .grant(user, now)
            .await?
            .and_then(|grant| grant.level_at(now))
        else {
            return Ok(VipStanding::default());
        };
        Ok(self.levels(now).await?.standing(level))
    }

    /// Whether `user` may set `url` as a room's background at the clock's now: yes unless a
    /// level of the table lists it as exclusive and no level from 1 to the user's does
    /// ([`room_domain::background_allowed`]).
    pub async fn may_use_background(&self, user: &UserId, url: &str) -> Result<bool> {
        let now = self.clock.now();
        let levels = self.levels(now).await?;
        if room_domain::first_level_listing(&levels.levels, url).is_none() {
            return Ok(true);
        }
        let level = self
            .grant(user, now)
            .await?
            .and_then(|grant| grant.level_at(now))
            .unwrap_or(0);
        Ok(room_domain::background_allowed(&levels.levels, level, url))
    }

    /// Drops the entry of `user` (after a write through this node).
    pub fn forget(&self, user: &UserId) {
        lock(&self.users).remove(user);
    }

    /// Drops the level table (after a change through this node).
    pub fn forget_levels(&self) {
        *lock(&self.levels) = None;
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Every change under the lock is complete before it is released.
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::AtomicI64;

    use room_domain::VipPrivileges;

    use super::*;
    use crate::memory::InMemoryStore;
    use crate::ports::{Clock, VipGrants};

    struct TestClock(AtomicI64);

    impl Clock for TestClock {
        fn now(&self) -> Timestamp {
            Timestamp(self.0.load(Ordering::SeqCst))
        }
    }

    fn user(id: &str) -> UserId {
        UserId::new(id).unwrap()
    }

    fn cache(capacity: usize, ttl_ms: u64) -> (Arc<InMemoryStore>, Arc<TestClock>, VipCache) {
        let store = Arc::new(InMemoryStore::new());
        let clock = Arc::new(TestClock(AtomicI64::new(1_000_000)));
        let cache = VipCache::new(
            store.clone(),
            clock.clone(),
            VipCacheConfig {
                capacity,
                ttl: Duration::from_millis(ttl_ms),
            },
        );
        (store, clock, cache)
    }

    fn shielded() -> Vec<VipPrivileges> {
        vec![
            VipPrivileges::default(),
            VipPrivileges {
                kick_shield: true,
                ..VipPrivileges::default()
            },
        ]
    }

    #[tokio::test]
    async fn a_cached_grant_ends_at_its_expiry() {
        let (store, clock, cache) = cache(10, 60_000);
        store.put_vip_levels(0, &shielded()).await.unwrap();
        store
            .grant_vip(&user("a"), 2, Timestamp(1_000_500))
            .await
            .unwrap();
        let standing = cache.standing(&user("a")).await.unwrap();
        assert_eq!(standing.level, 2);
        assert!(standing.privileges.kick_shield);
        clock.0.store(1_000_499, Ordering::SeqCst);
        assert_eq!(cache.standing(&user("a")).await.unwrap().level, 2);
        clock.0.store(1_000_500, Ordering::SeqCst);
        assert_eq!(
            cache.standing(&user("a")).await.unwrap(),
            VipStanding::default(),
            "expired at the instant, though the entry is still fresh"
        );
        assert_eq!(cache.stats(), CacheStats { hits: 2, misses: 1 });
    }

    #[tokio::test]
    async fn a_change_elsewhere_counts_once_the_ttl_has_passed() {
        let (store, clock, cache) = cache(10, 1_000);
        store.put_vip_levels(0, &shielded()).await.unwrap();
        assert_eq!(cache.standing(&user("a")).await.unwrap().level, 0);
        store
            .grant_vip(&user("a"), 2, Timestamp(9_000_000))
            .await
            .unwrap();
        clock.0.fetch_add(999, Ordering::SeqCst);
        assert_eq!(cache.standing(&user("a")).await.unwrap().level, 0);
        clock.0.fetch_add(1, Ordering::SeqCst);
        assert_eq!(cache.standing(&user("a")).await.unwrap().level, 2);
        // A table change elsewhere: the shield goes within the TTL too.
        store
            .put_vip_levels(1, &[VipPrivileges::default(), VipPrivileges::default()])
            .await
            .unwrap();
        assert!(
            cache
                .standing(&user("a"))
                .await
                .unwrap()
                .privileges
                .kick_shield
        );
        clock.0.fetch_add(1_000, Ordering::SeqCst);
        assert!(
            !cache
                .standing(&user("a"))
                .await
                .unwrap()
                .privileges
                .kick_shield
        );
        cache.forget(&user("a"));
        store.revoke_vip(&user("a")).await.unwrap();
        assert_eq!(cache.standing(&user("a")).await.unwrap().level, 0);
    }

    #[tokio::test]
    async fn the_cache_never_holds_more_than_its_capacity() {
        let (_store, _clock, cache) = cache(3, 60_000);
        for i in 0..10 {
            cache.standing(&user(&format!("u{i}"))).await.unwrap();
            assert!(cache.len() <= 3);
        }
        let (_store, _clock, off) = self::cache(0, 60_000);
        off.standing(&user("a")).await.unwrap();
        off.standing(&user("a")).await.unwrap();
        assert_eq!(off.stats(), CacheStats { hits: 0, misses: 2 });
        assert!(off.is_empty());
    }
}
