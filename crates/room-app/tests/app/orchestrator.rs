//! Robot rooms at run time: the script a robot room plays ([`plan_step`]) and what it reads
//! of the room ([`RobotView::of`]); which node a room prefers ([`preferred_node`]); and the
//! [`Orchestrator`] on one node (runtimes started, changed, stopped, their robots gone; a
//! closed room let go for good; a lost lease stopping the runtime; a stopped orchestrator
//! out of the group) and on two (every room run on exactly one node, spread over both, a
//! room whose lease moved stopped on the node that lost it and nothing more of that node
//! committed).
//!
//! Time is tokio's, paused: it moves only when every task waits for a timer, so that robot
//! steps (every 2 s) and lease expiries happen in the same order on every run.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use room_app::ports::{
    GiftShare, IdGen, Lease, LeaseHolder, LeaseRef, RobotProfile, RobotRoomConfig, RobotRooms,
};
use room_app::robots::{
    ORCHESTRATOR_GROUP, Orchestrator, OrchestratorConfig, OrchestratorDeps, RobotAction, RobotView,
    ScriptCarry, plan_step, preferred_node, target_listeners,
};
use room_app::testkit::InMemoryLeases;
use room_app::{CellConfig, Error, LocalLease, Result};
use room_domain::{
    CommandKind, Event, GiftId, GiftSent, Member, Occupant, Role, RoomId, RoomState, RoomStatus,
    Seat, SeatIndex, SeatSessionId, Timestamp, UserId,
};
use tokio_util::sync::CancellationToken;

use crate::support::{Nodes, T0, TestIds, World, config, eventually, gifts_in, rid, uid, user};

/// How often a runtime plays a step in these tests.
const STEP: Duration = Duration::from_secs(2);

/// A stay so long that no robot leaves for turnover's sake (the chance per step is about
/// one in a billion).
const LONG_STAY: Duration = Duration::from_secs(u32::MAX as u64);

const HOUR_MS: i64 = 3_600_000;

/// The robot pool `robot-1` ... `robot-{n}`.
fn pool(n: usize) -> Vec<UserId> {
    (1..=n).map(|i| uid(&format!("robot-{i}"))).collect()
}

fn gift_id(name: &str) -> GiftId {
    GiftId::new(name).expect("valid gift id")
}

fn share(name: &str, weight: u32) -> GiftShare {
    GiftShare {
        gift_id: gift_id(name),
        weight,
    }
}

/// A valid robot room of 8 seats: five robots, three of them in the room at every hour, two
/// on seats, 30 gifts a minute (one a step), roses and (three times as often) boosters.
fn robot_config(room: &RoomId) -> RobotRoomConfig {
    let config = RobotRoomConfig {
        room_id: room.clone(),
        profile: RobotProfile {
            name: "robots".into(),
            notice: String::new(),
            cover_url: None,
        },
        seat_count: 8,
        robots: pool(5),
        audience: vec![3; 24],
        seats: 2,
        gift_rate_per_minute: 30,
        gift_mix: vec![share("rose", 1), share("booster", 3)],
        enabled: true,
        version: 1,
        created_at: T0,
        updated_at: T0,
    };
    config.validate("robot-").expect("a valid robot room");
    config
}

/// Deterministic uniform draws (the test id generator's).
fn draws() -> impl FnMut() -> u64 {
    let ids = TestIds::default();
    move || ids.random()
}

/// What a script reads of a room of 8 seats: the robots of `present` (indexes into the pool
/// of `config`) in the room, those of `seated` on the given seats, `free` seats free, and
/// `humans` on the other seats given.
fn view_of(
    config: &RobotRoomConfig,
    present: &[usize],
    seated: &[(usize, u8)],
    free: &[u8],
    humans: &[(&str, u8)],
) -> RobotView {
    let robots = &config.robots;
    let mut on_seats: Vec<(u8, UserId)> = seated
        .iter()
        .map(|(i, seat)| (*seat, robots[*i].clone()))
        .chain(humans.iter().map(|(name, seat)| (*seat, uid(name))))
        .collect();
    on_seats.sort();
    RobotView {
        open: true,
        present: present.iter().map(|i| robots[*i].clone()).collect(),
        absent: (0..robots.len())
            .filter(|i| !present.contains(i))
            .map(|i| robots[i].clone())
            .collect(),
        seated: seated
            .iter()
            .map(|(i, seat)| (robots[*i].clone(), SeatIndex(*seat)))
            .collect(),
        free_seats: free.iter().map(|seat| SeatIndex(*seat)).collect(),
        on_seats: on_seats.into_iter().map(|(_, user)| user).collect(),
    }
}

/// One step at T0 (01:00 UTC) with no turnover.
fn plan(
    config: &RobotRoomConfig,
    view: &RobotView,
    carry: &mut ScriptCarry,
    random: &mut dyn FnMut() -> u64,
) -> Vec<RobotAction> {
    plan_step(config, view, T0, STEP, LONG_STAY, carry, random)
}

fn gifts(actions: &[RobotAction]) -> Vec<(UserId, GiftId, UserId)> {
    actions
        .iter()
        .filter_map(|action| match action {
            RobotAction::Gift {
                sender,
                gift_id,
                recipient,
            } => Some((sender.clone(), gift_id.clone(), recipient.clone())),
            _ => None,
        })
        .collect()
}

/// The room as the actions leave it (what the cell would make of them, roughly).
fn apply(view: &mut RobotView, actions: &[RobotAction]) {
    for action in actions {
        match action {
            RobotAction::Join(robot) => {
                view.absent.retain(|r| r != robot);
                view.present.push(robot.clone());
            }
            RobotAction::Leave(robot) => {
                view.present.retain(|r| r != robot);
                if let Some(at) = view.seated.iter().position(|(r, _)| r == robot) {
                    let (_, seat) = view.seated.remove(at);
                    view.free_seats.push(seat);
                }
                view.on_seats.retain(|u| u != robot);
                view.absent.push(robot.clone());
            }
            RobotAction::TakeSeat(robot, seat) => {
                assert!(view.free_seats.contains(seat), "{seat:?} is not free");
                view.free_seats.retain(|s| s != seat);
                view.seated.push((robot.clone(), *seat));
                view.on_seats.push(robot.clone());
            }
            RobotAction::LeaveSeat(robot, seat) => {
                view.seated.retain(|(r, _)| r != robot);
                view.on_seats.retain(|u| u != robot);
                view.free_seats.push(*seat);
            }
            RobotAction::Gift { .. } => {}
        }
    }
}

fn joins_and_leaves(actions: &[RobotAction]) -> (Vec<&UserId>, Vec<&UserId>) {
    let joins = actions
        .iter()
        .filter_map(|a| match a {
            RobotAction::Join(robot) => Some(robot),
            _ => None,
        })
        .collect();
    let leaves = actions
        .iter()
        .filter_map(|a| match a {
            RobotAction::Leave(robot) => Some(robot),
            _ => None,
        })
        .collect();
    (joins, leaves)
}

fn seat_actions(actions: &[RobotAction]) -> Vec<&RobotAction> {
    actions
        .iter()
        .filter(|a| matches!(a, RobotAction::TakeSeat(..) | RobotAction::LeaveSeat(..)))
        .collect()
}

#[test]
fn below_the_hours_audience_one_robot_joins_per_step_until_it_is_reached() {
    let config = RobotRoomConfig {
        seats: 0,
        gift_rate_per_minute: 0,
        ..robot_config(&rid("r"))
    };
    let mut view = view_of(&config, &[0], &[], &[0, 1, 2, 3, 4, 5, 6, 7], &[]);
    let mut random = draws();
    let mut carry = ScriptCarry::default();
    for step in 0..2 {
        let actions = plan(&config, &view, &mut carry, &mut random);
        let (joins, leaves) = joins_and_leaves(&actions);
        assert_eq!(
            (joins.len(), leaves.len()),
            (1, 0),
            "step {step}: {actions:?}"
        );
        assert!(view.absent.contains(joins[0]), "{actions:?}");
        apply(&mut view, &actions);
    }
    assert_eq!(view.present.len(), 3);
    for _ in 0..50 {
        let actions = plan(&config, &view, &mut carry, &mut random);
        assert!(actions.is_empty(), "at the audience: {actions:?}");
    }
}

#[test]
fn above_the_hours_audience_one_robot_leaves_per_step_standing_robots_first() {
    let config = RobotRoomConfig {
        audience: vec![1; 24],
        seats: 1,
        gift_rate_per_minute: 0,
        ..robot_config(&rid("r"))
    };
    let robots = &config.robots;
    let mut random = draws();
    let mut carry = ScriptCarry::default();
    // robot-1 sits: robot-2 or robot-3 leaves, whichever the draw picks, never robot-1.
    let view = view_of(&config, &[0, 1, 2], &[(0, 0)], &[1, 2, 3, 4, 5, 6, 7], &[]);
    let mut left = HashSet::new();
    for _ in 0..100 {
        let actions = plan(&config, &view, &mut carry, &mut random);
        let (joins, leaves) = joins_and_leaves(&actions);
        assert_eq!((joins.len(), leaves.len()), (0, 1), "{actions:?}");
        assert_ne!(
            leaves[0], &robots[0],
            "a seated robot left first: {actions:?}"
        );
        left.insert(leaves[0].clone());
    }
    assert_eq!(left.len(), 2, "both standing robots are drawn: {left:?}");

    // Played out, the room comes down to the hour's audience, one leave a step.
    let mut view = view;
    for _ in 0..2 {
        let actions = plan(&config, &view, &mut carry, &mut random);
        apply(&mut view, &actions);
    }
    assert_eq!(view.present, vec![robots[0].clone()]);
    assert!(plan(&config, &view, &mut carry, &mut random).is_empty());
}

#[test]
fn a_seated_robot_that_leaves_is_neither_sent_a_gift_nor_told_to_stand_up() {
    // Both robots sit and the hour wants one: a seated robot leaves. Its seat frees with
    // its leave, and the gifts of the step go to whoever stays.
    let config = RobotRoomConfig {
        audience: vec![1; 24],
        seats: 2,
        gift_rate_per_minute: 600,
        ..robot_config(&rid("r"))
    };
    let mut random = draws();
    for _ in 0..50 {
        let mut carry = ScriptCarry::default();
        let view = view_of(&config, &[0, 1], &[(0, 0), (1, 1)], &[2], &[("alice", 3)]);
        let actions = plan(&config, &view, &mut carry, &mut random);
        let (_, leaves) = joins_and_leaves(&actions);
        assert_eq!(leaves.len(), 1, "{actions:?}");
        let leaving = leaves[0].clone();
        for (sender, _, recipient) in gifts(&actions) {
            assert_ne!(sender, leaving, "{actions:?}");
            assert_ne!(
                recipient, leaving,
                "a gift to a robot that left: {actions:?}"
            );
        }
        for action in seat_actions(&actions) {
            assert!(
                !matches!(action, RobotAction::LeaveSeat(robot, _) if *robot == leaving),
                "the leaving robot is told to stand up: {actions:?}"
            );
        }
    }
}

#[test]
fn robots_never_take_the_last_free_seat_and_free_one_when_none_is_left() {
    let config = RobotRoomConfig {
        audience: vec![4; 24],
        seats: 3,
        gift_rate_per_minute: 0,
        ..robot_config(&rid("r"))
    };
    let robots = &config.robots;
    let mut random = draws();
    let mut carry = ScriptCarry::default();
    let humans = [
        ("h0", 0),
        ("h1", 1),
        ("h2", 2),
        ("h3", 3),
        ("h4", 4),
        ("h5", 5),
    ];

    // One seat free (people hold the rest): the robots stay standing.
    let mut seven = humans.to_vec();
    seven.push(("h6", 6));
    let one_free = view_of(&config, &[0, 1, 2, 3], &[], &[7], &seven);
    for _ in 0..50 {
        let actions = plan(&config, &one_free, &mut carry, &mut random);
        assert!(seat_actions(&actions).is_empty(), "{actions:?}");
    }

    // Two free: a standing robot takes one of them.
    let two_free = view_of(&config, &[0, 1, 2, 3], &[], &[6, 7], &humans);
    for _ in 0..50 {
        let actions = plan(&config, &two_free, &mut carry, &mut random);
        match &seat_actions(&actions)[..] {
            [RobotAction::TakeSeat(robot, seat)] => {
                assert!(two_free.present.contains(robot));
                assert!(two_free.free_seats.contains(seat), "{actions:?}");
            }
            other => panic!("expected one TakeSeat: {other:?}"),
        }
    }

    // None free, robot-1 on seat 7: it stands up for a person.
    let none_free = view_of(&config, &[0, 1, 2, 3], &[(0, 7)], &[], &seven);
    for _ in 0..20 {
        let actions = plan(&config, &none_free, &mut carry, &mut random);
        assert_eq!(
            seat_actions(&actions),
            vec![&RobotAction::LeaveSeat(robots[0].clone(), SeatIndex(7))],
            "{actions:?}"
        );
    }
}

#[test]
fn seats_go_toward_the_configured_count_one_change_a_step() {
    let config = RobotRoomConfig {
        audience: vec![4; 24],
        seats: 2,
        gift_rate_per_minute: 0,
        ..robot_config(&rid("r"))
    };
    let mut random = draws();
    let mut carry = ScriptCarry::default();

    // Three seated, two wanted: one stands up.
    let over = view_of(
        &config,
        &[0, 1, 2, 3],
        &[(0, 0), (1, 1), (2, 2)],
        &[3, 4, 5, 6, 7],
        &[],
    );
    let actions = plan(&config, &over, &mut carry, &mut random);
    assert!(
        matches!(&seat_actions(&actions)[..], [RobotAction::LeaveSeat(..)]),
        "{actions:?}"
    );

    // None seated: played out, two sit down, one a step, and then nothing changes.
    let mut view = view_of(&config, &[0, 1, 2, 3], &[], &[0, 1, 2, 3, 4, 5, 6, 7], &[]);
    for step in 0..2 {
        let actions = plan(&config, &view, &mut carry, &mut random);
        assert!(
            matches!(&seat_actions(&actions)[..], [RobotAction::TakeSeat(..)]),
            "step {step}: {actions:?}"
        );
        apply(&mut view, &actions);
    }
    assert_eq!(view.seated.len(), 2);
    for _ in 0..20 {
        assert!(plan(&config, &view, &mut carry, &mut random).is_empty());
    }

    // One robot in the room: no more seats than robots.
    let one = RobotRoomConfig {
        audience: vec![1; 24],
        ..config.clone()
    };
    let alone = view_of(&one, &[0], &[(0, 0)], &[1, 2, 3, 4, 5, 6, 7], &[]);
    for _ in 0..20 {
        let actions = plan(&one, &alone, &mut carry, &mut random);
        assert!(seat_actions(&actions).is_empty(), "{actions:?}");
    }
}

#[test]
fn a_played_out_day_keeps_to_the_audience_and_always_leaves_a_seat_free() {
    // The audience changes every hour; people come and go on the seats. Whatever the
    // robots do, at most one joins or leaves a step and a seat stays free.
    let config = RobotRoomConfig {
        audience: (0..24).map(|h| [0, 2, 5, 3][h % 4]).collect(),
        seats: 4,
        gift_rate_per_minute: 0,
        ..robot_config(&rid("r"))
    };
    let mut view = view_of(&config, &[], &[], &[0, 1, 2, 3, 4, 5, 6, 7], &[]);
    let mut random = draws();
    let mut carry = ScriptCarry::default();
    let mut human_seated: Option<SeatIndex> = None;
    for step in 0..24 * 60 {
        let now = Timestamp(T0.0 + step * 60_000);
        let actions = plan_step(
            &config,
            &view,
            now,
            STEP,
            Duration::from_secs(600),
            &mut carry,
            &mut random,
        );
        let (joins, leaves) = joins_and_leaves(&actions);
        assert!(joins.len() + leaves.len() <= 1, "{actions:?}");
        let free_before = view.free_seats.len();
        apply(&mut view, &actions);
        if free_before >= 1 {
            assert!(
                !view.free_seats.is_empty(),
                "step {step}: the robots took the last free seat: {actions:?}"
            );
        }
        assert!(view.present.len() <= config.robots.len());
        // A person sits down on a free seat now and then, and stands up again.
        match human_seated.take() {
            Some(seat) if step % 7 == 0 => {
                view.on_seats.retain(|u| *u != uid("alice"));
                view.free_seats.push(seat);
            }
            Some(seat) => human_seated = Some(seat),
            None if step % 5 == 0 && !view.free_seats.is_empty() => {
                let seat = view.free_seats.remove(0);
                view.on_seats.push(uid("alice"));
                human_seated = Some(seat);
            }
            None => {}
        }
        // Within a few steps of the hour the audience is reached (but for a robot that
        // just left to be replaced at the next step).
        if step % 60 == 59 {
            let target = target_listeners(&config, now);
            assert!(
                (target.saturating_sub(1)..=target).contains(&view.present.len()),
                "step {step}: {} robots for an audience of {target}",
                view.present.len()
            );
        }
    }
}

#[test]
fn gifts_follow_the_rate_with_the_fraction_carried_between_steps() {
    // All five robots in and none to join: no turnover, only gifts.
    let base = RobotRoomConfig {
        audience: vec![5; 24],
        seats: 0,
        ..robot_config(&rid("r"))
    };
    let view = view_of(&base, &[0, 1, 2, 3, 4], &[], &[0, 1, 2, 3, 4, 5, 6, 7], &[]);
    let mut random = draws();
    let per_step = |rate: u32, steps: usize, random: &mut dyn FnMut() -> u64| {
        let config = RobotRoomConfig {
            gift_rate_per_minute: rate,
            ..base.clone()
        };
        let mut carry = ScriptCarry::default();
        (0..steps)
            .map(|_| gifts(&plan(&config, &view, &mut carry, random)).len())
            .collect::<Vec<_>>()
    };

    // 30 a minute, a step every 2 s: one gift every step.
    assert_eq!(per_step(30, 100, &mut random), vec![1; 100]);
    // 600 a minute: twenty a step.
    assert_eq!(per_step(600, 10, &mut random), vec![20; 10]);
    // None at all.
    assert!(per_step(0, 100, &mut random).iter().all(|n| *n == 0));

    // One a minute: one gift about every 30 steps, the fraction carried over.
    let counts = per_step(1, 300, &mut random);
    assert!(counts.iter().all(|n| *n <= 1), "{counts:?}");
    let at: Vec<usize> = (0..counts.len()).filter(|i| counts[*i] == 1).collect();
    assert!((9..=10).contains(&at.len()), "gifts at steps {at:?}");
    assert!((28..=30).contains(&at[0]), "first gift at step {}", at[0]);
    for pair in at.windows(2) {
        assert!((29..=31).contains(&(pair[1] - pair[0])), "gifts at {at:?}");
    }
}

#[test]
fn gifts_are_drawn_from_the_mix_by_weight_and_go_to_whoever_sits() {
    let config = RobotRoomConfig {
        audience: vec![5; 24],
        seats: 0,
        gift_rate_per_minute: 600,
        gift_mix: vec![share("rose", 1), share("booster", 3)],
        ..robot_config(&rid("r"))
    };
    let mut random = draws();
    let mut carry = ScriptCarry::default();
    // alice sits: every gift goes to her.
    let view = view_of(
        &config,
        &[0, 1, 2, 3, 4],
        &[],
        &[1, 2, 3, 4, 5, 6, 7],
        &[("alice", 0)],
    );
    let mut by_gift: HashMap<GiftId, usize> = HashMap::new();
    let mut senders = HashSet::new();
    for _ in 0..200 {
        for (sender, gift, recipient) in gifts(&plan(&config, &view, &mut carry, &mut random)) {
            assert!(config.robots.contains(&sender));
            assert_eq!(recipient, uid("alice"));
            senders.insert(sender);
            *by_gift.entry(gift).or_default() += 1;
        }
    }
    let roses = by_gift.get(&gift_id("rose")).copied().unwrap_or(0);
    let boosters = by_gift.get(&gift_id("booster")).copied().unwrap_or(0);
    assert_eq!(roses + boosters, 4000, "{by_gift:?}");
    let share = boosters as f64 / 4000.0;
    assert!(
        (0.70..0.80).contains(&share),
        "boosters are {share} of the gifts"
    );
    assert_eq!(senders.len(), 5, "every robot sends some: {senders:?}");

    // Nobody sits: robots give each other, never themselves.
    let view = view_of(
        &config,
        &[0, 1, 2, 3, 4],
        &[],
        &[0, 1, 2, 3, 4, 5, 6, 7],
        &[],
    );
    for _ in 0..20 {
        for (sender, _, recipient) in gifts(&plan(&config, &view, &mut carry, &mut random)) {
            assert_ne!(sender, recipient);
            assert!(config.robots.contains(&recipient));
        }
    }
    // A lone robot with nobody to give to gives nothing.
    let alone = RobotRoomConfig {
        audience: vec![1; 24],
        ..config.clone()
    };
    let view = view_of(&alone, &[0], &[], &[0, 1, 2, 3, 4, 5, 6, 7], &[]);
    assert!(gifts(&plan(&alone, &view, &mut carry, &mut random)).is_empty());
}

#[test]
fn a_closed_room_gets_no_action_at_all() {
    let config = robot_config(&rid("r"));
    let view = RobotView {
        open: false,
        ..view_of(
            &config,
            &[0, 1, 2, 3, 4],
            &[(0, 0), (1, 1), (2, 2)],
            &[],
            &[],
        )
    };
    let mut random = draws();
    let mut carry = ScriptCarry::default();
    for _ in 0..20 {
        assert!(plan(&config, &view, &mut carry, &mut random).is_empty());
    }
    let empty = RobotView {
        open: false,
        ..view_of(&config, &[], &[], &[0, 1, 2], &[])
    };
    assert!(plan(&config, &empty, &mut carry, &mut random).is_empty());
    assert_eq!(
        carry,
        ScriptCarry::default(),
        "no gift is owed while closed"
    );
}

#[test]
fn the_audience_is_the_one_of_the_hour_of_the_day_in_utc() {
    let config = RobotRoomConfig {
        robots: pool(24),
        audience: (0..24).collect(),
        ..robot_config(&rid("r"))
    };
    // T0 is 01:00 UTC.
    assert_eq!(target_listeners(&config, T0), 1);
    assert_eq!(target_listeners(&config, Timestamp(T0.0 - 1)), 0);
    assert_eq!(target_listeners(&config, Timestamp(T0.0 + 5 * HOUR_MS)), 6);
    assert_eq!(
        target_listeners(&config, Timestamp(T0.0 + 23 * HOUR_MS - 1)),
        23
    );
    assert_eq!(target_listeners(&config, Timestamp(T0.0 + 23 * HOUR_MS)), 0);
    assert_eq!(target_listeners(&config, Timestamp(-1)), 23);

    // The script follows it: at 05:00 five robots, at 01:00 one.
    let config = RobotRoomConfig {
        seats: 0,
        gift_rate_per_minute: 0,
        ..config
    };
    let view = view_of(&config, &[0, 1, 2], &[], &[0, 1, 2, 3, 4, 5, 6, 7], &[]);
    let mut random = draws();
    let mut carry = ScriptCarry::default();
    let at = |hour: i64| Timestamp(T0.0 + (hour - 1) * HOUR_MS);
    let mut step = |now| {
        plan_step(
            &config,
            &view,
            now,
            STEP,
            LONG_STAY,
            &mut carry,
            &mut random,
        )
    };
    let (joins, leaves) = {
        let actions = step(at(5));
        let (j, l) = joins_and_leaves(&actions);
        (j.len(), l.len())
    };
    assert_eq!((joins, leaves), (1, 0));
    let actions = step(at(1));
    let (joins, leaves) = joins_and_leaves(&actions);
    assert_eq!((joins.len(), leaves.len()), (0, 1), "{actions:?}");
    assert!(step(at(3)).is_empty());
}

#[test]
fn turnover_replaces_robots_at_the_audience_when_the_stay_is_short() {
    let config = RobotRoomConfig {
        seats: 1,
        gift_rate_per_minute: 0,
        ..robot_config(&rid("r"))
    };
    let view = view_of(&config, &[0, 1, 2], &[(0, 0)], &[1, 2, 3, 4, 5, 6, 7], &[]);
    let mut random = draws();
    let mut carry = ScriptCarry::default();
    // A stay of one step: some robot leaves every step, never the seated one.
    for _ in 0..50 {
        let actions = plan_step(&config, &view, T0, STEP, STEP, &mut carry, &mut random);
        let (joins, leaves) = joins_and_leaves(&actions);
        assert_eq!((joins.len(), leaves.len()), (0, 1), "{actions:?}");
        assert_ne!(leaves[0], &config.robots[0]);
    }
    // None to take their place: nobody leaves.
    let full = RobotRoomConfig {
        audience: vec![5; 24],
        ..config.clone()
    };
    let everyone = view_of(
        &full,
        &[0, 1, 2, 3, 4],
        &[(0, 0)],
        &[1, 2, 3, 4, 5, 6, 7],
        &[],
    );
    for _ in 0..50 {
        let actions = plan_step(&full, &everyone, T0, STEP, STEP, &mut carry, &mut random);
        assert!(joins_and_leaves(&actions).1.is_empty(), "{actions:?}");
    }
}

#[test]
fn the_view_reads_the_pool_from_the_rooms_state() {
    let config = robot_config(&rid("r"));
    let robots = &config.robots;
    let member = |robot| Member {
        role: Role::Member,
        vip_level: 0,
        joined_at: T0,
        robot,
    };
    let occupant = |user: &UserId| Occupant {
        user: user.clone(),
        session: SeatSessionId(1),
        since: T0,
        publish_deadline: None,
    };
    let mut state = RoomState::new(rid("r"));
    state.status = RoomStatus::Open;
    state.seats = vec![Seat::default(); 4];
    // robot-1 in as a robot on seat 0; robot-2 in as a user (not the script's); robot-3
    // banned; robot-4's ban over; robot-5 out. alice on seat 1, seat 2 locked, seat 3 free.
    state.members.insert(robots[0].clone(), member(true));
    state.members.insert(robots[1].clone(), member(false));
    state.members.insert(uid("alice"), member(false));
    state
        .bans
        .insert(robots[2].clone(), Timestamp(T0.0 + 60_000));
    state.bans.insert(robots[3].clone(), Timestamp(T0.0 - 1));
    state.seats[0].occupant = Some(occupant(&robots[0]));
    state.seats[1].occupant = Some(occupant(&uid("alice")));
    state.seats[2].locked = true;

    let view = RobotView::of(&state, &config, T0);
    assert_eq!(
        view,
        RobotView {
            open: true,
            present: vec![robots[0].clone()],
            absent: vec![robots[3].clone(), robots[4].clone()],
            seated: vec![(robots[0].clone(), SeatIndex(0))],
            free_seats: vec![SeatIndex(3)],
            on_seats: vec![robots[0].clone(), uid("alice")],
        }
    );
    state.status = RoomStatus::Closed;
    assert!(!RobotView::of(&state, &config, T0).open);
}

fn rooms(n: usize) -> Vec<RoomId> {
    (0..n).map(|i| rid(&format!("room-{i}"))).collect()
}

#[test]
fn every_node_computes_the_same_preferred_node_for_a_room() {
    let [a, b, c] = ["node-a", "node-b", "node-c"].map(String::from);
    let mut share: HashMap<String, usize> = HashMap::new();
    for room in rooms(300) {
        let from_a = preferred_node(&room, &a, [&b, &c]);
        let from_b = preferred_node(&room, &b, [&c, &a]);
        let from_c = preferred_node(&room, &c, [&a, &b]);
        assert_eq!((from_a, from_b), (from_c, from_c), "{room}");
        assert_eq!(
            preferred_node(&room, &a, [&c, &b]),
            from_a,
            "in any order: {room}"
        );
        *share.entry(from_a.to_owned()).or_default() += 1;
    }
    for node in [&a, &b, &c] {
        let rooms = share.get(node).copied().unwrap_or(0);
        assert!(
            (60..=140).contains(&rooms),
            "{node} prefers {rooms} of 300: {share:?}"
        );
    }
    // Alone, a node is every room's.
    assert_eq!(
        preferred_node(&rid("room-0"), &a, Vec::<&String>::new()),
        "node-a"
    );
}

#[test]
fn a_third_node_takes_only_the_rooms_that_now_prefer_it() {
    let [a, b, c] = ["node-a", "node-b", "node-c"].map(String::from);
    let mut moved = 0;
    for room in rooms(300) {
        let before = preferred_node(&room, &a, [&b]);
        let after = preferred_node(&room, &a, [&b, &c]);
        if after != before {
            assert_eq!(after, "node-c", "{room} moved from {before} to {after}");
            moved += 1;
        }
        // And it leaving again puts every room back where it was.
        assert_eq!(preferred_node(&room, &b, [&a]), before, "{room}");
    }
    assert!((60..=140).contains(&moved), "{moved} of 300 rooms moved");
}

/// A world as node `node-a`, over `lease`, its keeper renewing every `renew_every`.
async fn node_a(lease: LeaseRef, renew_every: Duration) -> World {
    World::builder()
        .config(CellConfig {
            node_id: "node-a".into(),
            lease_renew_every: renew_every,
            ..config()
        })
        .lease(lease)
        .build()
        .await
}

/// An orchestrator of `world`'s node `node_id` (its cell config's) over `lease`.
fn orchestrator(world: &World, lease: LeaseRef, node_id: &str) -> Orchestrator {
    orchestrator_until(world, lease, node_id, CancellationToken::new())
}

/// [`orchestrator`], whose runtimes stop when `cancel` is cancelled.
fn orchestrator_until(
    world: &World,
    lease: LeaseRef,
    node_id: &str,
    cancel: CancellationToken,
) -> Orchestrator {
    Orchestrator::new(
        OrchestratorDeps {
            runtime: world.runtime().clone(),
            robot_rooms: world.store.clone(),
            catalog: world.store.clone(),
            lease,
            clock: world.clock.clone(),
            ids: world.ids.clone(),
        },
        OrchestratorConfig {
            node_id: node_id.into(),
            step_every: STEP,
            robot_stay: LONG_STAY,
            ..OrchestratorConfig::default()
        },
        cancel,
    )
}

/// Creates room `name` (owned by robot-1, as a user) of 8 seats and stores its robot
/// configuration ([`robot_config`], `enabled` as given).
async fn robot_room(world: &World, name: &str, enabled: bool) -> RoomId {
    let room = rid(name);
    world
        .exec(
            &room,
            user("robot-1"),
            CommandKind::CreateRoom {
                name: format!("robots {name}"),
                seat_count: Some(8),
                region: "sg".into(),
            },
        )
        .await
        .expect("room created");
    let config = RobotRoomConfig {
        enabled,
        ..robot_config(&room)
    };
    RobotRooms::create(&*world.store, &config)
        .await
        .expect("configuration stored");
    room
}

/// The robots in the room, as robots.
fn robots_in(state: &RoomState) -> Vec<UserId> {
    state
        .members
        .iter()
        .filter(|(_, member)| member.robot)
        .map(|(user, _)| user.clone())
        .collect()
}

fn robots_seated(state: &RoomState) -> usize {
    let robots = robots_in(state);
    state
        .seats
        .iter()
        .filter(|seat| {
            seat.occupant
                .as_ref()
                .is_some_and(|o| robots.contains(&o.user))
        })
        .count()
}

fn robot_leaves(world_log: &[room_app::ports::StoredEvent]) -> Vec<UserId> {
    world_log
        .iter()
        .filter_map(|stored| match &stored.event {
            Event::RoomUserLeft {
                user, robot: true, ..
            } => Some(user.clone()),
            _ => None,
        })
        .collect()
}

/// Stores `change` of the room's configuration as its next version.
async fn update_config(world: &World, room: &RoomId, change: impl FnOnce(&mut RobotRoomConfig)) {
    let mut config = RobotRooms::get(&*world.store, room)
        .await
        .unwrap()
        .expect("a configuration");
    let expected = config.version;
    change(&mut config);
    config.version = expected + 1;
    RobotRooms::update(&*world.store, &config, expected)
        .await
        .expect("configuration updated");
}

#[tokio::test(start_paused = true)]
async fn an_enabled_robot_room_runs_here_with_robots_that_join_sit_and_give_free_gifts() {
    let world = World::new().await;
    let room = robot_room(&world, "robots-1", true).await;
    world.join(&room, "alice").await;
    world
        .exec(
            &room,
            user("alice"),
            CommandKind::TakeSeat { seat: SeatIndex(0) },
        )
        .await
        .unwrap();
    world.fund("alice", 100).await;
    let mut orchestrator = orchestrator(&world, Arc::new(LocalLease), "node-a");

    let report = orchestrator.reconcile().await.unwrap();
    assert_eq!(
        (report.enabled, report.started, report.stopped, report.peers),
        (1, 1, 0, 0),
        "{report:?}"
    );
    assert_eq!(orchestrator.running(), vec![room.clone()]);
    assert!(world.runtime().is_active(&room));

    tokio::time::sleep(Duration::from_secs(60)).await;
    let state = world.state(&room).await;
    let robots = robots_in(&state);
    assert_eq!(robots.len(), 3, "the hour's audience: {robots:?}");
    assert!(
        robots
            .iter()
            .all(|r| robot_config(&room).robots.contains(r))
    );
    assert_eq!(robots_seated(&state), 2, "{:?}", state.seats);
    assert!(state.seats.iter().any(|seat| seat.occupant.is_none()));

    let log = world.log(&room).await;
    let gifts: Vec<GiftSent> = gifts_in(&log);
    assert!(gifts.len() >= 20, "{} robot gifts in 30 steps", gifts.len());
    for gift in &gifts {
        assert!(gift.robot, "{gift:?}");
        assert!(robots.contains(&gift.sender), "{gift:?}");
        assert_eq!(gift.fuel_added, 0);
        assert!(
            ["rose", "booster"].contains(&gift.gift_id.as_str()),
            "{gift:?}"
        );
    }
    assert!(
        gifts.iter().any(|g| g.recipients == vec![uid("alice")]),
        "alice sits, and is given gifts"
    );
    // Free gifts: no coin moved.
    assert_eq!(world.balance("alice").await.0, 100);
    for robot in robot_config(&room).robots {
        assert_eq!(world.balance(robot.as_str()).await.0, 0, "{robot}");
    }
    assert_eq!(state.rocket.fuel, 0);

    // The next round leaves it running as it is.
    let report = orchestrator.reconcile().await.unwrap();
    assert_eq!(
        (report.enabled, report.started, report.stopped),
        (1, 0, 0),
        "{report:?}"
    );
    assert_eq!(orchestrator.running(), vec![room.clone()]);
}

#[tokio::test(start_paused = true)]
async fn a_changed_configuration_reaches_the_running_room() {
    let world = World::new().await;
    let room = robot_room(&world, "robots-1", true).await;
    let mut orchestrator = orchestrator(&world, Arc::new(LocalLease), "node-a");
    orchestrator.reconcile().await.unwrap();
    eventually("three robots are in", || async {
        robots_in(&world.state(&room).await).len() == 3
    })
    .await;

    update_config(&world, &room, |config| config.audience = vec![1; 24]).await;
    let report = orchestrator.reconcile().await.unwrap();
    assert_eq!((report.started, report.stopped), (0, 0), "{report:?}");
    eventually("two robots left", || async {
        robots_in(&world.state(&room).await).len() == 1
    })
    .await;
    assert_eq!(orchestrator.running(), vec![room.clone()]);
}

#[tokio::test(start_paused = true)]
async fn disabling_a_robot_room_stops_its_runtime_and_its_robots_leave() {
    let world = World::new().await;
    let room = robot_room(&world, "robots-1", true).await;
    let mut orchestrator = orchestrator(&world, Arc::new(LocalLease), "node-a");
    orchestrator.reconcile().await.unwrap();
    eventually("three robots are in, two of them seated", || async {
        let state = world.state(&room).await;
        robots_in(&state).len() == 3 && robots_seated(&state) == 2
    })
    .await;

    update_config(&world, &room, |config| config.enabled = false).await;
    let report = orchestrator.reconcile().await.unwrap();
    assert_eq!(
        (report.enabled, report.started, report.stopped),
        (0, 0, 1),
        "{report:?}"
    );
    // The runtime empties the room and lets its cell go.
    eventually("the room's cell is let go", || async {
        !world.runtime().is_active(&room)
    })
    .await;
    let log = world.log(&room).await;
    assert_eq!(robot_leaves(&log).len(), 3, "{:?}", robot_leaves(&log));
    let state = world.state(&room).await;
    assert!(robots_in(&state).is_empty(), "{:?}", state.members);
    assert_eq!(robots_seated(&state), 0);

    let report = orchestrator.reconcile().await.unwrap();
    assert_eq!((report.started, report.stopped), (0, 0), "{report:?}");
    assert!(orchestrator.running().is_empty());
    let events = world.log(&room).await.len();
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert_eq!(
        world.log(&room).await.len(),
        events,
        "a robot acted after the stop"
    );
}

#[tokio::test(start_paused = true)]
async fn deleting_a_robot_room_stops_its_runtime_and_its_robots_leave() {
    let world = World::new().await;
    let room = robot_room(&world, "robots-1", true).await;
    let mut orchestrator = orchestrator(&world, Arc::new(LocalLease), "node-a");
    orchestrator.reconcile().await.unwrap();
    eventually("three robots are in", || async {
        robots_in(&world.state(&room).await).len() == 3
    })
    .await;

    assert!(RobotRooms::delete(&*world.store, &room).await.unwrap());
    let report = orchestrator.reconcile().await.unwrap();
    assert_eq!((report.enabled, report.stopped), (0, 1), "{report:?}");
    eventually("the room's cell is let go", || async {
        !world.runtime().is_active(&room)
    })
    .await;
    assert_eq!(robot_leaves(&world.log(&room).await).len(), 3);
    assert!(robots_in(&world.state(&room).await).is_empty());

    orchestrator.reconcile().await.unwrap();
    assert!(orchestrator.running().is_empty());
    let events = world.log(&room).await.len();
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert_eq!(world.log(&room).await.len(), events);
}

#[tokio::test(start_paused = true)]
async fn a_disabled_robot_room_never_starts() {
    let world = World::new().await;
    let room = robot_room(&world, "robots-1", false).await;
    let mut orchestrator = orchestrator(&world, Arc::new(LocalLease), "node-a");
    for _ in 0..3 {
        let report = orchestrator.reconcile().await.unwrap();
        assert_eq!((report.enabled, report.started), (0, 0), "{report:?}");
        tokio::time::sleep(Duration::from_secs(10)).await;
    }
    assert!(orchestrator.running().is_empty());
    let state = world.state(&room).await;
    assert!(robots_in(&state).is_empty(), "{:?}", state.members);
    assert!(gifts_in(&world.log(&room).await).is_empty());
}

/// Two nodes, a and b, over one store and one lease table (leases of 10 s), each reaching
/// the other through an in-process forwarder. Node a's keeper renews every `renew_a` (b's
/// every second); their command ids start `a-` and `b-`.
struct Pair {
    a: World,
    b: World,
    leases: InMemoryLeases,
}

const LEASE_TTL: Duration = Duration::from_secs(10);

async fn pair(renew_a: Duration) -> Pair {
    let leases = InMemoryLeases::new(LEASE_TTL);
    let node = |id: &str, renew: Duration| CellConfig {
        node_id: id.into(),
        lease_renew_every: renew,
        ..config()
    };
    let a = World::builder()
        .config(node("node-a", renew_a))
        .lease(leases.node("node-a", "http://a"))
        .ids(Arc::new(TestIds::with_prefix("a-")))
        .build()
        .await;
    let b = World::builder()
        .config(node("node-b", Duration::from_secs(1)))
        .store(a.store.clone())
        .lease(leases.node("node-b", "http://b"))
        .ids(Arc::new(TestIds::with_prefix("b-")))
        .build()
        .await;
    Nodes::connect(&[("http://a", &a), ("http://b", &b)]);
    Pair { a, b, leases }
}

/// Creates the robot rooms `names` on a third node over the same store and leases, which
/// then stops, letting every room go: no node holds them.
async fn free_robot_rooms(pair: &Pair, names: &[String]) -> Vec<RoomId> {
    let setup = World::builder()
        .config(CellConfig {
            node_id: "node-setup".into(),
            ..config()
        })
        .store(pair.a.store.clone())
        .lease(pair.leases.node("node-setup", "http://setup"))
        .ids(Arc::new(TestIds::with_prefix("setup-")))
        .build()
        .await;
    let mut rooms = Vec::new();
    for name in names {
        rooms.push(robot_room(&setup, name, true).await);
    }
    setup.runtime().shutdown().await;
    rooms
}

async fn holder(leases: &InMemoryLeases, room: &RoomId) -> Option<String> {
    leases
        .node("node-observer", "http://observer")
        .get_holder(room)
        .await
        .unwrap()
        .map(|holder| holder.node_id)
}

/// Which node's command ids a robot gift carries (`a` or `b`).
fn gift_node(gift: &GiftSent) -> &str {
    gift.order_id.as_str().split('-').next().unwrap_or("")
}

#[tokio::test(start_paused = true)]
async fn ten_robot_rooms_run_each_on_exactly_one_of_two_orchestrators() {
    let pair = pair(Duration::from_secs(1)).await;
    let names: Vec<String> = (0..10).map(|i| format!("robots-{i}")).collect();
    let rooms = free_robot_rooms(&pair, &names).await;
    let Pair { a, b, leases } = &pair;
    let mut on_a = orchestrator(a, leases.node("node-a", "http://a"), "node-a");
    let mut on_b = orchestrator(b, leases.node("node-b", "http://b"), "node-b");

    let never_both = |when: &str| {
        for room in &rooms {
            assert!(
                !(a.runtime().is_active(room) && b.runtime().is_active(room)),
                "{when}: {room} is active on both nodes"
            );
        }
    };
    let mut conflicts = 0;
    for round in 0..8 {
        // Both reach for the rooms at once.
        let (report_a, report_b) = tokio::join!(on_a.reconcile(), on_b.reconcile());
        let (report_a, report_b) = (report_a.unwrap(), report_b.unwrap());
        conflicts += report_a.conflicts + report_b.conflicts;
        never_both(&format!("round {round}"));
        tokio::time::sleep(Duration::from_secs(1)).await;
        never_both(&format!("after round {round}"));
    }
    // One more round each forgets the runtimes that ended.
    on_a.reconcile().await.unwrap();
    on_b.reconcile().await.unwrap();

    let running_a: HashSet<RoomId> = on_a.running().into_iter().collect();
    let running_b: HashSet<RoomId> = on_b.running().into_iter().collect();
    let (node_a, node_b) = (String::from("node-a"), String::from("node-b"));
    for room in &rooms {
        let (here, there, runtime_here, runtime_there) =
            match (running_a.contains(room), running_b.contains(room)) {
                (true, false) => ("node-a", "node-b", a.runtime(), b.runtime()),
                (false, true) => ("node-b", "node-a", b.runtime(), a.runtime()),
                both => panic!("{room} runs on (a, b) = {both:?} (conflicts seen: {conflicts})"),
            };
        assert!(runtime_here.is_active(room), "{room} on {here}");
        assert!(!runtime_there.is_active(room), "{room} also on {there}");
        assert_eq!(holder(leases, room).await.as_deref(), Some(here), "{room}");
        assert_eq!(
            preferred_node(room, &node_a, [&node_b]),
            here,
            "{room} runs on the node it prefers"
        );
    }
    assert!(
        !running_a.is_empty() && !running_b.is_empty(),
        "spread: a runs {running_a:?}, b runs {running_b:?}"
    );

    // Each node's robots play the rooms it runs: their newest gifts carry its ids.
    tokio::time::sleep(Duration::from_secs(10)).await;
    for room in &rooms {
        let gifts = gifts_in(&a.log(room).await);
        let newest = gifts.last().expect("robot gifts");
        let expected = if running_a.contains(room) { "a" } else { "b" };
        assert_eq!(gift_node(newest), expected, "{room}: {newest:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_room_whose_lease_another_node_took_stops_on_the_loser_and_nothing_more_of_it_commits() {
    // Node a's keeper does not renew within the test: its lease on the room runs out.
    let pair = pair(Duration::from_secs(3600)).await;
    let rooms = free_robot_rooms(&pair, &["robots-1".to_owned()]).await;
    let room = &rooms[0];
    let Pair { a, b, leases } = &pair;
    let mut on_a = orchestrator(a, leases.node("node-a", "http://a"), "node-a");
    let mut on_b = orchestrator(b, leases.node("node-b", "http://b"), "node-b");

    assert_eq!(on_a.reconcile().await.unwrap().started, 1);
    tokio::time::sleep(Duration::from_secs(8)).await;
    let a_gifts = |log: &[room_app::ports::StoredEvent]| {
        gifts_in(log).iter().filter(|g| gift_node(g) == "a").count()
    };
    assert!(a_gifts(&a.log(room).await) > 0, "node a's robots give");
    tokio::time::sleep(LEASE_TTL).await;
    assert_eq!(holder(leases, room).await, None, "node a's lease ran out");

    // Node b finds the room free and takes it.
    for _ in 0..4 {
        on_b.reconcile().await.unwrap();
        if !on_b.running().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    assert_eq!(on_b.running(), vec![room.clone()]);
    assert_eq!(holder(leases, room).await.as_deref(), Some("node-b"));
    let a_gifts_at_takeover = a_gifts(&a.log(room).await);

    // Node a's next robot command is fenced: its cell stops, and so does its runtime.
    eventually("node a's cell stops", || async {
        !a.runtime().is_active(room)
    })
    .await;
    tokio::time::sleep(2 * STEP).await;
    let report = on_a.reconcile().await.unwrap();
    assert_eq!(
        (report.started, report.elsewhere),
        (0, 1),
        "node a leaves the room to b: {report:?}"
    );
    assert!(on_a.running().is_empty());
    assert!(b.runtime().is_active(room) && !a.runtime().is_active(room));

    // Node b carries on with the robots node a brought in; node a commits nothing more.
    tokio::time::sleep(Duration::from_secs(20)).await;
    let log = b.log(room).await;
    assert_eq!(
        a_gifts(&log),
        a_gifts_at_takeover,
        "node a committed after losing"
    );
    let gifts = gifts_in(&log);
    let first_b = gifts
        .iter()
        .position(|g| gift_node(g) == "b")
        .expect("node b's robots give");
    assert!(
        gifts[first_b..].iter().all(|g| gift_node(g) == "b"),
        "{:?}",
        gifts[first_b..]
            .iter()
            .map(|g| g.order_id.as_str())
            .collect::<Vec<_>>()
    );
    assert_eq!(robots_in(&b.state(room).await).len(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_runtime_stops_when_its_nodes_keeper_finds_the_lease_lost() {
    let leases = InMemoryLeases::new(LEASE_TTL);
    // No renewal within the test but the one it makes.
    let world = node_a(leases.node("node-a", "http://a"), Duration::from_secs(3600)).await;
    let room = robot_room(&world, "robots-1", true).await;
    let mut orchestrator = orchestrator(&world, leases.node("node-a", "http://a"), "node-a");
    assert_eq!(orchestrator.reconcile().await.unwrap().started, 1);
    tokio::time::sleep(LEASE_TTL + Duration::from_secs(2)).await;
    assert!(robots_in(&world.state(&room).await).len() >= 2);

    // The lease ran out and another node took it; this node's keeper finds it lost.
    assert!(
        leases
            .node("node-b", "http://b")
            .acquire(&room)
            .await
            .unwrap()
    );
    let tick = world.runtime().renew_leases().await;
    assert_eq!((tick.renewed, tick.lost), (0, 1), "{tick:?}");
    eventually("the fenced cell stops", || async {
        !world.runtime().is_active(&room)
    })
    .await;
    let events = world.log(&room).await.len();

    tokio::time::sleep(2 * STEP).await;
    let report = orchestrator.reconcile().await.unwrap();
    assert_eq!((report.started, report.elsewhere), (0, 1), "{report:?}");
    assert!(orchestrator.running().is_empty());
    tokio::time::sleep(Duration::from_secs(20)).await;
    assert_eq!(
        world.log(&room).await.len(),
        events,
        "committed after the fence"
    );
    assert!(!world.runtime().is_active(&room));
}

/// A node's lease whose renewals fail while `cut` is set (the lease backend out of reach).
struct CutLease {
    inner: LeaseRef,
    cut: Arc<AtomicBool>,
}

#[async_trait]
impl Lease for CutLease {
    async fn acquire(&self, room_id: &RoomId) -> Result<bool> {
        self.inner.acquire(room_id).await
    }
    async fn renew_all(&self, rooms: &[RoomId]) -> Result<Vec<bool>> {
        if self.cut.load(Ordering::SeqCst) {
            return Err(Error::unavailable("injected: lease backend unreachable"));
        }
        self.inner.renew_all(rooms).await
    }
    async fn release(&self, room_id: &RoomId) -> Result<()> {
        self.inner.release(room_id).await
    }
    async fn get_holder(&self, room_id: &RoomId) -> Result<Option<LeaseHolder>> {
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

#[tokio::test(start_paused = true)]
async fn a_failed_renewal_stops_the_runtime_and_a_later_round_starts_it_again() {
    let leases = InMemoryLeases::new(LEASE_TTL);
    let cut = Arc::new(AtomicBool::new(false));
    let lease: LeaseRef = Arc::new(CutLease {
        inner: leases.node("node-a", "http://a"),
        cut: cut.clone(),
    });
    let world = node_a(lease.clone(), Duration::from_secs(1)).await;
    let room = robot_room(&world, "robots-1", true).await;
    let mut orchestrator = orchestrator(&world, lease, "node-a");
    assert_eq!(orchestrator.reconcile().await.unwrap().started, 1);
    eventually("three robots are in", || async {
        robots_in(&world.state(&room).await).len() == 3
    })
    .await;

    cut.store(true, Ordering::SeqCst);
    eventually("the keeper stops the cell", || async {
        !world.runtime().is_active(&room)
    })
    .await;
    cut.store(false, Ordering::SeqCst);
    tokio::time::sleep(2 * STEP).await;

    // The lease is still this node's: the next round starts a new runtime, and the robots
    // the old one brought in are still there.
    let report = orchestrator.reconcile().await.unwrap();
    assert_eq!(report.started, 1, "{report:?}");
    assert_eq!(orchestrator.running(), vec![room.clone()]);
    assert!(world.runtime().is_active(&room));
    let gifts = gifts_in(&world.log(&room).await).len();
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert!(gifts_in(&world.log(&room).await).len() > gifts);
    assert_eq!(robots_in(&world.state(&room).await).len(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_running_orchestrator_that_stops_leaves_the_group_and_its_robots_in_place() {
    let leases = InMemoryLeases::new(LEASE_TTL);
    let world = node_a(leases.node("node-a", "http://a"), Duration::from_secs(1)).await;
    let room = robot_room(&world, "robots-1", true).await;
    let cancel = CancellationToken::new();
    let orchestrator = orchestrator_until(
        &world,
        leases.node("node-a", "http://a"),
        "node-a",
        cancel.clone(),
    );
    let running = tokio::spawn(orchestrator.run());
    eventually("its robots are in", || async {
        robots_in(&world.state(&room).await).len() == 3
    })
    .await;
    let other = leases.node("node-b", "http://b");
    assert_eq!(
        other.join_group(ORCHESTRATOR_GROUP).await.unwrap(),
        vec!["node-a".to_owned()]
    );

    cancel.cancel();
    running.await.expect("the orchestrator stops");
    assert!(
        other
            .join_group(ORCHESTRATOR_GROUP)
            .await
            .unwrap()
            .is_empty(),
        "a stopped orchestrator leaves the group at once"
    );
    // Its robots stay for whoever runs the room next, and nothing of it acts any more.
    let events = world.log(&room).await.len();
    tokio::time::sleep(Duration::from_secs(20)).await;
    assert_eq!(world.log(&room).await.len(), events);
    assert!(robot_leaves(&world.log(&room).await).is_empty());
    assert_eq!(robots_in(&world.state(&room).await).len(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_closed_robot_room_is_let_go_and_not_started_again_until_its_configuration_changes() {
    let world = World::new().await;
    let room = robot_room(&world, "robots-1", true).await;
    let mut orchestrator = orchestrator(&world, Arc::new(LocalLease), "node-a");
    orchestrator.reconcile().await.unwrap();
    eventually("three robots are in", || async {
        robots_in(&world.state(&room).await).len() == 3
    })
    .await;

    // Its owner closes it for good: the runtime finds it closed and lets the cell go.
    world
        .exec(&room, user("robot-1"), CommandKind::CloseRoom)
        .await
        .expect("closed");
    eventually("the closed room's cell is let go", || async {
        !world.runtime().is_active(&room)
    })
    .await;
    let events = world.log(&room).await.len();
    for round in 0..3 {
        let report = orchestrator.reconcile().await.unwrap();
        assert_eq!(report.started, 0, "round {round}: {report:?}");
        assert!(orchestrator.running().is_empty());
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(
            !world.runtime().is_active(&room),
            "round {round}: the closed room was loaded again"
        );
    }
    assert_eq!(world.log(&room).await.len(), events);

    // A new configuration is tried once more.
    update_config(&world, &room, |config| config.seats = 1).await;
    assert_eq!(orchestrator.reconcile().await.unwrap().started, 1);
    eventually("the closed room's cell is let go again", || async {
        !world.runtime().is_active(&room)
    })
    .await;
    orchestrator.reconcile().await.unwrap();
    assert!(orchestrator.running().is_empty());
    assert_eq!(orchestrator.reconcile().await.unwrap().started, 0);
}
