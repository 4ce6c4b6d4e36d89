//! A gift request ([`SendGift`]) and its answer ([`GiftReceipt`]), and the rule that a
//! repeated order id names the same request.

use room_domain::{
    Coins, GiftId, GiftOrder, GiftScope, LuckyOutcome, OrderId, OrderStatus, Rejection, RoomId,
    UserId,
};
use serde::Serialize;

use crate::error::{Error, Result};

/// A client's request to send a gift.
#[derive(Debug, Clone)]
pub struct SendGift {
    /// The room.
    pub room_id: RoomId,
    /// Who pays.
    pub sender: UserId,
    /// The client's idempotency key.
    pub order_id: OrderId,
    /// The catalog gift.
    pub gift_id: GiftId,
    /// Units per recipient.
    pub count: u32,
    /// Who receives; empty for a batch gift.
    pub recipients: Vec<UserId>,
    /// A batch gift: every seat holder, or every member, but the sender. The saga pays for
    /// whom the scope names as the order is placed; the room gives it to whom it names as it
    /// applies the gift (no more), and the rest is refunded.
    pub scope: Option<GiftScope>,
}

/// The answer to a gift request; the same for every repeat of one order id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GiftReceipt {
    /// The order.
    pub order_id: OrderId,
    /// Where it ended (or stands, if still unfinished).
    pub status: OrderStatus,
    /// The sender's balance after the order, lucky reward included.
    pub coin_balance_after: Coins,
    /// Whom the gift reached, once applied: the recipients, or whom a batch gift's scope named
    /// when the room applied it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recipients: Option<Vec<UserId>>,
    /// Coins refunded because a batch gift reached fewer than it was paid for (already in
    /// `coin_balance_after`); zero otherwise.
    pub refunded: Coins,
    /// The lucky draw, for lucky gifts that were applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lucky: Option<LuckyOutcome>,
    /// Why the room refused it, for FAILED and COMPENSATED orders.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rejection: Option<Rejection>,
    /// Why a FAILED order failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fail_reason: Option<room_domain::FailReason>,
}

/// A repeated order id must name the same gift request.
pub(super) fn same_request(order: &GiftOrder, request: &SendGift) -> Result<()> {
    // A batch gift's order holds whom it paid for, which its request did not name.
    let same_recipients = match request.scope {
        None => order.scope.is_none() && order.recipients == request.recipients,
        Some(scope) => order.scope == Some(scope),
    };
    let same = order.room_id == request.room_id
        && order.sender == request.sender
        && order.gift.gift_id == request.gift_id
        && order.count == request.count
        && same_recipients;
    if same {
        Ok(())
    } else {
        Err(Error::OrderIdReused(request.order_id.clone()))
    }
}
