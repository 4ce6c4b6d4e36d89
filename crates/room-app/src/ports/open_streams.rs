//! The event streams users hold open over the cluster ([`OpenStreams`]), so that a per-user
//! cap counts every node's streams.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use room_domain::{Timestamp, UserId};

use crate::error::Result;

/// Each user's open streams, one entry per stream with an expiry: a node renews the entries
/// of the streams it serves, so that the entries of a node that died expire and stop counting.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait OpenStreams: Send + Sync {
    /// Counts stream `stream` of `user` as open until `now + ttl` if the user has fewer than
    /// `max` entries unexpired at `now`, in one step however many nodes open at once; answers
    /// whether it was counted.
    async fn open(
        &self,
        user: &UserId,
        stream: &str,
        max: u32,
        now: Timestamp,
        ttl: Duration,
    ) -> Result<bool>;
    /// Keeps stream `stream` of `user` counted until `now + ttl` (counting it again if its
    /// entry expired meanwhile).
    async fn renew(&self, user: &UserId, stream: &str, now: Timestamp, ttl: Duration)
    -> Result<()>;
    /// Stops counting stream `stream` of `user`.
    async fn close(&self, user: &UserId, stream: &str) -> Result<()>;
}

/// Shared handle to [`OpenStreams`].
pub type OpenStreamsRef = Arc<dyn OpenStreams>;
