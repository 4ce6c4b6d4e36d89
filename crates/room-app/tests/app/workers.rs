//! The background passes over a real runtime: durable timers armed by commits and fired by
//! [`workers::fire_due_timers`], and rocket rewards paid once by [`workers::pay_out`].

use std::sync::{Arc, Mutex};

use room_app::ports::{
    Clock, CreditKind, Lease, LeaseHolder, MockPayouts, MockTimers, Payout, Payouts, PayoutsRef,
    Timers, TimersRef,
};
use room_app::{Error, Result, workers};
use room_domain::{Coins, CommandKind, Event, RoomId, SeatIndex, Timestamp};

use crate::support::{T0, World, eventually, gift, rid, uid, user};

fn timers(world: &World) -> TimersRef {
    world.store.clone()
}

fn payouts(world: &World) -> PayoutsRef {
    world.store.clone()
}

async fn seat_holder(world: &World, seat: usize) -> Option<String> {
    let state = world.state(&rid("r1")).await;
    state.seats[seat]
        .occupant
        .as_ref()
        .map(|o| o.user.to_string())
}

#[tokio::test]
async fn a_mic_take_arms_a_publish_timeout_that_frees_the_seat() {
    let world = World::new().await;
    let room = world.open_room("r1", "alice", &["bob"]).await;
    let reply = world
        .exec(
            &room,
            user("bob"),
            CommandKind::TakeSeat { seat: SeatIndex(2) },
        )
        .await
        .unwrap();
    let session = reply
        .events
        .iter()
        .find_map(|stored| match &stored.event {
            Event::RoomMicChanged {
                change: room_domain::MicChange::Up { session, .. },
                ..
            } => Some(*session),
            _ => None,
        })
        .expect("a mic-up event");

    let deadline = Timestamp(T0.0 + 30_000);
    let armed = Timers::list_due(&*world.store, deadline, None, 10)
        .await
        .unwrap();
    assert_eq!(armed.len(), 1, "{armed:?}");
    assert_eq!(armed[0].due_at, deadline);
    assert_eq!(
        armed[0].command,
        CommandKind::MicPublishTimeout {
            seat: SeatIndex(2),
            session
        }
    );

    // Not yet due.
    world.clock.advance_secs(29);
    let fired = workers::fire_due_timers(&world.service, &timers(&world), 10).await;
    assert_eq!(fired.unwrap(), 0);
    assert_eq!(seat_holder(&world, 2).await.as_deref(), Some("bob"));

    world.clock.advance_secs(1);
    let fired = workers::fire_due_timers(&world.service, &timers(&world), 10).await;
    assert_eq!(fired.unwrap(), 1);
    assert_eq!(seat_holder(&world, 2).await, None);
    let left = Timers::list_due(&*world.store, world.clock.now(), None, 10).await;
    assert!(left.unwrap().is_empty(), "a fired timer is removed");
}

#[tokio::test]
async fn a_publish_timeout_after_the_audio_started_is_stale_and_dropped() {
    let world = World::new().await;
    let room = world.open_room("r1", "alice", &["bob"]).await;
    let take = CommandKind::TakeSeat { seat: SeatIndex(2) };
    world.exec(&room, user("bob"), take).await.unwrap();
    world
        .service
        .system_command(
            &room,
            CommandKind::ConfirmMicPublish {
                user: uid("bob"),
                at: None,
            },
        )
        .await
        .unwrap();

    world.clock.advance_secs(30);
    let fired = workers::fire_due_timers(&world.service, &timers(&world), 10).await;
    assert_eq!(fired.unwrap(), 1);
    assert_eq!(seat_holder(&world, 2).await.as_deref(), Some("bob"));
    let left = Timers::list_due(&*world.store, world.clock.now(), None, 10).await;
    assert!(left.unwrap().is_empty(), "a stale timer is dropped");
}

/// Room r1 of alice with bob and carol, whose rocket bob's booster (50 coins of his 100)
/// just ignited: its launch is due in 60 s.
async fn ignited_world() -> World {
    let world = World::new().await;
    world.fund("bob", 100).await;
    let room = world.open_room("r1", "alice", &["bob", "carol"]).await;
    world
        .saga()
        .send(gift(&room, "bob", "o-1", "booster", 1, &["alice"]))
        .await
        .unwrap();
    world
}

#[tokio::test]
async fn a_rocket_launch_owes_rewards_that_are_paid_once() {
    let world = ignited_world().await;
    let people = ["alice", "bob", "carol"];
    assert_eq!(world.total_balance(&people).await, 50);

    world.clock.advance_secs(59);
    let fired = workers::fire_due_timers(&world.service, &timers(&world), 10).await;
    assert_eq!(fired.unwrap(), 0, "the countdown is still running");
    world.clock.advance_secs(1);
    let fired = workers::fire_due_timers(&world.service, &timers(&world), 10).await;
    assert_eq!(fired.unwrap(), 1);

    let owed = Payouts::list_pending(&*world.store, None, 10)
        .await
        .unwrap();
    assert_eq!(owed.len(), 3, "every member present wins: {owed:?}");
    assert!(owed.iter().all(|p| p.kind == CreditKind::RocketReward));
    assert_eq!(owed.iter().map(|p| p.amount.0).sum::<i64>(), 1_000);

    let paid = workers::pay_out(&world.service, &payouts(&world), 10).await;
    assert_eq!(paid.unwrap(), 3);
    assert_eq!(world.total_balance(&people).await, 1_050);
    let paid = workers::pay_out(&world.service, &payouts(&world), 10).await;
    assert_eq!(paid.unwrap(), 0);
    assert_eq!(world.total_balance(&people).await, 1_050);
}

/// A worker whose clock is ahead of the room's lists a launch the room finds early. The timer
/// stays: dropped, it would leave the rocket ignited for good and its rewards unpaid.
#[tokio::test]
async fn a_timer_the_room_finds_early_is_kept() {
    let world = ignited_world().await;
    let armed = Timers::list_due(&*world.store, Timestamp(i64::MAX), None, 10)
        .await
        .unwrap();
    let launch = armed
        .into_iter()
        .find(|t| matches!(t.command, CommandKind::LaunchRocket { .. }))
        .expect("the ignition armed a launch");
    let mut ahead = MockTimers::new();
    ahead.expect_list_due().returning(move |_, after, _| {
        Ok(if after.is_none() {
            vec![launch.clone()]
        } else {
            vec![]
        })
    });
    ahead.expect_delete().never();
    let ahead: TimersRef = Arc::new(ahead);
    let fired = workers::fire_due_timers(&world.service, &ahead, 10).await;
    assert_eq!(fired.unwrap(), 0);

    // On time, the kept timer launches the rocket.
    world.clock.advance_secs(60);
    let fired = workers::fire_due_timers(&world.service, &timers(&world), 10).await;
    assert_eq!(fired.unwrap(), 1);
    let owed = Payouts::list_pending(&*world.store, None, 10)
        .await
        .unwrap();
    assert_eq!(owed.len(), 3);
}

#[tokio::test]
async fn a_payout_whose_deletion_failed_is_not_paid_twice() {
    let world = World::new().await;
    let payout = Payout {
        op_id: "r1:rocket:1:alice".into(),
        kind: CreditKind::RocketReward,
        user: uid("alice"),
        amount: Coins(250),
        room_id: rid("r1"),
    };
    // (deleted, delete attempts)
    let state = Arc::new(Mutex::new((false, 0)));
    let mut mock = MockPayouts::new();
    let listed = state.clone();
    mock.expect_list_pending().returning(move |_, _| {
        let deleted = listed.lock().unwrap().0;
        Ok(if deleted {
            vec![]
        } else {
            vec![payout.clone()]
        })
    });
    let deletes = state.clone();
    mock.expect_delete().returning(move |_| {
        let mut state = deletes.lock().unwrap();
        state.1 += 1;
        if state.1 == 1 {
            return Err(Error::Unavailable("database timeout".into()));
        }
        state.0 = true;
        Ok(())
    });
    let payouts: PayoutsRef = Arc::new(mock);

    // Credited, but the pass died before it could forget the payout.
    assert!(
        workers::pay_out(&world.service, &payouts, 10)
            .await
            .is_err()
    );
    assert_eq!(world.balance("alice").await, Coins(250));
    // The next pass credits again under the same operation id: no coin moves.
    assert_eq!(
        workers::pay_out(&world.service, &payouts, 10)
            .await
            .unwrap(),
        1
    );
    assert_eq!(world.balance("alice").await, Coins(250));
    assert_eq!(
        workers::pay_out(&world.service, &payouts, 10)
            .await
            .unwrap(),
        0
    );
}

#[tokio::test]
async fn a_refused_payout_stays_owed_and_does_not_hold_back_the_next() {
    let world = World::new().await;
    // alice's balance cannot take 250 more: the wallet refuses her rewards for good.
    world.fund("alice", i64::MAX - 100).await;
    let owed = |rocket: u32, user: &str| Payout {
        op_id: format!("r1:rocket:{rocket}:{user}"),
        kind: CreditKind::RocketReward,
        user: uid(user),
        amount: Coins(250),
        room_id: rid("r1"),
    };
    // More refused rewards at the head than one page holds.
    let pending = Arc::new(Mutex::new(vec![
        owed(1, "alice"),
        owed(2, "alice"),
        owed(3, "alice"),
        owed(3, "bob"),
    ]));
    let mut mock = MockPayouts::new();
    let listed = pending.clone();
    mock.expect_list_pending()
        .returning(move |after: Option<String>, limit| {
            let owed = listed.lock().unwrap().clone();
            let from = after
                .and_then(|op_id| owed.iter().position(|p| p.op_id == op_id))
                .map_or(0, |i| i + 1);
            Ok(owed.into_iter().skip(from).take(limit as usize).collect())
        });
    let deleted = pending.clone();
    mock.expect_delete().returning(move |op_id| {
        deleted.lock().unwrap().retain(|p| p.op_id != op_id);
        Ok(())
    });
    let payouts: PayoutsRef = Arc::new(mock);

    let paid = workers::pay_out(&world.service, &payouts, 2).await;
    assert_eq!(
        paid.unwrap(),
        1,
        "bob is paid behind alice's refused rewards"
    );
    assert_eq!(world.balance("bob").await, Coins(250));
    assert_eq!(world.balance("alice").await, Coins(i64::MAX - 100));
    let left: Vec<String> = pending
        .lock()
        .unwrap()
        .iter()
        .map(|p| p.op_id.clone())
        .collect();
    assert_eq!(
        left,
        [
            "r1:rocket:1:alice",
            "r1:rocket:2:alice",
            "r1:rocket:3:alice"
        ],
        "alice's rewards stay owed"
    );
}

/// After a restart the presence table is empty; a room loaded from storage restores its
/// members, so those whose clients are gone are evicted after the timeout like anyone else.
#[tokio::test]
async fn members_of_a_reloaded_room_are_evicted_without_heartbeats() {
    let before = World::new().await;
    let room = before.open_room("r1", "owner", &["alice"]).await;
    room_app::ports::RoomDirectory::reserve_short_id(&*before.store, &room, 123_456)
        .await
        .expect("short id");

    // A new process on the same storage: nothing in presence until the room loads.
    let after = World::builder().store(before.store.clone()).build().await;
    // Real ids are random; the test ids count from 1 again, so skip past the first world's.
    for _ in 0..1000 {
        room_app::ports::IdGen::next_id(&*after.ids);
    }
    let service = &after.service;
    assert_eq!(service.current_room(&uid("alice")).await.unwrap(), None);
    let view = service.get_room(&room).await.expect("room loads");
    assert_eq!(view.online_count, 2);
    assert_eq!(
        service.current_room(&uid("alice")).await.unwrap(),
        Some(room.clone())
    );

    after.clock.advance_secs(91);
    let evicted = workers::evict_stale_members(service, std::time::Duration::from_secs(90), 100)
        .await
        .expect("eviction pass");
    assert_eq!(evicted, 2);
    assert_eq!(service.get_room(&room).await.unwrap().online_count, 0);
}

/// A lease table where the rooms in `dead` are held by a node whose registration has expired
/// (it died; its leases have not expired yet), and every other room is free for this node.
#[derive(Default)]
struct DeadNode {
    dead: Mutex<std::collections::HashSet<RoomId>>,
}

#[async_trait::async_trait]
impl Lease for DeadNode {
    async fn acquire(&self, room_id: &RoomId) -> Result<bool> {
        Ok(!self.dead.lock().unwrap().contains(room_id))
    }
    async fn renew_all(&self, rooms: &[RoomId]) -> Result<Vec<bool>> {
        let dead = self.dead.lock().unwrap();
        Ok(rooms.iter().map(|room| !dead.contains(room)).collect())
    }
    async fn release(&self, _: &RoomId) -> Result<()> {
        Ok(())
    }
    async fn get_holder(&self, room_id: &RoomId) -> Result<Option<LeaseHolder>> {
        Ok(self
            .dead
            .lock()
            .unwrap()
            .contains(room_id)
            .then(|| LeaseHolder {
                node_id: "node-dead".into(),
                url: None,
            }))
    }
    async fn join_group(&self, _: &str) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
    async fn leave_group(&self, _: &str) -> Result<()> {
        Ok(())
    }
    async fn try_lock(&self, name: &str) -> Result<Option<String>> {
        Ok(Some(name.to_owned()))
    }
    async fn unlock(&self, _: &str, _: &str) -> Result<()> {
        Ok(())
    }
}

/// A node of a cluster (a forwarder set) whose lease table is `lease`.
async fn clustered(lease: Arc<DeadNode>) -> World {
    let world = World::builder().lease(lease).build().await;
    crate::support::Nodes::connect(&[("http://a", &world)]);
    world
}

/// A room `owner` creates and joins.
async fn open(world: &World, owner: &str) -> RoomId {
    let owner = crate::support::user_actor(owner);
    let room = world
        .service
        .create_room(&owner, "room".into(), None, "sg".into(), None)
        .await
        .unwrap()
        .room_id;
    world.service.join(&owner, &room, None, None).await.unwrap();
    room
}

/// Lets this node's cells of `rooms` go (their rooms then die with another node).
async fn let_go(world: &World, rooms: &[RoomId]) {
    for room in rooms {
        world.runtime().release_room(room);
    }
    let runtime = world.runtime().clone();
    let rooms = rooms.to_vec();
    eventually("the cells stopped", || {
        let (runtime, rooms) = (runtime.clone(), rooms.clone());
        async move { rooms.iter().all(|room| !runtime.is_active(room)) }
    })
    .await;
}

/// More timers that keep failing than a pass takes at once (rooms of a dead node whose leases
/// have not expired: `NotOwner`) hold back no other room's timer; they stay, and fire once
/// their rooms are reachable again.
#[tokio::test]
async fn timers_that_keep_failing_do_not_stall_the_others() {
    const LIMIT: u32 = 4;
    let lease = Arc::new(DeadNode::default());
    let world = clustered(lease.clone()).await;
    let mut rooms = Vec::new();
    for i in 0..7 {
        if i == 6 {
            // The live room's timer is due last, after every failing one.
            world.clock.advance_secs(1);
        }
        // One user on the seat of each room (a user is in one room at a time).
        let speaker = format!("speaker-{i}");
        let room = open(&world, &speaker).await;
        let take = CommandKind::TakeSeat { seat: SeatIndex(2) };
        world.exec(&room, user(&speaker), take).await.unwrap();
        rooms.push(room);
    }
    let live = rooms.pop().unwrap();
    let dead = rooms;
    let_go(&world, &dead).await;
    lease.dead.lock().unwrap().extend(dead.iter().cloned());

    world.clock.advance_secs(30);
    let fired = workers::fire_due_timers(&world.service, &timers(&world), LIMIT).await;
    assert_eq!(
        fired.unwrap(),
        1,
        "the live room's publish timeout fires past the failing ones"
    );
    assert!(world.state(&live).await.seats[2].occupant.is_none());
    let left = Timers::list_due(&*world.store, world.clock.now(), None, 100)
        .await
        .unwrap();
    assert_eq!(left.len(), dead.len(), "the failing timers stay: {left:?}");

    // Their node's leases expire: the next passes fire them, `LIMIT` at a time.
    lease.dead.lock().unwrap().clear();
    let fired = workers::fire_due_timers(&world.service, &timers(&world), LIMIT).await;
    assert_eq!(fired.unwrap(), u64::from(LIMIT));
    let fired = workers::fire_due_timers(&world.service, &timers(&world), LIMIT).await;
    assert_eq!(fired.unwrap(), 2);
    for room in &dead {
        assert!(world.state(room).await.seats[2].occupant.is_none());
    }
}

/// The same for the eviction pass: members of a dead node's rooms, more than a pass takes,
/// hold back no other room's eviction, and are evicted once their rooms are reachable.
#[tokio::test]
async fn evictions_that_keep_failing_do_not_stall_the_others() {
    const LIMIT: u32 = 2;
    let lease = Arc::new(DeadNode::default());
    let world = clustered(lease.clone()).await;
    let mut dead = Vec::new();
    for name in ["u0", "u1", "u2"] {
        dead.push(open(&world, name).await);
    }
    world.clock.advance_secs(1);
    // Bob's heartbeat is the newest: listed after every member of the dead rooms.
    let room = open(&world, "bob").await;
    let_go(&world, &dead).await;
    lease.dead.lock().unwrap().extend(dead.iter().cloned());

    world.clock.advance_secs(100);
    let timeout = std::time::Duration::from_secs(90);
    let evicted = workers::evict_stale_members(&world.service, timeout, LIMIT).await;
    assert_eq!(evicted.unwrap(), 1, "bob is evicted past the failing ones");
    assert!(!world.state(&room).await.members.contains_key(&uid("bob")));

    lease.dead.lock().unwrap().clear();
    let evicted = workers::evict_stale_members(&world.service, timeout, LIMIT).await;
    assert_eq!(evicted.unwrap(), u64::from(LIMIT));
    let evicted = workers::evict_stale_members(&world.service, timeout, LIMIT).await;
    assert_eq!(evicted.unwrap(), 1);
    for room in &dead {
        assert!(world.state(room).await.members.is_empty());
    }
}
