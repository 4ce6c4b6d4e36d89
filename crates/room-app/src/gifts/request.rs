//! A gift request ([`SendGift`]) and its answer ([`GiftReceipt`]), and the rule that a
//! repeated order id names the same request.

use room_domain::{
    Coins, GiftId, GiftOrder, LuckyOutcome, OrderId, OrderStatus, Rejection, RoomId, UserId,
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
    /// Who receives.
    pub recipients: Vec<UserId>,
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
    let same = order.room_id == request.room_id
        && order.sender == request.sender
        && order.gift.gift_id == request.gift_id
        && order.count == request.count
        && order.recipients == request.recipients;
    if same {
        Ok(())
    } else {
        Err(Error::OrderIdReused(request.order_id.clone()))
    }
}
