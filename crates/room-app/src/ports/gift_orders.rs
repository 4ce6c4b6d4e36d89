//! Gift orders ([`GiftOrders`]), the gift saga's memory, and the cursor their listing pages
//! with.

use std::sync::Arc;

use async_trait::async_trait;
use room_domain::{GiftOrder, OrderId, OrderStatus, Timestamp, UserId};

use crate::error::Result;

/// Gift orders, the saga's memory. An order is keyed by its sender and its order id: order ids
/// are chosen by clients, so two senders may use the same one, and neither can claim or probe
/// the other's.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait GiftOrders: Send + Sync {
    /// Stores a new order, or returns the stored one with this sender and order id. The flag
    /// says whether this call created it.
    async fn create_or_get(&self, order: &GiftOrder) -> Result<(GiftOrder, bool)>;
    /// The order of `sender` with this order id.
    async fn get(&self, sender: &UserId, order_id: &OrderId) -> Result<Option<GiftOrder>>;
    /// Replaces the order (found by its sender and order id) if its stored status is still
    /// `expected`, else [`Error::Conflict`](crate::Error::Conflict).
    async fn update(&self, order: &GiftOrder, expected: OrderStatus) -> Result<()>;
    /// Unfinished orders (not COMPLETED, FAILED or COMPENSATED) created before `before`, in
    /// [`OrderCursor`] order (oldest first, ties by order id, then sender), after `after` if
    /// given, at most `limit`. Paging with the cursor of each page's last order lists every
    /// order once, even while listed orders finish between pages.
    async fn list_unfinished(
        &self,
        before: Timestamp,
        after: Option<OrderCursor>,
        limit: u32,
    ) -> Result<Vec<GiftOrder>>;
}

/// A position in [`GiftOrders::list_unfinished`]: the creation time, order id and sender of
/// the last order seen. Orders sort by creation time, then by order id, then by sender (byte
/// order).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OrderCursor {
    /// The order's creation time.
    pub created_at: Timestamp,
    /// The order's id.
    pub order_id: OrderId,
    /// The order's sender.
    pub sender: UserId,
}

impl OrderCursor {
    /// The position of `order`: the next page starts after it.
    pub fn of(order: &GiftOrder) -> Self {
        OrderCursor {
            created_at: order.created_at,
            order_id: order.order_id.clone(),
            sender: order.sender.clone(),
        }
    }
}

/// Shared handle to [`GiftOrders`].
pub type GiftOrdersRef = Arc<dyn GiftOrders>;
