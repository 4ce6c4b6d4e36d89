//! [`PageCache`]: the leaderboard pages this node answered lately, as the JSON it sent, served
//! again for a short time. Boards are read far more often than they change: a page read by
//! many clients costs the store and the display look-ups once per TTL. The cache holds at most
//! its capacity: a full cache first drops what has expired, and past that caches nothing more
//! until entries expire (the pages are still answered, from the store).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::body::Bytes;

/// Pages by key (the board, the cursor and the limit), each with when it was cached.
pub struct PageCache {
    ttl: Duration,
    capacity: usize,
    pages: Mutex<HashMap<String, (Instant, Bytes)>>,
}

impl PageCache {
    /// A cache of at most `capacity` pages, each served for `ttl` (zero: nothing is cached).
    pub fn new(ttl: Duration, capacity: usize) -> Self {
        PageCache {
            ttl,
            capacity,
            pages: Mutex::new(HashMap::new()),
        }
    }

    /// The page cached under `key` less than the TTL ago.
    pub fn get(&self, key: &str) -> Option<Bytes> {
        self.get_at(key, Instant::now())
    }

    /// Keeps `page` under `key`, unless the cache is full of pages that have not expired.
    pub fn put(&self, key: String, page: Bytes) {
        self.put_at(key, page, Instant::now());
    }

    /// [`get`](Self::get) at `now`.
    fn get_at(&self, key: &str, now: Instant) -> Option<Bytes> {
        if self.ttl.is_zero() {
            return None;
        }
        let pages = self.pages.lock().unwrap_or_else(|e| e.into_inner());
        pages
            .get(key)
            .filter(|(at, _)| now.saturating_duration_since(*at) < self.ttl)
            .map(|(_, page)| page.clone())
    }

    /// [`put`](Self::put) at `now`.
    fn put_at(&self, key: String, page: Bytes, now: Instant) {
        if self.ttl.is_zero() || self.capacity == 0 {
            return;
        }
        let mut pages = self.pages.lock().unwrap_or_else(|e| e.into_inner());
        if pages.len() >= self.capacity && !pages.contains_key(&key) {
            let ttl = self.ttl;
            pages.retain(|_, (at, _)| now.saturating_duration_since(*at) < ttl);
            if pages.len() >= self.capacity {
                metrics::counter!("room_board_page_cache_full_total").increment(1);
                return;
            }
        }
        pages.insert(key, (now, page));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_are_served_within_the_ttl_and_the_cache_holds_its_capacity() {
        let t0 = Instant::now();
        let page = |n: &'static [u8]| Some(Bytes::from_static(n));
        let cache = PageCache::new(Duration::from_secs(60), 2);
        cache.put_at("a".into(), Bytes::from_static(b"1"), t0);
        cache.put_at("b".into(), Bytes::from_static(b"2"), t0);
        cache.put_at("c".into(), Bytes::from_static(b"3"), t0);
        assert_eq!(
            cache.get_at("c", t0),
            None,
            "a full cache of live pages takes no more"
        );
        assert_eq!(cache.get_at("a", t0), page(b"1"));
        // A page already held is replaced even when the cache is full.
        cache.put_at("a".into(), Bytes::from_static(b"4"), t0);
        assert_eq!(cache.get_at("a", t0), page(b"4"));
        // At the TTL, a page is gone, and the expired pages make room.
        let later = t0 + Duration::from_secs(60);
        assert_eq!(cache.get_at("a", later), None, "expired");
        cache.put_at("c".into(), Bytes::from_static(b"3"), later);
        assert_eq!(
            cache.get_at("c", later),
            page(b"3"),
            "room made by the expired"
        );

        let off = PageCache::new(Duration::ZERO, 10);
        off.put("a".into(), Bytes::from_static(b"1"));
        assert_eq!(off.get("a"), None);
    }
}
