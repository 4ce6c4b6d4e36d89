//! Orders that finished on this node lately ([`FinishedOrders`]): a repeat of one is answered
//! from memory.

use std::collections::HashMap;
use std::sync::Arc;

use room_domain::{GiftOrder, OrderId, UserId};

/// The most finished orders a node remembers for repeats (a few hundred bytes each).
pub const FINISHED_ORDERS_REMEMBERED: usize = 16_384;

/// The most recipients of an order remembered: a batch gift naming more (up to
/// [`MAX_BATCH_RECIPIENTS`](room_domain::MAX_BATCH_RECIPIENTS), twice: whom it paid for and
/// whom it reached) is answered from the store on a repeat, so that the memory stays a few
/// hundred bytes an order whatever clients send.
const MOST_RECIPIENTS_REMEMBERED: usize = room_domain::MAX_RECIPIENTS as usize;

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
        if order.recipients.len() > MOST_RECIPIENTS_REMEMBERED {
            return;
        }
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

#[cfg(test)]
mod tests {
    use room_domain::{ApplyGift, Coins, GiftId, GiftScope, GiftSnapshot, RoomId, Timestamp};

    use super::*;

    fn order(id: &str, recipients: usize) -> GiftOrder {
        let apply = ApplyGift {
            order_id: OrderId::new(id).unwrap(),
            sender: UserId::new("alice").unwrap(),
            recipients: (0..recipients)
                .map(|i| UserId::new(format!("member-{i}")).unwrap())
                .collect(),
            gift: GiftSnapshot {
                gift_id: GiftId::new("rose").unwrap(),
                price: Coins(1),
                heat: 0,
                fuel: 0,
                lucky: false,
                billing_version: None,
            },
            count: 1,
            lucky_draw: 0,
            scope: (recipients > 1).then_some(GiftScope::AllRoom),
        };
        GiftOrder::new(RoomId::new("r").unwrap(), &apply, Timestamp(0)).unwrap()
    }

    #[test]
    fn orders_with_more_recipients_than_a_listed_gift_are_not_kept() {
        let mut finished = FinishedOrders::default();
        let alice = UserId::new("alice").unwrap();
        finished.remember(&order("small", MOST_RECIPIENTS_REMEMBERED));
        finished.remember(&order("batch", MOST_RECIPIENTS_REMEMBERED + 1));
        assert!(
            finished
                .get(&alice, &OrderId::new("small").unwrap())
                .is_some()
        );
        assert!(
            finished
                .get(&alice, &OrderId::new("batch").unwrap())
                .is_none()
        );
    }

    #[test]
    fn at_most_the_bound_of_orders_is_kept_the_oldest_forgotten_first() {
        let mut finished = FinishedOrders::default();
        for i in 0..FINISHED_ORDERS_REMEMBERED + 10 {
            finished.remember(&order(&format!("o-{i}"), 1));
        }
        assert_eq!(finished.orders.len(), FINISHED_ORDERS_REMEMBERED);
        assert_eq!(finished.arrival.len(), FINISHED_ORDERS_REMEMBERED);
        let alice = UserId::new("alice").unwrap();
        assert!(
            finished
                .get(&alice, &OrderId::new("o-9").unwrap())
                .is_none()
        );
        assert!(
            finished
                .get(&alice, &OrderId::new("o-10").unwrap())
                .is_some()
        );
    }
}
