//! A cell's life and its fencing: a commit after another activation fenced, a lost or taken
//! lease stopping the cell, the keeper's renewals, idle deactivation, shutdown, failed
//! activations, and room ids that never activate a cell.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use room_app::ports::{Activation, CellStore, MockCellStore, MockLease};
use room_app::testkit::InMemoryLeases;
use room_app::{CellConfig, Error};
use room_domain::{CommandKind, Rejection};

use super::fixtures::{join, snapshot_version, take_seat};
use crate::support::{World, cid, config, eventually, rid, start_all, uid, user};

#[tokio::test]
async fn a_commit_after_another_activation_is_fenced_and_the_cell_stops() {
    let world = World::new().await;
    let room = world.open_room("r1", "alice", &["bob", "carol"]).await;
    let version = world.state(&room).await.version;
    let probe = &world.probe;
    let calls = probe.commit_calls();
    probe.close_gate();
    let held = start_all(vec![world.submit(
        &room,
        "seat-bob",
        user("bob"),
        take_seat(0),
    )])
    .await;
    eventually("the commit is held", || async move {
        probe.commit_calls() == calls + 1
    })
    .await;
    let queued = start_all(vec![world.submit(
        &room,
        "seat-carol",
        user("carol"),
        take_seat(1),
    )])
    .await;

    // Another node takes the room over while this one is in its commit.
    CellStore::activate(&*world.store, &room, "node-b")
        .await
        .unwrap();
    probe.open_gate();
    for answer in held.join().await.into_iter().chain(queued.join().await) {
        assert!(matches!(answer, Err(Error::NotOwner(_))), "{answer:?}");
    }
    let runtime = world.runtime();
    eventually("the fenced cell stopped", || async move {
        runtime.active_rooms() == 0
    })
    .await;
    assert_eq!(
        world.log(&room).await.len() as u64,
        version,
        "nothing written"
    );

    // The next command activates a fresh cell, under a newer epoch, that commits.
    let reply = world
        .exec_as(&room, cid("seat-bob"), user("bob"), take_seat(0))
        .await
        .unwrap();
    assert_eq!(reply.version, version + 1);
    let state = world.state(&room).await;
    let holder = state.seats[0].occupant.as_ref().map(|o| o.user.clone());
    assert_eq!(holder, Some(uid("bob")));
    assert!(state.seats[1].occupant.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_right_after_a_fenced_commit_activates_a_fresh_cell() {
    // The caller and the cell run on different threads: the retry must not find the fenced
    // cell still registered. Several rounds, since a race may go either way once.
    for round in 0..20 {
        let world = World::new().await;
        let room = world.open_room("r1", "alice", &["bob"]).await;
        CellStore::activate(&*world.store, &room, "node-b")
            .await
            .unwrap();
        let answer = world
            .exec_as(&room, cid("seat-bob"), user("bob"), take_seat(0))
            .await;
        assert!(matches!(answer, Err(Error::NotOwner(_))), "{answer:?}");
        let retry = world
            .exec_as(&room, cid("seat-bob"), user("bob"), take_seat(0))
            .await;
        assert!(retry.is_ok(), "round {round}: {retry:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_lost_lease_stops_the_cell() {
    let acquired = Arc::new(AtomicUsize::new(0));
    let counted = acquired.clone();
    let mut lease = MockLease::new();
    lease.expect_acquire().returning(move |_| {
        counted.fetch_add(1, Ordering::SeqCst);
        Ok(true)
    });
    lease
        .expect_renew_all()
        .returning(|rooms| Ok(vec![false; rooms.len()]));
    lease.expect_release().returning(|_| Ok(()));
    let config = CellConfig {
        lease_renew_every: Duration::from_secs(1),
        ..config()
    };
    let world = World::builder()
        .config(config)
        .lease(Arc::new(lease))
        .build()
        .await;
    let room = world.open_room("r1", "alice", &["bob"]).await;
    assert_eq!(acquired.load(Ordering::SeqCst), 1);

    let runtime = world.runtime();
    eventually(
        "the cell stopped",
        || async move { runtime.active_rooms() == 0 },
    )
    .await;
    // The next command claims the room again.
    world.exec(&room, user("bob"), take_seat(0)).await.unwrap();
    assert_eq!(acquired.load(Ordering::SeqCst), 2);
}

/// Two nodes over one store and one lease table.
async fn two_nodes(leases: &InMemoryLeases) -> (World, World) {
    let renew = CellConfig {
        lease_renew_every: Duration::from_secs(1),
        ..config()
    };
    let a = World::builder()
        .config(CellConfig {
            node_id: "node-a".into(),
            ..renew.clone()
        })
        .lease(leases.node("node-a", "http://a"))
        .build()
        .await;
    let b = World::builder()
        .config(CellConfig {
            node_id: "node-b".into(),
            ..renew
        })
        .store(a.store.clone())
        .lease(leases.node("node-b", "http://b"))
        .build()
        .await;
    (a, b)
}

#[tokio::test(start_paused = true)]
async fn the_keeper_renews_every_active_room_in_one_call_per_tick() {
    let calls = Arc::new(std::sync::Mutex::new(Vec::<usize>::new()));
    let seen = calls.clone();
    let mut lease = MockLease::new();
    lease.expect_acquire().returning(|_| Ok(true));
    lease.expect_renew_all().returning(move |rooms| {
        seen.lock().unwrap().push(rooms.len());
        Ok(vec![true; rooms.len()])
    });
    lease.expect_release().returning(|_| Ok(()));
    let world = World::builder()
        .config(CellConfig {
            lease_renew_every: Duration::from_secs(1),
            ..config()
        })
        .lease(Arc::new(lease))
        .build()
        .await;
    for room in ["r1", "r2", "r3"] {
        world.open_room(room, "alice", &[]).await;
    }
    let probe = calls.clone();
    eventually("a tick renewed all three rooms", || {
        let probe = probe.clone();
        async move { probe.lock().unwrap().contains(&3) }
    })
    .await;
    // Never a call per room: each tick is one call, however many rooms.
    assert!(calls.lock().unwrap().iter().all(|&n| n <= 3));
    assert_eq!(world.runtime().active_rooms(), 3);
    let tick = world.runtime().renew_leases().await;
    assert_eq!((tick.renewed, tick.lost), (3, 0));
}

#[tokio::test(start_paused = true)]
async fn a_node_whose_lease_another_node_took_stops_its_cell_and_commits_nothing() {
    let leases = InMemoryLeases::new(Duration::from_secs(10));
    let (a, b) = two_nodes(&leases).await;
    let room = a.open_room("r1", "alice", &["bob"]).await;
    assert!(a.runtime().is_active(&room));

    // While node a holds the room, node b cannot activate it.
    let refused = b.exec(&room, user("bob"), take_seat(0)).await;
    assert!(matches!(refused, Err(Error::NotOwner(_))), "{refused:?}");
    assert!(!b.runtime().is_active(&room));

    // Node a's lease is lost (its keeper could not reach the backend, say) and node b takes
    // the room: a's keeper finds out on its next tick and stops the cell.
    leases
        .node("node-a", "http://a")
        .release(&room)
        .await
        .unwrap();
    b.exec(&room, user("bob"), take_seat(0)).await.unwrap();
    let tick = a.runtime().renew_leases().await;
    assert_eq!(tick.lost, 1);
    let (runtime, watched) = (a.runtime().clone(), room.clone());
    eventually("node a's cell stopped", || {
        let (runtime, watched) = (runtime.clone(), watched.clone());
        async move { !runtime.is_active(&watched) }
    })
    .await;
    let holder = leases
        .node("node-a", "http://a")
        .get_holder(&room)
        .await
        .unwrap();
    assert_eq!(holder.map(|h| h.node_id).as_deref(), Some("node-b"));
}

#[tokio::test(start_paused = true)]
async fn an_idle_cell_deactivates_although_its_lease_is_renewed_meanwhile() {
    let config = CellConfig {
        idle_after: Duration::from_secs(10),
        lease_renew_every: Duration::from_secs(1),
        ..config()
    };
    let world = World::builder().config(config).build().await;
    world.open_room("r1", "alice", &[]).await;
    assert_eq!(world.runtime().active_rooms(), 1);
    let runtime = world.runtime();
    eventually("the idle cell deactivated", || async move {
        runtime.active_rooms() == 0
    })
    .await;
}

#[tokio::test]
async fn shutdown_answers_queued_commands_and_refuses_new_ones() {
    let world = World::new().await;
    let room = world.open_room("r1", "alice", &["bob"]).await;
    let probe = &world.probe;
    let calls = probe.commit_calls();
    probe.close_gate();
    let held = start_all(vec![world.submit(&room, "c1", user("bob"), take_seat(0))]).await;
    eventually("the commit is held", || async move {
        probe.commit_calls() == calls + 1
    })
    .await;
    let queued = start_all(vec![world.submit(&room, "c2", user("carol"), join())]).await;

    let runtime = world.runtime().clone();
    let shutdown = tokio::spawn(async move { runtime.shutdown().await });
    let runtime = world.runtime();
    eventually("shutdown began", || async move {
        matches!(
            runtime.query(&rid("r2"), |s| s.version).await,
            Err(Error::Cancelled)
        )
    })
    .await;
    probe.open_gate();
    held.join().await[0].as_ref().unwrap();
    queued.join().await[0].as_ref().unwrap();
    shutdown.await.unwrap();
    let version = world.log(&room).await.len() as u64;
    assert_eq!(snapshot_version(&world, &room).await, Some(version));
}

#[tokio::test]
async fn a_failed_activation_answers_retryably_and_the_next_command_tries_again() {
    let attempts = Arc::new(AtomicUsize::new(0));
    let counted = attempts.clone();
    let mut store = MockCellStore::new();
    store.expect_activate().returning(move |room, _| {
        match counted.fetch_add(1, Ordering::SeqCst) {
            0 => Err(Error::Unavailable("database down".into())),
            1 => Err(Error::Corrupt(format!("{room}: unreadable row"))),
            _ => Ok(Activation {
                epoch: 1,
                version: 0,
            }),
        }
    });
    store
        .expect_list_events()
        .returning(|_, _, _| Ok(Vec::new()));
    store.expect_get_command().returning(|_, _| Ok(None));
    store.expect_commit().times(1).returning(|_| Ok(()));
    let world = World::builder().cell_store(Arc::new(store)).build().await;
    let room = rid("r1");
    let create = || CommandKind::CreateRoom {
        name: "night talk".into(),
        seat_count: None,
        region: "sg".into(),
    };

    for _ in 0..2 {
        let answer = world
            .exec_as(&room, cid("create"), user("alice"), create())
            .await;
        // Even a non-retryable cause is answered as retryable: another activation may work.
        assert!(matches!(&answer, Err(Error::Unavailable(_))), "{answer:?}");
    }
    let reply = world
        .exec_as(&room, cid("create"), user("alice"), create())
        .await
        .unwrap();
    assert_eq!(reply.version, 1);
    assert_eq!(attempts.load(Ordering::SeqCst), 3);
}

/// A made-up room id is refused before it reaches a cell: activating one would write an epoch
/// row for any id a client sends.
#[tokio::test]
async fn unknown_room_ids_never_activate_a_cell() {
    let world = World::new().await;
    let service = &world.service;
    let ghost = rid("ghost");
    let stranger = room_domain::UserActor {
        user_id: uid("stranger"),
        vip_level: 0,
        platform_admin: false,
    };
    let refused = |result: room_app::Result<_>| {
        matches!(result, Err(Error::Rejected(Rejection::RoomNotFound)))
    };
    assert!(refused(service.get_room(&ghost).await.map(drop)));
    assert!(refused(
        service.join(&stranger, &ghost, None, None).await.map(drop)
    ));
    assert!(refused(service.heartbeat(&stranger, &ghost).await));
    assert!(refused(
        service
            .command(&stranger, &ghost, take_seat(0), None)
            .await
            .map(drop)
    ));
    assert!(!world.service.runtime().is_active(&ghost));
    let activation = CellStore::activate(&*world.store, &ghost, "probe")
        .await
        .expect("activate");
    assert_eq!(activation.epoch, 1, "no earlier activation touched storage");
}

/// A renewal that fails once (a Redis stall of a second) stops no cell: every lease still
/// holds for two thirds of its TTL, and the next renewal goes through. Renewals that keep
/// failing stop the cells once their leases may have expired.
#[tokio::test(start_paused = true)]
async fn a_failed_renewal_stops_only_the_cells_whose_lease_may_have_expired() {
    let failing = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let fails = failing.clone();
    let mut lease = MockLease::new();
    lease.expect_acquire().returning(|_| Ok(true));
    lease.expect_renew_all().returning(move |rooms| {
        if fails.load(Ordering::SeqCst) {
            Err(Error::unavailable("the lease backend stalled"))
        } else {
            Ok(vec![true; rooms.len()])
        }
    });
    lease.expect_release().returning(|_| Ok(()));
    let world = World::builder()
        .config(CellConfig {
            lease_renew_every: Duration::from_secs(1),
            ..config()
        })
        .lease(Arc::new(lease))
        .build()
        .await;
    for room in ["r1", "r2", "r3"] {
        world.open_room(room, "alice", &[]).await;
    }

    failing.store(true, Ordering::SeqCst);
    let tick = world.runtime().renew_leases().await;
    assert!(tick.failed);
    assert_eq!(tick.lost, 0, "the leases still hold: {tick:?}");
    assert_eq!(world.runtime().active_rooms(), 3);
    failing.store(false, Ordering::SeqCst);
    let tick = world.runtime().renew_leases().await;
    assert_eq!((tick.renewed, tick.lost, tick.failed), (3, 0, false));
    // A command still runs on the cells kept.
    world.join(&rid("r1"), "bob").await;

    // The backend stays away: past the TTL (3 s) the leases may have expired.
    failing.store(true, Ordering::SeqCst);
    tokio::time::advance(Duration::from_secs(3)).await;
    let runtime = world.runtime().clone();
    eventually("every cell stopped", || {
        let runtime = runtime.clone();
        async move {
            runtime.renew_leases().await;
            runtime.active_rooms() == 0
        }
    })
    .await;
}

/// A commit that hangs (a half-open database connection) does not wedge the room while the
/// keeper renews its lease: past its deadline (half the lease TTL) it is answered as of
/// unknown outcome, the cell stops and gives the lease up, and another node takes the room
/// at once, with an epoch of its own that fences the hung commit should it land.
#[tokio::test(start_paused = true)]
async fn a_commit_past_its_deadline_lets_the_room_go() {
    let leases = InMemoryLeases::new(Duration::from_secs(3));
    let (a, b) = two_nodes(&leases).await;
    let room = a.open_room("r1", "alice", &["bob"]).await;
    let deadline = CellConfig {
        lease_renew_every: Duration::from_secs(1),
        ..config()
    }
    .commit_deadline();
    assert!(deadline < Duration::from_secs(3), "below the lease TTL");

    a.probe.close_gate();
    let started = tokio::time::Instant::now();
    let answer = a.exec(&room, user("bob"), take_seat(0)).await;
    assert!(
        matches!(&answer, Err(Error::Unavailable(_))),
        "unknown outcome: {answer:?}"
    );
    assert!(started.elapsed() >= deadline);
    let runtime = a.runtime().clone();
    let watched = room.clone();
    eventually("node a's cell stopped", || {
        let (runtime, watched) = (runtime.clone(), watched.clone());
        async move { !runtime.is_active(&watched) }
    })
    .await;
    let holder = leases
        .node("node-b", "http://b")
        .get_holder(&room)
        .await
        .unwrap();
    assert!(holder.is_none(), "the lease was given up: {holder:?}");

    // Node b takes the room now, not a lease TTL later.
    b.exec(&room, user("bob"), take_seat(0)).await.unwrap();
    assert!(b.runtime().is_active(&room));
    a.probe.open_gate();
}
