//! The room lists' cache ([`ListCache`]): the newest ranking of every room list the
//! refresher computed, shared by the nodes of a cluster. The body is opaque to the cache: the
//! room lists encode and decode it.

use std::sync::Arc;

use async_trait::async_trait;

use crate::error::Result;

/// The largest body [`ListCache::put`] stores: 64 MiB.
pub const MAX_LIST_CACHE_BYTES: usize = 64 * 1024 * 1024;

/// One generation of the room lists, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedLists {
    /// The generation: larger is newer.
    pub generation: u64,
    /// The encoded lists.
    pub body: Vec<u8>,
}

/// Where the refresher leaves the room lists for every node to read.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait ListCache: Send + Sync {
    /// Stores `body` as generation `generation`, unless the cache holds that generation or a
    /// newer one (a refresher that fell behind never replaces newer lists): answers whether
    /// it stored. The check and the write are one step. A body over
    /// [`MAX_LIST_CACHE_BYTES`]: [`Error::Invalid`](crate::Error::Invalid), nothing stored.
    async fn put(&self, generation: u64, body: &[u8]) -> Result<bool>;
    /// The stored lists if their generation is newer than `newer_than` (whatever is stored,
    /// without it); `None` when nothing newer is stored.
    async fn get_newer(&self, newer_than: Option<u64>) -> Result<Option<CachedLists>>;
}

/// Shared handle to [`ListCache`].
pub type ListCacheRef = Arc<dyn ListCache>;
