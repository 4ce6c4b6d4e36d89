//! Where each named consumer of the durable facts stands in the outbox
//! ([`ConsumerPositions`]), when it reads them from the store rather than from a broker.

use std::sync::Arc;

use async_trait::async_trait;

use crate::error::Result;

/// Each named consumer's position in the outbox: the id of the outbox row up to which it has
/// handled every fact (ids rise in commit order). A position moves only by compare-and-set,
/// so that a consumer that lost its claim and did not notice cannot move it back or past a
/// gap it never saw.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait ConsumerPositions: Send + Sync {
    /// `consumer`'s position, or `None` before it stored one (it starts before every row).
    async fn get_position(&self, consumer: &str) -> Result<Option<i64>>;
    /// Moves `consumer`'s position to `to` if it is still `from` (`None`: no position stored
    /// yet); answers whether it moved. Another position, or one stored when `from` is `None`,
    /// leaves it as it is.
    async fn advance_position(&self, consumer: &str, from: Option<i64>, to: i64) -> Result<bool>;
}

/// Shared handle to [`ConsumerPositions`].
pub type ConsumerPositionsRef = Arc<dyn ConsumerPositions>;
