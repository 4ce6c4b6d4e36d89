//! What the robot room tests share: the robot pool, a valid configuration, a node's world
//! and orchestrator, robot rooms created and changed, and what their state and log show of
//! the robots.

use std::time::Duration;

use room_app::CellConfig;
use room_app::ports::{GiftShare, LeaseRef, RobotProfile, RobotRoomConfig, RobotRooms};
use room_app::robots::{Orchestrator, OrchestratorConfig, OrchestratorDeps};
use room_app::testkit::InMemoryLeases;
use room_domain::{CommandKind, Event, GiftId, RoomId, RoomState, UserId};
use tokio_util::sync::CancellationToken;

use crate::support::{T0, World, config, rid, uid, user};

/// How often a runtime plays a step in these tests.
pub(super) const STEP: Duration = Duration::from_secs(2);

/// A stay so long that no robot leaves for turnover's sake (the chance per step is about
/// one in a billion).
pub(super) const LONG_STAY: Duration = Duration::from_secs(u32::MAX as u64);

pub(super) const LEASE_TTL: Duration = Duration::from_secs(10);

/// The robot pool `robot-1` ... `robot-{n}`.
pub(super) fn pool(n: usize) -> Vec<UserId> {
    (1..=n).map(|i| uid(&format!("robot-{i}"))).collect()
}

pub(super) fn gift_id(name: &str) -> GiftId {
    GiftId::new(name).expect("valid gift id")
}

pub(super) fn share(name: &str, weight: u32) -> GiftShare {
    GiftShare {
        gift_id: gift_id(name),
        weight,
    }
}

/// A valid robot room of 8 seats: five robots of its own (a robot is in one pool), three of
/// them in the room at every hour, two on seats, 30 gifts a minute (one a step), roses and
/// (three times as often) boosters.
pub(super) fn robot_config(room: &RoomId) -> RobotRoomConfig {
    let config = RobotRoomConfig {
        room_id: room.clone(),
        profile: RobotProfile {
            name: "robots".into(),
            notice: String::new(),
            cover_url: None,
        },
        seat_count: 8,
        robots: (1..=5).map(|i| uid(&format!("robot-{room}-{i}"))).collect(),
        audience: vec![3; 24],
        seats: 2,
        gift_rate_per_minute: 30,
        gift_mix: vec![share("rose", 1), share("booster", 3)],
        enabled: true,
        version: 1,
        created_at: T0,
        updated_at: T0,
    };
    config.validate("robot-").expect("a valid robot room");
    config
}

pub(super) fn rooms(n: usize) -> Vec<RoomId> {
    (0..n).map(|i| rid(&format!("room-{i}"))).collect()
}

/// A world as node `node-a`, over `lease`, its keeper renewing every `renew_every`.
pub(super) async fn node_a(lease: LeaseRef, renew_every: Duration) -> World {
    World::builder()
        .config(CellConfig {
            node_id: "node-a".into(),
            lease_renew_every: renew_every,
            ..config()
        })
        .lease(lease)
        .build()
        .await
}

/// An orchestrator of `world`'s node `node_id` (its cell config's) over `lease`.
pub(super) fn orchestrator(world: &World, lease: LeaseRef, node_id: &str) -> Orchestrator {
    orchestrator_until(world, lease, node_id, CancellationToken::new())
}

/// [`orchestrator`], whose runtimes stop when `cancel` is cancelled.
pub(super) fn orchestrator_until(
    world: &World,
    lease: LeaseRef,
    node_id: &str,
    cancel: CancellationToken,
) -> Orchestrator {
    Orchestrator::new(
        OrchestratorDeps {
            runtime: world.runtime().clone(),
            robot_rooms: world.store.clone(),
            catalog: world.store.clone(),
            lease,
            clock: world.clock.clone(),
            ids: world.ids.clone(),
        },
        OrchestratorConfig {
            node_id: node_id.into(),
            step_every: STEP,
            robot_stay: LONG_STAY,
            ..OrchestratorConfig::default()
        },
        cancel,
    )
}

/// Creates room `name` (owned by robot-1, as a user) of 8 seats and stores its robot
/// configuration ([`robot_config`], `enabled` as given).
pub(super) async fn robot_room(world: &World, name: &str, enabled: bool) -> RoomId {
    let room = rid(name);
    world
        .exec(
            &room,
            user("robot-1"),
            CommandKind::CreateRoom {
                name: format!("robots {name}"),
                seat_count: Some(8),
                region: "sg".into(),
            },
        )
        .await
        .expect("room created");
    let config = RobotRoomConfig {
        enabled,
        ..robot_config(&room)
    };
    RobotRooms::create(&*world.store, &config)
        .await
        .expect("configuration stored");
    room
}

/// The robots in the room, as robots.
pub(super) fn robots_in(state: &RoomState) -> Vec<UserId> {
    state
        .members
        .iter()
        .filter(|(_, member)| member.robot)
        .map(|(user, _)| user.clone())
        .collect()
}

pub(super) fn robots_seated(state: &RoomState) -> usize {
    let robots = robots_in(state);
    state
        .seats
        .iter()
        .filter(|seat| {
            seat.occupant
                .as_ref()
                .is_some_and(|o| robots.contains(&o.user))
        })
        .count()
}

pub(super) fn robot_leaves(world_log: &[room_app::ports::StoredEvent]) -> Vec<UserId> {
    world_log
        .iter()
        .filter_map(|stored| match &stored.event {
            Event::RoomUserLeft {
                user, robot: true, ..
            } => Some(user.clone()),
            _ => None,
        })
        .collect()
}

/// Stores `change` of the room's configuration as its next version.
pub(super) async fn update_config(
    world: &World,
    room: &RoomId,
    change: impl FnOnce(&mut RobotRoomConfig),
) {
    let mut config = RobotRooms::get(&*world.store, room)
        .await
        .unwrap()
        .expect("a configuration");
    let expected = config.version;
    change(&mut config);
    config.version = expected + 1;
    RobotRooms::update(&*world.store, &config, expected)
        .await
        .expect("configuration updated");
}

pub(super) async fn holder(leases: &InMemoryLeases, room: &RoomId) -> Option<String> {
    leases
        .node("node-observer", "http://observer")
        .get_holder(room)
        .await
        .unwrap()
        .map(|holder| holder.node_id)
}
