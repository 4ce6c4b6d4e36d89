//! Snapshots: written every K events and on deactivation, and activation replaying the events
//! after the newest one.

use std::time::Duration;

use room_app::CellConfig;
use room_app::ports::SnapshotStore;
use room_domain::{CommandKind, RoomId};

use super::fixtures::{snapshot_version, take_seat};
use crate::support::{World, config, eventually, user};

/// Seven events, one command each: create (1), four joins (2..=5), a seat (6), a leave (7).
async fn seven_events(world: &World) -> RoomId {
    let room = world
        .open_room("r1", "alice", &["bob", "carol", "dave"])
        .await;
    world.exec(&room, user("bob"), take_seat(0)).await.unwrap();
    world
        .exec(&room, user("carol"), CommandKind::Leave)
        .await
        .unwrap();
    room
}

fn snapshot_config() -> CellConfig {
    CellConfig {
        snapshot_every: 5,
        idle_after: Duration::from_secs(5),
        ..config()
    }
}

#[tokio::test(start_paused = true)]
async fn snapshots_are_written_every_k_events_and_on_deactivation() {
    let world = World::builder().config(snapshot_config()).build().await;
    let room = seven_events(&world).await;
    assert_eq!(snapshot_version(&world, &room).await, Some(5));
    let before = world.state(&room).await;
    assert_eq!(before.version, 7);

    let runtime = world.runtime();
    eventually("the idle cell deactivated", || async move {
        runtime.active_rooms() == 0
    })
    .await;
    let snapshot = SnapshotStore::get_latest(&*world.store, &room)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(snapshot.state, before);

    // Re-activation starts from that snapshot and finds nothing after it.
    assert_eq!(world.state(&room).await, before);
    assert_eq!(world.probe.replays().last(), Some(&7));
}

#[tokio::test(start_paused = true)]
async fn activation_replays_the_events_after_the_snapshot() {
    let world = World::builder().config(snapshot_config()).build().await;
    let room = seven_events(&world).await;
    let before = world.state(&room).await;

    // A second node over the same storage.
    let other = World::builder()
        .store(world.store.clone())
        .config(CellConfig {
            node_id: "node-b".into(),
            ..snapshot_config()
        })
        .build()
        .await;
    assert_eq!(other.state(&room).await, before);
    assert_eq!(
        other.probe.replays(),
        vec![5],
        "snapshot 5, then events 6 and 7"
    );
}
