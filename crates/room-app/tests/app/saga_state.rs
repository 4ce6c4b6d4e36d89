//! The gift saga over the in-memory store, checked by the state it leaves: balances, orders and
//! the room's log. Coins are conserved throughout: the sum of all balances plus the gift
//! income equals the coins ever credited by admins. Income is too: once the income consumer
//! has read the outbox (twice: a repeat credits nothing), the income credited equals the
//! non-platform parts of every applied gift under its order's billing policy, worked out from
//! the rooms' logs.

use std::sync::Arc;

use room_app::consumers::FactHandler;
use room_app::income::IncomeConsumer;
use room_app::ports::{
    BillingPolicies, BillingPoliciesRef, Clock, GiftOrders, IncomeLedger, NoAgencies, Outbox,
    Payouts, PayoutsRef, TimersRef, Wallet,
};
use room_app::{Error, workers};
use room_domain::{
    Actor, ApplyGift, BillingPolicy, BillingShares, Coins, Command, CommandKind, Event, FailReason,
    GiftOrder, GiftSnapshot, OrderStatus, RobotGift, RoomId, SagaOutcome, Timestamp,
};

use crate::support::{Fault, LUCKY_MULTIPLIER, World, catalog, gift, gifts_in, oid, uid, user};

/// Coins that left the balances through gifts, worked out from the rooms' logs and the orders
/// alone (never from the wallet): the value of every applied gift, less the lucky rewards
/// credited and the rocket rewards paid. Robots' free gifts count for nothing.
async fn gift_income(world: &World, rooms: &[&RoomId]) -> i64 {
    let owed = Payouts::list_pending(&*world.store, None, 100)
        .await
        .unwrap();
    assert!(owed.is_empty(), "pay every reward before counting");
    let mut income = 0;
    for room in rooms {
        for stored in world.log(room).await {
            match &stored.event {
                Event::RoomGiftSent(sent) if sent.robot => {
                    // A robot's free gift moves no coin, and has no order to settle.
                    let order = GiftOrders::get(&*world.store, &sent.sender, &sent.order_id)
                        .await
                        .unwrap();
                    assert!(order.is_none(), "a robot gift has no order: {order:?}");
                }
                Event::RoomGiftSent(sent) => {
                    income += sent.total_value.0;
                    let order = GiftOrders::get(&*world.store, &sent.sender, &sent.order_id)
                        .await
                        .unwrap()
                        .expect("an applied gift has its order");
                    if let Some(lucky) = sent.lucky
                        && order.status == OrderStatus::Completed
                    {
                        income -= lucky.reward.0;
                    }
                }
                Event::RoomRocketLaunched { rewards, .. } => {
                    income -= rewards.iter().map(|r| r.coins.0).sum::<i64>();
                }
                _ => {}
            }
        }
    }
    income
}

const PEOPLE: [&str; 6] = ["alice", "bob", "carol", "dave", "erin", "bot-1"];

async fn assert_conserved(world: &World, rooms: &[&RoomId], credited: i64, step: &str) {
    let balances = world.total_balance(&PEOPLE).await;
    let income = gift_income(world, rooms).await;
    assert_eq!(
        balances + income,
        credited,
        "{step}: balances {balances} + income {income} != credited {credited}"
    );
    assert_income_conserved(world, rooms, step).await;
}

/// The income side: every fact in the outbox handed to the income consumer twice; then the
/// income credited to everyone equals, over the applied gifts of the rooms' logs, the parts
/// of each recipient's value that are not the platform's, under the policy version its order
/// recorded.
async fn assert_income_conserved(world: &World, rooms: &[&RoomId], step: &str) {
    // A test that set no policy bills under the first (every gift fact without a version is
    // billed under it).
    let policies: BillingPoliciesRef = world.store.clone();
    room_app::income::seed_billing(&policies, &billing(1, 5_000, 1_000))
        .await
        .unwrap();
    let consumer = IncomeConsumer::new(
        world.store.clone(),
        world.store.clone(),
        world.store.clone(),
        Arc::new(NoAgencies),
    );
    let facts = Outbox::list_after(&*world.store, 0, 10_000).await.unwrap();
    for _ in 0..2 {
        for fact in &facts {
            consumer.handle(&fact.envelope).await.unwrap();
        }
    }
    let mut owed = 0;
    for room in rooms {
        for stored in world.log(room).await {
            let Event::RoomGiftSent(sent) = &stored.event else {
                continue;
            };
            if sent.robot {
                continue;
            }
            let order = GiftOrders::get(&*world.store, &sent.sender, &sent.order_id)
                .await
                .unwrap()
                .expect("an applied gift has its order");
            assert_eq!(
                order.gift.billing_version, sent.billing_version,
                "{step}: the fact carries its order's billing version"
            );
            let policy = BillingPolicies::get_policy(&*world.store, sent.billed_under())
                .await
                .unwrap()
                .expect("the order's policy is stored");
            let split = policy.split_gift(sent, false).unwrap();
            let recipients = i64::try_from(sent.recipients.len()).unwrap();
            assert_eq!(
                (split.paid().0 + split.platform.0) * recipients,
                sent.total_value.0,
                "{step}: each recipient's parts add up to its value"
            );
            owed += split.paid().0 * recipients;
        }
    }
    let mut income = 0;
    for person in PEOPLE {
        income += IncomeLedger::income_balance(&*world.store, &uid(person))
            .await
            .unwrap()
            .0;
    }
    assert_eq!(
        income, owed,
        "{step}: income credited {income} != the non-platform parts of the applied gifts {owed}"
    );
}

/// The billing policy version `version` with these shares (and lucky clovers paying less).
fn billing(version: u64, recipient_bp: u32, owner_bp: u32) -> BillingPolicy {
    let mut policy = BillingPolicy {
        version,
        shares: BillingShares {
            recipient_bp,
            owner_bp,
            agency_bp: 1_000,
        },
        overrides: Default::default(),
        turnover_bp: 0,
    };
    policy.overrides.insert(
        room_domain::GiftId::new("clover").unwrap(),
        BillingShares {
            recipient_bp: 1_111,
            owner_bp: 333,
            agency_bp: 0,
        },
    );
    policy
}

#[tokio::test]
async fn a_day_of_gifts_conserves_coins() {
    let world = World::new().await;
    world.fund("alice", 1_000).await;
    world.fund("bob", 500).await;
    world.fund("erin", 50).await;
    let credited = 1_550;
    let room = world
        .open_room("r1", "alice", &["bob", "carol", "erin"])
        .await;
    let rooms = [&room];
    let policies: BillingPoliciesRef = world.store.clone();
    room_app::income::seed_billing(&policies, &billing(1, 5_000, 1_000))
        .await
        .unwrap();
    assert_conserved(&world, &rooms, credited, "start").await;
    let saga = world.saga();

    let receipt = saga
        .send(gift(&room, "alice", "o-1", "rose", 3, &["bob", "carol"]))
        .await
        .unwrap();
    assert_eq!(receipt.status, OrderStatus::Completed);
    assert_eq!(receipt.coin_balance_after, Coins(940));
    assert_eq!(world.balance("alice").await, Coins(940));
    assert_conserved(&world, &rooms, credited, "ordinary gift").await;
    // Bob and carol each received 30 (rose, 10 × 3): half is their income, a tenth the owner's
    // (alice, the sender herself); nobody has an agency.
    let income = |name: &'static str| {
        let store = world.store.clone();
        async move {
            IncomeLedger::income_balance(&*store, &uid(name))
                .await
                .unwrap()
        }
    };
    assert_eq!(income("bob").await, Coins(15));
    assert_eq!(income("alice").await, Coins(6));

    // Dave is not in the room: debited, refused, refunded.
    let receipt = saga
        .send(gift(&room, "alice", "o-2", "rose", 1, &["dave"]))
        .await
        .unwrap();
    assert_eq!(receipt.status, OrderStatus::Compensated);
    assert_eq!(receipt.coin_balance_after, Coins(940));
    assert_conserved(&world, &rooms, credited, "refused gift").await;

    let receipt = saga
        .send(gift(&room, "erin", "o-3", "rose", 10, &["alice"]))
        .await
        .unwrap();
    assert_eq!(receipt.status, OrderStatus::Failed);
    assert_eq!(receipt.coin_balance_after, Coins(50));
    assert_conserved(&world, &rooms, credited, "gift beyond the balance").await;

    let reward = 20 * i64::from(LUCKY_MULTIPLIER);
    let receipt = saga
        .send(gift(&room, "alice", "o-4", "clover", 2, &["bob"]))
        .await
        .unwrap();
    assert_eq!(receipt.status, OrderStatus::Completed);
    assert_eq!(receipt.coin_balance_after, Coins(940 - 20 + reward));
    assert_eq!(world.balance("alice").await, receipt.coin_balance_after);
    assert_conserved(&world, &rooms, credited, "lucky gift").await;

    // A robot joins and sends a free booster: no coin moves, no fuel, nothing to conserve.
    let bot = uid("bot-1");
    world.robot_join(&room, "bot-1").await;
    let booster = catalog()
        .into_iter()
        .find(|g| g.gift_id.as_str() == "booster")
        .unwrap();
    let free = RobotGift {
        gift: booster.snapshot(),
        count: 1,
        recipients: vec![uid("alice")],
    };
    world
        .service
        .robot_command(&room, &bot, CommandKind::RobotGift(free))
        .await
        .unwrap();
    assert_conserved(&world, &rooms, credited, "robot gift").await;
    // A paid gift in the robot member's name (coins someone credited to it): debited, refused
    // by the room, refunded.
    world.fund("bot-1", 100).await;
    let credited = credited + 100;
    let receipt = saga
        .send(gift(&room, "bot-1", "o-6", "rose", 1, &["alice"]))
        .await
        .unwrap();
    assert_eq!(receipt.status, OrderStatus::Compensated);
    assert_eq!(world.balance("bot-1").await, Coins(100));
    assert_conserved(&world, &rooms, credited, "paid gift in a robot's name").await;

    // Bob's booster fills the rocket; it launches a minute later and rewards the room.
    let receipt = saga
        .send(gift(&room, "bob", "o-5", "booster", 1, &["alice"]))
        .await
        .unwrap();
    assert_eq!(receipt.coin_balance_after, Coins(450));
    assert_conserved(&world, &rooms, credited, "booster").await;
    world.clock.advance_secs(60);
    let timers: TimersRef = world.store.clone();
    assert_eq!(
        workers::fire_due_timers(&world.service, &timers, 10)
            .await
            .unwrap(),
        1
    );
    let payouts: PayoutsRef = world.store.clone();
    assert_eq!(
        workers::pay_out(&world.service, &payouts, 10)
            .await
            .unwrap(),
        4,
        "every member present wins"
    );
    assert_conserved(&world, &rooms, credited, "rocket launch").await;
    assert_eq!(
        world.total_balance(&PEOPLE).await,
        1_550 + 100 - 60 - 20 + reward - 50 + 1_000
    );

    // The policy changes: later orders are billed under version 2, earlier ones under 1.
    let changed = room_app::income::change_billing(
        &policies,
        1,
        billing(2, 7_000, 0).shares,
        billing(2, 7_000, 0).overrides,
        0,
    )
    .await
    .unwrap();
    assert_eq!(changed.version, 2);
    saga.forget_billing();
    let bob_before = income("bob").await;
    let receipt = saga
        .send(gift(&room, "alice", "o-7", "rose", 1, &["bob"]))
        .await
        .unwrap();
    assert_eq!(receipt.status, OrderStatus::Completed);
    assert_conserved(&world, &rooms, credited, "gift under version 2").await;
    assert_eq!(
        income("bob").await,
        Coins(bob_before.0 + 7),
        "70 % of 10 under version 2"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_sends_of_one_order_debit_once() {
    for (gift_id, reward) in [("rose", 0), ("clover", 20 * i64::from(LUCKY_MULTIPLIER))] {
        let world = Arc::new(World::new().await);
        world.fund("alice", 1_000).await;
        let room = world.open_room("r1", "alice", &["bob", "carol"]).await;
        let request = gift(&room, "alice", "o-1", gift_id, 1, &["bob", "carol"]);

        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..50 {
            let world = world.clone();
            let request = request.clone();
            // As a client does: a request beyond the order's queue is retried.
            tasks.spawn(async move {
                let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
                loop {
                    match world.saga().send(request.clone()).await {
                        Err(Error::OrderInProgress(_)) => {
                            assert!(
                                tokio::time::Instant::now() < deadline,
                                "the order stayed in progress for 30 s"
                            );
                            tokio::task::yield_now().await;
                        }
                        answer => break answer,
                    }
                }
            });
        }
        let receipts: Vec<_> = tasks
            .join_all()
            .await
            .into_iter()
            .map(|r| r.expect("every send succeeds"))
            .collect();

        let expected = Coins(1_000 - 20 + reward);
        assert_eq!(receipts[0].status, OrderStatus::Completed, "{gift_id}");
        assert_eq!(receipts[0].coin_balance_after, expected, "{gift_id}");
        assert!(
            receipts.iter().all(|r| *r == receipts[0]),
            "{gift_id}: receipts differ: {receipts:#?}"
        );
        assert_eq!(world.balance("alice").await, expected, "{gift_id}");
        assert_eq!(gifts_in(&world.log(&room).await).len(), 1, "{gift_id}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_lucky_orders_of_one_sender_conserve_coins() {
    let world = Arc::new(World::new().await);
    world.fund("alice", 1_000).await;
    let room = world.open_room("r1", "alice", &["bob"]).await;
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..20 {
        let world = world.clone();
        let request = gift(&room, "alice", &format!("o-{i}"), "clover", 1, &["bob"]);
        tasks.spawn(async move { world.saga().send(request).await });
    }
    for receipt in tasks.join_all().await {
        assert_eq!(receipt.unwrap().status, OrderStatus::Completed);
    }
    let gain = 20 * 10 * (i64::from(LUCKY_MULTIPLIER) - 1);
    assert_eq!(world.balance("alice").await, Coins(1_000 + gain));
    assert_conserved(&world, &[&room], 1_000, "lucky orders").await;
}

#[tokio::test]
async fn a_commit_whose_acknowledgement_is_lost_is_neither_repeated_nor_refunded() {
    let world = World::new().await;
    world.fund("alice", 1_000).await;
    let room = world.open_room("r1", "alice", &["bob"]).await;
    let request = gift(&room, "alice", "o-1", "clover", 1, &["bob"]);

    world.probe.fail_next_commit(Fault::UnavailableAfterWrite);
    let error = world.saga().send(request.clone()).await.unwrap_err();
    assert!(matches!(error, Error::Unavailable(_)), "{error:?}");
    // The commit stored the gift and its order together.
    let order = GiftOrders::get(&*world.store, &uid("alice"), &oid("o-1"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(order.status, OrderStatus::Applied);
    assert_eq!(world.balance("alice").await, Coins(990));

    let reward = 10 * i64::from(LUCKY_MULTIPLIER);
    let receipt = world.saga().send(request).await.unwrap();
    assert_eq!(receipt.status, OrderStatus::Completed);
    assert_eq!(receipt.coin_balance_after, Coins(990 + reward));
    assert_eq!(world.balance("alice").await, Coins(990 + reward));
    assert_eq!(gifts_in(&world.log(&room).await).len(), 1);
    assert_conserved(&world, &[&room], 1_000, "after the retry").await;
}

#[tokio::test]
async fn an_order_id_reused_for_another_gift_moves_no_coins() {
    let world = World::new().await;
    world.fund("alice", 1_000).await;
    let room = world.open_room("r1", "alice", &["bob"]).await;
    world
        .saga()
        .send(gift(&room, "alice", "o-1", "rose", 1, &["bob"]))
        .await
        .unwrap();
    let error = world
        .saga()
        .send(gift(&room, "alice", "o-1", "rose", 5, &["bob"]))
        .await
        .unwrap_err();
    assert!(matches!(error, Error::OrderIdReused(_)), "{error:?}");
    assert_eq!(world.balance("alice").await, Coins(990));
    assert_eq!(gifts_in(&world.log(&room).await).len(), 1);
}

/// A FAILED order's debit can never land later: after a top-up, neither a repeat of the order
/// nor a late debit under its operation id takes coins.
#[tokio::test]
async fn an_unaffordable_order_stays_failed_after_a_top_up() {
    let world = World::new().await;
    world.fund("alice", 5).await;
    let room = world.open_room("r1", "alice", &["bob"]).await;
    let request = gift(&room, "alice", "o-1", "rose", 1, &["bob"]);
    let receipt = world.saga().send(request.clone()).await.unwrap();
    assert_eq!(receipt.status, OrderStatus::Failed);

    top_up(&world, "alice", 100).await;
    let late = Wallet::debit(
        &*world.store,
        "o-1 alice",
        &room_domain::UserId::new("alice").unwrap(),
        Coins(10),
    )
    .await;
    assert!(matches!(late, Err(Error::Conflict(_))), "{late:?}");
    assert_eq!(
        world.saga().send(request).await.unwrap().status,
        OrderStatus::Failed
    );
    assert_eq!(world.balance("alice").await, Coins(105));
    assert!(gifts_in(&world.log(&room).await).is_empty());
}

/// Credits `coins` to `name` once more (after [`World::fund`]).
async fn top_up(world: &World, name: &str, coins: i64) {
    Wallet::credit(
        &*world.store,
        &format!("top-up:{name}"),
        room_app::ports::CreditKind::Admin,
        &uid(name),
        Coins(coins),
    )
    .await
    .unwrap();
}

/// Stores a PENDING order as the saga would have before a crash.
async fn pending_order(world: &World, request: &room_app::SendGift) -> GiftOrder {
    let priced = catalog()
        .into_iter()
        .find(|g| g.gift_id == request.gift_id)
        .unwrap();
    let apply = ApplyGift {
        order_id: request.order_id.clone(),
        sender: request.sender.clone(),
        recipients: request.recipients.clone(),
        gift: GiftSnapshot {
            gift_id: priced.gift_id,
            price: priced.price,
            heat: priced.heat,
            fuel: priced.fuel,
            lucky: priced.lucky,
            billing_version: None,
        },
        count: request.count,
        lucky_draw: 7,
        scope: None,
    };
    let order = GiftOrder::new(request.room_id.clone(), &apply, world.clock.now()).unwrap();
    let (stored, created) = GiftOrders::create_or_get(&*world.store, &order)
        .await
        .unwrap();
    assert!(created);
    stored
}

async fn debit(world: &World, order: &GiftOrder) -> Coins {
    Wallet::debit(
        &*world.store,
        &order.wallet_op_id(),
        &order.sender,
        order.total,
    )
    .await
    .unwrap()
}

/// Stores a DEBITED order: created, debited, recorded, and then the process died.
async fn debited_order(world: &World, request: &room_app::SendGift) -> GiftOrder {
    let mut order = pending_order(world, request).await;
    let balance_after = debit(world, &order).await;
    order
        .record(SagaOutcome::Debited { balance_after })
        .unwrap();
    GiftOrders::update(&*world.store, &order, OrderStatus::Pending)
        .await
        .unwrap();
    order
}

async fn status(world: &World, order: &str) -> OrderStatus {
    GiftOrders::get(&*world.store, &uid("alice"), &oid(order))
        .await
        .unwrap()
        .unwrap()
        .status
}

#[tokio::test]
async fn recovery_settles_every_kind_of_unfinished_order() {
    let world = World::new().await;
    world.fund("alice", 1_000).await;
    let room = world.open_room("r1", "alice", &["bob", "carol"]).await;

    // PENDING, and the debit happened: apply it.
    let p1 = pending_order(&world, &gift(&room, "alice", "p1", "rose", 1, &["bob"])).await;
    debit(&world, &p1).await;
    // PENDING, and the debit never happened: fail it, and void the debit.
    pending_order(&world, &gift(&room, "alice", "p2", "rose", 1, &["bob"])).await;
    // PENDING and debited, for a recipient who will have left: refund it.
    let p3 = pending_order(&world, &gift(&room, "alice", "p3", "rose", 2, &["carol"])).await;
    debit(&world, &p3).await;
    // DEBITED, for a recipient who will have left: refund it.
    debited_order(&world, &gift(&room, "alice", "d1", "rose", 3, &["carol"])).await;
    // DEBITED, and the room accepts: apply it.
    debited_order(&world, &gift(&room, "alice", "d2", "rose", 1, &["bob"])).await;
    // APPLIED by the room, but the lucky reward was never credited: credit it.
    let a1 = debited_order(&world, &gift(&room, "alice", "a1", "clover", 1, &["bob"])).await;
    let apply = Command::new(
        a1.order_id.clone().into(),
        CommandKind::ApplyGift(a1.apply_command()),
    );
    world
        .runtime()
        .execute(&room, apply, Actor::System, Some(a1.clone()))
        .await
        .unwrap();
    assert_eq!(status(&world, "a1").await, OrderStatus::Applied);
    world
        .exec(&room, user("carol"), CommandKind::Leave)
        .await
        .unwrap();
    assert_eq!(
        world.balance("alice").await,
        Coins(1_000 - 10 - 20 - 30 - 10 - 10)
    );

    let later = Timestamp(world.clock.now().0 + 1);
    let report = world.saga().recover(later, 100).await.unwrap();
    assert_eq!(
        (
            report.examined,
            report.settled,
            report.deferred,
            report.failed
        ),
        (6, 6, 0, 0)
    );
    for (order, expected) in [
        ("p1", OrderStatus::Completed),
        ("p2", OrderStatus::Failed),
        ("p3", OrderStatus::Compensated),
        ("d1", OrderStatus::Compensated),
        ("d2", OrderStatus::Completed),
        ("a1", OrderStatus::Completed),
    ] {
        assert_eq!(status(&world, order).await, expected, "{order}");
    }
    let reward = 10 * i64::from(LUCKY_MULTIPLIER);
    let expected = Coins(1_000 - 10 - 10 - 10 + reward);
    assert_eq!(world.balance("alice").await, expected);
    let applied: Vec<String> = gifts_in(&world.log(&room).await)
        .into_iter()
        .map(|g| g.order_id.to_string())
        .collect();
    assert_eq!(applied, ["a1", "d2", "p1"]);
    assert_conserved(&world, &[&room], 1_000, "after recovery").await;

    // The voided debit cannot land late.
    let late = Wallet::debit(&*world.store, "p2 alice", &uid("alice"), Coins(10)).await;
    assert!(matches!(late, Err(Error::Conflict(_))), "{late:?}");
    assert_eq!(world.balance("alice").await, expected);
    // Nothing is left to settle.
    let report = world.saga().recover(later, 100).await.unwrap();
    assert_eq!(report.examined, 0);
}

/// A drive found the debit refused and voided it, then died before it stored the order
/// FAILED: the next drive finds the operation void and fails the order at once, as recovery
/// would, instead of answering a conflict until recovery comes.
#[tokio::test]
async fn a_repeat_of_an_order_whose_debit_was_voided_fails_it() {
    let world = World::new().await;
    world.fund("alice", 5).await;
    let room = world.open_room("r1", "alice", &["bob"]).await;
    let request = gift(&room, "alice", "o-1", "rose", 1, &["bob"]);
    pending_order(&world, &request).await;
    Wallet::settle_debit(&*world.store, "o-1 alice")
        .await
        .unwrap();
    top_up(&world, "alice", 100).await;

    let first = world.saga().send(request.clone()).await.unwrap();
    assert_eq!(first.status, OrderStatus::Failed);
    assert_eq!(first.fail_reason, Some(FailReason::NotDebited));
    assert_eq!(first.coin_balance_after, Coins(105));
    assert_eq!(status(&world, "o-1").await, OrderStatus::Failed);
    assert_eq!(world.saga().send(request).await.unwrap(), first);
    assert_eq!(world.balance("alice").await, Coins(105));
    assert!(gifts_in(&world.log(&room).await).is_empty());
}

/// An order recovery fails (never debited) keeps the balance recovery saw: a repeat after a
/// top-up is answered as the first time, not with the balance of the moment.
#[tokio::test]
async fn an_order_failed_by_recovery_answers_every_repeat_with_one_balance() {
    let world = World::new().await;
    world.fund("alice", 1_000).await;
    let room = world.open_room("r1", "alice", &["bob"]).await;
    let request = gift(&room, "alice", "p1", "rose", 1, &["bob"]);
    pending_order(&world, &request).await;

    let later = Timestamp(world.clock.now().0 + 1);
    let report = world.saga().recover(later, 100).await.unwrap();
    assert_eq!((report.examined, report.settled), (1, 1));
    let order = GiftOrders::get(&*world.store, &uid("alice"), &oid("p1"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(order.status, OrderStatus::Failed);
    assert_eq!(order.fail_reason, Some(FailReason::NotDebited));
    assert_eq!(order.balance_after, Some(Coins(1_000)));

    top_up(&world, "alice", 100).await;
    let first = world.saga().send(request.clone()).await.unwrap();
    assert_eq!(first.status, OrderStatus::Failed);
    assert_eq!(first.fail_reason, Some(FailReason::NotDebited));
    assert_eq!(first.coin_balance_after, Coins(1_000));
    assert_eq!(world.saga().send(request).await.unwrap(), first);
    assert_eq!(world.balance("alice").await, Coins(1_100));
}

/// Two drives of one order on two nodes: this one has debited and sends the gift to the room;
/// meanwhile the other recorded the room's refusal (a refund is due). The room must not apply
/// the gift now: its commit is refused, this drive reads the order again and refunds it once,
/// and the coins are conserved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_order_refused_by_another_drive_during_the_apply_is_refunded_not_applied() {
    let world = World::new().await;
    let room = world.open_room("r1", "alice", &["bob"]).await;
    top_up(&world, "alice", 100).await;
    let probe = &world.probe;
    let calls = probe.commit_calls();
    probe.close_gate();
    let service = world.service.clone();
    let send = gift(&room, "alice", "o1", "rose", 1, &["bob"]);
    let sent = tokio::spawn(async move { service.gifts().send(send).await });
    crate::support::eventually("the gift's commit is held", || async move {
        probe.commit_calls() == calls + 1
    })
    .await;

    // The other node's drive: debited (the same operation), refused by the room.
    let stored = GiftOrders::get(&*world.store, &uid("alice"), &oid("o1"))
        .await
        .unwrap()
        .expect("the order is stored");
    assert_eq!(stored.status, OrderStatus::Pending);
    let mut refused = stored.clone();
    refused.status = OrderStatus::Debited;
    refused.rejection = Some(room_domain::Rejection::RoomClosed);
    GiftOrders::update(&*world.store, &refused, OrderStatus::Pending)
        .await
        .unwrap();
    world.probe.open_gate();

    let receipt = sent.await.unwrap().unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(receipt.status, OrderStatus::Compensated, "{receipt:?}");
    assert_eq!(receipt.coin_balance_after.0, 100);
    assert_eq!(world.balance("alice").await.0, 100);
    assert!(
        gifts_in(&world.log(&room).await).is_empty(),
        "the gift was applied"
    );
    assert_conserved(&world, &[&room], 100, "after the refund").await;
}

#[tokio::test]
async fn a_paid_gift_is_applied_only_with_the_order_that_debited_it() {
    let world = World::new().await;
    world.fund("alice", 1_000).await;
    let room = world.open_room("r1", "alice", &["bob"]).await;
    let order = debited_order(&world, &gift(&room, "alice", "o1", "rose", 1, &["bob"])).await;
    let command = room_app::gift_apply_command(&order);
    let refused = |answer: room_app::Result<Arc<room_app::ports::CommandReply>>| {
        matches!(
            answer,
            Err(Error::Rejected(room_domain::Rejection::Forbidden))
        )
    };

    // Without an order, by the system or by its sender: nobody paid for such a gift.
    for actor in [Actor::System, user("alice")] {
        let answer = world
            .runtime()
            .execute(&room, command.clone(), actor, None)
            .await;
        assert!(refused(answer.clone()), "{answer:?}");
    }
    // With an order of another gift (a bigger one than was debited), or of another room.
    let mut bigger = order.clone();
    bigger.count = 100;
    let mut elsewhere = order.clone();
    elsewhere.room_id = RoomId::new("r2").unwrap();
    for wrong in [bigger, elsewhere] {
        let answer = world
            .runtime()
            .execute(&room, command.clone(), Actor::System, Some(wrong))
            .await;
        assert!(refused(answer.clone()), "{answer:?}");
    }
    // A command that is not a gift carries no order.
    let answer = world
        .runtime()
        .execute(
            &room,
            Command::new(oid("leave").into(), CommandKind::Leave),
            user("bob"),
            Some(order.clone()),
        )
        .await;
    assert!(refused(answer.clone()), "{answer:?}");
    assert!(
        gifts_in(&world.log(&room).await).is_empty(),
        "nothing applied"
    );

    // The saga's own apply, with its order: applied once, and the order (no lucky reward
    // to credit) is done.
    world
        .runtime()
        .execute(&room, command, Actor::System, Some(order))
        .await
        .unwrap();
    assert_eq!(gifts_in(&world.log(&room).await).len(), 1);
    assert_eq!(status(&world, "o1").await, OrderStatus::Completed);
}
