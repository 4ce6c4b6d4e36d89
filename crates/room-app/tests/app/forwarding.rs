//! Requests for a room another node runs: forwarded to the lease holder's cell, answered as
//! if local (rejections included), routed once more when ownership moved, and gifts whose
//! saga runs on one node and whose apply runs on the owner.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use room_app::ports::{ForwardedCommand, Forwarder, Membership, Peer, ReadKind};
use room_app::testkit::InMemoryLeases;
use room_app::{CellConfig, CommandReply, Error, Result};
use room_domain::{CommandKind, Rejection, RoomId, RoomState, SeatIndex, UserId};

use crate::support::{Nodes, World, cid, config, gift, user};

struct Cluster {
    a: World,
    b: World,
    nodes: Arc<Nodes>,
}

async fn cluster() -> Cluster {
    cluster_with(|lease| lease).await
}

/// Two nodes over one store and one lease table, node b's lease wrapped by `wrap_b`.
async fn cluster_with(
    wrap_b: impl FnOnce(room_app::ports::LeaseRef) -> room_app::ports::LeaseRef,
) -> Cluster {
    cluster_built(wrap_b, |builder| builder).await
}

/// [`cluster_with`], node b's world also shaped by `build_b`.
async fn cluster_built(
    wrap_b: impl FnOnce(room_app::ports::LeaseRef) -> room_app::ports::LeaseRef,
    build_b: impl FnOnce(crate::support::WorldBuilder) -> crate::support::WorldBuilder,
) -> Cluster {
    let leases = InMemoryLeases::new(Duration::from_secs(10));
    let node = |id: &str| CellConfig {
        node_id: id.into(),
        lease_renew_every: Duration::from_secs(1),
        ..config()
    };
    let a = World::builder()
        .config(node("node-a"))
        .lease(leases.node("node-a", "http://a"))
        .build()
        .await;
    let b = build_b(
        World::builder()
            .config(node("node-b"))
            .store(a.store.clone())
            .lease(wrap_b(leases.node("node-b", "http://b"))),
    )
    .build()
    .await;
    let nodes = Nodes::connect(&[("http://a", &a), ("http://b", &b)]);
    Cluster { a, b, nodes }
}

fn take_seat(seat: u8) -> CommandKind {
    CommandKind::TakeSeat {
        seat: SeatIndex(seat),
    }
}

#[tokio::test]
async fn a_command_reaching_another_node_runs_on_the_owners_cell() {
    let Cluster { a, b, nodes } = cluster().await;
    let room = a.open_room("r1", "alice", &["bob", "carol"]).await;
    let before = nodes.calls.load(Ordering::SeqCst);

    // Explicit ids: the two worlds' id generators make the same ids.
    let reply = b
        .exec_as(&room, cid("seat-bob"), user("bob"), take_seat(0))
        .await
        .unwrap();
    assert!(!reply.events.is_empty());
    assert!(
        !b.runtime().is_active(&room),
        "node b must not run the room"
    );
    assert!(nodes.calls.load(Ordering::SeqCst) > before);
    // Both nodes read the owner's state, which holds the write just answered.
    assert_eq!(b.state(&room).await.version, reply.version);
    assert_eq!(a.state(&room).await.version, reply.version);

    // A rejection comes back as the room's own answer.
    let taken = b
        .exec_as(&room, cid("seat-carol"), user("carol"), take_seat(0))
        .await;
    assert!(
        matches!(taken, Err(Error::Rejected(Rejection::SeatOccupied { .. }))),
        "{taken:?}"
    );
}

#[tokio::test]
async fn a_gift_sent_through_another_node_is_applied_once_by_the_owner() {
    let Cluster { a, b, .. } = cluster().await;
    let room = a.open_room("r1", "alice", &["bob"]).await;
    b.fund("bob", 100).await;

    let receipt = b
        .saga()
        .send(gift(&room, "bob", "o1", "rose", 2, &["alice"]))
        .await
        .unwrap();
    assert_eq!(receipt.coin_balance_after.0, 80);
    // A repeat through the owner's node is the same order: one debit, one gift.
    let repeat = a
        .saga()
        .send(gift(&room, "bob", "o1", "rose", 2, &["alice"]))
        .await
        .unwrap();
    assert_eq!(repeat.coin_balance_after.0, 80);
    assert_eq!(b.balance("bob").await.0, 80);
    assert_eq!(crate::support::gifts_in(&a.log(&room).await).len(), 1);
    assert!(!b.runtime().is_active(&room));
}

/// A forwarder whose every answer says the node does not own the room.
struct Refusing(AtomicUsize);

#[async_trait]
impl Forwarder for Refusing {
    async fn execute(
        &self,
        _: &Peer,
        room_id: &RoomId,
        _: &ForwardedCommand,
    ) -> Result<CommandReply> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Err(Error::NotOwner(room_id.to_string()))
    }

    async fn read(&self, _: &Peer, room_id: &RoomId, _: ReadKind) -> Result<RoomState> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Err(Error::NotOwner(room_id.to_string()))
    }

    async fn membership(
        &self,
        _: &Peer,
        room_id: &RoomId,
        _: &UserId,
        _: ReadKind,
    ) -> Result<Membership> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Err(Error::NotOwner(room_id.to_string()))
    }
}

#[tokio::test]
async fn a_forward_that_finds_ownership_moved_is_tried_once_more_then_answered_not_owner() {
    let leases = InMemoryLeases::new(Duration::from_secs(10));
    let a = World::builder()
        .config(CellConfig {
            node_id: "node-a".into(),
            ..config()
        })
        .lease(leases.node("node-a", "http://a"))
        .build()
        .await;
    let b = World::builder()
        .config(CellConfig {
            node_id: "node-b".into(),
            ..config()
        })
        .store(a.store.clone())
        .lease(leases.node("node-b", "http://b"))
        .build()
        .await;
    let room = a.open_room("r1", "alice", &["bob"]).await;
    let refusing = Arc::new(Refusing(AtomicUsize::new(0)));
    b.runtime().forward_with(refusing.clone());

    let answer = b
        .exec_as(&room, cid("seat-bob"), user("bob"), take_seat(0))
        .await;
    assert!(matches!(answer, Err(Error::NotOwner(_))), "{answer:?}");
    assert_eq!(refusing.0.load(Ordering::SeqCst), 2);
    let read = b.runtime().query(&room, |state| state.version).await;
    assert!(matches!(read, Err(Error::NotOwner(_))), "{read:?}");
    assert_eq!(refusing.0.load(Ordering::SeqCst), 4);
    assert!(!b.runtime().is_active(&room));
}

#[tokio::test]
async fn a_room_nobody_holds_is_taken_by_the_node_that_got_the_request() {
    let Cluster { a, b, nodes } = cluster().await;
    let room = a.open_room("r1", "alice", &["bob"]).await;
    // Node a lets the room go (an orderly stop releases the lease).
    a.runtime().shutdown().await;
    let before = nodes.calls.load(Ordering::SeqCst);
    b.exec_as(&room, cid("seat-bob"), user("bob"), take_seat(0))
        .await
        .unwrap();
    assert!(b.runtime().is_active(&room));
    assert_eq!(nodes.calls.load(Ordering::SeqCst), before);
}

/// An order left PENDING by a crash, for the room `room`: alice's rose to bob.
fn stuck_order(room: &RoomId, created_at: room_domain::Timestamp) -> room_domain::GiftOrder {
    let apply = room_domain::ApplyGift {
        order_id: room_domain::OrderId::new("stuck").unwrap(),
        sender: crate::support::uid("alice"),
        recipients: vec![crate::support::uid("bob")],
        gift: room_domain::GiftSnapshot {
            gift_id: room_domain::GiftId::new("rose").unwrap(),
            price: room_domain::Coins(10),
            heat: 10,
            fuel: 0,
            lucky: false,
            billing_version: None,
        },
        count: 1,
        lucky_draw: 0,
        scope: None,
    };
    room_domain::GiftOrder::new(room.clone(), &apply, created_at).unwrap()
}

#[tokio::test]
async fn recovery_leaves_the_orders_of_a_room_another_node_runs_to_that_node() {
    use room_app::ports::{Clock, GiftOrders, Wallet};
    let Cluster { a, b, nodes } = cluster().await;
    let room = a.open_room("r1", "alice", &["bob"]).await;
    a.fund("alice", 100).await;
    let order = stuck_order(&room, a.clock.now());
    GiftOrders::create_or_get(&*a.store, &order).await.unwrap();
    Wallet::debit(&*a.store, &order.wallet_op_id(), &order.sender, order.total)
        .await
        .unwrap();
    let before = nodes.calls.load(Ordering::SeqCst);

    // Node b finds the room run by node a: it neither forwards nor takes the room.
    let report = b
        .saga()
        .recover(room_domain::Timestamp(i64::MAX), 10)
        .await
        .unwrap();
    assert_eq!((report.elsewhere, report.settled), (1, 0), "{report:?}");
    assert_eq!(nodes.calls.load(Ordering::SeqCst), before);
    assert!(!b.runtime().is_active(&room));

    // Node a's own pass settles it: the debit applied once.
    let report = a
        .saga()
        .recover(room_domain::Timestamp(i64::MAX), 10)
        .await
        .unwrap();
    assert_eq!((report.elsewhere, report.settled), (0, 1), "{report:?}");
    assert_eq!(a.balance("alice").await.0, 90);
    assert_eq!(crate::support::gifts_in(&a.log(&room).await).len(), 1);
}

/// A node's lease that counts its owner look-ups.
struct CountingLease {
    inner: room_app::ports::LeaseRef,
    lookups: Arc<AtomicUsize>,
}

#[async_trait]
impl room_app::ports::Lease for CountingLease {
    async fn acquire(&self, room_id: &RoomId) -> Result<bool> {
        self.inner.acquire(room_id).await
    }
    async fn renew_all(&self, rooms: &[RoomId]) -> Result<Vec<bool>> {
        self.inner.renew_all(rooms).await
    }
    async fn release(&self, room_id: &RoomId) -> Result<()> {
        self.inner.release(room_id).await
    }
    async fn get_holder(&self, room_id: &RoomId) -> Result<Option<room_app::ports::LeaseHolder>> {
        self.lookups.fetch_add(1, Ordering::SeqCst);
        self.inner.get_holder(room_id).await
    }
    async fn join_group(&self, group: &str) -> Result<Vec<String>> {
        self.inner.join_group(group).await
    }
    async fn leave_group(&self, group: &str) -> Result<()> {
        self.inner.leave_group(group).await
    }
    async fn try_lock(&self, name: &str) -> Result<Option<String>> {
        self.inner.try_lock(name).await
    }
    async fn unlock(&self, name: &str, token: &str) -> Result<()> {
        self.inner.unlock(name, token).await
    }
}

/// The owner is remembered for a moment (tokio time, paused here: it moves only when every
/// task waits for a timer), not looked up for every request.
#[tokio::test(start_paused = true)]
async fn a_node_looks_a_rooms_owner_up_once_for_a_burst_of_requests() {
    let lookups = Arc::new(AtomicUsize::new(0));
    let counted = lookups.clone();
    let Cluster { a, b, .. } = cluster_with(move |inner| {
        Arc::new(CountingLease {
            inner,
            lookups: counted,
        })
    })
    .await;
    let room = a.open_room("r1", "alice", &["bob"]).await;
    for i in 0..10 {
        b.runtime()
            .query(&room, |state| state.version)
            .await
            .unwrap();
        b.exec_as(
            &room,
            cid(&format!("seat-{i}")),
            user("bob"),
            take_seat((i % 2) as u8),
        )
        .await
        .unwrap();
    }
    let lookups = lookups.load(Ordering::SeqCst);
    assert!(
        (1..20).contains(&lookups),
        "{lookups} look-ups for 20 requests"
    );
}

/// Lucky gifts of one sender landing on both nodes take turns: each one's balance after
/// (reward included) follows the one before, as on one node.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn lucky_gifts_of_one_sender_take_turns_across_nodes() {
    let Cluster { a, b, .. } = cluster().await;
    let room = a.open_room("r1", "alice", &["bob"]).await;
    a.fund("alice", 1_000).await;
    let nodes = [Arc::new(a), Arc::new(b)];
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..20 {
        let node = nodes[i % 2].clone();
        let request = gift(&room, "alice", &format!("o-{i}"), "clover", 1, &["bob"]);
        tasks.spawn(async move { node.saga().send(request).await });
    }
    let mut balances: Vec<i64> = tasks
        .join_all()
        .await
        .into_iter()
        .map(|receipt| {
            let receipt = receipt.unwrap();
            assert_eq!(receipt.status, room_domain::OrderStatus::Completed);
            receipt.coin_balance_after.0
        })
        .collect();
    balances.sort_unstable();
    let gain = 10 * (i64::from(crate::support::LUCKY_MULTIPLIER) - 1);
    let expected: Vec<i64> = (1..=20).map(|k| 1_000 + k * gain).collect();
    assert_eq!(
        balances, expected,
        "every lucky gift's balance after is one gain past the one before"
    );
    assert_eq!(nodes[0].balance("alice").await.0, 1_000 + 20 * gain);
}

/// A burst of gifts through a node that does not run the room checks the sender's membership
/// with the owner once ([`room_app::MEMBER_HINT_FOR`]); a member who left unseen by that node
/// meanwhile is refunded, never charged; a user's own command through the node forgets the
/// hint.
#[tokio::test]
async fn gifts_through_another_node_check_membership_with_the_owner_once_a_burst() {
    let Cluster { a, b, nodes } = cluster().await;
    let room = a.open_room("r1", "alice", &["bob"]).await;
    b.fund("bob", 1_000).await;
    let before = nodes.calls.load(Ordering::SeqCst);
    for i in 0..5 {
        b.saga()
            .send(gift(&room, "bob", &format!("o-{i}"), "rose", 1, &["alice"]))
            .await
            .unwrap();
    }
    assert_eq!(
        nodes.calls.load(Ordering::SeqCst) - before,
        6,
        "one membership read, then five applies"
    );

    // Bob leaves through the owner's node: node b's hint still says he is a member.
    a.exec(&room, user("bob"), CommandKind::Leave)
        .await
        .unwrap();
    let receipt = b
        .saga()
        .send(gift(&room, "bob", "o-left", "rose", 1, &["alice"]))
        .await
        .unwrap();
    assert_eq!(receipt.status, room_domain::OrderStatus::Compensated);
    assert_eq!(b.balance("bob").await.0, 1_000 - 5 * 10, "refunded");
    assert_eq!(crate::support::gifts_in(&a.log(&room).await).len(), 5);

    // Through node b, bob joins again and leaves: his own commands forget the hint, and
    // his next gift is refused before any debit.
    b.join(&room, "bob").await;
    b.exec(&room, user("bob"), CommandKind::Leave)
        .await
        .unwrap();
    let refused = b
        .saga()
        .send(gift(&room, "bob", "o-gone", "rose", 1, &["alice"]))
        .await;
    assert!(
        matches!(refused, Err(Error::Rejected(Rejection::NotAMember { .. }))),
        "{refused:?}"
    );
    assert_eq!(b.balance("bob").await.0, 1_000 - 5 * 10);
}

/// A sender who keeps giving through a node that does not run the room is read once: each
/// gift the owner applies says again that they are a member of the open room, so the hint
/// outlives [`room_app::MEMBER_HINT_FOR`] while they give.
#[tokio::test(start_paused = true)]
async fn each_applied_gift_renews_the_senders_membership_hint() {
    let Cluster { a, b, nodes } = cluster().await;
    let room = a.open_room("r1", "alice", &["bob"]).await;
    b.fund("bob", 1_000).await;
    let before = nodes.calls.load(Ordering::SeqCst);
    for i in 0..4 {
        b.saga()
            .send(gift(&room, "bob", &format!("o-{i}"), "rose", 1, &["alice"]))
            .await
            .unwrap();
        tokio::time::advance(room_app::MEMBER_HINT_FOR * 3 / 4).await;
    }
    assert_eq!(
        nodes.calls.load(Ordering::SeqCst) - before,
        5,
        "one membership read, then four applies, over three hint lifetimes"
    );
}

/// A node that forwards a room's gifts to its owner checks that the room exists once, not
/// once per gift: a created room stays created, and the directory read would be a database
/// round trip that a gift through the owner does not make.
#[tokio::test]
async fn gifts_through_another_node_look_the_room_up_once() {
    let mut directory = room_app::ports::MockRoomDirectory::new();
    directory
        .expect_get_short_id()
        .times(1)
        .returning(|_| Ok(Some(123_456)));
    let Cluster { a, b, .. } = cluster_built(
        |lease| lease,
        |builder| builder.directory(Arc::new(directory)),
    )
    .await;
    let room = a.open_room("r1", "alice", &["bob"]).await;
    b.fund("bob", 1_000).await;
    for i in 0..3 {
        let receipt = b
            .service
            .send_gift(gift(&room, "bob", &format!("o-{i}"), "rose", 1, &["alice"]))
            .await
            .unwrap();
        assert_eq!(receipt.coin_balance_after.0, 1_000 - 10 * (i + 1));
    }
    assert!(
        !b.runtime().is_active(&room),
        "node b must not run the room"
    );
}

/// A wallet whose debits never answer (a stalled wallet service).
struct StalledWallet(Arc<room_app::InMemoryStore>);

#[async_trait]
impl room_app::ports::Wallet for StalledWallet {
    async fn debit(
        &self,
        _: &str,
        _: &UserId,
        _: room_domain::Coins,
    ) -> Result<room_domain::Coins> {
        std::future::pending().await
    }
    async fn credit(
        &self,
        op_id: &str,
        kind: room_app::ports::CreditKind,
        user: &UserId,
        amount: room_domain::Coins,
    ) -> Result<room_domain::Coins> {
        self.0.credit(op_id, kind, user, amount).await
    }
    async fn settle_debit(&self, op_id: &str) -> Result<room_app::ports::DebitStatus> {
        self.0.settle_debit(op_id).await
    }
    async fn balance(&self, user: &UserId) -> Result<room_domain::Coins> {
        room_app::ports::Wallet::balance(&*self.0, user).await
    }
}

/// A lucky gift's drive that outlasts its turn is cut short below the lock's TTL: the lock
/// is never left to expire under a drive still going on, where another drive of the same
/// sender would take its turn beside it. The cut drive is answered as retryable.
#[tokio::test(start_paused = true)]
async fn a_lucky_drive_never_outlasts_its_turn() {
    let Cluster { a, b, .. } = cluster_built(
        |lease| lease,
        |builder| builder.wallet(Arc::new(StalledWallet(Arc::default()))),
    )
    .await;
    let room = a.open_room("r1", "alice", &["bob"]).await;
    let b = Arc::new(b);
    let slow = {
        let b = b.clone();
        let request = gift(&room, "alice", "o-slow", "clover", 1, &["bob"]);
        tokio::spawn(async move { b.saga().send(request).await })
    };
    // Longer than the lock's TTL (the lease table's, 10 s).
    tokio::time::sleep(Duration::from_secs(12)).await;
    assert!(
        slow.is_finished(),
        "the drive was cut short within its turn"
    );
    let answer = slow.await.unwrap();
    assert!(
        matches!(&answer, Err(error) if error.is_retryable()),
        "{answer:?}"
    );
    // Its turn was given back: the sender's next lucky gift goes through at once.
    a.fund("alice", 100).await;
    let next = a
        .saga()
        .send(gift(&room, "alice", "o-next", "clover", 1, &["bob"]))
        .await
        .unwrap();
    assert_eq!(next.status, room_domain::OrderStatus::Completed);
}
