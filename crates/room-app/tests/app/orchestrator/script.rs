//! The script a robot room plays ([`plan_step`]) and what it reads of the room
//! ([`RobotView::of`]): the hour's audience, seats, gifts by rate and mix, turnover, a closed
//! room.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use room_app::ports::{IdGen, RobotRoomConfig};
use room_app::robots::{RobotAction, RobotView, ScriptCarry, plan_step, target_listeners};
use room_domain::{
    GiftId, Member, Occupant, Role, RoomState, RoomStatus, Seat, SeatIndex, SeatSessionId,
    Timestamp, UserId,
};

use super::fixtures::{LONG_STAY, STEP, gift_id, pool, robot_config, share};
use crate::support::{T0, TestIds, rid, uid};

const HOUR_MS: i64 = 3_600_000;

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
    // A seat reserved for VIP, or held for an invitee while the invite lasts, is no robot's.
    state.seats.push(Seat {
        vip_only: true,
        ..Seat::default()
    });
    state.seats.push(Seat {
        hold: Some(room_domain::SeatHold {
            user: uid("carol"),
            until: Timestamp(T0.0 + 1),
        }),
        ..Seat::default()
    });
    assert_eq!(
        RobotView::of(&state, &config, T0).free_seats,
        vec![SeatIndex(3)]
    );
    assert_eq!(
        RobotView::of(&state, &config, Timestamp(T0.0 + 1)).free_seats,
        vec![SeatIndex(3), SeatIndex(5)],
        "a hold is over at its expiry"
    );
    state.status = RoomStatus::Closed;
    assert!(!RobotView::of(&state, &config, T0).open);
}
