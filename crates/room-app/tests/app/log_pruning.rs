//! The room log pruned behind snapshots ([`workers::prune_log`]): a room still loads the same,
//! a recent command still repeats from the log, and a reconnecting watcher whose missed events
//! are gone is told to read the room again instead of being sent a replay with a hole.

use std::time::Duration;

use room_app::ports::{CellStore, CellStoreRef, ClockRef, SnapshotStore};
use room_app::{CellConfig, workers};
use room_domain::{CommandKind, RoomId, SeatIndex, Timestamp};

use crate::support::{World, cid, config, eventually, user};

fn idle_config(node: &str) -> CellConfig {
    CellConfig {
        node_id: node.into(),
        snapshot_every: 5,
        idle_after: Duration::from_secs(5),
        ..config()
    }
}

/// Seven events, one command each: create (1), four joins (2..=5), a seat (6), a leave (7).
async fn seven_events(world: &World) -> RoomId {
    let room = world
        .open_room("r1", "alice", &["bob", "carol", "dave"])
        .await;
    world
        .exec(
            &room,
            user("bob"),
            CommandKind::TakeSeat { seat: SeatIndex(0) },
        )
        .await
        .unwrap();
    world
        .exec(&room, user("carol"), CommandKind::Leave)
        .await
        .unwrap();
    room
}

async fn deactivated(world: &World) {
    let runtime = world.runtime();
    eventually("the idle cell deactivated", || async move {
        runtime.active_rooms() == 0
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_replay_of_events_the_log_no_longer_holds_is_a_resync() {
    let world = World::builder().config(idle_config("node-a")).build().await;
    let room = seven_events(&world).await;
    let runtime = world.runtime();
    let whole = runtime
        .missed_events(&room, 0, 7)
        .await
        .unwrap()
        .expect("a whole log replays");
    assert!(!whole.is_empty(), "the joins are displayed");
    assert!(
        whole
            .windows(2)
            .all(|w| w[0].envelope.seq < w[1].envelope.seq),
        "in seq order"
    );

    // The snapshot at 5 lets events 1 to 5 go.
    let snapshot = SnapshotStore::get_latest(&*world.store, &room)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(snapshot.state.version, 5);
    let pruned = CellStore::prune_log(&*world.store, Timestamp(i64::MAX), 1_000)
        .await
        .unwrap();
    assert_eq!(pruned, 5 + 5, "five events and their five commands");

    for after in [0, 2, 4] {
        assert_eq!(
            runtime.missed_events(&room, after, 7).await.unwrap(),
            None,
            "events after {after} are partly gone: resync"
        );
    }
    assert_eq!(
        runtime.missed_events(&room, 2, 5).await.unwrap(),
        None,
        "events 3 to 5 are all gone: resync"
    );
    let tail = runtime.missed_events(&room, 5, 7).await.unwrap();
    let expected: Vec<_> = whole
        .iter()
        .filter(|m| m.envelope.seq > 5)
        .cloned()
        .collect();
    assert_eq!(
        tail.as_deref(),
        Some(&expected[..]),
        "events after the snapshot replay as before"
    );
    assert_eq!(
        tail.unwrap()
            .iter()
            .map(|m| m.envelope.seq)
            .collect::<Vec<_>>(),
        vec![6, 7],
        "the seat and the leave"
    );
    assert_eq!(
        runtime.missed_events(&room, 7, 7).await.unwrap(),
        Some(Vec::new()),
        "a watcher that missed nothing is sent nothing"
    );

    // Once the idle room wrote its snapshot at 7, the rest goes, and a replay from before it
    // is a resync too.
    deactivated(&world).await;
    CellStore::prune_log(&*world.store, Timestamp(i64::MAX), 1_000)
        .await
        .unwrap();
    assert_eq!(world.log(&room).await, Vec::new());
    assert_eq!(runtime.missed_events(&room, 6, 7).await.unwrap(), None);
}

#[tokio::test(start_paused = true)]
async fn the_pass_prunes_behind_the_snapshot_and_the_cut_off_and_the_room_loads_the_same() {
    let world = World::builder().config(idle_config("node-a")).build().await;
    let room = seven_events(&world).await;
    // Two hours later, a command the retention keeps.
    world.clock.advance_secs(2 * 3_600);
    let recent = CommandKind::TakeSeat { seat: SeatIndex(1) };
    let reply = world
        .exec_as(&room, cid("recent"), user("dave"), recent.clone())
        .await
        .unwrap();
    assert_eq!(reply.version, 8);
    let before = world.state(&room).await;
    deactivated(&world).await;
    assert_eq!(
        SnapshotStore::get_latest(&*world.store, &room)
            .await
            .unwrap()
            .map(|s| s.state.version),
        Some(8),
        "the idle room wrote its snapshot"
    );

    let cells: CellStoreRef = world.store.clone();
    let clock: ClockRef = world.clock.clone();
    let hour = Duration::from_secs(3_600);
    assert_eq!(
        workers::prune_log(&cells, &clock, hour, 2, 2)
            .await
            .unwrap(),
        4,
        "at most two calls of two rows in one pass"
    );
    assert_eq!(
        workers::prune_log(&cells, &clock, hour, 3, 100)
            .await
            .unwrap(),
        (7 + 7) - 4,
        "the next pass finishes the seven events and commands older than an hour"
    );
    assert_eq!(
        workers::prune_log(&cells, &clock, hour, 3, 100)
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        world
            .log(&room)
            .await
            .iter()
            .map(|e| e.seq)
            .collect::<Vec<_>>(),
        vec![8],
        "the recent command's event stays"
    );

    // Another node loads the room from the snapshot, and answers the repeat of the recent
    // command from the log, as the first time.
    let other = World::builder()
        .store(world.store.clone())
        .config(idle_config("node-b"))
        .build()
        .await;
    assert_eq!(other.state(&room).await, before);
    let repeat = other
        .exec_as(&room, cid("recent"), user("dave"), recent)
        .await
        .unwrap();
    assert_eq!(repeat, reply, "the repeat is answered as the first time");
    assert_eq!(other.state(&room).await, before, "and changes nothing");
}
