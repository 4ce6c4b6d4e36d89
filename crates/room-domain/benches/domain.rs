//! Benchmarks of the room model on one thread, in a room of 1,000 members:
//!
//! - `apply_gift/decide_evolve`: `decide` + `evolve` of one ordinary (non-lucky) `ApplyGift`
//!   (target: at least 1,000,000 per second);
//! - `mixed/decide_evolve`: one command of a mix of gifts, joins, leaves, seat takes and seat
//!   leaves (target: at least 500,000 per second);
//! - `snapshot/encode_json` and `snapshot/decode_json`: a [`Snapshot`] of a busy room to and from
//!   JSON (target: decode under 2 ms).
//!
//! Run with `cargo bench -p room-domain --bench domain`. Rooms are built through `decide` and
//! `evolve` only, as the Room Cell builds them. Commands are built before the timed loops, so the
//! figures are those of the model alone: no id validation, no command parsing.

use std::collections::VecDeque;
use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use room_domain::{
    Actor, ApplyGift, Coins, Command, CommandId, CommandKind, Ctx, GiftId, GiftSnapshot, OrderId,
    RocketLevel, RoomId, RoomRules, RoomState, SeatIndex, Snapshot, Timestamp, UserId, decide,
    evolve,
};

/// Members of every benchmarked room.
const MEMBERS: usize = 1_000;
/// Pre-built gift commands, used in turn, each with its own order id. `decide` does not
/// deduplicate (the command log does), so going round the pool again costs what fresh ids would.
const GIFT_POOL: usize = 4_096;
/// 2025-11-30T00:00:00Z plus twelve hours: every command of a run falls on one day.
const NOW: Timestamp = Timestamp(1_764_460_800_000 + 12 * 3_600_000);

/// Default rules, except one rocket level whose threshold no run reaches: every gift fuels an
/// idle rocket (the common case, and the one with the most events per gift) and the rocket never
/// ignites, so the state does not change shape as the run goes on.
fn rules() -> RoomRules {
    let rules = RoomRules {
        rocket_levels: vec![RocketLevel {
            fuel: 1_000_000_000_000_000,
            countdown_secs: 60,
            reward_pool: Coins(1_000),
            winners: 5,
            reward_cap: None,
        }],
        ..RoomRules::default()
    };
    rules.validate().expect("benchmark rules are valid");
    rules
}

fn user(i: usize) -> UserId {
    UserId::new(format!("user-{i:05}")).expect("valid user id")
}

fn command(id: &str, kind: CommandKind) -> Command {
    Command::new(CommandId::new(id).expect("valid command id"), kind)
}

/// Decides `command` as `actor` and applies its events; panics on a rejection, so that a
/// benchmark never measures a refused command by mistake.
fn run(state: &mut RoomState, command: &Command, actor: &Actor, rules: &RoomRules) {
    let ctx = Ctx {
        now: NOW,
        actor,
        random: 7,
        rules,
    };
    match decide(state, command, &ctx) {
        Ok(events) => {
            for event in &events {
                evolve(state, event);
            }
        }
        Err(rejection) => panic!("{command:?} was rejected: {rejection:?}"),
    }
}

/// An open room owned by `users[0]` in which `users[..members]` have joined.
fn open_room(users: &[UserId], members: usize, rules: &RoomRules) -> RoomState {
    let mut state = RoomState::new(RoomId::new("bench-room").expect("valid room id"));
    let create = command(
        "create",
        CommandKind::CreateRoom {
            name: "Benchmark night".into(),
            seat_count: None,
            region: "sg".into(),
        },
    );
    run(&mut state, &create, &Actor::user(users[0].clone()), rules);
    let join = command(
        "join",
        CommandKind::Join {
            password_verified: false,
            verified_lock: None,
        },
    );
    for user in &users[..members] {
        run(&mut state, &join, &Actor::user(user.clone()), rules);
    }
    assert_eq!(state.members.len(), members);
    state
}

/// A small deterministic generator (xorshift64*), so that every run sees the same sequence.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Order `n` of a rose (10 coins, 10 heat and 10 fuel a unit) from `sender` to `recipient`,
/// 1 to 3 units.
fn gift(n: usize, sender: &UserId, recipient: &UserId, lucky_draw: u64) -> Command {
    let order_id = OrderId::new(format!("order-{n:06}")).expect("valid order id");
    Command::new(
        CommandId::from(order_id.clone()),
        CommandKind::ApplyGift(ApplyGift {
            order_id,
            sender: sender.clone(),
            recipients: vec![recipient.clone()],
            gift: GiftSnapshot {
                gift_id: GiftId::new("rose").expect("valid gift id"),
                price: Coins(10),
                heat: 10,
                fuel: 10,
                lucky: false,
                billing_version: None,
            },
            count: 1 + (n % 3) as u32,
            lucky_draw,
            scope: None,
        }),
    )
}

/// `GIFT_POOL` gift orders, each with its own order id, from a varying sender to one other
/// varying recipient among `users[..among]`.
fn gift_pool(users: &[UserId], among: usize, rng: &mut Rng) -> Vec<Command> {
    (0..GIFT_POOL)
        .map(|n| {
            let sender = rng.below(among);
            let recipient = (sender + 1 + rng.below(among - 1)) % among;
            gift(n, &users[sender], &users[recipient], rng.next())
        })
        .collect()
}

fn bench_apply_gift(c: &mut Criterion) {
    let rules = rules();
    let users: Vec<UserId> = (0..MEMBERS).map(user).collect();
    let mut state = open_room(&users, MEMBERS, &rules);
    let gifts = gift_pool(&users, MEMBERS, &mut Rng(0x5EED_0001));
    // The gift saga applies gifts as the system.
    let system = Actor::System;
    let ctx = Ctx {
        now: NOW,
        actor: &system,
        random: 7,
        rules: &rules,
    };
    // The day's first gift resets the rocket; every later one takes the measured path: the
    // gift, heat, rank and rocket fuel events.
    run(&mut state, &gifts[0], &system, &rules);
    let events = decide(&state, &gifts[1], &ctx).expect("the gift applies");
    let names: Vec<&str> = events.iter().map(|e| e.type_name()).collect();
    assert_eq!(
        names,
        [
            "RoomGiftSent",
            "RoomHeatChanged",
            "RoomRankChanged",
            "RoomRocketFuelChanged"
        ]
    );
    let mut next = 0;

    let mut group = c.benchmark_group("apply_gift");
    group.throughput(Throughput::Elements(1));
    group.bench_function("decide_evolve", |b| {
        b.iter(|| {
            let gift = &gifts[next % GIFT_POOL];
            next += 1;
            run(&mut state, black_box(gift), &system, &rules);
        });
    });
    group.finish();
    black_box(&state);
}

/// Users `0..STABLE` stay in the room throughout (the owner is user 0); users
/// `STABLE..CHURN_END` leave and come back. `MEMBERS` of them are present at any time, give or
/// take one.
const STABLE: usize = 800;
const CHURN_END: usize = 1_100;

/// The mixed workload's room and the bookkeeping that picks valid commands for it.
struct Mixed {
    rules: RoomRules,
    state: RoomState,
    actors: Vec<Actor>,
    join: Command,
    leave: Command,
    take_seat: Vec<Command>,
    leave_seat: Vec<Command>,
    gifts: Vec<Command>,
    next_gift: usize,
    /// Churning users present, and those away (longest away first).
    present: Vec<usize>,
    away: VecDeque<usize>,
    /// Who holds each seat, and where each user sits.
    seat_holder: Vec<Option<usize>>,
    user_seat: Vec<Option<usize>>,
    rng: Rng,
}

impl Mixed {
    fn new() -> Self {
        let rules = rules();
        let users: Vec<UserId> = (0..CHURN_END).map(user).collect();
        let state = open_room(&users, MEMBERS, &rules);
        let mut rng = Rng(0x5EED_0002);
        // Gifts stay among the stable members, so every pre-built order finds its people present.
        let gifts = gift_pool(&users, STABLE, &mut rng);
        let seats = usize::from(state.settings.seat_count);
        let seat_commands = |name: &str, kind: fn(SeatIndex) -> CommandKind| -> Vec<Command> {
            (0..seats)
                .map(|s| command(&format!("{name}-{s}"), kind(SeatIndex(s as u8))))
                .collect()
        };
        Mixed {
            actors: users.iter().cloned().map(Actor::user).collect(),
            join: command(
                "join",
                CommandKind::Join {
                    password_verified: false,
                    verified_lock: None,
                },
            ),
            leave: command("leave", CommandKind::Leave),
            take_seat: seat_commands("take-seat", |seat| CommandKind::TakeSeat { seat }),
            leave_seat: seat_commands("leave-seat", |seat| CommandKind::LeaveSeat { seat }),
            gifts,
            next_gift: 0,
            present: (STABLE..MEMBERS).collect(),
            away: (MEMBERS..CHURN_END).collect(),
            seat_holder: vec![None; seats],
            user_seat: vec![None; CHURN_END],
            rules,
            state,
            rng,
        }
    }

    /// One command: about 50 % gifts, 15 % joins, 15 % leaves, 20 % seat takes or leaves.
    fn step(&mut self) {
        let roll = self.rng.below(100);
        if roll < 50 {
            let gift = &self.gifts[self.next_gift % GIFT_POOL];
            self.next_gift += 1;
            run(&mut self.state, gift, &Actor::System, &self.rules);
        } else if roll < 80 {
            // Leave when the room is full, join otherwise: the room stays at its size.
            if self.state.members.len() >= MEMBERS {
                let user = self.present.swap_remove(self.rng.below(self.present.len()));
                let actor = &self.actors[user];
                run(&mut self.state, &self.leave, actor, &self.rules);
                if let Some(seat) = self.user_seat[user].take() {
                    self.seat_holder[seat] = None;
                }
                self.away.push_back(user);
            } else {
                let user = self.away.pop_front().expect("someone is away");
                run(&mut self.state, &self.join, &self.actors[user], &self.rules);
                self.present.push(user);
            }
        } else {
            let seat = self.rng.below(self.seat_holder.len());
            if let Some(user) = self.seat_holder[seat].take() {
                let command = &self.leave_seat[seat];
                run(&mut self.state, command, &self.actors[user], &self.rules);
                self.user_seat[user] = None;
            } else {
                let pick = self.rng.below(STABLE + self.present.len());
                let user = if pick < STABLE {
                    pick
                } else {
                    self.present[pick - STABLE]
                };
                let command = &self.take_seat[seat];
                run(&mut self.state, command, &self.actors[user], &self.rules);
                // Taking a seat moves a user off the seat they held.
                if let Some(old) = self.user_seat[user].replace(seat) {
                    self.seat_holder[old] = None;
                }
                self.seat_holder[seat] = Some(user);
            }
        }
    }
}

fn bench_mixed(c: &mut Criterion) {
    let mut mixed = Mixed::new();
    let mut group = c.benchmark_group("mixed");
    group.throughput(Throughput::Elements(1));
    group.bench_function("decide_evolve", |b| b.iter(|| mixed.step()));
    group.finish();
    let members = mixed.state.members.len();
    assert!(
        (MEMBERS - 1..=MEMBERS).contains(&members),
        "the room drifted to {members} members"
    );
}

/// A busy room: 1,000 members, every seat taken, 3 admins, 5 bans, 2 chat mutes, and a day
/// and week contribution for every member.
fn busy_room() -> RoomState {
    let rules = rules();
    let banned = 5;
    let users: Vec<UserId> = (0..MEMBERS + banned).map(user).collect();
    let mut state = open_room(&users, MEMBERS + banned, &rules);
    let owner = Actor::user(users[0].clone());
    let system = Actor::System;
    let apply = |state: &mut RoomState, id: String, kind: CommandKind, actor: &Actor| {
        run(state, &command(&id, kind), actor, &rules);
    };
    for (i, user) in users[MEMBERS..].iter().enumerate() {
        let kick = CommandKind::Kick {
            user: user.clone(),
            ban_seconds: Some(86_400),
        };
        apply(&mut state, format!("kick-{i}"), kick, &owner);
    }
    for (i, user) in users[1..=3].iter().enumerate() {
        let set_admin = CommandKind::SetAdmin {
            user: user.clone(),
            admin: true,
        };
        apply(&mut state, format!("admin-{i}"), set_admin, &owner);
    }
    for (i, user) in users[10..12].iter().enumerate() {
        let mute = CommandKind::ChatMute {
            user: user.clone(),
            seconds: 600,
        };
        apply(&mut state, format!("mute-{i}"), mute, &owner);
    }
    for s in 0..usize::from(state.settings.seat_count) {
        let take = CommandKind::TakeSeat {
            seat: SeatIndex(s as u8),
        };
        let sitter = &users[20 + s];
        apply(
            &mut state,
            format!("take-{s}"),
            take,
            &Actor::user(sitter.clone()),
        );
        if s % 2 == 0 {
            let confirm = CommandKind::ConfirmMicPublish {
                user: sitter.clone(),
                at: None,
            };
            apply(&mut state, format!("pub-{s}"), confirm, &system);
        }
    }
    // Every member sends one gift: 1,000 senders in the day and week ranks.
    for (n, sender) in users[..MEMBERS].iter().enumerate() {
        let recipient = &users[(n + 1) % MEMBERS];
        run(&mut state, &gift(n, sender, recipient, 0), &system, &rules);
    }
    assert_eq!(state.members.len(), MEMBERS);
    assert_eq!(state.bans.len(), banned);
    assert_eq!(state.contribution.day.len(), MEMBERS);
    state
        .check_invariants(NOW)
        .expect("the busy room is consistent");
    state
}

fn bench_snapshot(c: &mut Criterion) {
    let snapshot = Snapshot::new(busy_room());
    let json = serde_json::to_vec(&snapshot).expect("a snapshot encodes");
    let decoded: Snapshot = serde_json::from_slice(&json).expect("a snapshot decodes");
    assert_eq!(decoded, snapshot);
    eprintln!(
        "snapshot of a {MEMBERS}-member room: {} bytes of JSON",
        json.len()
    );

    let mut group = c.benchmark_group("snapshot");
    group.sample_size(50);
    group.bench_function("encode_json", |b| {
        b.iter(|| serde_json::to_vec(black_box(&snapshot)).expect("a snapshot encodes"));
    });
    group.bench_function("decode_json", |b| {
        // Freeing the decoded state is not part of loading it: drop it outside the timing.
        b.iter_with_large_drop(|| {
            serde_json::from_slice::<Snapshot>(black_box(&json))
                .expect("a snapshot decodes")
                .into_state()
                .expect("this build reads its own snapshots")
        });
    });
    group.finish();
}

fn config() -> Criterion {
    // Two seconds of warm-up and five of measurement per benchmark: the whole run takes well
    // under a minute.
    Criterion::default()
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(5))
}

criterion_group! {
    name = benches;
    config = config();
    targets = bench_apply_gift, bench_mixed, bench_snapshot
}
criterion_main!(benches);
