//! The gift saga: every transition of a `GiftOrder`, what `next_step` asks for in each status,
//! and the outcomes it must refuse.

use room_domain::{
    Actor, ApplyGift, Coins, Command, CommandKind, Ctx, Event, FailReason, GiftId, GiftOrder,
    GiftScope, GiftSnapshot, InvalidTransition, OrderId, OrderKeys, OrderStatus, Rejection, RoomId,
    RoomRules, RoomState, SagaOutcome, SagaStep, Timestamp, UserId, decide, evolve,
};

const CREATED_AT: Timestamp = Timestamp(1_764_158_400_000);
/// 10 coins × 3 units × 2 recipients.
const TOTAL: Coins = Coins(60);
const LUCKY_REWARD: Coins = Coins(120);

fn id(name: &str) -> UserId {
    UserId::new(name).expect("a valid user id")
}

fn room_id() -> RoomId {
    RoomId::new("room-1").expect("a valid room id")
}

fn apply() -> ApplyGift {
    ApplyGift {
        order_id: OrderId::new("order-7").expect("a valid order id"),
        sender: id("alice"),
        recipients: vec![id("bob"), id("carol")],
        gift: GiftSnapshot {
            gift_id: GiftId::new("rose").expect("a valid gift id"),
            price: Coins(10),
            heat: 10,
            fuel: 10,
            lucky: true,
            billing_version: None,
        },
        count: 3,
        lucky_draw: 42,
        scope: None,
    }
}

fn new_order() -> GiftOrder {
    GiftOrder::new(room_id(), &apply(), CREATED_AT).expect("the total fits")
}

fn debited() -> SagaOutcome {
    SagaOutcome::Debited {
        balance_after: Coins(940),
    }
}

fn applied(lucky_reward: Coins) -> SagaOutcome {
    SagaOutcome::Applied {
        lucky_reward,
        recipients: vec![id("bob"), id("carol")],
        value: Coins(60),
    }
}

fn rejected() -> SagaOutcome {
    SagaOutcome::Rejected(Rejection::RoomClosed)
}

fn refunded() -> SagaOutcome {
    SagaOutcome::Refunded {
        balance_after: Coins(1_000),
    }
}

fn credited() -> SagaOutcome {
    SagaOutcome::RewardCredited {
        balance_after: Coins(1_060),
    }
}

fn insufficient() -> SagaOutcome {
    SagaOutcome::InsufficientFunds { balance: Coins(5) }
}

fn not_debited() -> SagaOutcome {
    SagaOutcome::NotDebited { balance: Coins(7) }
}

/// The places an order can stand, each reached by the outcomes that lead there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Pending,
    Debited,
    /// Debited, and the room refused: a refund is due.
    RefundDue,
    /// Applied with a lucky reward still to credit.
    Applied,
    /// Applied without a lucky reward.
    Completed,
    /// Applied and its lucky reward credited.
    CompletedLucky,
    FailedInsufficientFunds,
    FailedNotDebited,
    FailedRejected,
    Compensated,
}

const STAGES: [Stage; 10] = [
    Stage::Pending,
    Stage::Debited,
    Stage::RefundDue,
    Stage::Applied,
    Stage::Completed,
    Stage::CompletedLucky,
    Stage::FailedInsufficientFunds,
    Stage::FailedNotDebited,
    Stage::FailedRejected,
    Stage::Compensated,
];

#[track_caller]
fn at(stage: Stage) -> GiftOrder {
    let path = match stage {
        Stage::Pending => vec![],
        Stage::Debited => vec![debited()],
        Stage::RefundDue => vec![debited(), rejected()],
        Stage::Applied => vec![debited(), applied(LUCKY_REWARD)],
        Stage::Completed => vec![debited(), applied(Coins::ZERO)],
        Stage::CompletedLucky => vec![debited(), applied(LUCKY_REWARD), credited()],
        Stage::FailedInsufficientFunds => vec![insufficient()],
        Stage::FailedNotDebited => vec![not_debited()],
        Stage::FailedRejected => vec![rejected()],
        Stage::Compensated => vec![debited(), rejected(), refunded()],
    };
    let mut order = new_order();
    for outcome in path {
        if let Err(error) = order.record(outcome) {
            panic!("cannot reach {stage:?}: {error}");
        }
    }
    order
}

#[test]
fn a_new_order_is_pending_and_costs_price_times_count_times_recipients() {
    let order = new_order();
    assert_eq!(order.status, OrderStatus::Pending);
    assert_eq!(order.total, TOTAL);
    assert_eq!(order.room_id, room_id());
    assert_eq!(order.created_at, CREATED_AT);
    assert_eq!(order.lucky_reward, Coins::ZERO);
    assert_eq!(
        (order.rejection.as_ref(), order.fail_reason.as_ref()),
        (None, None)
    );
    assert_eq!(order.balance_after, None);
    // The room gets back exactly the order that was placed, draw input included.
    assert_eq!(order.apply_command(), apply());

    let mut too_big = apply();
    too_big.gift.price = Coins(i64::MAX / 2);
    assert_eq!(GiftOrder::new(room_id(), &too_big, CREATED_AT), None);
}

#[test]
fn an_ordinary_gift_goes_pending_debited_completed() {
    let mut order = new_order();
    assert_eq!(order.next_step(), SagaStep::Debit { amount: TOTAL });

    order.record(debited()).expect("debit recorded");
    assert_eq!(order.status, OrderStatus::Debited);
    assert_eq!(order.balance_after, Some(Coins(940)));
    assert_eq!(order.next_step(), SagaStep::Apply);

    order.record(applied(Coins::ZERO)).expect("apply recorded");
    assert_eq!(order.status, OrderStatus::Completed);
    assert!(order.status.is_terminal());
    assert_eq!(order.next_step(), SagaStep::Done);
    // The balance the sender sees is the one after the debit.
    assert_eq!(order.balance_after, Some(Coins(940)));
    assert_eq!(order.lucky_reward, Coins::ZERO);
}

#[test]
fn a_lucky_reward_goes_through_applied_and_is_credited() {
    let mut order = new_order();
    order.record(debited()).expect("debit recorded");
    order.record(applied(LUCKY_REWARD)).expect("apply recorded");
    assert_eq!(order.status, OrderStatus::Applied);
    assert!(!order.status.is_terminal());
    assert_eq!(order.lucky_reward, LUCKY_REWARD);
    assert_eq!(
        order.next_step(),
        SagaStep::CreditLuckyReward {
            amount: LUCKY_REWARD
        }
    );

    order.record(credited()).expect("credit recorded");
    assert_eq!(order.status, OrderStatus::Completed);
    assert_eq!(order.next_step(), SagaStep::Done);
    // The final balance includes the reward.
    assert_eq!(order.balance_after, Some(Coins(1_060)));
}

#[test]
fn insufficient_funds_fail_the_order_with_nothing_to_undo() {
    let mut order = new_order();
    order.record(insufficient()).expect("recorded");
    assert_eq!(order.status, OrderStatus::Failed);
    assert_eq!(
        order.fail_reason,
        Some(FailReason::InsufficientFunds { balance: Coins(5) })
    );
    assert_eq!(order.balance_after, Some(Coins(5)));
    assert_eq!(order.next_step(), SagaStep::Done);
}

#[test]
fn a_debit_that_never_happened_fails_the_order() {
    let mut order = new_order();
    order.record(not_debited()).expect("recorded");
    assert_eq!(order.status, OrderStatus::Failed);
    assert_eq!(order.fail_reason, Some(FailReason::NotDebited));
    // The balance seen is kept, so every repeat answers with it.
    assert_eq!(order.balance_after, Some(Coins(7)));
    assert_eq!(order.next_step(), SagaStep::Done);
}

#[test]
fn a_rejection_before_the_debit_fails_the_order() {
    let mut order = new_order();
    order.record(rejected()).expect("recorded");
    assert_eq!(order.status, OrderStatus::Failed);
    assert_eq!(
        order.fail_reason,
        Some(FailReason::Rejected {
            rejection: Rejection::RoomClosed
        })
    );
    assert_eq!(order.next_step(), SagaStep::Done);
}

#[test]
fn a_rejection_after_the_debit_is_refunded_and_compensated() {
    let mut order = new_order();
    order.record(debited()).expect("debit recorded");
    order.record(rejected()).expect("rejection recorded");
    // The refund is still to do: the order is not finished.
    assert_eq!(order.status, OrderStatus::Debited);
    assert_eq!(order.rejection, Some(Rejection::RoomClosed));
    assert_eq!(order.next_step(), SagaStep::Refund { amount: TOTAL });

    order.record(refunded()).expect("refund recorded");
    assert_eq!(order.status, OrderStatus::Compensated);
    assert!(order.status.is_terminal());
    assert_eq!(order.balance_after, Some(Coins(1_000)));
    assert_eq!(order.rejection, Some(Rejection::RoomClosed));
    assert_eq!(order.fail_reason, None);
    assert_eq!(order.next_step(), SagaStep::Done);
}

/// Decides `kind` by `actor` in `room` under `rules` (under the order's id as command id) and
/// applies what it decided.
fn run_in(
    room: &mut RoomState,
    rules: &RoomRules,
    kind: CommandKind,
    actor: &Actor,
) -> Result<Vec<Event>, Rejection> {
    let ctx = Ctx {
        now: CREATED_AT,
        actor,
        random: 0,
        rules,
    };
    let command = Command::new(new_order().order_id.into(), kind);
    let result = decide(room, &command, &ctx);
    for event in result.iter().flatten() {
        evolve(room, event);
    }
    result
}

#[test]
fn the_rooms_own_rejection_drives_the_refund() {
    // A room that closed after the order was placed.
    let rules = RoomRules::default();
    let owner = Actor::user(id("owner"));
    let mut room = RoomState::new(room_id());
    let mut run = |kind: CommandKind, actor: &Actor| run_in(&mut room, &rules, kind, actor);
    run(
        CommandKind::CreateRoom {
            name: "Night talk".into(),
            seat_count: None,
            region: String::new(),
        },
        &owner,
    )
    .expect("created");
    run(CommandKind::CloseRoom, &owner).expect("closed");

    let mut order = new_order();
    order.record(debited()).expect("debit recorded");
    let rejection = run(
        CommandKind::ApplyGift(order.apply_command()),
        &Actor::System,
    )
    .expect_err("a closed room refuses gifts");
    order
        .record(SagaOutcome::Rejected(rejection))
        .expect("rejection recorded");
    assert_eq!(order.next_step(), SagaStep::Refund { amount: TOTAL });
}

#[test]
fn next_step_for_every_status() {
    let expected = |stage| match stage {
        Stage::Pending => SagaStep::Debit { amount: TOTAL },
        Stage::Debited => SagaStep::Apply,
        Stage::RefundDue => SagaStep::Refund { amount: TOTAL },
        Stage::Applied => SagaStep::CreditLuckyReward {
            amount: LUCKY_REWARD,
        },
        Stage::Completed
        | Stage::CompletedLucky
        | Stage::FailedInsufficientFunds
        | Stage::FailedNotDebited
        | Stage::FailedRejected
        | Stage::Compensated => SagaStep::Done,
    };
    for stage in STAGES {
        let order = at(stage);
        assert_eq!(order.next_step(), expected(stage), "{stage:?}");
        assert_eq!(
            order.status.is_terminal(),
            order.next_step() == SagaStep::Done,
            "{stage:?}"
        );
    }
}

#[test]
fn an_unknown_outcome_changes_nothing_from_any_status() {
    for stage in STAGES {
        let mut order = at(stage);
        let before = order.clone();
        order
            .record(SagaOutcome::Unknown)
            .expect("an unknown outcome is never an error");
        assert_eq!(order, before, "{stage:?}");
        assert_eq!(order.next_step(), before.next_step(), "{stage:?}");
    }
}

#[test]
fn timeouts_and_ownership_conflicts_never_end_an_order() {
    // However many times a step times out, the order keeps asking for the same step: only a
    // definite answer ends it.
    let mut order = new_order();
    for _ in 0..5 {
        order.record(SagaOutcome::Unknown).expect("recorded");
        assert_eq!(order.status, OrderStatus::Pending);
        assert_eq!(order.next_step(), SagaStep::Debit { amount: TOTAL });
    }
    order.record(debited()).expect("debit recorded");
    for _ in 0..5 {
        order.record(SagaOutcome::Unknown).expect("recorded");
        assert_eq!(order.status, OrderStatus::Debited);
        assert_eq!(order.next_step(), SagaStep::Apply);
    }
    order.record(rejected()).expect("rejection recorded");
    for _ in 0..5 {
        order.record(SagaOutcome::Unknown).expect("recorded");
        assert_eq!(order.next_step(), SagaStep::Refund { amount: TOTAL });
    }
    order.record(refunded()).expect("refund recorded");
    assert_eq!(order.status, OrderStatus::Compensated);
}

#[test]
fn repeated_outcomes_are_harmless() {
    let repeats = [
        (Stage::Debited, debited()),
        (Stage::RefundDue, debited()),
        (Stage::RefundDue, rejected()),
        (Stage::Applied, debited()),
        (Stage::Applied, applied(LUCKY_REWARD)),
        (Stage::Completed, debited()),
        (Stage::Completed, applied(Coins::ZERO)),
        (Stage::CompletedLucky, debited()),
        (Stage::CompletedLucky, applied(LUCKY_REWARD)),
        (Stage::CompletedLucky, credited()),
        (Stage::FailedInsufficientFunds, insufficient()),
        (Stage::FailedInsufficientFunds, not_debited()),
        (Stage::FailedNotDebited, not_debited()),
        // A later look at the wallet sees another balance; the first answer stands.
        (
            Stage::FailedNotDebited,
            SagaOutcome::NotDebited {
                balance: Coins(1_000),
            },
        ),
        (Stage::FailedNotDebited, insufficient()),
        (Stage::FailedRejected, rejected()),
        (Stage::Compensated, debited()),
        (Stage::Compensated, rejected()),
        (Stage::Compensated, refunded()),
    ];
    let mut refused = Vec::new();
    for (stage, outcome) in repeats {
        let mut order = at(stage);
        let before = order.clone();
        let shown = format!("{outcome:?}");
        if let Err(error) = order.record(outcome) {
            refused.push(format!("{shown} repeated at {stage:?}: {error}"));
        }
        assert_eq!(order, before, "{shown} repeated at {stage:?}");
    }
    assert!(refused.is_empty(), "{refused:#?}");
}

#[test]
fn contradicting_outcomes_are_invalid_and_change_nothing() {
    let contradictions = [
        // Debited after the order failed: FAILED promised nothing was debited.
        (Stage::FailedInsufficientFunds, debited(), "debited"),
        (Stage::FailedNotDebited, debited(), "debited"),
        (Stage::FailedRejected, debited(), "debited"),
        // Refunded without a rejection.
        (Stage::Pending, refunded(), "refunded"),
        (Stage::Debited, refunded(), "refunded"),
        (Stage::Applied, refunded(), "refunded"),
        (Stage::Completed, refunded(), "refunded"),
        // Applied after the room refused, or before any debit.
        (Stage::RefundDue, applied(Coins::ZERO), "applied"),
        (Stage::Compensated, applied(Coins::ZERO), "applied"),
        (Stage::Pending, applied(Coins::ZERO), "applied"),
        (
            Stage::FailedInsufficientFunds,
            applied(Coins::ZERO),
            "applied",
        ),
        // Applied again with another reward than the one recorded.
        (Stage::Applied, applied(Coins(1)), "applied"),
        (Stage::Completed, applied(LUCKY_REWARD), "applied"),
        // Rejected after the room applied it.
        (Stage::Applied, rejected(), "rejected"),
        (Stage::Completed, rejected(), "rejected"),
        // The wallet denies a debit it confirmed.
        (Stage::Debited, insufficient(), "insufficient_funds"),
        (Stage::Debited, not_debited(), "not_debited"),
        (Stage::Completed, not_debited(), "not_debited"),
        (Stage::Compensated, insufficient(), "insufficient_funds"),
        // A reward credited that was never due.
        (Stage::Pending, credited(), "reward_credited"),
        (Stage::Debited, credited(), "reward_credited"),
        (Stage::Completed, credited(), "reward_credited"),
        (Stage::Compensated, credited(), "reward_credited"),
    ];
    for (stage, outcome, name) in contradictions {
        let mut order = at(stage);
        let before = order.clone();
        let shown = format!("{outcome:?}");
        let error = order
            .record(outcome)
            .expect_err(&format!("{shown} at {stage:?} must be refused"));
        assert_eq!(
            error,
            InvalidTransition {
                order_id: before.order_id.clone(),
                from: before.status,
                outcome: name,
            },
            "{shown} at {stage:?}"
        );
        assert!(error.to_string().contains("order-7"));
        assert_eq!(order, before, "{shown} at {stage:?} changed the order");
    }
}

#[test]
fn only_a_definite_answer_ends_a_pending_order() {
    let endings = [
        (insufficient(), OrderStatus::Failed),
        (not_debited(), OrderStatus::Failed),
        (rejected(), OrderStatus::Failed),
        (debited(), OrderStatus::Debited),
        (SagaOutcome::Unknown, OrderStatus::Pending),
    ];
    for (outcome, status) in endings {
        let mut order = new_order();
        order.record(outcome).expect("recorded");
        assert_eq!(order.status, status);
        assert_ne!(order.status, OrderStatus::Compensated);
    }
}

#[test]
fn statuses_are_stored_as_their_names() {
    for stage in STAGES {
        let status = at(stage).status;
        let json = serde_json::to_value(status).expect("serializes");
        assert_eq!(json, status.as_str(), "{stage:?}");
    }
}

#[test]
fn a_new_order_names_its_wallet_operations_by_sender_and_order_id() {
    let order = new_order();
    assert_eq!(order.keys, OrderKeys::SenderAndOrderId);
    assert_eq!(order.wallet_op_id(), "order-7 alice");
    // Another sender's order with the same id is another operation.
    let mut bobs = apply();
    bobs.sender = id("bob");
    bobs.recipients = vec![id("carol")];
    let bobs = GiftOrder::new(room_id(), &bobs, CREATED_AT).expect("the total fits");
    assert_eq!(bobs.wallet_op_id(), "order-7 bob");
    assert_ne!(bobs.wallet_op_id(), order.wallet_op_id());
}

#[test]
fn an_order_stored_before_sender_scoping_keeps_its_order_id_names() {
    let mut json = serde_json::to_value(new_order()).expect("serializes");
    assert_eq!(json["keys"], "sender_and_order_id");
    json.as_object_mut().expect("an object").remove("keys");
    let old: GiftOrder = serde_json::from_value(json).expect("an order without keys reads");
    assert_eq!(old.keys, OrderKeys::OrderId);
    assert_eq!(old.wallet_op_id(), "order-7");
    let round_trip: GiftOrder =
        serde_json::from_value(serde_json::to_value(&old).expect("serializes")).expect("reads");
    assert_eq!(round_trip, old);
}

/// A batch gift placed for bob, carol and dave: 10 coins × 3 units × 3.
fn batch_order(lucky: bool) -> GiftOrder {
    let apply = ApplyGift {
        recipients: vec![id("bob"), id("carol"), id("dave")],
        scope: Some(GiftScope::AllMic),
        gift: GiftSnapshot {
            lucky,
            ..apply().gift
        },
        ..apply()
    };
    let mut order = GiftOrder::new(room_id(), &apply, CREATED_AT).expect("the total fits");
    assert_eq!(order.total, Coins(90));
    order.record(debited()).expect("debit recorded");
    order
}

fn applied_to(names: &[&str], value: i64, lucky_reward: i64) -> SagaOutcome {
    SagaOutcome::Applied {
        lucky_reward: Coins(lucky_reward),
        recipients: names.iter().map(|name| id(name)).collect(),
        value: Coins(value),
    }
}

#[test]
fn a_batch_gift_that_reached_fewer_is_refunded_the_rest_then_completes() {
    let mut order = batch_order(false);
    order
        .record(applied_to(&["bob", "dave"], 60, 0))
        .expect("applied");
    assert_eq!(order.status, OrderStatus::Applied);
    assert_eq!(order.reached(), Some(&[id("bob"), id("dave")][..]));
    assert_eq!(order.spent(), Coins(60));
    assert_eq!(order.next_step(), SagaStep::Refund { amount: Coins(30) });
    // A repeat of the room's answer changes nothing.
    let before = order.clone();
    order
        .record(applied_to(&["bob", "dave"], 60, 0))
        .expect("repeat");
    assert_eq!(order, before);
    order.record(refunded()).expect("refunded");
    assert_eq!(order.status, OrderStatus::Completed);
    assert!(order.partial_refunded);
    assert_eq!(order.next_step(), SagaStep::Done);
    order
        .record(refunded())
        .expect("a repeated refund is harmless");
    assert_eq!(order.status, OrderStatus::Completed);
}

#[test]
fn a_lucky_batch_gift_is_refunded_before_its_reward_is_credited() {
    let mut order = batch_order(true);
    order
        .record(applied_to(&["carol"], 30, 60))
        .expect("applied");
    assert_eq!(order.next_step(), SagaStep::Refund { amount: Coins(60) });
    // The reward waits for the refund.
    let early = order
        .record(credited())
        .expect_err("the refund comes first");
    assert_eq!(early.outcome, "reward_credited");
    order.record(refunded()).expect("refunded");
    assert_eq!(order.status, OrderStatus::Applied);
    assert_eq!(
        order.next_step(),
        SagaStep::CreditLuckyReward { amount: Coins(60) }
    );
    order.record(credited()).expect("credited");
    assert_eq!(order.status, OrderStatus::Completed);
}

#[test]
fn a_batch_gift_that_reached_everyone_it_paid_for_completes_at_once() {
    let mut order = batch_order(false);
    order
        .record(applied_to(&["dave", "carol", "bob"], 90, 0))
        .expect("applied");
    assert_eq!(order.status, OrderStatus::Completed);
    assert_eq!(order.partial_refund, Coins::ZERO);
    assert_eq!(order.next_step(), SagaStep::Done);
}

#[test]
fn a_room_answer_worth_more_than_was_paid_is_invalid() {
    for outcome in [
        applied_to(&["bob", "carol", "dave"], 91, 0),
        applied_to(&["bob", "carol", "dave", "erin"], 90, 0),
        applied_to(&[], 0, 0),
    ] {
        let mut order = batch_order(false);
        let before = order.clone();
        order.record(outcome).expect_err("more than paid for");
        assert_eq!(order, before);
    }
    // A listed gift reaches its recipients at its total, or the answer is not its own.
    let mut order = new_order();
    order.record(debited()).expect("debited");
    order
        .record(applied_to(&["bob"], 30, 0))
        .expect_err("not the order's recipients");
}

#[test]
fn the_room_gives_a_batch_gift_to_whom_its_scope_names_when_it_applies_it() {
    let rules = RoomRules::default();
    let mut room = RoomState::new(room_id());
    let mut run = |kind: CommandKind, actor: &Actor| run_in(&mut room, &rules, kind, actor);
    let create = CommandKind::CreateRoom {
        name: "Night talk".into(),
        seat_count: None,
        region: String::new(),
    };
    run(create, &Actor::user(id("alice"))).expect("created");
    for name in ["alice", "bob", "carol", "dave"] {
        let join = CommandKind::Join {
            password_verified: false,
            verified_lock: None,
        };
        run(join, &Actor::user(id(name))).expect("joined");
    }
    let take = |seat| CommandKind::TakeSeat {
        seat: room_domain::SeatIndex(seat),
    };
    run(take(3), &Actor::user(id("carol"))).expect("seated");

    // Paid for three (bob, carol, dave when placed); only carol holds a seat now.
    let mut order = batch_order(false);
    order.sender = id("alice");
    let events = run(
        CommandKind::ApplyGift(order.apply_command()),
        &Actor::System,
    )
    .expect("applied");
    let Event::RoomGiftSent(sent) = &events[0] else {
        panic!("the gift first: {events:?}");
    };
    assert_eq!(sent.recipients, [id("carol")]);
    assert_eq!(sent.total_value, Coins(30));

    // Nobody else on a seat: the room refuses it, and the saga refunds the whole order.
    let mut lonely = order.apply_command();
    lonely.sender = id("carol");
    lonely.recipients = vec![id("bob")];
    assert_eq!(
        run(CommandKind::ApplyGift(lonely), &Actor::System),
        Err(Rejection::NoRecipients)
    );

    // Every member: the seat holder first, then the others as they joined (bob before dave).
    let state = room;
    assert_eq!(
        state.batch_recipients(GiftScope::AllRoom, &id("alice"), 10),
        [id("carol"), id("bob"), id("dave")]
    );
    assert_eq!(
        state.batch_recipients(GiftScope::AllRoom, &id("alice"), 2),
        [id("carol"), id("bob")]
    );
    assert_eq!(
        state.batch_recipients(GiftScope::AllMic, &id("carol"), 10),
        Vec::<UserId>::new()
    );
}
