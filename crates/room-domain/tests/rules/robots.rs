//! Robots: their joins, leaves, mic time and free gifts are displayed but leave no durable fact,
//! no rocket fuel, no rank and no reward; they moderate nothing.

use room_domain::{
    Coins, CommandKind, Event, GiftId, GiftSent, ImPriority, LeaveReason, MicDownReason, OrderId,
    PasswordHash, Rejection, RejectionKind, Role,
};

use crate::fixture::{
    NOON, Room, downs, gift, id, ignite, launch, platform_admin, rewards, robot, robot_gift, seat,
    small_rocket_rules, system, types, user,
};

#[test]
fn robot_joins_and_leaves_are_marked_and_displayed_but_not_durable() {
    let mut room = Room::open();
    let events = room.join_as(&robot("bot-1"));
    assert_eq!(
        events,
        [Event::RoomUserJoined {
            user: id("bot-1"),
            role: Role::Member,
            vip_level: 0,
            joined_at: NOON,
            robot: true,
            nickname: None,
            avatar_url: None,
            entry_effect_id: None,
            vehicle_id: None,
        }]
    );
    assert!(room.state.members[&id("bot-1")].robot);
    assert!(!room.state.members[&id("alice")].robot);
    let delivery = events[0].delivery();
    assert!(!delivery.durable);
    assert_eq!(delivery.im, Some(ImPriority::Normal));
    assert!(events[0].is_robot());

    room.ok(&robot("bot-1"), CommandKind::TakeSeat { seat: seat(2) });
    let events = room.ok(&robot("bot-1"), CommandKind::Leave);
    assert_eq!(downs(&events), [(2, "bot-1", MicDownReason::LeftRoom)]);
    let left = events.last().unwrap();
    assert_eq!(
        left,
        &Event::RoomUserLeft {
            user: id("bot-1"),
            reason: LeaveReason::Left,
            robot: true,
        }
    );
    assert!(!left.delivery().durable && left.is_robot());
    assert_eq!(left.delivery().im, Some(ImPriority::Normal));

    // Evicted, a robot's leave is marked too.
    room.join_as(&robot("bot-1"));
    let events = room.ok(
        &system(),
        CommandKind::Evict {
            user: id("bot-1"),
            seen: None,
        },
    );
    assert_eq!(
        events,
        [Event::RoomUserLeft {
            user: id("bot-1"),
            reason: LeaveReason::Evicted,
            robot: true,
        }]
    );

    // Kicked: the kick is a moderator's act and stays durable, marked as a robot's.
    room.join_as(&robot("bot-1"));
    let events = room.ok(
        &user("owner"),
        CommandKind::Kick {
            user: id("bot-1"),
            ban_seconds: None,
        },
    );
    assert_eq!(
        events,
        [Event::RoomUserKicked {
            user: id("bot-1"),
            by: Some(id("owner")),
            ban_until: None,
            robot: true,
        }]
    );
    assert!(events[0].delivery().durable && !events[0].is_robot());

    // A user's join and leave stay durable facts.
    let joined = room.join_as(&user("carol"));
    let left = room.ok(&user("carol"), CommandKind::Leave);
    for event in joined.iter().chain(&left) {
        assert!(event.delivery().durable && !event.is_robot(), "{event:?}");
    }
}

#[test]
fn a_robot_gift_adds_heat_but_no_fuel_no_rank_and_no_durable_event() {
    let mut room = Room::open();
    room.join_as(&robot("bot-1"));
    let fuel = room.state.rocket.clone();
    let contribution = room.state.contribution.clone();
    let mut free = robot_gift(&["alice", "bob"], 10, 3);
    // A lucky gift draws nothing for a robot: a lucky reward is coins.
    free.gift.lucky = true;
    let events = room.ok(&robot("bot-1"), CommandKind::RobotGift(free));
    assert_eq!(
        events,
        [
            Event::RoomGiftSent(GiftSent {
                order_id: OrderId::new("cmd-1").unwrap(),
                sender: id("bot-1"),
                recipients: vec![id("alice"), id("bob")],
                gift_id: GiftId::new("rose").unwrap(),
                count: 3,
                unit_price: Coins(10),
                total_value: Coins(60),
                heat_added: 60,
                fuel_added: 0,
                lucky: None,
                robot: true,
                billing_version: None,
                sender_nickname: None,
                sender_avatar_url: None,
            }),
            Event::RoomHeatChanged {
                heat: 60,
                delta: 60,
            },
        ]
    );
    assert_eq!(room.state.heat, 60);
    assert_eq!(room.state.rocket, fuel);
    assert_eq!(room.state.contribution, contribution);
    let delivery = events[0].delivery();
    assert!(!delivery.durable);
    assert_eq!(delivery.im, Some(ImPriority::High));
    assert!(events[0].is_robot());
    assert!(events.iter().all(|e| !e.delivery().durable));

    // A paid gift in the same room still fills the rocket and the ranks, durably.
    let events = room.give(gift("alice", &["bob"], 10, 1));
    assert!(events[0].delivery().durable && !events[0].is_robot());
    assert_eq!(room.state.rocket.fuel, 10);
    assert_eq!(
        room.state.day_contribution(&id("alice"), NOON.day_key(0)),
        Coins(10)
    );
}

#[test]
fn a_robot_gift_on_a_new_day_leaves_the_rocket_alone() {
    let mut room = Room::open();
    room.join_as(&robot("bot-1"));
    room.give(gift("alice", &["bob"], 10, 1));
    let rocket = room.state.rocket.clone();
    room.advance_secs(24 * 3600);
    let events = room.ok(
        &robot("bot-1"),
        CommandKind::RobotGift(robot_gift(&["alice"], 5, 1)),
    );
    assert_eq!(
        types(&events),
        ["RoomGiftSent", "RoomHeatChanged"],
        "no rocket reset, which would empty the fuel"
    );
    assert_eq!(room.state.rocket, rocket);
}

#[test]
fn only_a_robot_member_sends_robot_gifts_to_members() {
    let mut room = Room::open();
    room.join_as(&robot("bot-1"));
    let give = |recipients: &[&str]| CommandKind::RobotGift(robot_gift(recipients, 10, 1));
    for actor in [
        user("alice"),
        user("owner"),
        platform_admin("staff"),
        system(),
    ] {
        assert_eq!(
            room.err(&actor, give(&["bob"])),
            Rejection::NotARobot,
            "{actor:?}"
        );
    }
    assert_eq!(
        room.err(&robot("bot-2"), give(&["bob"])),
        Rejection::NotAMember { user: id("bot-2") }
    );
    assert_eq!(
        room.err(&robot("bot-1"), give(&["carol"])),
        Rejection::NotAMember { user: id("carol") }
    );
    assert_eq!(
        room.err(&robot("bot-1"), give(&["bot-1"])),
        Rejection::SelfGift
    );
    assert_eq!(
        room.err(&robot("bot-1"), give(&["bob", "bob"])),
        Rejection::DuplicateRecipient { user: id("bob") }
    );
    assert!(matches!(
        room.err(&robot("bot-1"), give(&[])),
        Rejection::InvalidRecipientCount { count: 0, .. }
    ));
    assert!(matches!(
        room.err(
            &robot("bot-1"),
            CommandKind::RobotGift(robot_gift(&["bob"], 10, 0))
        ),
        Rejection::InvalidGiftCount { count: 0, .. }
    ));
    assert_eq!(
        room.err(
            &robot("bot-1"),
            CommandKind::RobotGift(robot_gift(&["bob"], -1, 1))
        ),
        Rejection::InvalidGift
    );
    // Nor does a robot send a paid gift, even in its own name.
    assert_eq!(
        room.err(
            &robot("bot-1"),
            CommandKind::ApplyGift(gift("bot-1", &["bob"], 10, 1))
        ),
        Rejection::NotARobot
    );
    assert_eq!(Rejection::NotARobot.code(), "NOT_A_ROBOT");
    assert_eq!(Rejection::NotARobot.kind(), RejectionKind::Forbidden);

    room.ok(&user("owner"), CommandKind::CloseRoom);
    assert_eq!(
        room.err(&robot("bot-1"), give(&["bob"])),
        Rejection::RoomClosed
    );
}

#[test]
fn a_robot_joins_a_locked_room_like_any_user_and_moderates_nothing() {
    let mut room = Room::open();
    room.ok(
        &user("owner"),
        CommandKind::SetLock {
            password_hash: Some(PasswordHash("argon2id$x".into())),
        },
    );
    let join = |verified| CommandKind::Join {
        password_verified: verified,
        verified_lock: None,
    };
    assert_eq!(
        room.err(&robot("bot-1"), join(false)),
        Rejection::WrongPassword
    );
    room.ok(&robot("bot-1"), join(true));
    assert_eq!(
        room.err(
            &robot("bot-1"),
            CommandKind::Kick {
                user: id("alice"),
                ban_seconds: None,
            }
        ),
        Rejection::Forbidden
    );
}

#[test]
fn robots_never_win_rocket_rewards() {
    let mut room = Room::open_with(small_rocket_rules());
    for name in ["bot-1", "bot-2", "bot-3", "bot-4", "bot-5", "bot-6"] {
        room.join_as(&robot(name));
    }
    let (rocket_id, level, launch_at) = ignite(&mut room);
    room.now = launch_at;
    for random in 0..40 {
        room.random = random;
        let events = room
            .ask(&system(), launch(rocket_id, level, launch_at))
            .expect("launches");
        let won = rewards(&events);
        assert_eq!(won.iter().map(|(_, c)| c).sum::<i64>(), 1_000);
        assert!(
            won.iter().all(|(user, _)| !user.starts_with("bot-")),
            "the rewards are real coins: humans only ({won:?})"
        );
    }
    // A room of robots alone pays nobody.
    let mut room = Room::open_with(small_rocket_rules());
    let (rocket_id, level, launch_at) = ignite(&mut room);
    room.join_as(&robot("bot-1"));
    for name in ["bob", "admin", "admin2", "alice", "owner"] {
        if room.is_member(name) {
            room.ok(&user(name), CommandKind::Leave);
        }
    }
    room.now = launch_at;
    let events = room.ok(&system(), launch(rocket_id, level, launch_at));
    assert_eq!(rewards(&events), []);
}

#[test]
fn the_system_applies_no_paid_gift_in_a_robot_members_name() {
    let mut room = Room::open();
    room.join_as(&robot("bot-1"));
    assert_eq!(
        room.ask(
            &system(),
            CommandKind::ApplyGift(gift("bot-1", &["alice"], 10, 1))
        ),
        Err(Rejection::NotARobot),
        "a robot spends no coins, so the saga refunds such an order"
    );
}

#[test]
fn a_robots_mic_time_is_displayed_but_no_durable_fact() {
    let mut room = Room::open();
    room.join_as(&robot("bot-1"));
    let up = room.ok(&robot("bot-1"), CommandKind::TakeSeat { seat: seat(3) });
    let down = room.ok(&robot("bot-1"), CommandKind::LeaveSeat { seat: seat(3) });
    for event in up.iter().chain(&down) {
        assert!(event.is_robot(), "{event:?}");
        assert!(!event.delivery().durable, "{event:?}");
        assert_eq!(event.delivery().im, Some(ImPriority::Normal));
    }
    let human = room.ok(&user("alice"), CommandKind::TakeSeat { seat: seat(4) });
    assert!(human.iter().all(|e| !e.is_robot() && e.delivery().durable));
}
