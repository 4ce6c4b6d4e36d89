//! The generators of cases: rules, steps and every kind of command, weighted so that most
//! commands fit and the rocket ignites and launches often.

use proptest::prelude::*;
use room_domain::{Coins, RocketLevel, RoomRules};

use crate::scenario::{
    Advance, GiftActor, GiftOp, LaunchOp, MS_PER_DAY, Op, ROBOTS, Recipients, Scenario, SeatPick,
    Step, Target, Tweak, USERS, Who,
};

pub fn scenario() -> impl Strategy<Value = Scenario> {
    (
        rules(),
        prop::array::uniform8(0u8..=10),
        0..MS_PER_DAY,
        prop::bool::weighted(0.95),
        prop_oneof![3 => Just(None), 1 => (1u8..=10).prop_map(Some)],
        prop::collection::vec(0..USERS, 0..=6),
        prop::collection::vec(step(), 1..=60),
    )
        .prop_map(
            |(rules, vip_levels, start, create_first, seat_count, joiners, steps)| Scenario {
                rules,
                vip_levels,
                start,
                create_first,
                seat_count,
                joiners,
                steps,
            },
        )
}

/// The default rules (a rocket that needs 10 000 fuel) or small custom ones whose rocket ignites
/// and launches often, with few admins and members allowed.
fn rules() -> impl Strategy<Value = RoomRules> {
    let levels = prop::collection::vec(
        (
            1i64..300,
            0u32..180,
            0i64..1_000,
            1u32..=6,
            prop::option::of(1i64..400),
        ),
        1..=3,
    )
    .prop_map(|levels| {
        let mut fuel = 0;
        levels
            .into_iter()
            .map(|(step, countdown_secs, pool, winners, cap)| {
                fuel += step;
                RocketLevel {
                    fuel,
                    countdown_secs,
                    reward_pool: Coins(pool),
                    winners,
                    reward_cap: cap.map(Coins),
                }
            })
            .collect::<Vec<_>>()
    });
    let custom = (
        3u32..=10,
        1u32..=3,
        1u8..=8,
        2u32..=20,
        5u32..=100,
        prop::option::of(0u8..=10),
        0u32..=60,
        -14 * 3600..=14 * 3600,
        levels,
    )
        .prop_map(
            |(
                max_members,
                max_admins,
                default_seat_count,
                max_recipients,
                max_gift_count,
                vip_kick_protection_level,
                mic_publish_timeout_secs,
                day_utc_offset_secs,
                rocket_levels,
            )| RoomRules {
                max_members,
                max_admins,
                default_seat_count,
                max_recipients,
                max_gift_count,
                vip_kick_protection_level,
                mic_publish_timeout_secs,
                day_utc_offset_secs,
                rocket_levels,
                ..RoomRules::default()
            },
        );
    prop_oneof![1 => Just(RoomRules::default()), 3 => custom]
}

fn step() -> impl Strategy<Value = Step> {
    let advance = prop_oneof![
        12 => (0i64..5_000).prop_map(Advance::Millis),
        5 => (5_000i64..180_000).prop_map(Advance::Millis),
        1 => (180_000i64..6 * 3_600_000).prop_map(Advance::Millis),
        1 => (0i64..120_000).prop_map(Advance::NextDay),
        1 => (1i64..180_000).prop_map(Advance::Back),
        1 => (1i64..3_600_000).prop_map(Advance::BackOverMidnight),
    ];
    (
        advance,
        who(),
        prop::bool::weighted(0.85),
        any::<u64>(),
        prop::bool::weighted(0.1),
        op(),
    )
        .prop_map(
            |(advance, actor, fitting_actor, random, snapshot, op)| Step {
                advance,
                actor,
                fitting_actor,
                random,
                snapshot,
                op,
            },
        )
}

fn who() -> impl Strategy<Value = Who> {
    prop_oneof![
        4 => any::<usize>().prop_map(Who::Member),
        2 => any::<usize>().prop_map(Who::Moderator),
        2 => (0..USERS).prop_map(Who::Anyone),
        1 => (0..ROBOTS).prop_map(Who::Robot),
        1 => Just(Who::System),
    ]
}

fn target() -> impl Strategy<Value = Target> {
    prop_oneof![
        6 => any::<usize>().prop_map(Target::Member),
        1 => any::<usize>().prop_map(Target::Banned),
        2 => any::<usize>().prop_map(Target::Seated),
        2 => (0..USERS).prop_map(Target::Anyone),
    ]
}

fn seat() -> impl Strategy<Value = SeatPick> {
    prop_oneof![
        4 => any::<usize>().prop_map(SeatPick::Any),
        3 => any::<usize>().prop_map(SeatPick::Occupied),
        2 => Just(SeatPick::Own),
        1 => (0u8..=25).prop_map(SeatPick::Raw),
    ]
}

fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-zA-Z][a-z ]{0,12}",
        1 => Just(String::new()),
        1 => Just("   ".to_owned()),
        1 => Just("x".repeat(31)),
        1 => Just("é".repeat(30)),
    ]
}

fn url() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "https://cdn\\.example/[a-z]{1,6}\\.png",
        1 => Just(String::new()),
        1 => Just("  https://cdn.example/padded.png ".to_owned()),
        1 => Just(format!("https://cdn.example/{}", "u".repeat(500))),
        1 => Just(format!("https://cdn.example/{}", "u".repeat(2048))),
        1 => Just("javascript:alert(1)".to_owned()),
    ]
}

fn notice() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z ]{0,40}",
        1 => Just("n".repeat(501)),
        1 => Just("ü".repeat(500)),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let create = (
        name(),
        prop::option::of(0u8..=22),
        prop_oneof![
            Just(String::new()),
            Just("sg".to_owned()),
            Just("r".repeat(33))
        ],
    )
        .prop_map(|(name, seat_count, region)| Op::CreateRoom {
            name,
            seat_count,
            region,
        });
    let profile = (
        prop::option::of(name()),
        prop::option::of(notice()),
        prop::option::of(url()),
    )
        .prop_map(|(name, notice, cover_url)| Op::UpdateProfile {
            name,
            notice,
            cover_url,
        });
    let timeout = (
        seat(),
        prop::bool::weighted(0.8),
        prop::bool::weighted(0.7),
        0u64..5,
    )
        .prop_map(
            |(pick, current_session, wait, session)| Op::MicPublishTimeout {
                pick,
                current_session,
                wait,
                session,
            },
        );
    let ban_seconds = prop::option::weighted(
        0.7,
        prop_oneof![1 => Just(0u32), 1 => 1u32..120, 3 => 600u32..=2 * 86_400],
    );
    let kick =
        (target(), ban_seconds).prop_map(|(user, ban_seconds)| Op::Kick { user, ban_seconds });
    let mute = (target(), prop_oneof![Just(0u32), 1u32..3_600])
        .prop_map(|(user, seconds)| Op::ChatMute { user, seconds });
    prop::strategy::Union::new_weighted(vec![
        (4, create.boxed()),
        (8, profile.boxed()),
        (
            6,
            prop::option::of(url())
                .prop_map(Op::ChangeBackground)
                .boxed(),
        ),
        (
            3,
            (0u8..16, prop::bool::weighted(0.1))
                .prop_map(|(resources, blank_reason)| Op::Revoke {
                    resources,
                    blank_reason,
                })
                .boxed(),
        ),
        (
            3,
            prop::bool::weighted(0.1)
                .prop_map(|blank| Op::SystemMessage { blank })
                .boxed(),
        ),
        (6, any::<bool>().prop_map(Op::SetChatEnabled).boxed()),
        (6, prop::option::of(0u8..2).prop_map(Op::SetLock).boxed()),
        (4, Just(Op::CloseRoom).boxed()),
        (
            40,
            prop::bool::weighted(0.7)
                .prop_map(|password_verified| Op::Join { password_verified })
                .boxed(),
        ),
        (8, Just(Op::Leave).boxed()),
        (6, target().prop_map(Op::Evict).boxed()),
        (28, seat().prop_map(Op::TakeSeat).boxed()),
        (
            4,
            (seat(), any::<bool>())
                .prop_map(|(pick, vip_only)| Op::SetSeatVip(pick, vip_only))
                .boxed(),
        ),
        (
            5,
            (target(), prop::option::of(seat()))
                .prop_map(|(user, pick)| Op::Invite(user, pick))
                .boxed(),
        ),
        (2, Just(Op::GiftBroadcast).boxed()),
        (
            8,
            prop_oneof![3 => Just(SeatPick::Own), 1 => seat()]
                .prop_map(Op::LeaveSeat)
                .boxed(),
        ),
        (
            8,
            (seat(), any::<bool>())
                .prop_map(|(s, l)| Op::LockSeat(s, l))
                .boxed(),
        ),
        (
            10,
            (seat(), any::<bool>())
                .prop_map(|(s, m)| Op::MuteSeat(s, m))
                .boxed(),
        ),
        (
            6,
            prop_oneof![3 => any::<usize>().prop_map(SeatPick::Occupied), 1 => seat()]
                .prop_map(Op::RemoveFromSeat)
                .boxed(),
        ),
        (
            8,
            prop_oneof![3 => any::<usize>().prop_map(Target::Seated), 1 => target()]
                .prop_map(Op::ConfirmMicPublish)
                .boxed(),
        ),
        (8, timeout.boxed()),
        (6, target().prop_map(Op::RtcUserLeft).boxed()),
        (12, kick.boxed()),
        (
            10,
            prop_oneof![3 => any::<usize>().prop_map(Target::Banned), 1 => target()]
                .prop_map(Op::Unban)
                .boxed(),
        ),
        (8, mute.boxed()),
        (
            10,
            (target(), prop::bool::weighted(0.7))
                .prop_map(|(user, admin)| Op::SetAdmin { user, admin })
                .boxed(),
        ),
        (60, gift().prop_map(Op::Gift).boxed()),
        (24, Just(Op::RobotJoin).boxed()),
        (5, Just(Op::RobotLeave).boxed()),
        (30, gift().prop_map(Op::RobotGift).boxed()),
        (24, launch().prop_map(Op::Launch).boxed()),
        (6, Just(Op::ResetRocket).boxed()),
    ])
}

fn gift() -> impl Strategy<Value = GiftOp> {
    let by = prop_oneof![Just(GiftActor::System), Just(GiftActor::Sender)];
    let recipients = prop_oneof![
        10 => (any::<usize>(), 1usize..=4).prop_map(|(start, n)| Recipients::Members { start, n }),
        3 => prop::collection::vec(target(), 1..=3).prop_map(Recipients::Listed),
        1 => Just(Recipients::Listed(Vec::new())),
        1 => prop::collection::vec(target(), 4..=8).prop_map(Recipients::Listed),
    ];
    // Small prices and fuel so that the default rocket (10 000 fuel) ignites now and then;
    // rarely a negative or enormous amount, which must be refused or add up without overflow.
    let price = prop_oneof![
        16 => 0i64..=30,
        1 => Just(-1i64),
        1 => Just(i64::MAX / 2),
    ];
    let heat = prop_oneof![16 => 0i64..=20, 1 => Just(-5i64), 1 => Just(i64::MAX / 3)];
    let fuel = prop_oneof![16 => 0i64..=150, 1 => Just(-1i64), 1 => Just(i64::MAX / 3)];
    let count = prop_oneof![12 => 1u32..=5, 4 => 6u32..=20, 1 => Just(0u32), 1 => Just(10_000u32)];
    (
        target(),
        by,
        recipients,
        prop::sample::select(vec!["rose", "clover", "sports-car"]),
        price,
        heat,
        fuel,
        prop::bool::weighted(0.3),
        count,
        any::<u64>(),
    )
        .prop_map(
            |(sender, by, recipients, gift_id, price, heat, fuel, lucky, count, lucky_draw)| {
                GiftOp {
                    sender,
                    by,
                    recipients,
                    gift_id,
                    price,
                    heat,
                    fuel,
                    lucky,
                    count,
                    lucky_draw,
                }
            },
        )
}

fn launch() -> impl Strategy<Value = LaunchOp> {
    let tweak = prop_oneof![
        8 => Just(Tweak::None),
        1 => Just(Tweak::RocketId),
        1 => Just(Tweak::Level),
        1 => Just(Tweak::ScheduledAt),
    ];
    let current = (prop::bool::weighted(0.8), tweak)
        .prop_map(|(wait, tweak)| LaunchOp::Current { wait, tweak });
    let arbitrary =
        (0u64..4, 0u32..4, -60_000i64..60_000).prop_map(|(rocket_id, level, scheduled_in)| {
            LaunchOp::Arbitrary {
                rocket_id,
                level,
                scheduled_in,
            }
        });
    prop_oneof![4 => current, 1 => arbitrary]
}
