//! Claims on background work ([`WorkClaims`]) among the processes that share a store.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use room_domain::Timestamp;

use crate::error::Result;

/// Exclusive claims on named pieces of background work among the processes that share a
/// store, each with an expiry: a claimer that crashed loses its claims when they expire, and
/// the work comes back to whoever claims it next. Expiries are kept and compared by the
/// store's own clock, never a claimer's: a process whose clock runs ahead of the others' must
/// not take a claim that is still live.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait WorkClaims: Send + Sync {
    /// Gives `name` to `owner` for `ttl` from now by the store's clock if nobody holds it,
    /// its claim has expired by that clock, or `owner` holds it already (the claim is then
    /// extended, or shortened); answers whether `owner` holds it now.
    async fn claim(&self, name: &str, owner: &str, ttl: Duration) -> Result<bool>;
    /// Now by the store's clock, the one every process sharing the store reads alike: what
    /// claims expire by, and what the ages of shared records (the gift recovery's age) are
    /// measured against.
    async fn now(&self) -> Result<Timestamp>;
    /// Gives `name` up if `owner` holds it; another owner's claim is left alone.
    async fn release(&self, name: &str, owner: &str) -> Result<()>;
}

/// Shared handle to [`WorkClaims`].
pub type WorkClaimsRef = Arc<dyn WorkClaims>;
