//! Values the conformance suites build (rooms, events, commands, orders, batches) and small
//! assertion helpers.

use std::fmt::Debug;

use room_domain::{
    Actor, ApplyGift, Coins, Command, CommandId, CommandKind, Event, EventEnvelope, FailReason,
    GiftId, GiftOrder, GiftSnapshot, OrderId, OrderStatus, Rejection, RocketId, RoomId, RoomState,
    Snapshot, Timestamp, UserId,
};

use crate::Result;
use crate::ports::{
    Activation, CommandRecord, CommitBatch, CreditKind, Payout, RoomSummary, StoredEvent, Timer,
};

/// A fixed instant the suites count from (2025-11-30T00:00:00Z).
pub(crate) const T0: Timestamp = Timestamp(1_764_460_800_000);

/// `T0` plus `ms` milliseconds.
pub(crate) fn at(ms: i64) -> Timestamp {
    Timestamp(T0.0 + ms)
}

/// An instant after every timestamp the suites use.
pub(crate) fn far_future() -> Timestamp {
    Timestamp(i64::MAX / 2)
}

pub(crate) fn room(id: &str) -> RoomId {
    RoomId::new(id).expect("valid room id")
}

pub(crate) fn user(id: &str) -> UserId {
    UserId::new(id).expect("valid user id")
}

pub(crate) fn command_id(id: &str) -> CommandId {
    CommandId::new(id).expect("valid command id")
}

pub(crate) fn order_id(id: &str) -> OrderId {
    OrderId::new(id).expect("valid order id")
}

pub(crate) fn gift_id(id: &str) -> GiftId {
    GiftId::new(id).expect("valid gift id")
}

/// Unwraps `result`, or panics naming the check and the error.
#[track_caller]
pub(crate) fn ok<T>(result: Result<T>, what: &str) -> T {
    match result {
        Ok(value) => value,
        Err(error) => panic!("{what}: unexpected error: {error:?}"),
    }
}

/// Asserts that `$result` is an error matching `$pattern`.
macro_rules! expect_err {
    ($result:expr, $pattern:pat, $($what:tt)+) => {{
        let result = $result;
        assert!(
            matches!(result, Err($pattern)),
            "{}: expected Err({}), got {:?}",
            format_args!($($what)+),
            stringify!($pattern),
            result,
        );
    }};
}
pub(crate) use expect_err;

/// Asserts equality with a message that names the check.
#[track_caller]
pub(crate) fn same<T: PartialEq + Debug>(actual: T, expected: T, what: &str) {
    assert_eq!(actual, expected, "{what}");
}

/// A snapshot of `room_id`'s state at `version`, with a recognizable heat.
pub(crate) fn snapshot(room_id: &RoomId, version: u64) -> Snapshot {
    let mut state = RoomState::new(room_id.clone());
    state.version = version;
    state.heat = version as i64 * 100;
    Snapshot::new(state)
}

/// A PENDING order of alice in `room_id`, created at `created_at`.
pub(crate) fn order(id: &str, room_id: &RoomId, created_at: Timestamp) -> GiftOrder {
    order_of("alice", id, room_id, created_at)
}

/// A PENDING order of `sender` in `room_id`, created at `created_at`.
pub(crate) fn order_of(
    sender: &str,
    id: &str,
    room_id: &RoomId,
    created_at: Timestamp,
) -> GiftOrder {
    let apply = ApplyGift {
        order_id: order_id(id),
        sender: user(sender),
        recipients: vec![user("bob"), user("carol")],
        gift: GiftSnapshot {
            gift_id: gift_id("rose"),
            price: Coins(10),
            heat: 10,
            fuel: 5,
            lucky: true,
            billing_version: None,
        },
        count: 3,
        lucky_draw: 424_242,
        scope: None,
    };
    GiftOrder::new(room_id.clone(), &apply, created_at).expect("total fits")
}

/// `order` with every optional field filled, in status `status`.
pub(crate) fn order_in(order: &GiftOrder, status: OrderStatus) -> GiftOrder {
    let mut order = order.clone();
    order.status = status;
    match status {
        OrderStatus::Failed => {
            order.fail_reason = Some(FailReason::InsufficientFunds { balance: Coins(3) });
            order.balance_after = Some(Coins(3));
        }
        OrderStatus::Compensated => {
            order.rejection = Some(Rejection::RoomClosed);
            order.balance_after = Some(Coins(500));
        }
        OrderStatus::Pending => {}
        OrderStatus::Debited | OrderStatus::Applied | OrderStatus::Completed => {
            order.lucky_reward = Coins(120);
            order.balance_after = Some(Coins(440));
        }
    }
    order
}

pub(crate) fn timer(id: &str, room_id: &RoomId, due_at: Timestamp) -> Timer {
    Timer {
        timer_id: id.to_owned(),
        room_id: room_id.clone(),
        due_at,
        command: CommandKind::LaunchRocket {
            rocket_id: RocketId(7),
            level: 2,
            scheduled_at: due_at,
        },
    }
}

pub(crate) fn payout(op_id: &str, room_id: &RoomId, amount: i64) -> Payout {
    Payout {
        op_id: op_id.to_owned(),
        kind: CreditKind::RocketReward,
        user: user("dave"),
        amount: Coins(amount),
        room_id: room_id.clone(),
    }
}

pub(crate) fn summary(room_id: &RoomId, heat: i64, open: bool, version: u64) -> RoomSummary {
    RoomSummary {
        room_id: room_id.clone(),
        owner: user("owner"),
        name: format!("Room {room_id}"),
        open,
        heat,
        online: 3,
        locked: false,
        version,
        region: "eu-west".into(),
        cover_url: None,
        seats_taken: 2,
        created_at: at(-86_400_000),
        recent_heat_milli: heat.saturating_mul(1_000),
        recent_heat_at: at(1_000 * version as i64),
    }
}

/// A batch of `activation`'s epoch on top of version `version`: one command per entry of
/// `commands` (its id and how many events it produced), each event a heat change, every
/// event also in the outbox, and the room's summary after the batch. Orders, timers and
/// payouts are left empty for the caller to fill.
pub(crate) fn batch(
    room_id: &RoomId,
    activation: Activation,
    version: u64,
    commands: &[(&str, u64)],
) -> CommitBatch {
    let mut records = Vec::new();
    let mut events = Vec::new();
    let mut outbox = Vec::new();
    let mut seq = version;
    for (i, (id, event_count)) in commands.iter().enumerate() {
        let applied_at = at(seq as i64 * 1000 + i as i64);
        let first_seq = seq + 1;
        for _ in 0..*event_count {
            seq += 1;
            let event = Event::RoomHeatChanged {
                heat: seq as i64 * 10,
                delta: 10,
            };
            outbox.push(EventEnvelope::new(room_id.clone(), seq, applied_at, &event));
            events.push(StoredEvent {
                seq,
                occurred_at: applied_at,
                event,
            });
        }
        records.push(CommandRecord {
            command_id: command_id(id),
            command: Command::new(
                command_id(id),
                CommandKind::Kick {
                    user: user("mallory"),
                    ban_seconds: Some(60),
                },
            ),
            actor: if i % 2 == 0 {
                Actor::user(user("owner"))
            } else {
                Actor::System
            },
            applied_at,
            first_seq,
            last_seq: seq,
        });
    }
    CommitBatch {
        room_id: room_id.clone(),
        epoch: activation.epoch,
        expected_version: version,
        commands: records,
        events,
        outbox,
        orders: Vec::new(),
        timers: Vec::new(),
        payouts: Vec::new(),
        summary: Some(summary(room_id, seq as i64 * 10, true, seq)),
    }
}
