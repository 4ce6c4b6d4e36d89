//! Orders that finished on this node lately ([`FinishedOrders`]): a repeat of one is answered
//! from memory.

use std::collections::HashMap;
use std::sync::Arc;

use room_domain::{GiftOrder, OrderId, UserId};

/// The most finished orders a node remembers for repeats (a few hundred bytes each).
pub const FINISHED_ORDERS_REMEMBERED: usize = 16_384;

/// Finished orders by sender and order id, the oldest forgotten first.
#[derive(Default)]
pub(super) struct FinishedOrders {
    orders: HashMap<(UserId, OrderId), Arc<GiftOrder>>,
    arrival: std::collections::VecDeque<(UserId, OrderId)>,
}

impl FinishedOrders {
    pub(super) fn get(&self, sender: &UserId, order_id: &OrderId) -> Option<Arc<GiftOrder>> {
        // The tuple key needs owned parts; ids are reference counted, so this is cheap.
        self.orders
            .get(&(sender.clone(), order_id.clone()))
            .cloned()
    }

    pub(super) fn remember(&mut self, order: &GiftOrder) {
        let key = (order.sender.clone(), order.order_id.clone());
        if self
            .orders
            .insert(key.clone(), Arc::new(order.clone()))
            .is_none()
        {
            self.arrival.push_back(key);
        }
        while self.arrival.len() > FINISHED_ORDERS_REMEMBERED {
            if let Some(oldest) = self.arrival.pop_front() {
                self.orders.remove(&oldest);
            }
        }
    }
}
