//! Requests the saga refuses before any coin moves: an order id with the system prefix, a
//! request the pre-check refuses, and an order id reused for another gift.

use std::collections::HashMap;
use std::sync::Arc;

use room_app::Error;
use room_app::ports::{MockGiftCatalog, MockGiftOrders, MockWallet};
use room_domain::{CommandKind, Rejection};

use super::fixtures::order_for;
use crate::support::{World, catalog, gift, gifts_in, rid, uid, user};

/// A saga whose wallet and order store must not be touched beyond a lookup.
async fn untouchable_world() -> World {
    let mut wallet = MockWallet::new();
    wallet.expect_debit().never();
    wallet.expect_credit().never();
    let mut orders = MockGiftOrders::new();
    orders.expect_get().returning(|_, _| Ok(None));
    orders.expect_create_or_get().never();
    orders.expect_update().never();
    let gifts: HashMap<_, _> = catalog()
        .into_iter()
        .map(|gift| (gift.gift_id.clone(), gift))
        .collect();
    let mut catalog = MockGiftCatalog::new();
    catalog
        .expect_get()
        .returning(move |id| Ok(gifts.get(id).cloned()));
    World::builder()
        .wallet(Arc::new(wallet))
        .orders(Arc::new(orders))
        .catalog(Arc::new(catalog))
        .build()
        .await
}

#[tokio::test]
async fn an_order_id_with_the_system_prefix_is_refused_before_anything_moves() {
    let world = untouchable_world().await;
    let room = world.open_room("r1", "alice", &["bob"]).await;
    let order = format!("{}rtc-104-0123", room_app::SYSTEM_ID_PREFIX);
    let error = world
        .saga()
        .send(gift(&room, "alice", &order, "rose", 1, &["bob"]))
        .await
        .unwrap_err();
    assert!(matches!(error, Error::Invalid(_)), "{error:?}");
    assert!(gifts_in(&world.log(&room).await).is_empty());
}

#[tokio::test]
async fn a_request_the_pre_check_refuses_never_debits() {
    let world = untouchable_world().await;
    let room = world.open_room("r1", "alice", &["bob", "carol"]).await;
    let closed = world.open_room("r2", "alice", &["bob"]).await;
    world
        .exec(&closed, user("alice"), CommandKind::CloseRoom)
        .await
        .unwrap();
    let many: Vec<String> = (0..21).map(|i| format!("u{i}")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();

    let rejected = |max| move |count| Rejection::InvalidRecipientCount { count, max };
    let cases = [
        (
            gift(&room, "alice", "o-1", "rose", 0, &["bob"]),
            Some(Rejection::InvalidGiftCount {
                count: 0,
                max: 9_999,
            }),
        ),
        (
            gift(&room, "alice", "o-2", "rose", 10_000, &["bob"]),
            Some(Rejection::InvalidGiftCount {
                count: 10_000,
                max: 9_999,
            }),
        ),
        (
            gift(&room, "alice", "o-3", "rose", 1, &many),
            Some(rejected(20)(21)),
        ),
        (
            gift(&room, "alice", "o-4", "rose", 1, &[]),
            Some(rejected(20)(0)),
        ),
        (
            gift(&room, "alice", "o-5", "rose", 1, &["bob", "carol", "bob"]),
            Some(Rejection::DuplicateRecipient { user: uid("bob") }),
        ),
        (
            gift(&room, "alice", "o-6", "gold-bar", 3, &["bob"]),
            Some(Rejection::AmountOverflow),
        ),
        (
            gift(&closed, "alice", "o-7", "rose", 1, &["bob"]),
            Some(Rejection::RoomClosed),
        ),
        (
            gift(&rid("nowhere"), "alice", "o-8", "rose", 1, &["bob"]),
            Some(Rejection::RoomNotFound),
        ),
        // Unknown and disabled gifts are not found, and say which gift.
        (gift(&room, "alice", "o-9", "tulip", 1, &["bob"]), None),
        (gift(&room, "alice", "o-10", "retired", 1, &["bob"]), None),
    ];
    for (request, expected) in cases {
        let order = request.order_id.clone();
        let request_gift = request.gift_id.clone();
        let error = world.saga().send(request).await.unwrap_err();
        match expected {
            Some(rejection) => assert!(
                matches!(&error, Error::Rejected(r) if *r == rejection),
                "{order}: expected {rejection:?}, got {error:?}"
            ),
            None => assert!(
                matches!(&error, Error::GiftNotFound(g) if *g == request_gift),
                "{order}: {error:?}"
            ),
        }
    }
    assert!(gifts_in(&world.log(&room).await).is_empty());
}

#[tokio::test]
async fn an_order_id_reused_for_another_gift_is_refused() {
    let room = rid("r1");
    let first = gift(&room, "alice", "o-1", "rose", 1, &["bob"]);
    let stored = order_for(&first);
    let others = [
        gift(&room, "alice", "o-1", "rose", 2, &["bob"]),
        gift(&room, "alice", "o-1", "rose", 1, &["carol"]),
        gift(&room, "alice", "o-1", "clover", 1, &["bob"]),
        gift(&rid("r2"), "alice", "o-1", "rose", 1, &["bob"]),
    ];

    // Found by the first lookup.
    let mut wallet = MockWallet::new();
    wallet.expect_debit().never();
    let mut orders = MockGiftOrders::new();
    let existing = stored.clone();
    orders
        .expect_get()
        .returning(move |_, _| Ok(Some(existing.clone())));
    orders.expect_create_or_get().never();
    let world = World::builder()
        .wallet(Arc::new(wallet))
        .orders(Arc::new(orders))
        .build()
        .await;
    for request in others.clone() {
        let error = world.saga().send(request.clone()).await.unwrap_err();
        assert!(
            matches!(&error, Error::OrderIdReused(o) if *o == request.order_id),
            "{request:?}: {error:?}"
        );
    }

    // Created by a concurrent request between the lookup and the insert.
    let mut wallet = MockWallet::new();
    wallet.expect_debit().never();
    let mut orders = MockGiftOrders::new();
    orders.expect_get().returning(|_, _| Ok(None));
    orders
        .expect_create_or_get()
        .returning(move |_| Ok((stored.clone(), false)));
    orders.expect_update().never();
    let world = World::builder()
        .wallet(Arc::new(wallet))
        .orders(Arc::new(orders))
        .build()
        .await;
    world.open_room("r1", "alice", &["bob", "carol"]).await;
    let error = world.saga().send(others[1].clone()).await.unwrap_err();
    assert!(matches!(error, Error::OrderIdReused(_)), "{error:?}");
}
