//! Who an order belongs to, and what its repeats cost: orders are keyed by sender and order
//! id (so one sender cannot claim or probe another's), orders stored before that keep their
//! names, a repeat of a finished order writes nothing, and repeats of one unfinished order
//! queue only so deep.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use room_app::ports::{CellStore, Clock, CreditKind, DebitStatus, GiftOrders, OrderCursor, Wallet};
use room_app::testkit::InMemoryStore;
use room_app::{Error, ORDER_LOCK_QUEUE, gift_command_id};
use room_domain::{
    Actor, ApplyGift, Coins, Command, CommandKind, GiftOrder, GiftSnapshot, OrderId, OrderKeys,
    OrderStatus, Timestamp, UserId,
};

use crate::support::{World, catalog, cid, eventually, gift, gifts_in, oid, uid};

#[tokio::test]
async fn two_senders_with_one_order_id_in_one_room_both_send() {
    let world = World::new().await;
    world.fund("alice", 100).await;
    world.fund("bob", 100).await;
    let room = world
        .open_room("r1", "alice", &["bob", "carol", "mallory"])
        .await;

    // Mallory has no coins and claims the order id first: her order fails, and is hers only.
    let claim = world
        .saga()
        .send(gift(&room, "mallory", "o-1", "rose", 1, &["carol"]))
        .await
        .unwrap();
    assert_eq!(claim.status, OrderStatus::Failed);

    let alices = gift(&room, "alice", "o-1", "rose", 1, &["carol"]);
    let bobs = gift(&room, "bob", "o-1", "rose", 2, &["carol"]);
    let alice_receipt = world.saga().send(alices.clone()).await.unwrap();
    let bob_receipt = world.saga().send(bobs.clone()).await.unwrap();
    assert_eq!(alice_receipt.status, OrderStatus::Completed);
    assert_eq!(alice_receipt.coin_balance_after, Coins(90));
    assert_eq!(bob_receipt.status, OrderStatus::Completed);
    assert_eq!(bob_receipt.coin_balance_after, Coins(80));

    let senders: Vec<String> = gifts_in(&world.log(&room).await)
        .into_iter()
        .map(|g| format!("{} {}", g.sender, g.order_id))
        .collect();
    assert_eq!(senders, ["alice o-1", "bob o-1"]);
    // Each repeat is answered with its own sender's order.
    assert_eq!(world.saga().send(alices).await.unwrap(), alice_receipt);
    assert_eq!(world.saga().send(bobs).await.unwrap(), bob_receipt);
    assert_eq!(world.balance("alice").await, Coins(90));
    assert_eq!(world.balance("bob").await, Coins(80));
    assert_eq!(world.balance("mallory").await, Coins(0));
}

#[test]
fn a_gift_command_id_names_the_sender_and_fits_the_id_rule() {
    let order = |sender: &str, id: &str| {
        let request = gift(
            &crate::support::rid("r1"),
            sender,
            id,
            "rose",
            1,
            &["carol"],
        );
        order_for(&request.sender, &request.order_id, Timestamp(0))
    };
    let long = "x".repeat(64);
    let ids = [
        gift_command_id(&order("alice", "o-1")),
        gift_command_id(&order("bob", "o-1")),
        gift_command_id(&order("alice", "o-2")),
        gift_command_id(&order(&long, &long)),
    ];
    for id in &ids {
        assert!(id.as_str().starts_with(room_app::SYSTEM_ID_PREFIX), "{id}");
        assert!(
            id.as_str().chars().count() <= room_domain::MAX_ID_CHARS,
            "{id}"
        );
    }
    assert_eq!(ids[0], gift_command_id(&order("alice", "o-1")), "stable");
    assert_ne!(ids[0], ids[1]);
    assert_ne!(ids[0], ids[2]);
    // Stored orders name their command by this form: it never changes (the time in 12 hex
    // digits, the first 128 bits of the SHA-256 of the sender and the order id behind their
    // lengths).
    let mut at = order("alice", "o-1");
    at.created_at = Timestamp(1_796_185_000_123);
    assert_eq!(
        gift_command_id(&at).as_str(),
        "sys-gift-01a234f808bb-2f169512b6bfe64cbc060f9523ca03e6"
    );
    // An order stored before keeps the order id as its command id.
    let mut old = order("alice", "o-1");
    old.keys = OrderKeys::OrderId;
    assert_eq!(gift_command_id(&old), cid("o-1"));
}

/// A rose order of `sender` to carol, as the saga would have stored it.
fn order_for(sender: &UserId, order_id: &OrderId, created_at: Timestamp) -> GiftOrder {
    let rose = catalog()
        .into_iter()
        .find(|g| g.gift_id.as_str() == "rose")
        .unwrap();
    let apply = ApplyGift {
        order_id: order_id.clone(),
        sender: sender.clone(),
        recipients: vec![uid("carol")],
        gift: GiftSnapshot {
            gift_id: rose.gift_id,
            price: rose.price,
            heat: rose.heat,
            fuel: rose.fuel,
            lucky: rose.lucky,
            billing_version: None,
        },
        count: 1,
        lucky_draw: 7,
        scope: None,
    };
    GiftOrder::new(room_domain::RoomId::new("r1").unwrap(), &apply, created_at).unwrap()
}

/// An order stored before orders were scoped by sender was debited under its order id, and
/// the process died before the room applied it. Recovery finds the debit under the old
/// operation id (it does not void it) and applies the gift under the old command id, so a
/// repeat of that command is answered from the stored one, not applied again.
#[tokio::test]
async fn an_order_stored_before_sender_scoping_recovers_under_its_old_names() {
    let world = World::new().await;
    world.fund("alice", 100).await;
    let room = world.open_room("r1", "alice", &["carol"]).await;
    let mut old = order_for(&uid("alice"), &oid("o-old"), world.clock.now());
    old.keys = OrderKeys::OrderId;
    GiftOrders::create_or_get(&*world.store, &old)
        .await
        .unwrap();
    Wallet::debit(&*world.store, "o-old", &uid("alice"), old.total)
        .await
        .unwrap();

    let later = Timestamp(world.clock.now().0 + 1);
    let report = world.saga().recover(later, 10).await.unwrap();
    assert_eq!((report.examined, report.settled), (1, 1), "{report:?}");
    let stored = GiftOrders::get(&*world.store, &uid("alice"), &oid("o-old"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.status, OrderStatus::Completed);
    assert_eq!(stored.keys, OrderKeys::OrderId);
    assert_eq!(world.balance("alice").await, Coins(90), "debited once");
    let applied = CellStore::get_command(&*world.store, &room, &cid("o-old"))
        .await
        .unwrap();
    assert!(applied.is_some(), "applied under the old command id");

    // The order's command again (a drive of the order that did not see the first): the
    // stored command answers it.
    let first_version = world.log(&room).await.len();
    let again = Command::new(
        gift_command_id(&old),
        CommandKind::ApplyGift(old.apply_command()),
    );
    let reply = world
        .runtime()
        .execute(&room, again, Actor::System, None)
        .await
        .expect("answered");
    assert_eq!(reply.version, applied.unwrap().last_seq);
    assert_eq!(
        world.log(&room).await.len(),
        first_version,
        "nothing applied again"
    );
    assert_eq!(gifts_in(&world.log(&room).await).len(), 1);
    // The client's repeat gets the stored answer.
    let repeat = world
        .saga()
        .send(gift(&room, "alice", "o-old", "rose", 1, &["carol"]))
        .await
        .unwrap();
    assert_eq!(repeat.status, OrderStatus::Completed);
    assert_eq!(repeat.coin_balance_after, Coins(90));
}

/// Order storage that counts its writes.
struct CountingOrders {
    inner: Arc<InMemoryStore>,
    writes: AtomicUsize,
}

#[async_trait]
impl GiftOrders for CountingOrders {
    async fn create_or_get(&self, order: &GiftOrder) -> room_app::Result<(GiftOrder, bool)> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner.create_or_get(order).await
    }

    async fn get(
        &self,
        sender: &UserId,
        order_id: &OrderId,
    ) -> room_app::Result<Option<GiftOrder>> {
        GiftOrders::get(&*self.inner, sender, order_id).await
    }

    async fn update(&self, order: &GiftOrder, expected: OrderStatus) -> room_app::Result<()> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner.update(order, expected).await
    }

    async fn list_unfinished(
        &self,
        before: Timestamp,
        after: Option<OrderCursor>,
        limit: u32,
    ) -> room_app::Result<Vec<GiftOrder>> {
        self.inner.list_unfinished(before, after, limit).await
    }
}

/// A wallet that counts every call.
struct CountingWallet {
    inner: Arc<InMemoryStore>,
    calls: AtomicUsize,
}

#[async_trait]
impl Wallet for CountingWallet {
    async fn debit(&self, op_id: &str, user: &UserId, amount: Coins) -> room_app::Result<Coins> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.inner.debit(op_id, user, amount).await
    }

    async fn credit(
        &self,
        op_id: &str,
        kind: CreditKind,
        user: &UserId,
        amount: Coins,
    ) -> room_app::Result<Coins> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.inner.credit(op_id, kind, user, amount).await
    }

    async fn settle_debit(&self, op_id: &str) -> room_app::Result<DebitStatus> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.inner.settle_debit(op_id).await
    }

    async fn balance(&self, user: &UserId) -> room_app::Result<Coins> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Wallet::balance(&*self.inner, user).await
    }
}

#[tokio::test]
async fn a_repeat_of_a_finished_order_writes_nothing_and_touches_no_wallet_or_room() {
    let store = Arc::new(InMemoryStore::new());
    let orders = Arc::new(CountingOrders {
        inner: store.clone(),
        writes: AtomicUsize::new(0),
    });
    let wallet = Arc::new(CountingWallet {
        inner: store.clone(),
        calls: AtomicUsize::new(0),
    });
    let world = World::builder()
        .store(store)
        .orders(orders.clone())
        .wallet(wallet.clone())
        .build()
        .await;
    world.fund("alice", 100).await;
    let room = world.open_room("r1", "alice", &["bob"]).await;
    let sent = gift(&room, "alice", "o-1", "rose", 1, &["bob"]);
    let lucky = gift(&room, "alice", "o-2", "clover", 1, &["bob"]);
    let failed = gift(&room, "alice", "o-3", "gold-bar", 1, &["bob"]);
    let mut receipts = Vec::new();
    for request in [&sent, &lucky, &failed] {
        receipts.push(world.saga().send(request.clone()).await.unwrap());
    }
    let statuses: Vec<_> = receipts.iter().map(|r| r.status).collect();
    assert_eq!(
        statuses,
        [
            OrderStatus::Completed,
            OrderStatus::Completed,
            OrderStatus::Failed
        ]
    );
    let (writes, calls, commits) = (
        orders.writes.load(Ordering::SeqCst),
        wallet.calls.load(Ordering::SeqCst),
        world.probe.commit_calls(),
    );
    assert!(writes > 0 && calls > 0 && commits > 0, "the counters count");

    for (request, receipt) in [&sent, &lucky, &failed].into_iter().zip(&receipts) {
        for _ in 0..3 {
            assert_eq!(world.saga().send(request.clone()).await.unwrap(), *receipt);
        }
    }
    assert_eq!(
        orders.writes.load(Ordering::SeqCst),
        writes,
        "no order write"
    );
    assert_eq!(wallet.calls.load(Ordering::SeqCst), calls, "no wallet call");
    assert_eq!(world.probe.commit_calls(), commits, "no room commit");
    // A repeat naming another gift is refused from the stored order, writing nothing too.
    let other = gift(&room, "alice", "o-1", "rose", 5, &["bob"]);
    let refused = world.saga().send(other).await.unwrap_err();
    assert!(matches!(refused, Error::OrderIdReused(_)), "{refused:?}");
    assert_eq!(orders.writes.load(Ordering::SeqCst), writes);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn requests_beyond_the_queue_of_one_order_are_refused_and_move_nothing() {
    let world = Arc::new(World::new().await);
    world.fund("alice", 100).await;
    let room = world.open_room("r1", "alice", &["bob"]).await;
    let request = gift(&room, "alice", "o-1", "rose", 1, &["bob"]);
    let commits = world.probe.commit_calls();
    world.probe.close_gate();

    // The first request debits and waits at the room's commit, holding the order's lock.
    let mut queued = tokio::task::JoinSet::new();
    let send = |world: Arc<World>, request: room_app::SendGift| async move {
        world.saga().send(request).await
    };
    queued.spawn(send(world.clone(), request.clone()));
    eventually("the first request reaches the commit", || async {
        world.probe.commit_calls() == commits + 1
    })
    .await;
    // Repeats queue behind it, up to the bound.
    for _ in 1..ORDER_LOCK_QUEUE {
        queued.spawn(send(world.clone(), request.clone()));
    }
    eventually("the queue is full", || async {
        world.saga().order_lock_queue_peak() == ORDER_LOCK_QUEUE
    })
    .await;

    // One more is refused at once (it would wait for the gate otherwise), and moves nothing.
    let beyond = tokio::spawn(send(world.clone(), request.clone()));
    eventually("the request beyond the queue is answered", || async {
        beyond.is_finished()
    })
    .await;
    let refused = beyond.await.unwrap().unwrap_err();
    assert!(matches!(refused, Error::OrderInProgress(_)), "{refused:?}");
    assert!(refused.is_retryable());
    assert_eq!(world.balance("alice").await, Coins(90), "debited once");

    world.probe.open_gate();
    let receipts: Vec<_> = queued
        .join_all()
        .await
        .into_iter()
        .map(|r| r.expect("every queued request is answered"))
        .collect();
    assert_eq!(receipts.len(), ORDER_LOCK_QUEUE);
    assert_eq!(receipts[0].status, OrderStatus::Completed);
    assert!(receipts.iter().all(|r| *r == receipts[0]), "{receipts:#?}");
    // The refused request's retry gets the same answer.
    assert_eq!(world.saga().send(request).await.unwrap(), receipts[0]);
    assert_eq!(world.saga().order_lock_queue_peak(), ORDER_LOCK_QUEUE);
    assert_eq!(gifts_in(&world.log(&room).await).len(), 1);
    assert_eq!(world.balance("alice").await, Coins(90));
}
