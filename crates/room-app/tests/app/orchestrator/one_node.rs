//! The [`Orchestrator`] on one node: runtimes started, changed, stopped and their robots gone;
//! a disabled room never started; a lost lease or a failed renewal stopping the runtime; a
//! stopped orchestrator out of the group; a closed room let go for good.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use room_app::ports::{Lease, LeaseHolder, LeaseRef, RobotRooms};
use room_app::robots::ORCHESTRATOR_GROUP;
use room_app::testkit::InMemoryLeases;
use room_app::{Error, LocalLease, Result};
use room_domain::{CommandKind, GiftSent, RoomId, SeatIndex};
use tokio_util::sync::CancellationToken;

use super::fixtures::{
    LEASE_TTL, STEP, node_a, orchestrator, orchestrator_until, robot_config, robot_leaves,
    robot_room, robots_in, robots_seated, update_config,
};
use crate::support::{World, eventually, gifts_in, uid, user};

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
