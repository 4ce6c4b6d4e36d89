//! [`TtlMap`]: the bounded, time-limited map behind a node's caches of what a store holds
//! (profiles, VIP grants). An entry is served for less than the TTL after it was read, then
//! counts as absent. The map holds at most its capacity: inserting into a full map drops the
//! entry read longest ago (every entry lives as long, so the expired ones go first), in
//! constant time.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::time::Duration;

use room_domain::Timestamp;

struct Entry<V> {
    value: V,
    read_at: Timestamp,
    /// Which insertion of the key this is: the queue's older records of the key are stale.
    generation: u64,
}

/// A bounded map whose entries expire. See the [module](self).
pub(crate) struct TtlMap<K, V> {
    capacity: usize,
    ttl_ms: i64,
    entries: HashMap<K, Entry<V>>,
    /// Keys in the order they were inserted, each with its insertion's generation; records
    /// whose generation is not the entry's are left over from a replaced or dropped entry.
    order: VecDeque<(K, u64)>,
    next_generation: u64,
}

impl<K: Clone + Eq + Hash, V> TtlMap<K, V> {
    /// A map of at most `capacity` entries (0 keeps nothing), each served for `ttl`.
    pub(crate) fn new(capacity: usize, ttl: Duration) -> Self {
        TtlMap {
            capacity,
            ttl_ms: i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX),
            entries: HashMap::new(),
            order: VecDeque::new(),
            next_generation: 0,
        }
    }

    /// The value of `key` if it was read less than the TTL before `now`.
    pub(crate) fn get(&self, key: &K, now: Timestamp) -> Option<&V> {
        self.entries
            .get(key)
            .filter(|entry| now.0.saturating_sub(entry.read_at.0) < self.ttl_ms)
            .map(|entry| &entry.value)
    }

    /// Keeps `value` for `key`, read at `now`, dropping the oldest entry if the map is full.
    pub(crate) fn insert(&mut self, key: K, value: V, now: Timestamp) {
        if self.capacity == 0 {
            return;
        }
        while !self.entries.contains_key(&key) && self.entries.len() >= self.capacity {
            let Some((oldest, generation)) = self.order.pop_front() else {
                break;
            };
            if self
                .entries
                .get(&oldest)
                .is_some_and(|entry| entry.generation == generation)
            {
                self.entries.remove(&oldest);
            }
        }
        let generation = self.next_generation;
        self.next_generation += 1;
        self.order.push_back((key.clone(), generation));
        self.entries.insert(
            key,
            Entry {
                value,
                read_at: now,
                generation,
            },
        );
        // Stale records are dropped once they are as many as the live ones, so the queue
        // stays within twice the capacity.
        if self.order.len() > self.capacity.saturating_mul(2) {
            let entries = &self.entries;
            self.order.retain(|(key, generation)| {
                entries
                    .get(key)
                    .is_some_and(|entry| entry.generation == *generation)
            });
        }
    }

    /// Drops the entry of `key`.
    pub(crate) fn remove(&mut self, key: &K) {
        self.entries.remove(key);
    }

    /// How many entries the map holds (expired ones included until they are dropped).
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// How many insertion records the queue holds (at most twice the capacity).
    #[cfg(test)]
    pub(crate) fn queue_len(&self) -> usize {
        self.order.len()
    }
}
