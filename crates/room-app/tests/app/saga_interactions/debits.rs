//! The debit's answer: insufficient funds fail the order with nothing applied or refunded, and
//! a debit of unknown outcome is settled by recovery, applied when the wallet did debit and
//! failed when it voided the debit.

use std::sync::Arc;

use room_app::ports::{DebitStatus, GiftOrders, MockWallet};
use room_app::{Error, GiftReceipt};
use room_domain::{Coins, OrderStatus};

use super::fixtures::{debits_once, later, never_credits};
use crate::support::{World, gift, gifts_in, oid, uid};

#[tokio::test]
async fn insufficient_funds_fail_the_order_without_apply_or_refund() {
    let mut wallet = MockWallet::new();
    wallet
        .expect_debit()
        .times(1)
        .returning(|_, _, _| Err(Error::InsufficientFunds { balance: Coins(5) }));
    // The refusal is made final before the order fails: the operation id is voided once.
    wallet
        .expect_settle_debit()
        .withf(|op| op == "o-1 alice")
        .times(1)
        .returning(|_| Ok(DebitStatus::Void));
    never_credits(&mut wallet);
    let world = World::builder().wallet(Arc::new(wallet)).build().await;
    let room = world.open_room("r1", "alice", &["bob"]).await;
    let version = world.state(&room).await.version;
    let commits = world.probe.commit_calls();

    let request = gift(&room, "alice", "o-1", "rose", 1, &["bob"]);
    let receipt = world.saga().send(request.clone()).await.unwrap();
    assert_eq!(receipt.status, OrderStatus::Failed);
    assert_eq!(receipt.coin_balance_after, Coins(5));
    assert_eq!(receipt.lucky, None);
    assert_eq!(world.probe.commit_calls(), commits, "nothing was applied");
    assert_eq!(world.state(&room).await.version, version);
    let order = GiftOrders::get(&*world.store, &uid("alice"), &oid("o-1"))
        .await
        .unwrap();
    assert_eq!(order.unwrap().status, OrderStatus::Failed);

    // A repeat answers from the order: no second debit.
    assert_eq!(world.saga().send(request).await.unwrap(), receipt);
}

#[tokio::test]
async fn a_debit_of_unknown_outcome_is_settled_by_recovery() {
    let mut wallet = MockWallet::new();
    wallet
        .expect_debit()
        .times(1)
        .returning(|_, _, _| Err(Error::Unavailable("wallet timeout".into())));
    wallet
        .expect_settle_debit()
        .withf(|op| op == "o-1 alice")
        .times(1)
        .returning(|_| Ok(DebitStatus::Debited));
    // Recovery repeats the debit that happened, under its operation id, for its balance after.
    debits_once(&mut wallet, "o-1", 10, 90);
    never_credits(&mut wallet);
    let world = World::builder().wallet(Arc::new(wallet)).build().await;
    let room = world.open_room("r1", "alice", &["bob"]).await;

    let error = world
        .saga()
        .send(gift(&room, "alice", "o-1", "rose", 1, &["bob"]))
        .await
        .unwrap_err();
    assert!(error.is_retryable(), "{error:?}");
    let order = GiftOrders::get(&*world.store, &uid("alice"), &oid("o-1"))
        .await
        .unwrap();
    assert_eq!(order.unwrap().status, OrderStatus::Pending);
    assert!(gifts_in(&world.log(&room).await).is_empty());

    // The wallet says it did debit: recovery applies the gift, and refunds nothing.
    let report = world.saga().recover(later(), 10).await.unwrap();
    assert_eq!((report.examined, report.settled), (1, 1));
    let order = GiftOrders::get(&*world.store, &uid("alice"), &oid("o-1"))
        .await
        .unwrap();
    assert_eq!(order.unwrap().status, OrderStatus::Completed);
    assert_eq!(gifts_in(&world.log(&room).await).len(), 1);
    // A repeat is answered from the order, with the debit's own balance after.
    let receipt = world
        .saga()
        .send(gift(&room, "alice", "o-1", "rose", 1, &["bob"]))
        .await
        .unwrap();
    assert_eq!(receipt.coin_balance_after, Coins(90));
}

#[tokio::test]
async fn a_debit_recovery_finds_void_fails_the_order_without_apply() {
    let mut wallet = MockWallet::new();
    wallet
        .expect_debit()
        .times(1)
        .returning(|_, _, _| Err(Error::Unavailable("wallet timeout".into())));
    wallet
        .expect_settle_debit()
        .times(1)
        .returning(|_| Ok(DebitStatus::Void));
    // The balance is read once, by recovery; repeats answer from the order.
    wallet
        .expect_balance()
        .times(1)
        .returning(|_| Ok(Coins(100)));
    never_credits(&mut wallet);
    let world = World::builder().wallet(Arc::new(wallet)).build().await;
    let room = world.open_room("r1", "alice", &["bob"]).await;
    let request = gift(&room, "alice", "o-1", "rose", 1, &["bob"]);
    world.saga().send(request.clone()).await.unwrap_err();
    let commits = world.probe.commit_calls();

    let report = world.saga().recover(later(), 10).await.unwrap();
    assert_eq!((report.examined, report.settled), (1, 1));
    assert_eq!(world.probe.commit_calls(), commits, "nothing was applied");
    let receipt: GiftReceipt = world.saga().send(request.clone()).await.unwrap();
    assert_eq!(receipt.status, OrderStatus::Failed);
    assert_eq!(receipt.coin_balance_after, Coins(100));
    assert_eq!(world.saga().send(request).await.unwrap(), receipt);
}
