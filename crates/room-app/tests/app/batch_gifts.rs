//! Batch gifts (`all_mic`, `all_room`): the sender pays for whom the scope names as the order
//! is placed, the room gives the gift to whom it names as it applies it (never more), and the
//! rest is refunded within the same order. Coins are conserved throughout.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use room_app::ports::{Clock, GiftOrders};
use room_app::{CellConfig, Error, GiftReceipt, SendGift};
use room_domain::{
    Coins, CommandKind, GiftScope, OrderStatus, Rejection, RoomId, RoomRules, SeatIndex, UserId,
};

use crate::support::{
    GatedWallet, LUCKY_MULTIPLIER, World, batch_gift, gift, gifts_in, oid, rules, uid, user,
};

fn take_seat(seat: u8) -> CommandKind {
    CommandKind::TakeSeat {
        seat: SeatIndex(seat),
    }
}

fn names(users: &[UserId]) -> Vec<&str> {
    users.iter().map(UserId::as_str).collect()
}

/// Sends `request` and, while its debit waits at the wallet's gate (the order is placed: its
/// recipients are resolved and paid for), has `who` run `change` in `room`; then lets the
/// debit through.
async fn send_while(
    world: &World,
    wallet: &GatedWallet,
    request: SendGift,
    room: &RoomId,
    who: &str,
    change: CommandKind,
) -> room_app::Result<GiftReceipt> {
    let send = world.saga().send(request);
    let meanwhile = async {
        wallet.entered.notified().await;
        world.exec(room, user(who), change).await.unwrap();
        wallet.gate.notify_one();
    };
    tokio::join!(send, meanwhile).0
}

/// Alice's balance in the gated wallet.
async fn balance(wallet: &GatedWallet) -> Coins {
    room_app::ports::Wallet::balance(wallet, &uid("alice"))
        .await
        .unwrap()
}

#[tokio::test]
async fn all_mic_reaches_every_seat_holder_but_the_sender_and_charges_for_them() {
    let world = World::new().await;
    world.fund("alice", 1_000).await;
    let room = world
        .open_room("r1", "alice", &["bob", "carol", "dave"])
        .await;
    // Seats in an order other than the joins': the gift goes by seat.
    for (name, seat) in [("alice", 0), ("dave", 1), ("bob", 2)] {
        world
            .exec(&room, user(name), take_seat(seat))
            .await
            .unwrap();
    }
    let receipt = world
        .saga()
        .send(batch_gift(
            &room,
            "alice",
            "o-1",
            "rose",
            2,
            GiftScope::AllMic,
        ))
        .await
        .unwrap();
    assert_eq!(receipt.status, OrderStatus::Completed);
    assert_eq!(
        names(receipt.recipients.as_deref().unwrap()),
        ["dave", "bob"]
    );
    assert_eq!(receipt.refunded, Coins::ZERO);
    // 10 coins × 2 units × 2 seat holders; carol, in the room but not on a seat, gets nothing.
    assert_eq!(receipt.coin_balance_after, Coins(960));
    assert_eq!(world.balance("alice").await, Coins(960));
    let sent = gifts_in(&world.log(&room).await);
    assert_eq!(sent.len(), 1);
    assert_eq!(names(&sent[0].recipients), ["dave", "bob"]);
    assert_eq!(sent[0].total_value, Coins(40));

    // A repeat is answered the same; the same order id for a listed gift is another request.
    let repeat = world
        .saga()
        .send(batch_gift(
            &room,
            "alice",
            "o-1",
            "rose",
            2,
            GiftScope::AllMic,
        ))
        .await
        .unwrap();
    assert_eq!(repeat, receipt);
    let reused = world
        .saga()
        .send(gift(&room, "alice", "o-1", "rose", 2, &["dave", "bob"]))
        .await;
    assert!(matches!(reused, Err(Error::OrderIdReused(_))), "{reused:?}");
    let reused = world
        .saga()
        .send(batch_gift(
            &room,
            "alice",
            "o-1",
            "rose",
            2,
            GiftScope::AllRoom,
        ))
        .await;
    assert!(matches!(reused, Err(Error::OrderIdReused(_))), "{reused:?}");
    assert_eq!(world.balance("alice").await, Coins(960));
}

#[tokio::test]
async fn a_seat_holder_who_stands_up_before_the_room_applies_the_gift_is_not_charged_for() {
    let (world, wallet) = GatedWallet::world_with(1_000).await;
    let room = world
        .open_room("r1", "alice", &["bob", "carol", "dave"])
        .await;
    for (name, seat) in [("bob", 0), ("carol", 1), ("dave", 2)] {
        world
            .exec(&room, user(name), take_seat(seat))
            .await
            .unwrap();
    }
    // The order is placed for bob, carol and dave (30 coins); carol stands up before the
    // room applies it.
    let receipt = send_while(
        &world,
        &wallet,
        batch_gift(&room, "alice", "o-1", "rose", 1, GiftScope::AllMic),
        &room,
        "carol",
        CommandKind::LeaveSeat { seat: SeatIndex(1) },
    )
    .await;
    let receipt = receipt.unwrap();
    assert_eq!(receipt.status, OrderStatus::Completed);
    assert_eq!(
        names(receipt.recipients.as_deref().unwrap()),
        ["bob", "dave"]
    );
    assert_eq!(receipt.refunded, Coins(10));
    assert_eq!(receipt.coin_balance_after, Coins(980));
    assert_eq!(balance(&wallet).await, Coins(980));

    let order = GiftOrders::get(&*world.store, &uid("alice"), &oid("o-1"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(names(&order.recipients), ["bob", "carol", "dave"]);
    assert_eq!(order.total, Coins(30));
    assert_eq!(order.spent(), Coins(20));
    assert!(order.partial_refunded);
    let sent = gifts_in(&world.log(&room).await);
    assert_eq!(names(&sent[0].recipients), ["bob", "dave"]);
    assert_eq!(sent[0].total_value, Coins(20));
}

#[tokio::test]
async fn a_lucky_batch_gift_draws_on_what_it_gave_and_is_refunded_the_rest() {
    let (world, wallet) = GatedWallet::world_with(1_000).await;
    let room = world
        .open_room("r1", "alice", &["bob", "carol", "dave"])
        .await;
    let receipt = send_while(
        &world,
        &wallet,
        batch_gift(&room, "alice", "o-1", "clover", 1, GiftScope::AllRoom),
        &room,
        "dave",
        CommandKind::Leave,
    )
    .await;
    let receipt = receipt.unwrap();
    assert_eq!(receipt.status, OrderStatus::Completed);
    assert_eq!(
        names(receipt.recipients.as_deref().unwrap()),
        ["bob", "carol"]
    );
    assert_eq!(receipt.refunded, Coins(10));
    let lucky = receipt.lucky.expect("a lucky gift draws");
    // 20 coins given, drawn at the tests' multiplier; 30 debited, 10 refunded.
    assert_eq!(lucky.multiplier, LUCKY_MULTIPLIER);
    assert_eq!(lucky.reward, Coins(20 * i64::from(LUCKY_MULTIPLIER)));
    assert_eq!(
        balance(&wallet).await,
        Coins(1_000 - 30 + 10 + 20 * i64::from(LUCKY_MULTIPLIER))
    );
}

#[tokio::test]
async fn all_room_over_the_cap_reaches_seat_holders_first_then_the_earliest_to_join() {
    let config = CellConfig {
        rules: Arc::new(RoomRules {
            max_batch_recipients: 3,
            ..rules()
        }),
        ..crate::support::config()
    };
    let world = World::builder().config(config).build().await;
    world.fund("alice", 1_000).await;
    let room = world
        .open_room("r1", "alice", &["bob", "carol", "dave", "erin"])
        .await;
    world.exec(&room, user("erin"), take_seat(4)).await.unwrap();
    let receipt = world
        .saga()
        .send(batch_gift(
            &room,
            "alice",
            "o-1",
            "rose",
            1,
            GiftScope::AllRoom,
        ))
        .await
        .unwrap();
    assert_eq!(receipt.status, OrderStatus::Completed);
    // The cap is 3 of the 4 others: erin (on a seat), then bob and carol, who joined first.
    assert_eq!(
        names(receipt.recipients.as_deref().unwrap()),
        ["erin", "bob", "carol"]
    );
    assert_eq!(world.balance("alice").await, Coins(970));
}

#[tokio::test]
async fn a_room_with_nobody_but_the_sender_refuses_a_batch_gift_before_any_coin_moves() {
    let world = World::new().await;
    world.fund("alice", 1_000).await;
    let room = world.open_room("r1", "alice", &["bob"]).await;
    for scope in [GiftScope::AllMic, GiftScope::AllRoom] {
        let order = format!("o-{}", scope.as_str());
        if scope == GiftScope::AllRoom {
            world
                .exec(&room, user("bob"), CommandKind::Leave)
                .await
                .unwrap();
        }
        // The sender alone on a seat: nobody else holds one (all_mic), nor is in the room.
        world.exec(&room, user("alice"), take_seat(0)).await.ok();
        let refused = world
            .saga()
            .send(batch_gift(&room, "alice", &order, "rose", 1, scope))
            .await;
        assert!(
            matches!(refused, Err(Error::Rejected(Rejection::NoRecipients))),
            "{scope:?}: {refused:?}"
        );
        let stored = GiftOrders::get(&*world.store, &uid("alice"), &oid(&order))
            .await
            .unwrap();
        assert!(stored.is_none(), "no order is stored: {stored:?}");
    }
    assert_eq!(world.balance("alice").await, Coins(1_000));
}

#[tokio::test]
async fn a_batch_gift_whose_recipients_all_left_before_the_apply_is_refunded_whole() {
    let (world, wallet) = GatedWallet::world_with(1_000).await;
    let room = world.open_room("r1", "alice", &["bob"]).await;
    let receipt = send_while(
        &world,
        &wallet,
        batch_gift(&room, "alice", "o-1", "rose", 1, GiftScope::AllRoom),
        &room,
        "bob",
        CommandKind::Leave,
    )
    .await;
    let receipt = receipt.unwrap();
    assert_eq!(receipt.status, OrderStatus::Compensated);
    assert_eq!(receipt.rejection, Some(Rejection::NoRecipients));
    assert_eq!(receipt.recipients, None);
    assert_eq!(balance(&wallet).await, Coins(1_000));
    assert!(gifts_in(&world.log(&room).await).is_empty());
}

#[tokio::test]
async fn a_batch_gift_from_someone_outside_the_room_is_refused() {
    let world = World::new().await;
    world.fund("zed", 1_000).await;
    let room = world.open_room("r1", "alice", &["bob"]).await;
    let refused = world
        .saga()
        .send(batch_gift(
            &room,
            "zed",
            "o-1",
            "rose",
            1,
            GiftScope::AllRoom,
        ))
        .await;
    assert!(
        matches!(refused, Err(Error::Rejected(Rejection::NotAMember { .. }))),
        "{refused:?}"
    );
    let refused = world
        .saga()
        .send(batch_gift(
            &room,
            "bob",
            "o-2",
            "rose",
            0,
            GiftScope::AllRoom,
        ))
        .await;
    assert!(
        matches!(
            refused,
            Err(Error::Rejected(Rejection::InvalidGiftCount { .. }))
        ),
        "{refused:?}"
    );
}

/// A partial refund the wallet cannot take yet leaves the order APPLIED with the refund owed;
/// recovery credits it, once, and every repeat of the order is answered as it ended.
#[tokio::test]
async fn a_partial_refund_that_fails_is_owed_until_recovery_credits_it_once() {
    let (world, wallet) = GatedWallet::world_with(1_000).await;
    let room = world.open_room("r1", "alice", &["bob", "carol"]).await;
    for (name, seat) in [("bob", 0), ("carol", 1)] {
        world
            .exec(&room, user(name), take_seat(seat))
            .await
            .unwrap();
    }
    // Placed for bob and carol; carol stands up before the room applies it, and the wallet
    // is away for the refund of her share.
    wallet.failing_refunds.store(1, Ordering::SeqCst);
    let request = batch_gift(&room, "alice", "o-1", "rose", 1, GiftScope::AllMic);
    let first = send_while(
        &world,
        &wallet,
        request.clone(),
        &room,
        "carol",
        CommandKind::LeaveSeat { seat: SeatIndex(1) },
    )
    .await;
    assert!(first.unwrap_err().is_retryable());
    let order = GiftOrders::get(&*world.store, &uid("alice"), &oid("o-1"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(order.status, OrderStatus::Applied);
    assert_eq!(
        (order.partial_refund, order.partial_refunded),
        (Coins(10), false)
    );
    assert_eq!(balance(&wallet).await, Coins(980));

    world.clock.advance_secs(600);
    let report = world.saga().recover(world.clock.now(), 10).await.unwrap();
    assert_eq!(report.settled, 1, "{report:?}");
    assert_eq!(balance(&wallet).await, Coins(990));
    for _ in 0..2 {
        let receipt = world.saga().send(request.clone()).await.unwrap();
        assert_eq!(receipt.status, OrderStatus::Completed);
        assert_eq!(names(receipt.recipients.as_deref().unwrap()), ["bob"]);
        assert_eq!(receipt.refunded, Coins(10));
        assert_eq!(receipt.coin_balance_after, Coins(990));
    }
    world.saga().recover(world.clock.now(), 10).await.unwrap();
    assert_eq!(wallet.refunds.load(Ordering::SeqCst), 1);
    assert_eq!(balance(&wallet).await, Coins(990));
}
