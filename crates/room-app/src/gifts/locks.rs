//! Async locks by key ([`KeyedLocks`]): the per-order and per-sender locks of the saga on
//! this node, with a bound on how many may wait for one order ([`ORDER_LOCK_QUEUE`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The most tasks that may hold or wait for the lock of one order on one node. A client that
/// resends one order in a loop cannot queue more: the request beyond is answered
/// [`Error::OrderInProgress`](crate::Error::OrderInProgress) (retryable), and moves nothing.
pub const ORDER_LOCK_QUEUE: usize = 4;

/// Async locks by key, created on first use. The map forgets locks nobody holds or waits for
/// once it grows, so made-up keys cannot make it grow without bound.
pub(super) struct KeyedLocks<K> {
    locks: Mutex<HashMap<K, Arc<tokio::sync::Mutex<()>>>>,
    /// The most tasks seen holding or waiting for one key's lock by [`KeyedLocks::lock_bounded`].
    peak: AtomicUsize,
}

impl<K> Default for KeyedLocks<K> {
    fn default() -> Self {
        KeyedLocks {
            locks: Mutex::new(HashMap::new()),
            peak: AtomicUsize::new(0),
        }
    }
}

impl<K: std::hash::Hash + Eq + Clone> KeyedLocks<K> {
    /// Waits for the lock of `key`.
    pub(super) async fn lock(&self, key: &K) -> tokio::sync::OwnedMutexGuard<()> {
        let lock = {
            let mut locks = self.locks.lock().unwrap_or_else(|e| e.into_inner());
            if locks.len() > 1024 {
                locks.retain(|_, lock| Arc::strong_count(lock) > 1);
            }
            locks.entry(key.clone()).or_default().clone()
        };
        lock.lock_owned().await
    }

    /// Waits for the lock of `key` unless [`ORDER_LOCK_QUEUE`] tasks hold or wait for it
    /// already (`None`). The flag says whether the lock was held when this call came.
    pub(super) async fn lock_bounded(
        &self,
        key: &K,
    ) -> Option<(tokio::sync::OwnedMutexGuard<()>, bool)> {
        let lock = {
            let mut locks = self.locks.lock().unwrap_or_else(|e| e.into_inner());
            if locks.len() > 1024 {
                locks.retain(|_, lock| Arc::strong_count(lock) > 1);
            }
            let lock = locks.entry(key.clone()).or_default();
            // Every holder and waiter keeps a clone, and clones are made only here, under the
            // map's mutex: the count cannot pass the bound (a guard dropped meanwhile only
            // lowers it).
            let queued = Arc::strong_count(lock) - 1;
            if queued >= ORDER_LOCK_QUEUE {
                return None;
            }
            self.peak.fetch_max(queued + 1, Ordering::Relaxed);
            lock.clone()
        };
        // A hint only: a lock taken in between makes this call wait though it says it did not.
        let held = lock.try_lock().is_err();
        Some((lock.lock_owned().await, held))
    }

    /// The most tasks seen holding or waiting for one key's lock.
    pub(super) fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }
}
