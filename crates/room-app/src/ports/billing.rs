//! The versions of the billing policy ([`BillingPolicies`]).

use std::sync::Arc;

use async_trait::async_trait;
use room_domain::BillingPolicy;

use crate::error::Result;

/// The billing policy's versions: the newest is the current policy; every older one is kept,
/// for the orders placed under it are billed under it. A version, once stored, never changes.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait BillingPolicies: Send + Sync {
    /// The newest version, or `None` before any was stored.
    async fn current_policy(&self) -> Result<Option<BillingPolicy>>;
    /// The policy of `version`, or `None` if it was never stored.
    async fn get_policy(&self, version: u64) -> Result<Option<BillingPolicy>>;
    /// Stores `policy` as the next version, by compare-and-set: only if the newest stored
    /// version is `policy.version - 1` (none stored, for version 1); otherwise
    /// [`Error::Conflict`](crate::Error::Conflict) and nothing is written. Of two puts of one
    /// version at once, one wins. Version 0 is
    /// [`Error::Invalid`](crate::Error::Invalid). The policy is stored as given: the caller
    /// validates it.
    async fn put_policy(&self, policy: &BillingPolicy) -> Result<()>;
}

/// Shared handle to [`BillingPolicies`].
pub type BillingPoliciesRef = Arc<dyn BillingPolicies>;
