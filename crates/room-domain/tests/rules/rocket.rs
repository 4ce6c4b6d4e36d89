//! The room rocket's timers: launches, their rewards, the climb through the levels, and the
//! daily reset.

use std::collections::BTreeSet;

use room_domain::{
    Coins, CommandKind, DayKey, Event, LAUNCH_WAIT_MS, Rejection, RocketId, RocketStatus, Timestamp,
};

use crate::fixture::{
    NOON, Room, gift, ignite, launch, rewards, small_rocket_rules, system, types, user,
};

// ---------------------------------------------------------------------------------------------
// Rocket launches.
// ---------------------------------------------------------------------------------------------

#[test]
fn a_rocket_launches_at_its_time_not_before() {
    let mut room = Room::open_with(small_rocket_rules());
    let (rocket_id, level, launch_at) = ignite(&mut room);
    assert_eq!(launch_at, NOON.plus_secs(60));

    room.now = Timestamp(launch_at.0 - 1);
    assert_eq!(
        room.err(&system(), launch(rocket_id, level, launch_at)),
        Rejection::RocketNotReady { launch_at }
    );
    room.now = launch_at;
    let events = room.ok(&system(), launch(rocket_id, level, launch_at));
    assert!(matches!(
        events.as_slice(),
        [Event::RoomRocketLaunched {
            rocket_id: RocketId(1),
            level: 1,
            next_level: Some(2),
            ..
        }]
    ));
    // Launched once: the same timer again is stale.
    assert_eq!(
        room.err(&system(), launch(rocket_id, level, launch_at)),
        Rejection::StaleTimer
    );
}

#[test]
fn a_launch_for_another_rocket_level_or_time_is_stale() {
    let mut room = Room::open_with(small_rocket_rules());
    assert_eq!(
        room.err(&system(), launch(RocketId(1), 1, NOON)),
        Rejection::StaleTimer,
        "nothing is ignited"
    );
    let (rocket_id, level, launch_at) = ignite(&mut room);
    room.now = launch_at.plus_secs(1);
    for stale in [
        launch(RocketId(rocket_id.0 + 1), level, launch_at),
        launch(rocket_id, level + 1, launch_at),
        launch(rocket_id, level, NOON),
        launch(rocket_id, level, launch_at.plus_secs(1)),
    ] {
        assert_eq!(room.err(&system(), stale), Rejection::StaleTimer);
    }
    room.ok(&system(), launch(rocket_id, level, launch_at));
}

#[test]
fn a_rocket_ignited_before_midnight_launches_after_it_then_resets() {
    let rules = small_rocket_rules();
    let tomorrow = DayKey(NOON.day_key(0).0 + 1);
    let mut room = Room::open_with(rules);
    // Ignited 30 s before midnight: the 60 s countdown ends on the next day.
    room.now = Timestamp(tomorrow.start(0).0 - 30_000);
    let (rocket_id, level, launch_at) = ignite(&mut room);
    assert_eq!(launch_at.day_key(0), tomorrow);
    let ignited = room.state.rocket.clone();

    // Midnight's reset waits for the launch: the people who fuelled it are owed it.
    room.now = tomorrow.start(0);
    assert_eq!(room.ok(&system(), CommandKind::ResetRocket), Vec::new());
    // So does a gift of the new day, which adds no fuel to an ignited rocket.
    let events = room.give(gift("alice", &["bob"], 10, 1));
    assert!(
        !events.iter().any(|e| matches!(
            e,
            Event::RoomRocketReset { .. } | Event::RoomRocketFuelChanged { .. }
        )),
        "{events:?}"
    );
    assert_eq!(room.state.rocket, ignited);

    // The launch pays its rewards, then the new day's reset comes.
    room.now = launch_at;
    let events = room.ok(&system(), launch(rocket_id, level, launch_at));
    assert!(matches!(
        events.as_slice(),
        [
            Event::RoomRocketLaunched { rewards, .. },
            Event::RoomRocketReset { day_key },
        ] if !rewards.is_empty() && *day_key == tomorrow
    ));
    assert_eq!(room.state.rocket.status, RocketStatus::Idle);
    assert_eq!(
        (
            room.state.rocket.level,
            room.state.rocket.fuel,
            room.state.rocket.day_key
        ),
        (1, 0, tomorrow)
    );
    // The timer again is stale; the next gift fuels the new day's rocket without a reset.
    assert_eq!(
        room.err(&system(), launch(rocket_id, level, launch_at)),
        Rejection::StaleTimer
    );
    let events = room.give(gift("alice", &["bob"], 10, 1));
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::RoomRocketReset { .. }))
    );
    assert_eq!((room.state.rocket.level, room.state.rocket.fuel), (1, 10));
}

#[test]
fn a_rocket_launches_with_the_prize_it_ignited_with_whatever_the_levels_become() {
    let mut room = Room::open_with(small_rocket_rules());
    room.join("carol");
    let (rocket_id, level, launch_at) = ignite(&mut room);
    // The operator changed level 1 while it was counting down: a smaller pool and a cap.
    room.rules.rocket_levels[0].reward_pool = Coins(1);
    room.rules.rocket_levels[0].reward_cap = Some(Coins(1));
    room.now = launch_at;
    let events = room.ok(&system(), launch(rocket_id, level, launch_at));
    let Event::RoomRocketLaunched { rewards, .. } = &events[0] else {
        panic!("{events:?}");
    };
    // Level 1 as it ignited: 1,000 coins among 3 winners, no cap.
    let paid: i64 = rewards.iter().map(|r| r.coins.0).sum();
    assert_eq!((rewards.len(), paid), (3, 1_000), "{rewards:?}");

    // The next ignition (level 2) takes the levels as they are then: 900 coins among up to 10
    // winners, at most one coin each; removing every level meanwhile changes nothing.
    room.rules.rocket_levels[1].reward_pool = Coins(900);
    room.rules.rocket_levels[1].reward_cap = Some(Coins(1));
    let (rocket_id, level, launch_at) = ignite(&mut room);
    assert_eq!(level, 2);
    room.rules.rocket_levels.clear();
    room.now = launch_at;
    let events = room.ok(&system(), launch(rocket_id, level, launch_at));
    let Event::RoomRocketLaunched { rewards, .. } = &events[0] else {
        panic!("{events:?}");
    };
    // Six people are present (the owner, two admins, alice, bob and carol).
    assert_eq!(rewards.len(), 6, "{rewards:?}");
    assert!(
        rewards.iter().all(|r| r.coins == Coins(1)),
        "each capped: {rewards:?}"
    );
}

#[test]
fn an_ignition_recorded_without_a_prize_launches_with_its_level_or_without_rewards() {
    let mut room = Room::open_with(small_rocket_rules());
    let (rocket_id, level, launch_at) = ignite(&mut room);
    // As an ignition evolved from an event written before prizes were.
    if let RocketStatus::Ignited { prize, .. } = &mut room.state.rocket.status {
        *prize = None;
    }
    // The operator removed every level while it was counting down.
    room.rules.rocket_levels.clear();
    room.now = launch_at;
    let events = room.ok(&system(), launch(rocket_id, level, launch_at));
    assert_eq!(
        events,
        [Event::RoomRocketLaunched {
            rocket_id,
            level,
            rewards: Vec::new(),
            next_level: None,
        }]
    );
    assert!(!matches!(
        room.state.rocket.status,
        RocketStatus::Ignited { .. }
    ));
}

#[test]
fn a_launch_overdue_by_a_day_is_waited_for_no_more() {
    let mut room = Room::open_with(small_rocket_rules());
    let (_, _, launch_at) = ignite(&mut room);
    // Its timer was lost: a day after the launch time, the day's reset goes ahead.
    room.now = Timestamp(launch_at.0 + LAUNCH_WAIT_MS - 1);
    assert_eq!(room.ok(&system(), CommandKind::ResetRocket), Vec::new());
    assert!(matches!(
        room.state.rocket.status,
        RocketStatus::Ignited { .. }
    ));
    room.now = Timestamp(launch_at.0 + LAUNCH_WAIT_MS);
    let today = room.now.day_key(0);
    assert_eq!(
        room.ok(&system(), CommandKind::ResetRocket),
        [Event::RoomRocketReset { day_key: today }]
    );
    assert_eq!(room.state.rocket.status, RocketStatus::Idle);
    // A gift fuels the new day's rocket.
    room.give(gift("alice", &["bob"], 10, 1));
    assert_eq!((room.state.rocket.level, room.state.rocket.fuel), (1, 10));
}

#[test]
fn launch_rewards_add_up_to_the_pool_among_distinct_members() {
    let mut room = Room::open_with(small_rocket_rules());
    let (rocket_id, level, launch_at) = ignite(&mut room);
    room.now = launch_at;
    let mut winner_sets = BTreeSet::new();
    for random in 0..40 {
        room.random = random;
        let events = room
            .ask(&system(), launch(rocket_id, level, launch_at))
            .expect("launches");
        let rewards = rewards(&events);
        assert_eq!(rewards.len(), 3, "level 1 has 3 winners");
        assert_eq!(rewards.iter().map(|(_, c)| c).sum::<i64>(), 1_000);
        let mut amounts: Vec<i64> = rewards.iter().map(|(_, c)| *c).collect();
        amounts.sort_unstable();
        assert_eq!(amounts, [333, 333, 334]);
        let winners: BTreeSet<String> = rewards.into_iter().map(|(user, _)| user).collect();
        assert_eq!(winners.len(), 3, "winners are distinct");
        assert!(winners.iter().all(|w| room.is_member(w)));
        winner_sets.insert(winners);
    }
    // The random input chooses the winners.
    assert!(winner_sets.len() > 1);
}

#[test]
fn fewer_members_than_winners_all_win_and_an_empty_room_wins_nothing() {
    let mut room = Room::open_with(small_rocket_rules());
    let (rocket_id, level, launch_at) = ignite(&mut room);
    room.now = launch_at;
    room.ok(&system(), launch(rocket_id, level, launch_at));

    // Level 2 has 10 winners; the room has 5 members, and one leaves before the launch.
    let (rocket_id, level, launch_at) = ignite(&mut room);
    assert_eq!((rocket_id, level), (RocketId(2), 2));
    room.ok(&user("bob"), CommandKind::Leave);
    room.now = launch_at;
    let events = room.ok(&system(), launch(rocket_id, level, launch_at));
    let mut won = rewards(&events);
    won.sort();
    assert_eq!(
        won,
        [
            ("admin".to_owned(), 125),
            ("admin2".to_owned(), 125),
            ("alice".to_owned(), 125),
            ("owner".to_owned(), 125),
        ]
    );

    let (rocket_id, level, launch_at) = ignite(&mut room);
    for name in ["owner", "admin", "admin2", "alice"] {
        room.ok(&user(name), CommandKind::Leave);
    }
    room.now = launch_at;
    let events = room.ok(&system(), launch(rocket_id, level, launch_at));
    assert_eq!(rewards(&events), []);
    assert!(matches!(
        events.as_slice(),
        [Event::RoomRocketLaunched {
            next_level: None,
            ..
        }]
    ));
}

#[test]
fn the_rocket_climbs_its_levels_and_stops_after_the_top_one() {
    let mut room = Room::open_with(small_rocket_rules());
    for expected_level in 1..=3 {
        let (rocket_id, level, launch_at) = ignite(&mut room);
        assert_eq!(level, expected_level);
        assert_eq!(rocket_id, RocketId(u64::from(expected_level)));
        room.now = launch_at;
        room.random = u64::from(expected_level);
        let events = room.ok(&system(), launch(rocket_id, level, launch_at));
        let next = (expected_level < 3).then_some(expected_level + 1);
        assert!(matches!(
            events.as_slice(),
            [Event::RoomRocketLaunched { next_level, .. }] if *next_level == next
        ));
        if let Some(next) = next {
            assert_eq!(room.state.rocket.level, next);
            assert_eq!(room.state.rocket.fuel, 0);
            assert_eq!(room.state.rocket.status, RocketStatus::Idle);
        } else {
            // 7 coins among 2 winners: nothing is lost to rounding.
            let mut amounts: Vec<i64> = rewards(&events).into_iter().map(|(_, c)| c).collect();
            amounts.sort_unstable();
            assert_eq!(amounts, [3, 4]);
        }
    }
    assert_eq!(
        room.state.rocket.status,
        RocketStatus::Launched {
            rocket_id: RocketId(3)
        }
    );
    // A launched rocket takes no more fuel today.
    let events = room.give(gift("alice", &["bob"], 1_000, 1));
    assert!(!types(&events).contains(&"RoomRocketFuelChanged"));
    assert!(matches!(
        room.state.rocket.status,
        RocketStatus::Launched { .. }
    ));
    // The next day starts over at level 1.
    room.now = DayKey(room.now.day_key(0).0 + 1).start(0);
    room.ok(&system(), CommandKind::ResetRocket);
    assert_eq!(room.state.rocket.status, RocketStatus::Idle);
    assert_eq!(room.state.rocket.level, 1);
    let (rocket_id, _, _) = ignite(&mut room);
    assert_eq!(rocket_id, RocketId(4), "rocket ids are never reused");
}

// ---------------------------------------------------------------------------------------------
// The daily reset.
// ---------------------------------------------------------------------------------------------

#[test]
fn reset_rocket_acts_once_per_day() {
    let mut room = Room::open_with(small_rocket_rules());
    room.give(gift("alice", &["bob"], 40, 1));
    assert_eq!(room.ok(&system(), CommandKind::ResetRocket), []);
    let tomorrow = DayKey(NOON.day_key(0).0 + 1);
    room.now = tomorrow.start(0);
    assert_eq!(
        room.ok(&system(), CommandKind::ResetRocket),
        [Event::RoomRocketReset { day_key: tomorrow }]
    );
    assert_eq!(room.state.rocket.fuel, 0);
    assert_eq!(room.ok(&system(), CommandKind::ResetRocket), []);
}
