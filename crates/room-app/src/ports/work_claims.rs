//! Claims on background work ([`WorkClaims`]) among the processes that share a store.

use std::sync::Arc;

use async_trait::async_trait;
use room_domain::Timestamp;

use crate::error::Result;

/// Exclusive claims on named pieces of background work among the processes that share a
/// store, each with an expiry: a claimer that crashed loses its claims when they expire, and
/// the work comes back to whoever claims it next.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait WorkClaims: Send + Sync {
    /// Gives `name` to `owner` until `until` if nobody holds it, its claim expired by `now`,
    /// or `owner` holds it already (the claim is then extended); answers whether `owner`
    /// holds it now.
    async fn claim(
        &self,
        name: &str,
        owner: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> Result<bool>;
    /// Gives `name` up if `owner` holds it; another owner's claim is left alone.
    async fn release(&self, name: &str, owner: &str) -> Result<()>;
}

/// Shared handle to [`WorkClaims`].
pub type WorkClaimsRef = Arc<dyn WorkClaims>;
