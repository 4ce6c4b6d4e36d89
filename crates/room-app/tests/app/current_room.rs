//! One current room per user, whatever order a user's joins, leaves and kicks run in: every
//! scenario of a few concurrent steps of one user (joins of rooms 1 and 2, a leave, a kick by
//! the owner, a heartbeat) runs under many seeds of a deterministic scheduler (the tests run
//! on one thread; the seed decides how often each step yields before each read or
//! compare-and-set of the record, which reorders the steps' port calls and room commands).
//! After the steps have ended, the user is in a room's online list if and only if their
//! record names that room, and `current_room` names it. A close clears the records that name
//! the closed room, and only those.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use room_app::ports::{Presence, StaleCursor, StaleMember};
use room_app::{LocalPresence, Result};
use room_domain::{CommandKind, RoomId, Timestamp, UserId};

use crate::support::{World, uid, user_actor};

/// How many seeds each scenario runs under.
const SEEDS: u64 = 48;

/// [`LocalPresence`] that yields to the scheduler a seeded number of times (0 to 3) before
/// each call, so that concurrent steps interleave differently per seed, and the same way for
/// the same seed.
struct YieldingPresence {
    inner: LocalPresence,
    state: Mutex<u64>,
}

impl YieldingPresence {
    fn new(seed: u64) -> Self {
        YieldingPresence {
            inner: LocalPresence::new(),
            state: Mutex::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1),
        }
    }

    async fn pause(&self) {
        let turns = {
            // xorshift64: deterministic, no dependency.
            let mut x = self.state.lock().unwrap();
            *x ^= *x << 13;
            *x ^= *x >> 7;
            *x ^= *x << 17;
            *x % 4
        };
        for _ in 0..turns {
            tokio::task::yield_now().await;
        }
    }
}

#[async_trait]
impl Presence for YieldingPresence {
    async fn restore(&self, room: &RoomId, user: &UserId, now: Timestamp) -> Result<()> {
        self.pause().await;
        self.inner.restore(room, user, now).await
    }
    async fn remove(&self, room: &RoomId, user: &UserId) -> Result<()> {
        self.pause().await;
        self.inner.remove(room, user).await
    }
    async fn remove_if_seen(&self, room: &RoomId, user: &UserId, seen: Timestamp) -> Result<bool> {
        self.pause().await;
        self.inner.remove_if_seen(room, user, seen).await
    }
    async fn compare_and_set(
        &self,
        user: &UserId,
        expected: Option<RoomId>,
        next: Option<RoomId>,
        now: Timestamp,
    ) -> Result<Option<RoomId>> {
        self.pause().await;
        self.inner.compare_and_set(user, expected, next, now).await
    }
    async fn get_current_room(&self, user: &UserId) -> Result<Option<RoomId>> {
        self.pause().await;
        self.inner.get_current_room(user).await
    }
    async fn list_stale(
        &self,
        before: Timestamp,
        after: Option<StaleCursor>,
        limit: u32,
    ) -> Result<Vec<StaleMember>> {
        self.inner.list_stale(before, after, limit).await
    }
}

/// One step of bob's, run concurrently with the others of its scenario.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// bob joins room 1 or 2.
    Join(usize),
    /// bob leaves room 1 or 2.
    Leave(usize),
    /// The owner kicks bob out of room 1 or 2 (no ban).
    Kick(usize),
    /// bob heartbeats in room 1 or 2.
    Heartbeat(usize),
}

async fn run(world: &World, rooms: &[RoomId; 2], step: Step) {
    let (bob, alice) = (user_actor("bob"), user_actor("alice"));
    // Refusals (not a member, say) are answers like any other: only the state after counts.
    let _ = match step {
        Step::Join(i) => world
            .service
            .join(&bob, &rooms[i], None, None)
            .await
            .map(drop),
        Step::Leave(i) => world.service.leave(&bob, &rooms[i], None).await,
        Step::Kick(i) => world
            .service
            .command(
                &alice,
                &rooms[i],
                CommandKind::Kick {
                    user: uid("bob"),
                    ban_seconds: None,
                },
                None,
            )
            .await
            .map(drop),
        Step::Heartbeat(i) => world.service.heartbeat(&bob, &rooms[i]).await,
    };
}

/// Runs `steps` at once under `seed`, bob starting in `start` (or nowhere), and checks that
/// the rooms' online lists agree with bob's record afterwards.
async fn scenario(steps: &[Step], start: Option<usize>, seed: u64) -> Option<usize> {
    let presence = Arc::new(YieldingPresence::new(seed));
    let world = Arc::new(World::builder().presence(presence.clone()).build().await);
    let alice = user_actor("alice");
    let mut rooms = Vec::new();
    for name in ["one", "two"] {
        let room = world
            .service
            .create_room(&alice, name.into(), None, "sg".into(), None)
            .await
            .unwrap()
            .room_id;
        world.service.join(&alice, &room, None, None).await.unwrap();
        rooms.push(room);
    }
    let rooms: Arc<[RoomId; 2]> = Arc::new([rooms[0].clone(), rooms[1].clone()]);
    if let Some(start) = start {
        run(&world, &rooms, Step::Join(start)).await;
    }
    let mut tasks = tokio::task::JoinSet::new();
    for step in steps.iter().copied() {
        let (world, rooms) = (world.clone(), rooms.clone());
        tasks.spawn(async move { run(&world, &rooms, step).await });
    }
    while let Some(done) = tasks.join_next().await {
        done.expect("a step");
    }

    let record = world.service.current_room(&uid("bob")).await.unwrap();
    let mut listed_in = Vec::new();
    for room in rooms.iter() {
        let online = world.service.online_users(room, None, 100).await.unwrap();
        if online.iter().any(|member| member.user_id == uid("bob")) {
            listed_in.push(room.clone());
        }
    }
    assert_eq!(
        listed_in,
        record.iter().cloned().collect::<Vec<_>>(),
        "steps {steps:?} from {start:?} under seed {seed}: bob is listed in {listed_in:?}, \
         his record names {record:?}"
    );
    record.and_then(|record| rooms.iter().position(|room| *room == record))
}

/// Runs `steps` under every seed; returns where bob ended under each (room 1, 2 or none).
async fn every_seed(
    steps: &[Step],
    start: Option<usize>,
) -> std::collections::BTreeSet<Option<usize>> {
    let mut ends = std::collections::BTreeSet::new();
    for seed in 0..SEEDS {
        ends.insert(scenario(steps, start, seed).await);
    }
    ends
}

#[tokio::test]
async fn three_joins_at_once_leave_the_user_in_the_room_the_record_names() {
    use Step::Join;
    let ends = every_seed(&[Join(0), Join(1), Join(0)], None).await;
    // The seeds do reorder the steps: either room may win.
    assert_eq!(
        ends,
        [Some(0), Some(1)].into_iter().collect(),
        "where bob ended over the seeds"
    );
    every_seed(&[Join(0), Join(1), Join(0)], Some(1)).await;
    every_seed(&[Join(1), Join(0), Join(1), Join(0)], Some(0)).await;
}

#[tokio::test]
async fn joins_racing_a_leave_agree_with_the_record() {
    use Step::{Join, Leave};
    every_seed(&[Join(0), Join(1), Leave(0)], None).await;
    every_seed(&[Join(0), Leave(1), Join(1)], Some(1)).await;
    every_seed(&[Leave(0), Join(0), Leave(0)], Some(0)).await;
}

#[tokio::test]
async fn joins_racing_a_kick_agree_with_the_record() {
    use Step::{Join, Kick};
    every_seed(&[Join(0), Join(1), Kick(0)], None).await;
    every_seed(&[Join(0), Kick(0), Join(1)], Some(1)).await;
    every_seed(&[Kick(1), Join(1), Join(0)], Some(1)).await;
}

#[tokio::test]
async fn joins_leaves_kicks_and_heartbeats_together_agree_with_the_record() {
    use Step::{Heartbeat, Join, Kick, Leave};
    every_seed(
        &[Join(0), Join(1), Leave(1), Kick(0), Heartbeat(0), Join(0)],
        Some(1),
    )
    .await;
    every_seed(&[Heartbeat(1), Join(0), Heartbeat(0), Join(1)], Some(1)).await;
}

#[tokio::test]
async fn a_close_clears_the_records_that_name_the_room_only() {
    let world = World::new().await;
    let alice = user_actor("alice");
    let mut rooms = Vec::new();
    for name in ["one", "two"] {
        let room = world
            .service
            .create_room(&alice, name.into(), None, "sg".into(), None)
            .await
            .unwrap()
            .room_id;
        rooms.push(room);
    }
    let (bob, carol) = (user_actor("bob"), user_actor("carol"));
    world
        .service
        .join(&bob, &rooms[0], None, None)
        .await
        .unwrap();
    world
        .service
        .join(&carol, &rooms[0], None, None)
        .await
        .unwrap();
    world
        .service
        .join(&carol, &rooms[1], None, None)
        .await
        .unwrap();

    world
        .service
        .close_room(&alice, &rooms[0], None)
        .await
        .unwrap();
    assert_eq!(world.service.current_room(&uid("bob")).await.unwrap(), None);
    assert_eq!(
        world.service.current_room(&uid("carol")).await.unwrap(),
        Some(rooms[1].clone()),
        "carol had moved on: her record is room two's"
    );
}
