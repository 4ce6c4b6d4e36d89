//! The gift saga's conversations with its ports, checked with mockall: which wallet calls it
//! makes, how often, and which it never makes. The room is a real cell over the in-memory
//! store unless a test swaps the cell store.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use room_app::ports::{
    Activation, Clock, CreditKind, DebitStatus, GiftOrders, MockCellStore, MockGiftCatalog,
    MockGiftOrders, MockLease, MockWallet,
};
use room_app::{Error, GiftReceipt};
use room_domain::{
    ApplyGift, Coins, CommandKind, GiftOrder, GiftSnapshot, OrderStatus, Rejection, SagaOutcome,
    Timestamp,
};

use crate::support::{
    LUCKY_MULTIPLIER, World, catalog, eventually, gift, gifts_in, oid, rid, uid, user,
};

/// A wallet asked `times` to take `amount` from alice under `order`, answering `after` each
/// time (a repeat under the same operation id moves nothing and answers the first balance).
fn debits(wallet: &mut MockWallet, order: &'static str, amount: i64, after: i64, times: usize) {
    wallet
        .expect_debit()
        .withf(move |op, who, coins| {
            op == alice_op(order) && *who == uid("alice") && *coins == Coins(amount)
        })
        .times(times)
        .returning(move |_, _, _| Ok(Coins(after)));
}

/// A wallet that takes `amount` from alice under `order` once, answering `after`.
fn debits_once(wallet: &mut MockWallet, order: &'static str, amount: i64, after: i64) {
    debits(wallet, order, amount, after, 1);
}

/// The wallet operation id of alice's order `order`.
fn alice_op(order: &str) -> String {
    format!("{order} alice")
}

fn never_credits(wallet: &mut MockWallet) {
    wallet.expect_credit().never();
}

fn later() -> Timestamp {
    Timestamp(crate::support::T0.0 + 1)
}

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

/// Events of an open room with alice and bob, as a real cell wrote them.
async fn open_room_log() -> Vec<room_app::ports::StoredEvent> {
    let world = World::new().await;
    let room = world.open_room("r1", "alice", &["bob"]).await;
    world.log(&room).await
}

/// A mock cell store holding `log`, whose every commit fails as `fail` says.
fn failing_cell_store(
    log: Vec<room_app::ports::StoredEvent>,
    commits: Arc<AtomicUsize>,
    fail: impl Fn(usize) -> Option<Error> + Send + Sync + 'static,
) -> MockCellStore {
    let version = log.len() as u64;
    let epoch = AtomicU64::new(0);
    let mut store = MockCellStore::new();
    store.expect_activate().returning(move |_, _| {
        Ok(Activation {
            epoch: epoch.fetch_add(1, Ordering::SeqCst) + 1,
            version,
        })
    });
    store
        .expect_list_events()
        .returning(move |_, after, limit| {
            Ok(log
                .iter()
                .filter(|e| e.seq > after)
                .take(limit as usize)
                .cloned()
                .collect())
        });
    store.expect_get_command().returning(|_, _| Ok(None));
    store.expect_commit().returning(move |_| {
        let n = commits.fetch_add(1, Ordering::SeqCst);
        fail(n).map_or(Ok(()), Err)
    });
    store
}

/// A world over an open room (alice and bob) whose commits fail as `fail` says, with
/// `wallet`; and the count of commits tried.
async fn world_failing_commits(
    wallet: MockWallet,
    fail: impl Fn(usize) -> Option<Error> + Send + Sync + 'static,
) -> (World, Arc<AtomicUsize>) {
    let commits = Arc::new(AtomicUsize::new(0));
    let cells = failing_cell_store(open_room_log().await, commits.clone(), fail);
    let world = World::builder()
        .cell_store(Arc::new(cells))
        .wallet(Arc::new(wallet))
        .build()
        .await;
    (world, commits)
}

#[tokio::test]
async fn lost_ownership_at_commit_never_refunds() {
    let mut wallet = MockWallet::new();
    never_credits(&mut wallet);
    // The order stays PENDING until the room answers: recovery asks the wallet, which says
    // the debit happened, and repeats it (moving nothing) for its balance after.
    debits(&mut wallet, "o-1", 10, 90, 2);
    wallet
        .expect_settle_debit()
        .withf(|op| op == "o-1 alice")
        .times(1)
        .returning(|_| Ok(DebitStatus::Debited));
    let (world, commits) =
        world_failing_commits(wallet, |_| Some(Error::NotOwner("r1".into()))).await;
    let room = rid("r1");

    let error = world
        .saga()
        .send(gift(&room, "alice", "o-1", "rose", 1, &["bob"]))
        .await
        .unwrap_err();
    assert!(matches!(error, Error::NotOwner(_)), "{error:?}");
    assert!(error.is_retryable());
    assert_eq!(commits.load(Ordering::SeqCst), 1);
    let order = GiftOrders::get(&*world.store, &uid("alice"), &oid("o-1"))
        .await
        .unwrap();
    assert_eq!(order.unwrap().status, OrderStatus::Pending);

    // Recovery tries again, meets the same fence, and still refunds nothing.
    let runtime = world.runtime();
    eventually("the fenced cell stopped", || async move {
        runtime.active_rooms() == 0
    })
    .await;
    let report = world.saga().recover(later(), 10).await.unwrap();
    assert_eq!(
        (report.examined, report.deferred, report.settled),
        (1, 1, 0)
    );
    assert_eq!(commits.load(Ordering::SeqCst), 2);
    let order = GiftOrders::get(&*world.store, &uid("alice"), &oid("o-1"))
        .await
        .unwrap();
    assert_eq!(order.unwrap().status, OrderStatus::Debited);
}

#[tokio::test]
async fn an_unavailable_commit_leaves_the_order_pending_until_a_retry_applies_it() {
    let mut wallet = MockWallet::new();
    // The retry debits again under the same operation id, which the wallet answers with the
    // first debit's balance: one debit.
    debits(&mut wallet, "o-1", 10, 90, 2);
    never_credits(&mut wallet);
    let (world, commits) = world_failing_commits(wallet, |n| {
        (n == 0).then(|| Error::Unavailable("timeout".into()))
    })
    .await;
    let room = rid("r1");
    let request = gift(&room, "alice", "o-1", "rose", 1, &["bob"]);

    let error = world.saga().send(request.clone()).await.unwrap_err();
    assert!(matches!(error, Error::Unavailable(_)), "{error:?}");
    let order = GiftOrders::get(&*world.store, &uid("alice"), &oid("o-1"))
        .await
        .unwrap();
    assert_eq!(order.unwrap().status, OrderStatus::Pending);

    // The client's retry applies it.
    let receipt = world.saga().send(request).await.unwrap();
    assert_eq!(receipt.status, OrderStatus::Completed);
    assert_eq!(receipt.coin_balance_after, Coins(90));
    assert_eq!(commits.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_commit_the_store_refuses_alone_is_answered_as_definite() {
    let mut wallet = MockWallet::new();
    debits_once(&mut wallet, "o-1", 10, 90);
    never_credits(&mut wallet);
    let (world, commits) = world_failing_commits(wallet, |_| {
        Some(Error::Internal("sqlite: string or blob too big".into()))
    })
    .await;
    let room = rid("r1");

    let error = world
        .saga()
        .send(gift(&room, "alice", "o-1", "rose", 1, &["bob"]))
        .await
        .unwrap_err();
    // The only command of its batch: the store's refusal is the answer, not a retry.
    assert!(matches!(error, Error::Internal(_)), "{error:?}");
    assert!(!error.is_retryable());
    assert_eq!(commits.load(Ordering::SeqCst), 1);
    // Not refunded either: only the room's own refusal ends an order that way. The debit
    // stays with the PENDING order, for recovery or a person.
    let order = GiftOrders::get(&*world.store, &uid("alice"), &oid("o-1"))
        .await
        .unwrap();
    assert_eq!(order.unwrap().status, OrderStatus::Pending);
}

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

fn order_for(request: &room_app::SendGift) -> GiftOrder {
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
        },
        count: request.count,
        lucky_draw: 0,
    };
    GiftOrder::new(request.room_id.clone(), &apply, crate::support::T0).unwrap()
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

/// A wallet over an in-memory one whose first debit waits at a gate, counting debits.
struct GatedWallet {
    inner: room_app::InMemoryStore,
    debits: AtomicUsize,
    entered: tokio::sync::Notify,
    gate: tokio::sync::Notify,
}

#[async_trait::async_trait]
impl room_app::ports::Wallet for GatedWallet {
    async fn debit(
        &self,
        op_id: &str,
        user: &room_domain::UserId,
        amount: Coins,
    ) -> room_app::Result<Coins> {
        if self.debits.fetch_add(1, Ordering::SeqCst) == 0 {
            self.entered.notify_one();
            self.gate.notified().await;
        }
        self.inner.debit(op_id, user, amount).await
    }

    async fn credit(
        &self,
        op_id: &str,
        kind: CreditKind,
        user: &room_domain::UserId,
        amount: Coins,
    ) -> room_app::Result<Coins> {
        self.inner.credit(op_id, kind, user, amount).await
    }

    async fn settle_debit(&self, op_id: &str) -> room_app::Result<DebitStatus> {
        self.inner.settle_debit(op_id).await
    }

    async fn balance(&self, user: &room_domain::UserId) -> room_app::Result<Coins> {
        room_app::ports::Wallet::balance(&self.inner, user).await
    }
}

// Paused time: the repeat's 100 ms head start ends only once every task is idle, so the
// repeat always reaches the lock (or, without it, the wallet) before the first drive goes on.
#[tokio::test(start_paused = true)]
async fn concurrent_drives_of_one_order_take_turns() {
    let wallet = Arc::new(GatedWallet {
        inner: room_app::InMemoryStore::new(),
        debits: AtomicUsize::new(0),
        entered: tokio::sync::Notify::new(),
        gate: tokio::sync::Notify::new(),
    });
    room_app::ports::Wallet::credit(
        &*wallet,
        "fund",
        CreditKind::Admin,
        &uid("alice"),
        Coins(100),
    )
    .await
    .unwrap();
    let world = World::builder().wallet(wallet.clone()).build().await;
    let room = world.open_room("r1", "alice", &["bob"]).await;
    let request = gift(&room, "alice", "o-1", "rose", 1, &["bob"]);

    let first = world.saga().send(request.clone());
    let repeat = async {
        wallet.entered.notified().await;
        // The first drive is inside its debit; the repeat arrives now, and it is given time
        // to reach the wallet before the first drive goes on.
        let repeat = world.saga().send(request.clone());
        let release = async {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            wallet.gate.notify_one();
        };
        tokio::join!(repeat, release).0
    };
    let (first, repeat) = tokio::join!(first, repeat);
    let (first, repeat) = (first.unwrap(), repeat.unwrap());
    assert_eq!(first.status, OrderStatus::Completed);
    assert_eq!(repeat, first);
    // The repeat waited for the first drive and found the order finished: it never reached
    // the wallet.
    assert_eq!(wallet.debits.load(Ordering::SeqCst), 1);
    assert_eq!(first.coin_balance_after, Coins(90));
}
