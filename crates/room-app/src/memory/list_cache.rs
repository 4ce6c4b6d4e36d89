//! [`MemoryListCache`]: the room lists' cache of a single process, one generation behind one
//! lock.

use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;

use crate::error::{Error, Result};
use crate::ports::{CachedLists, ListCache, MAX_LIST_CACHE_BYTES};

/// The room lists' cache in memory: for the embedded single-node mode and for tests. It
/// passes the list cache's conformance suite. Cheap to clone: clones share the lists.
#[derive(Debug, Clone, Default)]
pub struct MemoryListCache {
    stored: Arc<Mutex<Option<CachedLists>>>,
}

impl MemoryListCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Option<CachedLists>> {
        // A put replaces the lists in one assignment: a panic elsewhere cannot leave them
        // half written.
        self.stored.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[async_trait]
impl ListCache for MemoryListCache {
    async fn put(&self, generation: u64, body: &[u8]) -> Result<bool> {
        if body.len() > MAX_LIST_CACHE_BYTES {
            return Err(Error::Invalid(format!(
                "room lists of {} bytes are over the cache's {MAX_LIST_CACHE_BYTES}",
                body.len()
            )));
        }
        let mut stored = self.lock();
        if stored.as_ref().is_some_and(|s| s.generation >= generation) {
            return Ok(false);
        }
        *stored = Some(CachedLists {
            generation,
            body: body.to_vec(),
        });
        Ok(true)
    }

    async fn get_newer(&self, newer_than: Option<u64>) -> Result<Option<CachedLists>> {
        Ok(self
            .lock()
            .as_ref()
            .filter(|s| newer_than.is_none_or(|g| s.generation > g))
            .cloned())
    }
}
