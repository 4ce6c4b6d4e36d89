//! The room's commit failing after the debit: lost ownership never refunds, an unavailable
//! store leaves the order pending until a retry applies it, and a store's refusal of a batch
//! of one is answered as definite.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use room_app::Error;
use room_app::ports::{Activation, DebitStatus, GiftOrders, MockCellStore, MockWallet};
use room_domain::{Coins, OrderStatus};

use super::fixtures::{debits, debits_once, later, never_credits};
use crate::support::{World, eventually, gift, oid, rid, uid};

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
