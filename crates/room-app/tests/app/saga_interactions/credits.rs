//! What the saga credits: a refund exactly once after a definite rejection (retried when it
//! fails), and a lucky reward exactly once (the order left applied and retryable when the
//! wallet refuses it).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use room_app::Error;
use room_app::ports::{CreditKind, GiftOrders, MockWallet};
use room_domain::{Coins, OrderStatus, Rejection};

use super::fixtures::debits_once;
use crate::support::{LUCKY_MULTIPLIER, World, gift, gifts_in, oid, uid};

#[tokio::test]
async fn a_definite_rejection_refunds_exactly_once() {
    let mut wallet = MockWallet::new();
    debits_once(&mut wallet, "o-1", 20, 80);
    wallet
        .expect_credit()
        .withf(|op, kind, who, coins| {
            op == "o-1 alice"
                && *kind == CreditKind::Refund
                && *who == uid("alice")
                && *coins == Coins(20)
        })
        .times(1)
        .returning(|_, _, _, _| Ok(Coins(100)));
    let world = World::builder().wallet(Arc::new(wallet)).build().await;
    let room = world.open_room("r1", "alice", &["bob"]).await;

    // Carol is not in the room: only the room can tell, after the debit.
    let request = gift(&room, "alice", "o-1", "rose", 2, &["carol"]);
    let receipt = world.saga().send(request.clone()).await.unwrap();
    assert_eq!(receipt.status, OrderStatus::Compensated);
    assert_eq!(
        receipt.rejection,
        Some(Rejection::NotAMember { user: uid("carol") })
    );
    assert_eq!(receipt.coin_balance_after, Coins(100));

    // A repeat answers the same and moves nothing (the mock allows one refund only).
    assert_eq!(world.saga().send(request).await.unwrap(), receipt);
    let stored = GiftOrders::get(&*world.store, &uid("alice"), &oid("o-1"))
        .await
        .unwrap();
    assert_eq!(stored.unwrap().status, OrderStatus::Compensated);
    assert!(gifts_in(&world.log(&room).await).is_empty());
}

/// Whether a credit is order o-1's lucky reward of `reward` coins to alice.
fn is_lucky_reward_of_o1(
    op: &str,
    kind: CreditKind,
    who: &room_domain::UserId,
    coins: Coins,
    reward: i64,
) -> bool {
    op == "o-1 alice"
        && kind == CreditKind::LuckyReward
        && *who == uid("alice")
        && coins == Coins(reward)
}

#[tokio::test]
async fn a_lucky_gift_credits_its_reward_exactly_once() {
    let reward = 10 * i64::from(LUCKY_MULTIPLIER);
    let mut wallet = MockWallet::new();
    debits_once(&mut wallet, "o-1", 10, 90);
    wallet
        .expect_credit()
        .withf(move |op, kind, who, coins| is_lucky_reward_of_o1(op, *kind, who, *coins, reward))
        .times(1)
        .returning(move |_, _, _, _| Ok(Coins(90 + reward)));
    let world = World::builder().wallet(Arc::new(wallet)).build().await;
    let room = world.open_room("r1", "alice", &["bob"]).await;

    let request = gift(&room, "alice", "o-1", "clover", 1, &["bob"]);
    let receipt = world.saga().send(request.clone()).await.unwrap();
    assert_eq!(receipt.status, OrderStatus::Completed);
    assert_eq!(receipt.coin_balance_after, Coins(90 + reward));
    let lucky = receipt.lucky.expect("a lucky outcome");
    assert_eq!(
        (lucky.multiplier, lucky.reward),
        (LUCKY_MULTIPLIER, Coins(reward))
    );
    assert_eq!(world.saga().send(request).await.unwrap(), receipt);
    assert_eq!(gifts_in(&world.log(&room).await).len(), 1);
}

/// The room applied the gift and the coins moved: a wallet that refuses the reward (a balance
/// that would overflow) is no answer to the request. The sender is told to retry, the order
/// stays APPLIED, and a later drive credits the reward once.
#[tokio::test]
async fn a_refused_reward_credit_leaves_the_order_applied_and_retryable() {
    let reward = 10 * i64::from(LUCKY_MULTIPLIER);
    let mut wallet = MockWallet::new();
    debits_once(&mut wallet, "o-1", 10, 90);
    let attempts = Arc::new(AtomicUsize::new(0));
    let counted = attempts.clone();
    wallet
        .expect_credit()
        .withf(move |op, kind, who, coins| is_lucky_reward_of_o1(op, *kind, who, *coins, reward))
        .times(2)
        .returning(move |_, _, _, _| {
            if counted.fetch_add(1, Ordering::SeqCst) == 0 {
                Err(Error::Invalid("balance overflow".into()))
            } else {
                Ok(Coins(90 + reward))
            }
        });
    let world = World::builder().wallet(Arc::new(wallet)).build().await;
    let room = world.open_room("r1", "alice", &["bob"]).await;

    let request = gift(&room, "alice", "o-1", "clover", 1, &["bob"]);
    let refused = world.saga().send(request.clone()).await.unwrap_err();
    assert!(refused.is_retryable(), "{refused:?}");
    let stored = GiftOrders::get(&*world.store, &uid("alice"), &oid("o-1"))
        .await
        .unwrap();
    assert_eq!(stored.unwrap().status, OrderStatus::Applied);

    let receipt = world.saga().send(request).await.unwrap();
    assert_eq!(receipt.status, OrderStatus::Completed);
    assert_eq!(receipt.coin_balance_after, Coins(90 + reward));
    assert_eq!(attempts.load(Ordering::SeqCst), 2);
    assert_eq!(gifts_in(&world.log(&room).await).len(), 1);
}

#[tokio::test]
async fn a_failed_refund_is_retried_and_refunds_once() {
    let mut wallet = MockWallet::new();
    debits_once(&mut wallet, "o-1", 10, 90);
    let refunds = Arc::new(AtomicUsize::new(0));
    let counted = refunds.clone();
    wallet
        .expect_credit()
        .withf(|op, kind, _, coins| {
            op == "o-1 alice" && *kind == CreditKind::Refund && *coins == Coins(10)
        })
        .times(2)
        .returning(
            move |_, _, _, _| match counted.fetch_add(1, Ordering::SeqCst) {
                0 => Err(Error::Unavailable("wallet timeout".into())),
                _ => Ok(Coins(100)),
            },
        );
    let world = World::builder().wallet(Arc::new(wallet)).build().await;
    let room = world.open_room("r1", "alice", &["bob"]).await;
    let request = gift(&room, "alice", "o-1", "rose", 1, &["carol"]);

    let error = world.saga().send(request.clone()).await.unwrap_err();
    assert!(error.is_retryable(), "{error:?}");
    let order = GiftOrders::get(&*world.store, &uid("alice"), &oid("o-1"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(order.status, OrderStatus::Debited);
    assert!(order.rejection.is_some(), "the rejection is remembered");

    let receipt = world.saga().send(request.clone()).await.unwrap();
    assert_eq!(receipt.status, OrderStatus::Compensated);
    assert_eq!(world.saga().send(request).await.unwrap(), receipt);
    assert_eq!(refunds.load(Ordering::SeqCst), 2);
}
