//! Paid gifts: their validation, their heat, ranks and rocket fuel, and lucky draws.

use room_domain::{
    Coins, CommandKind, DayKey, Event, LuckyEntry, LuckyOutcome, LuckyTable, Rejection,
    RejectionKind, RocketId, RocketStatus, RoomRules, Timestamp,
};

use crate::fixture::{
    NOON, Room, gift, id, not_a_member, platform_admin, small_rocket_rules, system, types, user,
};

// ---------------------------------------------------------------------------------------------
// Gifts: validation.
// ---------------------------------------------------------------------------------------------

#[test]
fn gift_counts_must_be_within_limits() {
    let room = Room::open();
    let max = room.rules.max_gift_count;
    for count in [0, max + 1] {
        assert_eq!(
            room.ask(
                &system(),
                CommandKind::ApplyGift(gift("alice", &["bob"], 1, count))
            ),
            Err(Rejection::InvalidGiftCount { count, max })
        );
    }
    assert!(
        room.ask(
            &system(),
            CommandKind::ApplyGift(gift("alice", &["bob"], 1, max))
        )
        .is_ok()
    );

    let room = Room::open_with(RoomRules {
        max_gift_count: 10,
        ..RoomRules::default()
    });
    assert_eq!(
        room.ask(
            &system(),
            CommandKind::ApplyGift(gift("alice", &["bob"], 1, 11))
        ),
        Err(Rejection::InvalidGiftCount { count: 11, max: 10 })
    );
}

#[test]
fn recipients_must_be_one_to_the_limit_and_distinct() {
    let room = Room::open();
    assert_eq!(
        room.ask(&system(), CommandKind::ApplyGift(gift("alice", &[], 1, 1))),
        Err(Rejection::InvalidRecipientCount { count: 0, max: 20 })
    );
    let names: Vec<String> = (0..21).map(|i| format!("fan{i}")).collect();
    let many: Vec<&str> = names.iter().map(String::as_str).collect();
    assert_eq!(
        room.ask(
            &system(),
            CommandKind::ApplyGift(gift("alice", &many, 1, 1))
        ),
        Err(Rejection::InvalidRecipientCount { count: 21, max: 20 })
    );
    assert_eq!(
        room.ask(
            &system(),
            CommandKind::ApplyGift(gift("alice", &["bob", "owner", "bob"], 1, 1))
        ),
        Err(Rejection::DuplicateRecipient { user: id("bob") })
    );
}

#[test]
fn a_sender_cannot_be_a_recipient_of_their_own_gift() {
    let room = Room::open();
    for recipients in [&["alice"][..], &["bob", "alice"][..]] {
        let to_self = gift("alice", recipients, 10, 1);
        // The saga's pre-check, before anything is debited...
        assert_eq!(
            to_self.check_shape(&room.rules),
            Err(Rejection::SelfGift),
            "{recipients:?}"
        );
        // ...and the room itself.
        assert_eq!(
            room.ask(&system(), CommandKind::ApplyGift(to_self.clone())),
            Err(Rejection::SelfGift),
            "{recipients:?}"
        );
    }
    assert_eq!(Rejection::SelfGift.code(), "SELF_GIFT");
    assert_eq!(Rejection::SelfGift.kind(), RejectionKind::Rule);
}

#[test]
fn sender_and_recipients_must_be_members() {
    let room = Room::open();
    assert_eq!(
        room.ask(
            &system(),
            CommandKind::ApplyGift(gift("carol", &["bob"], 1, 1))
        ),
        Err(not_a_member("carol"))
    );
    assert_eq!(
        room.ask(
            &system(),
            CommandKind::ApplyGift(gift("alice", &["bob", "carol"], 1, 1))
        ),
        Err(not_a_member("carol"))
    );
}

#[test]
fn a_gift_with_a_negative_price_heat_or_fuel_is_invalid() {
    let room = Room::open();
    let mut negative_price = gift("alice", &["bob"], 10, 1);
    negative_price.gift.price = Coins(-1);
    let mut negative_heat = gift("alice", &["bob"], 10, 1);
    negative_heat.gift.heat = -1;
    let mut negative_fuel = gift("alice", &["bob"], 10, 1);
    negative_fuel.gift.fuel = -1;
    for bad in [negative_price, negative_heat, negative_fuel] {
        assert_eq!(
            room.ask(&system(), CommandKind::ApplyGift(bad)),
            Err(Rejection::InvalidGift)
        );
    }
}

#[test]
fn amounts_that_do_not_fit_are_refused() {
    let room = Room::open();
    let overflows = [
        gift("alice", &["bob"], i64::MAX, 2),
        gift("alice", &["bob", "owner"], i64::MAX / 2 + 1, 1),
        {
            let mut hot = gift("alice", &["bob"], 1, 2);
            hot.gift.heat = i64::MAX;
            hot
        },
        {
            let mut fuelled = gift("alice", &["bob"], 1, 2);
            fuelled.gift.fuel = i64::MAX;
            fuelled
        },
    ];
    for bad in overflows {
        assert_eq!(
            room.ask(&system(), CommandKind::ApplyGift(bad)),
            Err(Rejection::AmountOverflow)
        );
    }
    // The largest order that fits is fine.
    assert!(
        room.ask(
            &system(),
            CommandKind::ApplyGift(gift("alice", &["bob"], i64::MAX, 1))
        )
        .is_ok()
    );
}

#[test]
fn only_the_system_applies_a_paid_gift() {
    let mut room = Room::open();
    let as_bob = || CommandKind::ApplyGift(gift("bob", &["alice"], 10, 1));
    // Not even its sender: a user's own `ApplyGift` would be a gift nobody paid for.
    for actor in [
        user("bob"),
        user("alice"),
        user("owner"),
        platform_admin("staff"),
    ] {
        assert_eq!(
            room.err(&actor, as_bob()),
            Rejection::Forbidden,
            "{actor:?}"
        );
    }
    room.ok(&system(), as_bob());
}

// ---------------------------------------------------------------------------------------------
// Gifts: effects on heat, contribution and the rocket.
// ---------------------------------------------------------------------------------------------

#[test]
fn a_gift_adds_heat_contribution_and_fuel_by_its_value() {
    let mut room = Room::open_with(small_rocket_rules());
    let today = NOON.day_key(0);
    let mut rose = gift("alice", &["bob", "owner"], 2, 3);
    rose.gift.heat = 5;
    rose.gift.fuel = 1;
    let events = room.give(rose);
    assert_eq!(
        types(&events),
        [
            "RoomGiftSent",
            "RoomHeatChanged",
            "RoomRankChanged",
            // The room's first gift finds the rocket of an earlier day.
            "RoomRocketReset",
            "RoomRocketFuelChanged",
        ]
    );
    let Event::RoomGiftSent(sent) = &events[0] else {
        panic!("{events:?}");
    };
    assert_eq!(sent.total_value, Coins(12));
    assert_eq!(sent.value_per_recipient(), Coins(6));
    assert_eq!((sent.heat_added, sent.fuel_added), (30, 6));
    assert_eq!(sent.lucky, None);
    assert_eq!(
        events[1],
        Event::RoomHeatChanged {
            heat: 30,
            delta: 30
        }
    );
    assert_eq!(
        events[2],
        Event::RoomRankChanged {
            user: id("alice"),
            day_key: today,
            week_key: today.week(),
            day_total: Coins(12),
            week_total: Coins(12),
        }
    );
    assert_eq!(
        events[4],
        Event::RoomRocketFuelChanged {
            level: 1,
            fuel: 6,
            threshold: 100
        }
    );

    let events = room.give(gift("alice", &["bob"], 7, 1));
    assert!(!types(&events).contains(&"RoomRocketReset"));
    assert_eq!(room.state.heat, 37);
    assert_eq!(room.state.day_contribution(&id("alice"), today), Coins(19));
    assert_eq!(
        room.state.week_contribution(&id("alice"), today.week()),
        Coins(19)
    );
    assert_eq!(room.state.day_contribution(&id("bob"), today), Coins::ZERO);
    assert_eq!(room.state.rocket.fuel, 13);
    assert_eq!(room.state.rocket.level, 1);
}

#[test]
fn reaching_the_threshold_ignites_the_rocket() {
    let mut room = Room::open_with(small_rocket_rules());
    room.give(gift("alice", &["bob"], 60, 1));
    room.advance_secs(5);
    let events = room.give(gift("alice", &["bob"], 30, 2));
    let now = room.now;
    assert_eq!(
        events[events.len() - 2..],
        [
            // Fuel stops at the threshold.
            Event::RoomRocketFuelChanged {
                level: 1,
                fuel: 100,
                threshold: 100
            },
            Event::RoomRocketIgnited {
                rocket_id: RocketId(1),
                level: 1,
                ignited_at: now,
                launch_at: now.plus_secs(60),
                prize: Some(room.rules.rocket_levels[0].prize()),
            },
        ]
    );
    assert_eq!(
        room.state.rocket.status,
        RocketStatus::Ignited {
            rocket_id: RocketId(1),
            ignited_at: now,
            launch_at: now.plus_secs(60),
            prize: Some(room.rules.rocket_levels[0].prize()),
        }
    );

    // A counting-down rocket takes no fuel, but the gift still counts for heat and rank.
    let events = room.give(gift("alice", &["bob"], 50, 1));
    assert_eq!(
        types(&events),
        ["RoomGiftSent", "RoomHeatChanged", "RoomRankChanged"]
    );
    assert_eq!(room.state.rocket.fuel, 100);
}

#[test]
fn a_gift_just_below_the_threshold_does_not_ignite() {
    let mut room = Room::open_with(small_rocket_rules());
    let events = room.give(gift("alice", &["bob"], 99, 1));
    assert!(!types(&events).contains(&"RoomRocketIgnited"));
    assert_eq!(room.state.rocket.status, RocketStatus::Idle);
    let events = room.give(gift("alice", &["bob"], 1, 1));
    assert!(types(&events).contains(&"RoomRocketIgnited"));
}

/// The instant day `day` begins in the zone of `rules`, and the last millisecond before it.
fn around_midnight(rules: &RoomRules, day: DayKey) -> (Timestamp, Timestamp) {
    let midnight = day.start(rules.day_utc_offset_secs);
    (Timestamp(midnight.0 - 1), midnight)
}

#[test]
fn a_gift_on_a_new_local_day_resets_the_rocket_and_the_day_rank() {
    let rules = RoomRules {
        day_utc_offset_secs: 8 * 3600,
        ..small_rocket_rules()
    };
    let today = NOON.day_key(rules.day_utc_offset_secs);
    let tomorrow = DayKey(today.0 + 1);
    let (before, after) = around_midnight(&rules, tomorrow);
    // Both instants fall on the same UTC day: only the offset puts a boundary between them.
    assert_eq!(before.day_key(0), after.day_key(0));
    assert_eq!(today.week(), tomorrow.week());

    let mut room = Room::open_with(rules);
    room.now = before;
    room.give(gift("alice", &["bob"], 40, 1));
    assert_eq!(room.state.rocket.fuel, 40);

    room.now = after;
    let events = room.give(gift("alice", &["bob"], 25, 1));
    let reset = events
        .iter()
        .position(|e| *e == Event::RoomRocketReset { day_key: tomorrow })
        .expect("a reset");
    let fuel = events
        .iter()
        .position(|e| matches!(e, Event::RoomRocketFuelChanged { .. }))
        .expect("fuel");
    assert!(reset < fuel, "the reset comes first: {events:?}");
    assert_eq!(room.state.rocket.fuel, 25);
    assert_eq!(room.state.rocket.day_key, tomorrow);
    assert_eq!(
        room.state.day_contribution(&id("alice"), tomorrow),
        Coins(25)
    );
    assert_eq!(
        room.state.week_contribution(&id("alice"), tomorrow.week()),
        Coins(65)
    );
}

#[test]
fn without_an_offset_the_same_instants_are_one_day() {
    let offset_rules = RoomRules {
        day_utc_offset_secs: 8 * 3600,
        ..RoomRules::default()
    };
    let (before, after) = around_midnight(&offset_rules, DayKey(NOON.day_key(8 * 3600).0 + 1));
    let mut room = Room::open_with(small_rocket_rules());
    room.now = before;
    room.give(gift("alice", &["bob"], 40, 1));
    room.now = after;
    let events = room.give(gift("alice", &["bob"], 25, 1));
    assert!(!types(&events).contains(&"RoomRocketReset"));
    assert_eq!(room.state.rocket.fuel, 65);
    assert_eq!(
        room.state.day_contribution(&id("alice"), after.day_key(0)),
        Coins(65)
    );
}

#[test]
fn the_week_rank_resets_on_monday() {
    let rules = small_rocket_rules();
    // NOON is a Wednesday: the Monday after is five days later.
    let monday = DayKey(NOON.day_key(0).0 + 5);
    let (sunday_night, monday_midnight) = around_midnight(&rules, monday);
    assert_ne!(sunday_night.day_key(0).week(), monday.week());

    let mut room = Room::open_with(rules);
    room.give(gift("alice", &["bob"], 10, 1));
    room.now = sunday_night;
    room.give(gift("alice", &["bob"], 20, 1));
    assert_eq!(
        room.state
            .week_contribution(&id("alice"), sunday_night.day_key(0).week()),
        Coins(30)
    );
    room.now = monday_midnight;
    let events = room.give(gift("alice", &["bob"], 5, 1));
    assert!(events.contains(&Event::RoomRankChanged {
        user: id("alice"),
        day_key: monday,
        week_key: monday.week(),
        day_total: Coins(5),
        week_total: Coins(5),
    }));
}

// ---------------------------------------------------------------------------------------------
// Lucky gifts.
// ---------------------------------------------------------------------------------------------

fn lucky(sender: &str, recipients: &[&str], price: i64, count: u32, draw: u64) -> CommandKind {
    let mut order = gift(sender, recipients, price, count);
    order.gift.lucky = true;
    order.lucky_draw = draw;
    CommandKind::ApplyGift(order)
}

fn lucky_outcome(events: &[Event]) -> Option<LuckyOutcome> {
    match events.first() {
        Some(Event::RoomGiftSent(sent)) => sent.lucky,
        _ => panic!("not a gift: {events:?}"),
    }
}

#[test]
fn a_lucky_gift_wins_its_value_times_the_drawn_multiplier() {
    let table = LuckyTable {
        entries: vec![
            LuckyEntry {
                multiplier: 0,
                weight: 1,
            },
            LuckyEntry {
                multiplier: 3,
                weight: 2,
            },
        ],
        expected_return_bp: 20_000,
    };
    table.validate().expect("a valid table");
    let room = Room::open_with(RoomRules {
        lucky: table,
        ..RoomRules::default()
    });
    // 10 coins × 2 units × 2 recipients = 40 coins.
    for (draw, multiplier) in [(0, 0), (1, 3), (2, 3), (3, 0), (5, 3)] {
        let events = room
            .ask(&system(), lucky("alice", &["bob", "owner"], 10, 2, draw))
            .expect("applies");
        assert_eq!(
            lucky_outcome(&events),
            Some(LuckyOutcome {
                multiplier,
                reward: Coins(40 * i64::from(multiplier)),
            }),
            "draw {draw}"
        );
    }
}

#[test]
fn lucky_draws_follow_the_configured_table() {
    let room = Room::open();
    for draw in [
        0,
        6_906,
        6_907,
        8_907,
        9_700,
        9_900,
        9_960,
        9_990,
        9_999,
        u64::MAX,
    ] {
        let events = room
            .ask(&system(), lucky("alice", &["bob"], 7, 3, draw))
            .expect("applies");
        let multiplier = room.rules.lucky.draw(draw);
        assert_eq!(
            lucky_outcome(&events),
            Some(LuckyOutcome {
                multiplier,
                reward: Coins(21 * i64::from(multiplier)),
            })
        );
    }
    assert_eq!(room.rules.lucky.draw(9_999), 500);
    let events = room
        .ask(&system(), lucky("alice", &["bob"], 7, 3, 9_999))
        .expect("applies");
    assert_eq!(
        lucky_outcome(&events).map(|l| l.reward),
        Some(Coins(10_500))
    );

    // An ordinary gift draws nothing, whatever its draw input.
    let mut plain = gift("alice", &["bob"], 7, 3);
    plain.lucky_draw = 9_999;
    let events = room
        .ask(&system(), CommandKind::ApplyGift(plain))
        .expect("applies");
    assert_eq!(lucky_outcome(&events), None);
}

#[test]
fn a_lucky_reward_that_overflows_is_refused() {
    let room = Room::open();
    let big = i64::MAX / 2;
    assert_eq!(room.rules.lucky.draw(6_907), 1);
    assert!(
        room.ask(&system(), lucky("alice", &["bob"], big, 1, 6_907))
            .is_ok()
    );
    assert_eq!(
        room.ask(&system(), lucky("alice", &["bob"], big, 1, 9_999)),
        Err(Rejection::AmountOverflow)
    );
}
