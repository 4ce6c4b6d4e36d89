//! Property tests of the room model. Random command sequences against one room (every command
//! kind, from fitting and unfitting actors, on valid and invalid seats, with times that advance,
//! cross midnight and sometimes step back, and gifts that ignite and launch the rocket) must
//! keep, after every step:
//!
//! - [`RoomState::check_invariants`];
//! - `decide` deterministic, also on an equal state rebuilt from JSON, and a rejected command
//!   changing nothing;
//! - `version` advancing by the number of events of an accepted command;
//! - money adding up: gift totals, lucky rewards, rocket rewards, heat and contributions;
//! - replay: the log folded onto [`RoomState::new`], the events decoded from JSON, and the
//!   newest JSON snapshot plus the events after it all equal the live state;
//! - commands, events, envelopes (redacted), rejections and snapshots surviving JSON;
//! - robots (who join, leave, take seats and send free robot gifts among the users): their
//!   joins and leaves marked and never durable, robot gifts adding heat but never rocket fuel,
//!   a contribution or a durable event, while paid gifts still do.
//!
//! Runs 256 cases (about 4 s in a debug build); `PROPTEST_CASES=5000` searches longer. A
//! failing case is shrunk and printed, and its seed is kept in
//! `tests/properties.proptest-regressions` (commit it) so that it is tried first next time.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, TestCaseError, TestRunner};
use room_domain::{
    Actor, ApplyGift, Coins, Command, CommandId, CommandKind, Ctx, DayKey, Event, EventEnvelope,
    GiftId, GiftSnapshot, OrderId, PasswordHash, Rejection, RobotGift, RocketId, RocketLevel,
    RocketStatus, RoomId, RoomRules, RoomState, SeatIndex, SeatSessionId, Snapshot, Timestamp,
    UserActor, UserId, decide, evolve, evolve_all,
};

/// Users in the pool; user 0 creates the room, user 7 is a platform admin.
const USERS: usize = 8;
/// Robots in the pool, besides the users.
const ROBOTS: usize = 3;
const OWNER: usize = 0;
const PLATFORM_ADMIN: usize = 7;
/// 2025-11-30T00:00:00Z.
const EPOCH: i64 = 1_764_460_800_000;
const MS_PER_DAY: i64 = 86_400_000;
/// Cases per run: enough that each rare path the coverage check asks for (a gift stamped on an
/// earlier day, a launch on a later one) is reached about ten times in a run.
const DEFAULT_CASES: u32 = 512;

// ---------------------------------------------------------------------------------------------
// What a case is made of.

/// One generated run against one room.
#[derive(Debug, Clone)]
struct Scenario {
    rules: RoomRules,
    vip_levels: [u8; USERS],
    /// Milliseconds after [`EPOCH`] of the first command.
    start: i64,
    /// Whether user 0 creates the room before the random steps (otherwise only a random
    /// `CreateRoom` step may create it).
    create_first: bool,
    seat_count: Option<u8>,
    /// Users who join right after the creation, before the random steps.
    joiners: Vec<usize>,
    steps: Vec<Step>,
}

#[derive(Debug, Clone)]
struct Step {
    advance: Advance,
    actor: Who,
    /// Whether the command comes from someone who may send it (the system for timers and
    /// callbacks, a moderator for moderation, a member for seats and gifts); otherwise from
    /// `actor`, whoever that is.
    fitting_actor: bool,
    /// The `Ctx::random` of the command.
    random: u64,
    /// Whether to restore the state from a JSON snapshot after this step and replay the rest of
    /// the log onto it.
    snapshot: bool,
    op: Op,
}

#[derive(Debug, Clone, Copy)]
enum Advance {
    /// Milliseconds forward.
    Millis(i64),
    /// To the start of the next local day, plus these milliseconds.
    NextDay(i64),
    /// Milliseconds backward: the room moved to a node whose clock is behind.
    Back(i64),
    /// Backward to these milliseconds before the start of the current local day: a clock
    /// behind by enough to be on the previous day. Up to an hour, so that the steps after it
    /// (mostly seconds) stay on the previous day long enough for gifts to be stamped there.
    BackOverMidnight(i64),
}

/// Who acts, resolved against the state when the step runs so that most commands come from
/// someone who may send them.
#[derive(Debug, Clone, Copy)]
enum Who {
    /// The k-th member (modulo their number), or user k if the room is empty.
    Member(usize),
    /// The k-th of the owner, the appointed admins and the platform admin.
    Moderator(usize),
    /// User k of the pool, member or not.
    Anyone(usize),
    /// Robot k of the pool, member or not.
    Robot(usize),
    /// The k-th robot member (modulo their number), or robot k if none is present.
    RobotMember(usize),
    System,
}

/// A user a command is about, resolved against the state like [`Who`].
#[derive(Debug, Clone, Copy)]
enum Target {
    /// The k-th member (modulo their number), or user k if the room is empty.
    Member(usize),
    /// The k-th user with a ban entry (current or past), or user k if there is none.
    Banned(usize),
    /// The holder of the k-th occupied seat (modulo their number), or user k.
    Seated(usize),
    /// User k of the pool, member or not.
    Anyone(usize),
}

/// A seat a command is about, resolved against the state like [`Who`].
#[derive(Debug, Clone, Copy)]
enum SeatPick {
    /// Seat k modulo the room's seat count.
    Any(usize),
    /// The k-th occupied seat (modulo their number), or seat 0.
    Occupied(usize),
    /// The acting user's seat, or seat 0.
    Own,
    /// This index, often beyond the room's seats.
    Raw(u8),
}

#[derive(Debug, Clone)]
enum Op {
    CreateRoom {
        name: String,
        seat_count: Option<u8>,
        region: String,
    },
    UpdateProfile {
        name: Option<String>,
        notice: Option<String>,
        cover_url: Option<String>,
    },
    ChangeBackground(Option<String>),
    SetChatEnabled(bool),
    SetLock(Option<u8>),
    CloseRoom,
    Join {
        password_verified: bool,
    },
    Leave,
    Evict(Target),
    TakeSeat(SeatPick),
    LeaveSeat(SeatPick),
    LockSeat(SeatPick, bool),
    MuteSeat(SeatPick, bool),
    RemoveFromSeat(SeatPick),
    ConfirmMicPublish(Target),
    MicPublishTimeout {
        pick: SeatPick,
        /// Names the seat's current session if it has one (otherwise `session`).
        current_session: bool,
        /// Moves time to the publish deadline first.
        wait: bool,
        session: u64,
    },
    RtcUserLeft(Target),
    Kick {
        user: Target,
        ban_seconds: Option<u32>,
    },
    Unban(Target),
    ChatMute {
        user: Target,
        seconds: u32,
    },
    SetAdmin {
        user: Target,
        admin: bool,
    },
    Gift(GiftOp),
    /// A robot joins (any robot when fitting).
    RobotJoin,
    /// A robot member leaves (when fitting).
    RobotLeave,
    /// A robot member sends a free gift (when fitting); the op's sender and actor are not used.
    RobotGift(GiftOp),
    Launch(LaunchOp),
    ResetRocket,
}

#[derive(Debug, Clone)]
struct GiftOp {
    sender: Target,
    by: GiftActor,
    recipients: Recipients,
    gift_id: &'static str,
    price: i64,
    heat: i64,
    fuel: i64,
    lucky: bool,
    count: u32,
    lucky_draw: u64,
}

#[derive(Debug, Clone)]
enum Recipients {
    /// `n` distinct members from the `start`-th on (fewer if fewer are present).
    Members { start: usize, n: usize },
    /// These users, maybe repeated, maybe absent.
    Listed(Vec<Target>),
}

#[derive(Debug, Clone, Copy)]
enum GiftActor {
    /// The gift saga.
    System,
    /// The sender themselves.
    Sender,
}

#[derive(Debug, Clone, Copy)]
enum LaunchOp {
    /// The timer of the current ignition (if any), maybe tampered with.
    Current { wait: bool, tweak: Tweak },
    /// A made-up timer.
    Arbitrary {
        rocket_id: u64,
        level: u32,
        scheduled_in: i64,
    },
}

#[derive(Debug, Clone, Copy)]
enum Tweak {
    None,
    RocketId,
    Level,
    ScheduledAt,
}

// ---------------------------------------------------------------------------------------------
// Strategies.

fn scenario() -> impl Strategy<Value = Scenario> {
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
    let levels = prop::collection::vec((1i64..300, 0u32..180, 0i64..1_000, 1u32..=6), 1..=3)
        .prop_map(|levels| {
            let mut fuel = 0;
            levels
                .into_iter()
                .map(|(step, countdown_secs, pool, winners)| {
                    fuel += step;
                    RocketLevel {
                        fuel,
                        countdown_secs,
                        reward_pool: Coins(pool),
                        winners,
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

// ---------------------------------------------------------------------------------------------
// Running a case.

/// What the runs exercised, so that a generator that stops reaching parts of the model fails
/// the test instead of passing vacuously.
#[derive(Debug, Default)]
struct Coverage {
    accepted: BTreeMap<&'static str, u64>,
    rejected: BTreeMap<&'static str, u64>,
    rejection_codes: BTreeMap<&'static str, u64>,
    events: BTreeMap<&'static str, u64>,
    launches_with_rewards: u64,
    lucky_wins: u64,
    gifts_on_a_new_day: u64,
    launches_on_a_later_day: u64,
    gifts_stamped_on_an_earlier_day: u64,
    snapshot_restores: u64,
    robot_joins: u64,
    robot_leaves: u64,
    robot_gifts_with_heat: u64,
    robot_gifts_while_idle: u64,
}

struct Pool {
    room_id: RoomId,
    users: Vec<UserId>,
    actors: Vec<Actor>,
    robots: Vec<UserId>,
}

impl Pool {
    fn new(vip_levels: [u8; USERS]) -> Self {
        let users: Vec<UserId> = (0..USERS)
            .map(|i| UserId::new(format!("u{i}")).unwrap())
            .collect();
        let actors = users
            .iter()
            .zip(vip_levels)
            .enumerate()
            .map(|(i, (user_id, vip_level))| {
                Actor::User(UserActor {
                    user_id: user_id.clone(),
                    vip_level,
                    platform_admin: i == PLATFORM_ADMIN,
                })
            })
            .collect();
        Pool {
            room_id: RoomId::new("room-prop").unwrap(),
            users,
            actors,
            robots: (0..ROBOTS)
                .map(|i| UserId::new(format!("bot{i}")).unwrap())
                .collect(),
        }
    }

    /// The actor `user` is: a robot acts as one.
    fn actor_of(&self, user: &UserId) -> Actor {
        if self.robots.contains(user) {
            return Actor::Robot(user.clone());
        }
        let i = self.users.iter().position(|u| u == user).unwrap();
        self.actors[i].clone()
    }

    fn actor(&self, who: Who, state: &RoomState) -> Actor {
        let user = match who {
            Who::Member(k) => nth_or(state.members.keys(), k, &self.users),
            Who::Moderator(k) => {
                let platform_admin = &self.users[PLATFORM_ADMIN];
                let moderators = state
                    .owner
                    .iter()
                    .chain(&state.admins)
                    .chain(std::iter::once(platform_admin));
                nth_or(moderators, k, &self.users)
            }
            Who::Anyone(i) => self.users[i % USERS].clone(),
            Who::Robot(i) => self.robots[i % ROBOTS].clone(),
            Who::RobotMember(k) => {
                let robots = state.members.iter().filter(|(_, m)| m.robot);
                nth_or(robots.map(|(user, _)| user), k, &self.robots)
            }
            Who::System => return Actor::System,
        };
        self.actor_of(&user)
    }

    fn user(&self, target: Target, state: &RoomState) -> UserId {
        match target {
            Target::Member(k) => nth_or(state.members.keys(), k, &self.users),
            Target::Banned(k) => nth_or(state.bans.keys(), k, &self.users),
            Target::Seated(k) => {
                let seated = state.seats.iter().filter_map(|s| s.occupant.as_ref());
                nth_or(seated.map(|o| &o.user), k, &self.users)
            }
            Target::Anyone(i) => self.users[i % USERS].clone(),
        }
    }
}

/// Who may send `op`, picked with the index of `who`.
fn fitting_actor(who: Who, op: &Op) -> Who {
    let k = match who {
        Who::Member(k)
        | Who::Moderator(k)
        | Who::Anyone(k)
        | Who::Robot(k)
        | Who::RobotMember(k) => k,
        Who::System => 0,
    };
    match op {
        Op::Evict(_)
        | Op::ConfirmMicPublish(_)
        | Op::MicPublishTimeout { .. }
        | Op::RtcUserLeft(_)
        | Op::Launch(_)
        | Op::ResetRocket => Who::System,
        Op::UpdateProfile { .. }
        | Op::ChangeBackground(_)
        | Op::SetChatEnabled(_)
        | Op::SetLock(_)
        | Op::LockSeat(..)
        | Op::RemoveFromSeat(_)
        | Op::Kick { .. }
        | Op::Unban(_)
        | Op::ChatMute { .. }
        | Op::SetAdmin { .. } => Who::Moderator(k),
        Op::CreateRoom { .. } | Op::Join { .. } => Who::Anyone(k),
        Op::RobotJoin => Who::Robot(k),
        Op::RobotLeave | Op::RobotGift(_) => Who::RobotMember(k),
        // Mostly refused (only the owner among members may close), so that rooms stay open.
        Op::CloseRoom
        | Op::Leave
        | Op::TakeSeat(_)
        | Op::LeaveSeat(_)
        | Op::MuteSeat(..)
        | Op::Gift(_) => Who::Member(k),
    }
}

/// The seat `pick` names in `state`, for `actor`.
fn resolve_seat(pick: SeatPick, state: &RoomState, actor: &Actor) -> u8 {
    let seats = state.seats.len().max(1);
    let index = match pick {
        SeatPick::Any(k) => k % seats,
        SeatPick::Occupied(k) => {
            let occupied: Vec<usize> = (0..state.seats.len())
                .filter(|&i| state.seats[i].occupant.is_some())
                .collect();
            occupied
                .get(k % occupied.len().max(1))
                .copied()
                .unwrap_or(0)
        }
        SeatPick::Own => actor
            .user_id()
            .and_then(|user| state.seat_of(user))
            .map_or(0, |seat| usize::from(seat.0)),
        SeatPick::Raw(index) => usize::from(index),
    };
    u8::try_from(index).unwrap()
}

/// The `k`-th of `candidates` modulo their number, or the `k`-th of `users` (modulo their
/// number) if there are none.
fn nth_or<'a>(
    candidates: impl Iterator<Item = &'a UserId> + Clone,
    k: usize,
    users: &[UserId],
) -> UserId {
    let len = candidates.clone().count();
    if len == 0 {
        users[k % users.len()].clone()
    } else {
        candidates.clone().nth(k % len).unwrap().clone()
    }
}

/// The users `recipients` names in `state`.
fn recipients_of(recipients: &Recipients, state: &RoomState, pool: &Pool) -> Vec<UserId> {
    match recipients {
        Recipients::Members { start, n } => {
            let members: Vec<&UserId> = state.members.keys().collect();
            if members.is_empty() {
                vec![pool.users[start % USERS].clone()]
            } else {
                (0..(*n).min(members.len()))
                    .map(|j| members[(start % members.len() + j) % members.len()].clone())
                    .collect()
            }
        }
        Recipients::Listed(targets) => targets.iter().map(|t| pool.user(*t, state)).collect(),
    }
}

/// The live room, its log, and the copies rebuilt from JSON that must stay equal to it.
struct Run<'a> {
    scenario: &'a Scenario,
    pool: Pool,
    now: Timestamp,
    state: RoomState,
    /// Every accepted event, in order.
    log: Vec<Event>,
    /// Built only from events decoded from their JSON.
    from_json: RoomState,
    /// Restored from the newest JSON snapshot, then fed the events after it.
    restored: RoomState,
    coverage: &'a RefCell<Coverage>,
}

fn run_scenario(scenario: &Scenario, coverage: &RefCell<Coverage>) -> Result<(), TestCaseError> {
    prop_assert_eq!(scenario.rules.validate(), Ok(()));
    let pool = Pool::new(scenario.vip_levels);
    let room_id = pool.room_id.clone();
    let mut run = Run {
        scenario,
        pool,
        now: Timestamp(EPOCH + scenario.start),
        state: RoomState::new(room_id.clone()),
        log: Vec::new(),
        from_json: RoomState::new(room_id.clone()),
        restored: RoomState::new(room_id),
        coverage,
    };
    if scenario.create_first {
        let create = CommandKind::CreateRoom {
            name: "Night talk".into(),
            seat_count: scenario.seat_count,
            region: "sg".into(),
        };
        let owner = run.pool.actors[OWNER].clone();
        let events = run.apply(
            Command::new(CommandId::new("c-create").unwrap(), create),
            &owner,
            0,
        )?;
        prop_assert!(events.is_some(), "the owner could not create the room");
    }
    for (i, &joiner) in scenario.joiners.iter().enumerate() {
        let join = CommandKind::Join {
            password_verified: false,
            verified_lock: None,
        };
        let actor = run.pool.actors[joiner].clone();
        run.apply(
            Command::new(CommandId::new(format!("c-join-{i}")).unwrap(), join),
            &actor,
            0,
        )?;
    }
    for (i, step) in scenario.steps.iter().enumerate() {
        run.step(i, step)?;
    }
    // Once more, from scratch, with the library's own fold.
    let mut replayed = RoomState::new(run.state.room_id.clone());
    evolve_all(&mut replayed, &run.log);
    prop_assert_eq!(&replayed, &run.state);
    Ok(())
}

impl Run<'_> {
    fn step(&mut self, i: usize, step: &Step) -> Result<(), TestCaseError> {
        self.now = match step.advance {
            Advance::Millis(ms) => Timestamp(self.now.0 + ms),
            Advance::Back(ms) => Timestamp(self.now.0 - ms),
            Advance::BackOverMidnight(ms) => {
                let offset = self.scenario.rules.day_utc_offset_secs;
                Timestamp(self.now.day_key(offset).start(offset).0 - ms)
            }
            Advance::NextDay(ms) => {
                let offset = self.scenario.rules.day_utc_offset_secs;
                let day = self.now.day_key(offset);
                Timestamp(DayKey(day.0 + 1).start(offset).0 + ms)
            }
        };
        let (kind, actor) = self.command_of(i, step);
        let command_id = match &kind {
            CommandKind::ApplyGift(gift) => CommandId::from(gift.order_id.clone()),
            _ => CommandId::new(format!("c-{i}")).unwrap(),
        };
        self.apply(Command::new(command_id, kind), &actor, step.random)?;

        if step.snapshot {
            let json = serde_json::to_string(&Snapshot::new(self.state.clone())).unwrap();
            let snapshot: Snapshot = serde_json::from_str(&json).unwrap();
            self.restored = snapshot.into_state().unwrap();
            self.coverage.borrow_mut().snapshot_restores += 1;
        }
        Ok(())
    }

    /// Builds the step's command, reading the state where the command names something current
    /// (a member, a seat session, an ignition), and moves time forward where the step waits for
    /// a timer.
    fn command_of(&mut self, i: usize, step: &Step) -> (CommandKind, Actor) {
        let pool = &self.pool;
        let state = &self.state;
        let who = if step.fitting_actor {
            fitting_actor(step.actor, &step.op)
        } else {
            step.actor
        };
        let mut actor = pool.actor(who, state);
        let resolve = |target: &Target| pool.user(*target, state);
        let seat = |pick: &SeatPick| SeatIndex(resolve_seat(*pick, state, &actor));
        let kind = match &step.op {
            Op::CreateRoom {
                name,
                seat_count,
                region,
            } => CommandKind::CreateRoom {
                name: name.clone(),
                seat_count: *seat_count,
                region: region.clone(),
            },
            Op::UpdateProfile {
                name,
                notice,
                cover_url,
            } => CommandKind::UpdateProfile {
                name: name.clone(),
                notice: notice.clone(),
                cover_url: cover_url.clone(),
            },
            Op::ChangeBackground(background_url) => CommandKind::ChangeBackground {
                background_url: background_url.clone(),
            },
            Op::SetChatEnabled(enabled) => CommandKind::SetChatEnabled { enabled: *enabled },
            Op::SetLock(hash) => CommandKind::SetLock {
                password_hash: hash.map(|h| PasswordHash(format!("argon2id$salt${h}"))),
            },
            Op::CloseRoom => CommandKind::CloseRoom,
            Op::Join { password_verified } => CommandKind::Join {
                password_verified: *password_verified,
                verified_lock: None,
            },
            Op::Leave => CommandKind::Leave,
            Op::Evict(u) => CommandKind::Evict {
                user: resolve(u),
                seen: None,
            },
            Op::TakeSeat(pick) => CommandKind::TakeSeat { seat: seat(pick) },
            Op::LeaveSeat(pick) => CommandKind::LeaveSeat { seat: seat(pick) },
            Op::LockSeat(pick, locked) => CommandKind::LockSeat {
                seat: seat(pick),
                locked: *locked,
            },
            Op::MuteSeat(pick, muted) => CommandKind::MuteSeat {
                seat: seat(pick),
                muted: *muted,
            },
            Op::RemoveFromSeat(pick) => CommandKind::RemoveFromSeat { seat: seat(pick) },
            Op::ConfirmMicPublish(u) => CommandKind::ConfirmMicPublish {
                user: resolve(u),
                at: None,
            },
            Op::MicPublishTimeout {
                pick,
                current_session,
                wait,
                session,
            } => {
                let index = seat(pick);
                let occupant = state.seat(index).and_then(|s| s.occupant.as_ref());
                match occupant {
                    Some(occupant) if *current_session => {
                        if let (true, Some(deadline)) = (*wait, occupant.publish_deadline) {
                            self.now = self.now.max(deadline);
                        }
                        CommandKind::MicPublishTimeout {
                            seat: index,
                            session: occupant.session,
                        }
                    }
                    _ => CommandKind::MicPublishTimeout {
                        seat: index,
                        session: SeatSessionId(*session),
                    },
                }
            }
            Op::RtcUserLeft(u) => CommandKind::RtcUserLeft {
                user: resolve(u),
                at: None,
            },
            Op::Kick { user, ban_seconds } => CommandKind::Kick {
                user: resolve(user),
                ban_seconds: *ban_seconds,
            },
            Op::Unban(u) => CommandKind::Unban { user: resolve(u) },
            Op::ChatMute { user, seconds } => CommandKind::ChatMute {
                user: resolve(user),
                seconds: *seconds,
            },
            Op::SetAdmin { user, admin } => CommandKind::SetAdmin {
                user: resolve(user),
                admin: *admin,
            },
            Op::RobotJoin => CommandKind::Join {
                password_verified: false,
                verified_lock: None,
            },
            Op::RobotLeave => CommandKind::Leave,
            Op::RobotGift(gift) => CommandKind::RobotGift(RobotGift {
                recipients: {
                    let mut recipients = recipients_of(&gift.recipients, state, pool);
                    // Mostly to others: the robot's members are few, and a gift to oneself is
                    // refused (listed recipients still name the robot now and then).
                    if matches!(gift.recipients, Recipients::Members { .. }) && recipients.len() > 1
                    {
                        recipients.retain(|user| Some(user) != actor.user_id());
                    }
                    recipients
                },
                gift: GiftSnapshot {
                    gift_id: GiftId::new(gift.gift_id).unwrap(),
                    price: Coins(gift.price),
                    heat: gift.heat,
                    fuel: gift.fuel,
                    lucky: gift.lucky,
                },
                count: gift.count,
            }),
            Op::Gift(gift) => {
                let sender = resolve(&gift.sender);
                if step.fitting_actor {
                    actor = match gift.by {
                        GiftActor::System => Actor::System,
                        GiftActor::Sender => pool.actor_of(&sender),
                    };
                }
                CommandKind::ApplyGift(ApplyGift {
                    order_id: OrderId::new(format!("o-{i}")).unwrap(),
                    sender,
                    recipients: recipients_of(&gift.recipients, state, pool),
                    gift: GiftSnapshot {
                        gift_id: GiftId::new(gift.gift_id).unwrap(),
                        price: Coins(gift.price),
                        heat: gift.heat,
                        fuel: gift.fuel,
                        lucky: gift.lucky,
                    },
                    count: gift.count,
                    lucky_draw: gift.lucky_draw,
                })
            }
            Op::Launch(launch) => {
                let rocket = &state.rocket;
                match (*launch, rocket.status) {
                    (
                        LaunchOp::Current { wait, tweak },
                        RocketStatus::Ignited {
                            rocket_id,
                            launch_at,
                            ..
                        },
                    ) => {
                        if wait {
                            self.now = self.now.max(launch_at);
                        }
                        let (mut rocket_id, mut level, mut scheduled_at) =
                            (rocket_id, rocket.level, launch_at);
                        match tweak {
                            Tweak::None => {}
                            Tweak::RocketId => rocket_id = RocketId(rocket_id.0 + 1),
                            Tweak::Level => level += 1,
                            Tweak::ScheduledAt => scheduled_at = Timestamp(scheduled_at.0 - 1),
                        }
                        CommandKind::LaunchRocket {
                            rocket_id,
                            level,
                            scheduled_at,
                        }
                    }
                    // No ignition to aim at: the last rocket's id and the current level.
                    (LaunchOp::Current { .. }, _) => CommandKind::LaunchRocket {
                        rocket_id: RocketId(rocket.next_rocket_id.0.saturating_sub(1)),
                        level: rocket.level,
                        scheduled_at: self.now,
                    },
                    (
                        LaunchOp::Arbitrary {
                            rocket_id,
                            level,
                            scheduled_in,
                        },
                        _,
                    ) => CommandKind::LaunchRocket {
                        rocket_id: RocketId(rocket_id),
                        level,
                        scheduled_at: Timestamp(self.now.0 + scheduled_in),
                    },
                }
            }
            Op::ResetRocket => CommandKind::ResetRocket,
        };
        (kind, actor)
    }

    /// Decides and applies one command, checking every property on the way. Returns the
    /// events if the command was accepted.
    fn apply(
        &mut self,
        command: Command,
        actor: &Actor,
        random: u64,
    ) -> Result<Option<Vec<Event>>, TestCaseError> {
        let rules = &self.scenario.rules;
        let ctx = Ctx {
            now: self.now,
            actor,
            random,
            rules,
        };
        let before = self.state.clone();
        let outcome = decide(&self.state, &command, &ctx);
        prop_assert_eq!(
            &decide(&self.state, &command, &ctx),
            &outcome,
            "decide is not deterministic"
        );
        prop_assert_eq!(&self.state, &before, "decide changed the state");

        // The same values, built apart (decoded from JSON), give the same answer too.
        let command_json = serde_json::to_string(&command).unwrap();
        let decoded: Command = serde_json::from_str(&command_json).unwrap();
        prop_assert_eq!(&decoded, &command);
        prop_assert_eq!(
            &decide(&self.from_json, &decoded, &ctx),
            &outcome,
            "decide differs on an equal state"
        );

        let name = kind_name(&command.kind);
        let accepted = match outcome {
            Err(rejection) => {
                let mut coverage = self.coverage.borrow_mut();
                *coverage.rejected.entry(name).or_default() += 1;
                *coverage
                    .rejection_codes
                    .entry(rejection.code())
                    .or_default() += 1;
                drop(coverage);
                let json = serde_json::to_string(&rejection).unwrap();
                prop_assert_eq!(
                    &serde_json::from_str::<Rejection>(&json).unwrap(),
                    &rejection
                );
                None
            }
            Ok(events) => {
                *self.coverage.borrow_mut().accepted.entry(name).or_default() += 1;
                self.check_events(&before, &command, &ctx, &events)?;
                for event in &events {
                    evolve(&mut self.state, event);
                    *self
                        .coverage
                        .borrow_mut()
                        .events
                        .entry(event.type_name())
                        .or_default() += 1;
                    self.check_json(event)?;
                    evolve(&mut self.restored, event);
                    self.log.push(event.clone());
                }
                prop_assert_eq!(
                    self.state.version,
                    before.version + events.len() as u64,
                    "the version did not advance by the number of events"
                );
                self.check_effects(&before, &command, &ctx, &events)?;
                Some(events)
            }
        };

        if let Err(violation) = self.state.check_invariants(self.now) {
            return Err(TestCaseError::fail(format!(
                "invariant broken after {command:?}: {violation}"
            )));
        }
        // Replay: the log folded onto a new room, events decoded from JSON, and the newest
        // snapshot plus the events after it all give the live state.
        let mut replayed = RoomState::new(self.state.room_id.clone());
        for event in &self.log {
            evolve(&mut replayed, event);
        }
        prop_assert_eq!(
            &replayed,
            &self.state,
            "fold(events) differs from the state"
        );
        prop_assert_eq!(
            &self.from_json,
            &self.state,
            "replaying JSON events differs"
        );
        prop_assert_eq!(&self.restored, &self.state, "snapshot + tail differs");

        let json = serde_json::to_string(&Snapshot::new(self.state.clone())).unwrap();
        let decoded: Snapshot = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(decoded.into_state().unwrap(), self.state.clone());
        Ok(accepted)
    }

    /// Each event survives JSON alone and in its envelope; the envelope is redacted.
    fn check_json(&mut self, event: &Event) -> Result<(), TestCaseError> {
        let json = serde_json::to_string(event).unwrap();
        let decoded: Event = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(&decoded, event);
        evolve(&mut self.from_json, &decoded);

        let seq = self.state.version;
        let envelope = EventEnvelope::new(self.state.room_id.clone(), seq, self.now, event);
        let redacted = event.redacted();
        prop_assert_eq!(&envelope.event, redacted.as_ref());
        prop_assert_eq!(&envelope.event_id, &format!("room-prop:{seq}"));
        let json = serde_json::to_string(&envelope).unwrap();
        prop_assert!(
            !json.contains("argon2id"),
            "a password hash left the room: {json}"
        );
        prop_assert_eq!(
            &serde_json::from_str::<EventEnvelope>(&json).unwrap(),
            &envelope
        );
        Ok(())
    }

    /// What can be said of the events before they are applied: money adds up.
    fn check_events(
        &self,
        before: &RoomState,
        command: &Command,
        ctx: &Ctx<'_>,
        events: &[Event],
    ) -> Result<(), TestCaseError> {
        for event in events {
            let delivery = event.delivery();
            if event.is_robot() {
                prop_assert!(!delivery.durable, "a durable robot event: {:?}", event);
                prop_assert!(
                    delivery.im.is_some(),
                    "a robot event not shown: {:?}",
                    event
                );
            }
            match event {
                Event::RoomGiftSent(sent) if sent.robot => {
                    self.check_robot_gift(command, ctx, sent)?;
                }
                Event::RoomUserJoined { robot, .. } => {
                    prop_assert_eq!(*robot, ctx.actor.is_robot(), "join marked wrong");
                    prop_assert_eq!(delivery.durable, !robot);
                    prop_assert_eq!(event.is_robot(), *robot);
                    if *robot {
                        self.coverage.borrow_mut().robot_joins += 1;
                    }
                }
                Event::RoomUserLeft { user, robot, .. } => {
                    let was_robot = before.members.get(user).is_some_and(|m| m.robot);
                    prop_assert_eq!(*robot, was_robot, "leave of {:?} marked wrong", user);
                    prop_assert_eq!(delivery.durable, !robot);
                    prop_assert_eq!(event.is_robot(), *robot);
                    if *robot {
                        self.coverage.borrow_mut().robot_leaves += 1;
                    }
                }
                Event::RoomUserKicked { user, robot, .. } => {
                    let was_robot = before.members.get(user).is_some_and(|m| m.robot);
                    prop_assert_eq!(*robot, was_robot, "kick of {:?} marked wrong", user);
                    prop_assert!(delivery.durable && !event.is_robot());
                }
                Event::RoomGiftSent(sent) => {
                    let CommandKind::ApplyGift(gift) = &command.kind else {
                        return Err(TestCaseError::fail(format!("gift from {command:?}")));
                    };
                    prop_assert!(!ctx.actor.is_robot(), "a robot sent a paid gift");
                    prop_assert!(sent.total_value.0 >= 0);
                    let units = i128::from(gift.count) * gift.recipients.len() as i128;
                    prop_assert_eq!(&sent.order_id, &gift.order_id);
                    prop_assert_eq!(&sent.sender, &gift.sender);
                    prop_assert_eq!(&sent.recipients, &gift.recipients);
                    prop_assert_eq!(&sent.gift_id, &gift.gift.gift_id);
                    prop_assert_eq!(sent.count, gift.count);
                    prop_assert_eq!(sent.unit_price, gift.gift.price);
                    prop_assert_eq!(
                        i128::from(sent.total_value.0),
                        i128::from(sent.unit_price.0)
                            * i128::from(sent.count)
                            * sent.recipients.len() as i128
                    );
                    prop_assert_eq!(
                        i128::from(sent.heat_added),
                        i128::from(gift.gift.heat) * units
                    );
                    prop_assert_eq!(
                        i128::from(sent.fuel_added),
                        i128::from(gift.gift.fuel) * units
                    );
                    match (gift.gift.lucky, sent.lucky) {
                        (false, None) => {}
                        (true, Some(lucky)) => {
                            prop_assert!(
                                ctx.rules
                                    .lucky
                                    .entries
                                    .iter()
                                    .any(|e| e.multiplier == lucky.multiplier && e.weight > 0),
                                "multiplier {} is not in the table",
                                lucky.multiplier
                            );
                            prop_assert_eq!(
                                i128::from(lucky.reward.0),
                                i128::from(sent.total_value.0) * i128::from(lucky.multiplier)
                            );
                            if lucky.reward.0 > 0 {
                                self.coverage.borrow_mut().lucky_wins += 1;
                            }
                        }
                        (lucky, outcome) => {
                            return Err(TestCaseError::fail(format!(
                                "lucky gift {lucky} drew {outcome:?}"
                            )));
                        }
                    }
                    prop_assert!(event.delivery().durable);
                }
                Event::RoomRocketLaunched {
                    rocket_id,
                    level,
                    rewards,
                    next_level,
                } => {
                    let CommandKind::LaunchRocket {
                        rocket_id: asked,
                        level: asked_level,
                        scheduled_at,
                    } = &command.kind
                    else {
                        return Err(TestCaseError::fail(format!("launch from {command:?}")));
                    };
                    prop_assert_eq!(rocket_id, asked);
                    prop_assert_eq!(level, asked_level);
                    prop_assert!(ctx.now >= *scheduled_at, "launched before its time");
                    let was_ignited = matches!(
                        before.rocket.status,
                        RocketStatus::Ignited { rocket_id: r, .. } if r == *rocket_id
                    );
                    prop_assert!(was_ignited, "launched a rocket that was not ignited");
                    let config = ctx.rules.rocket_level(*level).unwrap();
                    prop_assert_eq!(
                        *next_level,
                        ctx.rules.rocket_level(level + 1).map(|_| level + 1)
                    );
                    let winners: BTreeSet<&UserId> = rewards.iter().map(|r| &r.user).collect();
                    prop_assert_eq!(winners.len(), rewards.len(), "a user won twice");
                    for reward in rewards {
                        prop_assert!(
                            before.members.contains_key(&reward.user),
                            "{:?} won but is not a member",
                            reward.user
                        );
                        // The rewards are real coins: robots never win them.
                        prop_assert!(
                            !before.members[&reward.user].robot,
                            "robot {:?} won coins",
                            reward.user
                        );
                        prop_assert!(!reward.coins.is_negative());
                    }
                    let humans = before.members.values().filter(|m| !m.robot).count();
                    let paid: i128 = rewards.iter().map(|r| i128::from(r.coins.0)).sum();
                    if humans == 0 || config.reward_pool.0 == 0 {
                        prop_assert!(rewards.is_empty());
                    } else {
                        prop_assert_eq!(paid, i128::from(config.reward_pool.0));
                        // Nobody wins zero coins: a pool smaller than the winner count has
                        // fewer winners.
                        let expected = humans
                            .min(config.winners as usize)
                            .min(usize::try_from(config.reward_pool.0).unwrap_or(0));
                        prop_assert_eq!(rewards.len(), expected);
                        self.coverage.borrow_mut().launches_with_rewards += 1;
                    }
                    prop_assert!(event.delivery().durable);
                    // Ignited on an earlier day: the reset that waited for the launch follows.
                    let today = ctx.now.day_key(ctx.rules.day_utc_offset_secs);
                    let reset_after = before.rocket.day_key < today;
                    prop_assert_eq!(
                        events.len(),
                        1 + usize::from(reset_after),
                        "a launch's events: {:?}",
                        events
                    );
                    if reset_after {
                        prop_assert_eq!(&events[1], &Event::RoomRocketReset { day_key: today });
                        self.coverage.borrow_mut().launches_on_a_later_day += 1;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// A robot gift's event: as the command asked, sent by the acting robot, under the command
    /// id, with no fuel, no lucky draw, and no durable delivery.
    fn check_robot_gift(
        &self,
        command: &Command,
        ctx: &Ctx<'_>,
        sent: &room_domain::GiftSent,
    ) -> Result<(), TestCaseError> {
        let CommandKind::RobotGift(gift) = &command.kind else {
            return Err(TestCaseError::fail(format!(
                "a robot gift from {command:?}"
            )));
        };
        let Actor::Robot(robot) = ctx.actor else {
            return Err(TestCaseError::fail(format!(
                "a robot gift by {:?}",
                ctx.actor
            )));
        };
        let units = i128::from(gift.count) * gift.recipients.len() as i128;
        prop_assert_eq!(&sent.sender, robot);
        prop_assert_eq!(&sent.order_id, &OrderId::from(&command.command_id));
        prop_assert_eq!(&sent.recipients, &gift.recipients);
        prop_assert_eq!(&sent.gift_id, &gift.gift.gift_id);
        prop_assert_eq!(sent.count, gift.count);
        prop_assert_eq!(sent.unit_price, gift.gift.price);
        prop_assert_eq!(
            i128::from(sent.total_value.0),
            i128::from(gift.gift.price.0) * units
        );
        prop_assert_eq!(
            i128::from(sent.heat_added),
            i128::from(gift.gift.heat) * units
        );
        prop_assert_eq!(sent.fuel_added, 0);
        prop_assert_eq!(sent.lucky, None);
        let event = Event::RoomGiftSent(sent.clone());
        prop_assert!(!event.delivery().durable);
        prop_assert_eq!(event.delivery().im, Some(room_domain::ImPriority::High));
        Ok(())
    }

    /// What can be said of the state after a command's events were applied.
    fn check_effects(
        &self,
        before: &RoomState,
        command: &Command,
        ctx: &Ctx<'_>,
        events: &[Event],
    ) -> Result<(), TestCaseError> {
        let after = &self.state;
        let gifts = events
            .iter()
            .filter(|e| matches!(e, Event::RoomGiftSent(_)))
            .count();
        if let CommandKind::Join { .. } = command.kind
            && let Some(user) = ctx.actor.user_id()
            && !events.is_empty()
        {
            prop_assert_eq!(after.members[user].robot, ctx.actor.is_robot());
        }
        if let CommandKind::RobotGift(gift) = &command.kind {
            // Free gifts make the room look lively, and do nothing that money does: no fuel
            // (a launch pays members real coins), no contribution (ranks are of coins given),
            // no durable fact for other services to count.
            prop_assert_eq!(gifts, 1, "an accepted robot gift gives one RoomGiftSent");
            let Some(Event::RoomGiftSent(sent)) = events.first() else {
                return Err(TestCaseError::fail("RoomGiftSent is not the first event"));
            };
            prop_assert!(sent.robot);
            prop_assert_eq!(after.heat, before.heat + sent.heat_added);
            prop_assert_eq!(&after.contribution, &before.contribution);
            prop_assert_eq!(
                &after.rocket,
                &before.rocket,
                "a robot gift moved the rocket"
            );
            for event in events {
                prop_assert!(
                    matches!(
                        event,
                        Event::RoomGiftSent(_) | Event::RoomHeatChanged { .. }
                    ),
                    "a robot gift gave {:?}",
                    event
                );
                prop_assert!(!event.delivery().durable, "durable: {:?}", event);
            }
            let mut coverage = self.coverage.borrow_mut();
            if sent.heat_added > 0 {
                coverage.robot_gifts_with_heat += 1;
            }
            if before.rocket.status == RocketStatus::Idle && gift.gift.fuel > 0 {
                coverage.robot_gifts_while_idle += 1;
            }
            return Ok(());
        }
        if !matches!(command.kind, CommandKind::ApplyGift(_)) {
            prop_assert_eq!(gifts, 0);
            prop_assert_eq!(after.heat, before.heat);
            prop_assert_eq!(&after.contribution, &before.contribution);
            return Ok(());
        }
        prop_assert_eq!(gifts, 1, "an accepted gift gives one RoomGiftSent");
        let Some(Event::RoomGiftSent(sent)) = events.first() else {
            return Err(TestCaseError::fail("RoomGiftSent is not the first event"));
        };
        prop_assert!(!sent.robot, "a paid gift marked as a robot's");
        prop_assert!(
            events[0].delivery().durable,
            "a paid gift is a durable fact"
        );
        prop_assert_eq!(after.heat, before.heat + sent.heat_added);
        let ranked = events
            .iter()
            .any(|e| matches!(e, Event::RoomRankChanged { .. }));
        prop_assert_eq!(ranked, sent.total_value.0 > 0, "paid gifts move the ranks");

        // Contribution: the sender's day and week totals grow by exactly the gift's value;
        // nobody else's change. The totals are those of the newest day the room has seen: a
        // gift on a new day starts the day from zero, and a clock that stepped back must not
        // roll the ranks back to an earlier day (that would drop the later day's totals).
        let today = ctx.now.day_key(ctx.rules.day_utc_offset_secs);
        let day = today.max(before.contribution.day_key);
        let week = day.week();
        for user in &self.pool.users {
            let grew = if *user == sent.sender {
                sent.total_value
            } else {
                Coins::ZERO
            };
            prop_assert_eq!(
                after.day_contribution(user, day).0,
                before.day_contribution(user, day).0 + grew.0,
                "day contribution of {:?} on {:?} (now is in {:?})",
                user,
                day,
                today
            );
            prop_assert_eq!(
                after.week_contribution(user, week).0,
                before.week_contribution(user, week).0 + grew.0,
                "week contribution of {:?}",
                user
            );
        }
        if before.contribution.day_key > today && sent.total_value.0 > 0 {
            self.coverage.borrow_mut().gifts_stamped_on_an_earlier_day += 1;
        }
        // Likewise the rocket resets on a later day only, and not while it is ignited: its
        // launch comes first.
        let resets = events
            .iter()
            .filter(|e| matches!(e, Event::RoomRocketReset { .. }))
            .count();
        let new_day = before.rocket.day_key < today && !before.rocket.awaits_launch(ctx.now);
        prop_assert_eq!(resets, usize::from(new_day));
        if new_day {
            prop_assert!(
                events
                    .iter()
                    .any(|e| matches!(e, Event::RoomRocketReset { day_key } if *day_key == today)),
                "a gift on a new day did not reset the rocket"
            );
            if before.contribution.day_key < today && sent.total_value.0 > 0 {
                self.coverage.borrow_mut().gifts_on_a_new_day += 1;
            }
        }
        if let Some(config) = ctx.rules.rocket_level(after.rocket.level) {
            prop_assert!(
                after.rocket.fuel <= config.fuel,
                "fuel beyond the threshold"
            );
            let ignited = events
                .iter()
                .any(|e| matches!(e, Event::RoomRocketIgnited { .. }));
            // A rocket already counting down takes no fuel, whatever the day, unless the gift
            // reset it (on a new day, a launch overdue by more than a day is waited for no more).
            let was_counting_down =
                matches!(before.rocket.status, RocketStatus::Ignited { .. }) && !new_day;
            let is_counting_down = matches!(after.rocket.status, RocketStatus::Ignited { .. });
            prop_assert_eq!(
                ignited,
                is_counting_down && !was_counting_down,
                "ignition does not match the rocket status"
            );
            if ignited {
                prop_assert_eq!(after.rocket.fuel, config.fuel);
            }
        }
        // A paid gift with fuel fills a rocket that takes fuel (idle, once reset on a new day).
        let level = if new_day { 1 } else { before.rocket.level };
        let idle = new_day || before.rocket.status == RocketStatus::Idle;
        if idle && sent.fuel_added > 0 && ctx.rules.rocket_level(level).is_some() {
            prop_assert!(
                events
                    .iter()
                    .any(|e| matches!(e, Event::RoomRocketFuelChanged { .. })),
                "a paid gift with fuel did not fill the rocket"
            );
        }
        Ok(())
    }
}

/// The `type` tag of a command kind in its JSON.
fn kind_name(kind: &CommandKind) -> &'static str {
    match kind {
        CommandKind::CreateRoom { .. } => "create_room",
        CommandKind::UpdateProfile { .. } => "update_profile",
        CommandKind::ChangeBackground { .. } => "change_background",
        CommandKind::SetChatEnabled { .. } => "set_chat_enabled",
        CommandKind::SetLock { .. } => "set_lock",
        CommandKind::CloseRoom => "close_room",
        CommandKind::Join { .. } => "join",
        CommandKind::Leave => "leave",
        CommandKind::Evict { .. } => "evict",
        CommandKind::TakeSeat { .. } => "take_seat",
        CommandKind::LeaveSeat { .. } => "leave_seat",
        CommandKind::LockSeat { .. } => "lock_seat",
        CommandKind::MuteSeat { .. } => "mute_seat",
        CommandKind::RemoveFromSeat { .. } => "remove_from_seat",
        CommandKind::ConfirmMicPublish { .. } => "confirm_mic_publish",
        CommandKind::MicPublishTimeout { .. } => "mic_publish_timeout",
        CommandKind::RtcUserLeft { .. } => "rtc_user_left",
        CommandKind::Kick { .. } => "kick",
        CommandKind::Unban { .. } => "unban",
        CommandKind::ChatMute { .. } => "chat_mute",
        CommandKind::SetAdmin { .. } => "set_admin",
        CommandKind::ApplyGift(_) => "apply_gift",
        CommandKind::LaunchRocket { .. } => "launch_rocket",
        CommandKind::ResetRocket => "reset_rocket",
        CommandKind::RobotGift(_) => "robot_gift",
    }
}

const ALL_COMMAND_KINDS: [&str; 25] = [
    "create_room",
    "update_profile",
    "change_background",
    "set_chat_enabled",
    "set_lock",
    "close_room",
    "join",
    "leave",
    "evict",
    "take_seat",
    "leave_seat",
    "lock_seat",
    "mute_seat",
    "remove_from_seat",
    "confirm_mic_publish",
    "mic_publish_timeout",
    "rtc_user_left",
    "kick",
    "unban",
    "chat_mute",
    "set_admin",
    "apply_gift",
    "launch_rocket",
    "reset_rocket",
    "robot_gift",
];

const ALL_EVENT_TYPES: [&str; 21] = [
    "RoomCreated",
    "RoomProfileUpdated",
    "RoomBackgroundChanged",
    "RoomChatEnabledChanged",
    "RoomLockChanged",
    "RoomClosed",
    "RoomUserJoined",
    "RoomUserLeft",
    "RoomUserKicked",
    "RoomUserUnbanned",
    "RoomUserMuted",
    "RoomAdminChanged",
    "RoomMicChanged",
    "RoomMicSeatLocked",
    "RoomGiftSent",
    "RoomHeatChanged",
    "RoomRankChanged",
    "RoomRocketFuelChanged",
    "RoomRocketIgnited",
    "RoomRocketLaunched",
    "RoomRocketReset",
];

#[test]
fn random_command_sequences_keep_the_room_consistent() {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(DEFAULT_CASES);
    let config = Config {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..Config::with_source_file(file!())
    };
    let coverage = RefCell::new(Coverage::default());
    let mut runner = TestRunner::new(config);
    if let Err(failure) = runner.run(&scenario(), |scenario| run_scenario(&scenario, &coverage)) {
        panic!("{failure}");
    }

    // A generator that no longer reaches a command or an event would make the properties
    // above hold vacuously. With fewer cases than the default, some may legitimately be missed.
    let coverage = coverage.into_inner();
    // Seen with `-- --nocapture`: how often each command was accepted and refused.
    eprintln!("{coverage:#?}");
    if cases < DEFAULT_CASES {
        return;
    }
    for kind in ALL_COMMAND_KINDS {
        assert!(
            coverage.accepted.get(kind).copied().unwrap_or(0) > 0,
            "no {kind} command was accepted: {coverage:#?}"
        );
    }
    for kind in ALL_COMMAND_KINDS {
        assert!(
            coverage.rejected.get(kind).copied().unwrap_or(0) > 0,
            "no {kind} command was rejected: {coverage:#?}"
        );
    }
    for event in ALL_EVENT_TYPES {
        assert!(
            coverage.events.get(event).copied().unwrap_or(0) > 0,
            "no {event} event happened: {coverage:#?}"
        );
    }
    assert!(coverage.launches_with_rewards > 0, "{coverage:#?}");
    assert!(coverage.lucky_wins > 0, "{coverage:#?}");
    assert!(coverage.gifts_on_a_new_day > 0, "{coverage:#?}");
    assert!(coverage.launches_on_a_later_day > 0, "{coverage:#?}");
    assert!(
        coverage.gifts_stamped_on_an_earlier_day > 0,
        "{coverage:#?}"
    );
    assert!(coverage.snapshot_restores > 0, "{coverage:#?}");
    assert!(coverage.robot_joins > 0, "{coverage:#?}");
    assert!(coverage.robot_leaves > 0, "{coverage:#?}");
    assert!(coverage.robot_gifts_with_heat > 0, "{coverage:#?}");
    assert!(coverage.robot_gifts_while_idle > 0, "{coverage:#?}");
}

/// Decides `kind` as `actor` at `now` and applies the events; panics if the room refuses.
fn accept(state: &mut RoomState, actor: &Actor, now: Timestamp, kind: CommandKind) {
    let rules = RoomRules::default();
    let ctx = Ctx {
        now,
        actor,
        random: 0,
        rules: &rules,
    };
    let command = Command::new(
        CommandId::new(format!("c-{}", state.version)).unwrap(),
        kind,
    );
    let events = decide(state, &command, &ctx).unwrap();
    evolve_all(state, &events);
}

fn rose(order: &str, sender: &UserId, recipient: &UserId, price: i64) -> CommandKind {
    CommandKind::ApplyGift(ApplyGift {
        order_id: OrderId::new(order).unwrap(),
        sender: sender.clone(),
        recipients: vec![recipient.clone()],
        gift: GiftSnapshot {
            gift_id: GiftId::new("rose").unwrap(),
            price: Coins(price),
            heat: 1,
            fuel: 1,
            lucky: false,
        },
        count: 1,
        lucky_draw: 0,
    })
}

/// Found by the property above: once the room had seen a new day, a gift stamped a moment
/// before midnight (a clock behind, after the room moved to another node) rolled the ranks back
/// to the earlier day and dropped the new day's totals.
#[test]
fn a_clock_behind_midnight_keeps_the_new_days_ranks() {
    let pool = Pool::new([0; USERS]);
    let (alice, bob) = (&pool.users[0], &pool.users[1]);
    let midnight = Timestamp(EPOCH + MS_PER_DAY);
    let new_day = midnight.day_key(0);
    let mut state = RoomState::new(pool.room_id.clone());
    let create = CommandKind::CreateRoom {
        name: "Night talk".into(),
        seat_count: None,
        region: "sg".into(),
    };
    let join = || CommandKind::Join {
        password_verified: false,
        verified_lock: None,
    };
    let earlier = Timestamp(midnight.0 - 3_600_000);
    accept(&mut state, &pool.actors[0], earlier, create);
    accept(&mut state, &pool.actors[0], earlier, join());
    accept(&mut state, &pool.actors[1], earlier, join());

    accept(
        &mut state,
        &Actor::System,
        midnight.plus_secs(1),
        rose("o-1", alice, bob, 10),
    );
    accept(
        &mut state,
        &Actor::System,
        Timestamp(midnight.0 - 1_000),
        rose("o-2", bob, alice, 5),
    );

    assert_eq!(state.day_contribution(alice, new_day), Coins(10));
    assert_eq!(state.day_contribution(bob, new_day), Coins(5));
    assert_eq!(state.week_contribution(alice, new_day.week()), Coins(10));
    state.check_invariants(midnight).unwrap();
}
