//! What a recovery pass settles: a page of deferred orders does not hide a newer one, and an
//! order of a room another node owns is left to that node.

use std::sync::Arc;

use room_app::Error;
use room_app::ports::{Clock, DebitStatus, GiftOrders, MockLease, MockWallet};
use room_domain::{Coins, OrderStatus, SagaOutcome};

use super::fixtures::{later, never_credits, order_for};
use crate::support::{World, gift, gifts_in, oid, rid, uid};

/// Orders whose debit the wallet cannot settle yet fill the first page of unfinished orders;
/// one recovery pass still reaches the newer order behind them and settles it.
#[tokio::test]
async fn a_page_of_deferred_orders_does_not_hide_a_newer_one() {
    let mut wallet = MockWallet::new();
    wallet
        .expect_debit()
        .times(4)
        .returning(|_, _, _| Err(Error::Unavailable("wallet timeout".into())));
    wallet
        .expect_settle_debit()
        .withf(|op| op.starts_with("stuck-") && op.ends_with(" alice"))
        .times(3)
        .returning(|_| Err(Error::Unavailable("wallet timeout".into())));
    wallet
        .expect_settle_debit()
        .withf(|op| op == "fresh alice")
        .times(1)
        .returning(|_| Ok(DebitStatus::Debited));
    wallet
        .expect_debit()
        .withf(|op, _, _| op == "fresh alice")
        .times(1)
        .returning(|_, _, _| Ok(Coins(90)));
    never_credits(&mut wallet);
    let world = World::builder().wallet(Arc::new(wallet)).build().await;
    let room = world.open_room("r1", "alice", &["bob"]).await;
    for order in ["stuck-1", "stuck-2", "stuck-3", "fresh"] {
        let request = gift(&room, "alice", order, "rose", 1, &["bob"]);
        world.saga().send(request).await.unwrap_err();
        world.clock.advance_secs(1);
    }

    // Pages of two: the first holds only orders that stay deferred.
    let report = world.saga().recover(world.clock.now(), 2).await.unwrap();
    assert_eq!(
        (
            report.examined,
            report.settled,
            report.deferred,
            report.failed
        ),
        (4, 1, 3, 0)
    );
    for order in ["stuck-1", "stuck-2", "stuck-3"] {
        let stored = GiftOrders::get(&*world.store, &uid("alice"), &oid(order))
            .await
            .unwrap();
        assert_eq!(stored.unwrap().status, OrderStatus::Pending, "{order}");
    }
    let fresh = GiftOrders::get(&*world.store, &uid("alice"), &oid("fresh"))
        .await
        .unwrap();
    assert_eq!(fresh.unwrap().status, OrderStatus::Completed);
    assert_eq!(gifts_in(&world.log(&room).await).len(), 1);
}

#[tokio::test]
async fn recovery_never_settles_an_order_of_a_room_another_node_owns() {
    let mut lease = MockLease::new();
    lease.expect_acquire().returning(|_| Ok(false));
    let mut wallet = MockWallet::new();
    wallet.expect_debit().never();
    never_credits(&mut wallet);
    let world = World::builder()
        .lease(Arc::new(lease))
        .wallet(Arc::new(wallet))
        .build()
        .await;
    let mut order = order_for(&gift(&rid("r1"), "alice", "o-1", "rose", 1, &["bob"]));
    GiftOrders::create_or_get(&*world.store, &order)
        .await
        .unwrap();
    order
        .record(SagaOutcome::Debited {
            balance_after: Coins(90),
        })
        .unwrap();
    GiftOrders::update(&*world.store, &order, OrderStatus::Pending)
        .await
        .unwrap();

    let report = world.saga().recover(later(), 10).await.unwrap();
    assert_eq!(
        (report.examined, report.settled, report.deferred),
        (1, 0, 1)
    );
    let stored = GiftOrders::get(&*world.store, &uid("alice"), &oid("o-1"))
        .await
        .unwrap();
    assert_eq!(stored.unwrap().status, OrderStatus::Debited);
    assert_eq!(world.probe.commit_calls(), 0);
}
