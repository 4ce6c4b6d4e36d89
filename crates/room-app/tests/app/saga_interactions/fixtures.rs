//! What the saga interaction tests share: a mock wallet's expected debits and credits,
//! alice's wallet operation ids, a time after the orders were made, and the stored order of a
//! request.

use room_app::ports::MockWallet;
use room_domain::{ApplyGift, Coins, GiftOrder, GiftSnapshot, Timestamp};

use crate::support::uid;

/// A wallet asked `times` to take `amount` from alice under `order`, answering `after` each
/// time (a repeat under the same operation id moves nothing and answers the first balance).
pub(super) fn debits(
    wallet: &mut MockWallet,
    order: &'static str,
    amount: i64,
    after: i64,
    times: usize,
) {
    wallet
        .expect_debit()
        .withf(move |op, who, coins| {
            op == alice_op(order) && *who == uid("alice") && *coins == Coins(amount)
        })
        .times(times)
        .returning(move |_, _, _| Ok(Coins(after)));
}

/// A wallet that takes `amount` from alice under `order` once, answering `after`.
pub(super) fn debits_once(wallet: &mut MockWallet, order: &'static str, amount: i64, after: i64) {
    debits(wallet, order, amount, after, 1);
}

/// The wallet operation id of alice's order `order`.
pub(super) fn alice_op(order: &str) -> String {
    format!("{order} alice")
}

pub(super) fn never_credits(wallet: &mut MockWallet) {
    wallet.expect_credit().never();
}

pub(super) fn later() -> Timestamp {
    Timestamp(crate::support::T0.0 + 1)
}

pub(super) fn order_for(request: &room_app::SendGift) -> GiftOrder {
    let apply = ApplyGift {
        order_id: request.order_id.clone(),
        sender: request.sender.clone(),
        recipients: request.recipients.clone(),
        gift: GiftSnapshot {
            gift_id: request.gift_id.clone(),
            price: Coins(10),
            heat: 10,
            fuel: 0,
            lucky: false,
            billing_version: None,
        },
        count: request.count,
        lucky_draw: 0,
        scope: None,
    };
    GiftOrder::new(request.room_id.clone(), &apply, crate::support::T0).unwrap()
}
