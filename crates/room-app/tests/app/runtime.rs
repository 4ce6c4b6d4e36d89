//! The Room Cell runtime: group commit, idempotency by command id, overload, fencing by epoch
//! and lease, snapshots, and what a rejected command costs.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use room_app::ports::{Activation, CellStore, MockCellStore, MockLease, SnapshotStore};
use room_app::testkit::InMemoryLeases;
use room_app::{CellConfig, Error};
use room_domain::{CommandKind, Event, MicChange, Rejection, RoomId, SeatIndex};

use crate::support::{Fault, Started, World, cid, config, eventually, rid, start_all, uid, user};

fn join() -> CommandKind {
    CommandKind::Join {
        password_verified: false,
        verified_lock: None,
    }
}

fn take_seat(seat: u8) -> CommandKind {
    CommandKind::TakeSeat {
        seat: SeatIndex(seat),
    }
}

/// Holds one command in its commit, queues `users.len()` joins behind it, lets everything
/// through, and returns the commands per commit that followed.
async fn joins_behind_a_held_commit(world: &World, room: &RoomId, users: usize) -> Vec<usize> {
    let probe = &world.probe;
    let calls = probe.commit_calls();
    let done = probe.committed_batches().len();
    probe.close_gate();
    let held = start_all(vec![world.submit(room, "held", user("held"), join())]).await;
    eventually("the first commit is held", || async move {
        probe.commit_calls() == calls + 1
    })
    .await;
    let queued = start_all(
        (0..users)
            .map(|i| world.submit(room, &format!("join-{i}"), user(&format!("u{i}")), join()))
            .collect(),
    )
    .await;
    probe.open_gate();
    for reply in held.join().await.into_iter().chain(queued.join().await) {
        assert_eq!(reply.expect("joined").events.len(), 1);
    }
    probe.committed_batches()[done..].to_vec()
}

#[tokio::test]
async fn concurrent_commands_to_one_room_share_commits() {
    let world = World::new().await;
    let room = world.open_room("r1", "alice", &[]).await;
    let version = world.state(&room).await.version;

    let batches = joins_behind_a_held_commit(&world, &room, 49).await;
    assert_eq!(batches.iter().sum::<usize>(), 50, "{batches:?}");
    assert!(
        batches.len() < 50,
        "no command shared a commit: {batches:?}"
    );
    assert!(batches.iter().any(|&n| n > 1), "{batches:?}");
    let state = world.state(&room).await;
    assert_eq!(state.members.len(), 51);
    assert_eq!(state.version, version + 50);
    assert_eq!(world.log(&room).await.len() as u64, state.version);
}

#[tokio::test]
async fn max_batch_one_commits_every_command_alone() {
    let config = CellConfig {
        max_batch: 1,
        ..config()
    };
    let world = World::builder().config(config).build().await;
    let room = world.open_room("r1", "alice", &[]).await;

    let batches = joins_behind_a_held_commit(&world, &room, 9).await;
    assert_eq!(batches, vec![1; 10]);
}

#[tokio::test]
async fn repeats_of_one_command_in_one_batch_run_once() {
    let world = World::new().await;
    let room = world.open_room("r1", "alice", &["bob"]).await;
    let probe = &world.probe;
    let calls = probe.commit_calls();
    probe.close_gate();
    let held = start_all(vec![world.submit(&room, "held", user("carol"), join())]).await;
    eventually("the first commit is held", || async move {
        probe.commit_calls() == calls + 1
    })
    .await;
    let repeats = start_all(
        (0..3)
            .map(|_| world.submit(&room, "seat-bob", user("bob"), take_seat(0)))
            .collect(),
    )
    .await;
    probe.open_gate();
    held.join().await[0].as_ref().unwrap();
    let replies: Vec<_> = repeats
        .join()
        .await
        .into_iter()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(replies[0].events.len(), 1);
    assert!(replies.iter().all(|r| *r == replies[0]), "{replies:#?}");
    let ups = world
        .log(&room)
        .await
        .iter()
        .filter(|e| {
            matches!(
                &e.event,
                Event::RoomMicChanged {
                    change: MicChange::Up { .. },
                    ..
                }
            )
        })
        .count();
    assert_eq!(ups, 1);
}

#[tokio::test(start_paused = true)]
async fn a_repeated_command_id_gets_the_first_reply_also_after_reactivation() {
    let config = CellConfig {
        idle_after: Duration::from_secs(5),
        ..config()
    };
    let world = World::builder().config(config).build().await;
    let room = world.open_room("r1", "alice", &["carol", "dave"]).await;
    let kick = CommandKind::Kick {
        user: uid("carol"),
        ban_seconds: None,
    };
    // Each of these would now be a no-op (join), a rejection (kick) or a second change (leave).
    let commands = [
        ("join-bob", user("bob"), join()),
        ("kick-carol", user("alice"), kick),
        ("leave-dave", user("dave"), CommandKind::Leave),
    ];
    let mut first = Vec::new();
    for (id, actor, kind) in commands.clone() {
        let reply = world.exec_as(&room, cid(id), actor, kind).await.unwrap();
        assert!(!reply.events.is_empty(), "{id}");
        first.push(reply);
    }
    world.join(&room, "dave").await;
    let version = world.state(&room).await.version;

    for ((id, actor, kind), first) in commands.clone().into_iter().zip(&first) {
        let again = world.exec_as(&room, cid(id), actor, kind).await;
        assert_eq!(again.unwrap(), *first, "{id}, same activation");
    }

    let runtime = world.runtime();
    eventually("the idle cell deactivated", || async move {
        runtime.active_rooms() == 0
    })
    .await;
    for ((id, actor, kind), first) in commands.into_iter().zip(&first) {
        let again = world.exec_as(&room, cid(id), actor, kind).await;
        assert_eq!(again.unwrap(), *first, "{id}, after re-activation");
    }
    let state = world.state(&room).await;
    assert_eq!(state.version, version, "a repeat changes nothing");
    assert!(state.members.contains_key(&uid("dave")));
    assert_eq!(world.log(&room).await.len() as u64, version);
}

#[tokio::test]
async fn a_full_mailbox_answers_overloaded_at_once() {
    let config = CellConfig {
        mailbox: 1,
        ..config()
    };
    let world = World::builder().config(config).build().await;
    let room = world.open_room("r1", "alice", &["bob", "carol"]).await;
    let probe = &world.probe;
    let calls = probe.commit_calls();
    probe.close_gate();
    let chat_off = CommandKind::SetChatEnabled { enabled: false };
    let held = start_all(vec![world.submit(&room, "c1", user("alice"), chat_off)]).await;
    eventually("the first commit is held", || async move {
        probe.commit_calls() == calls + 1
    })
    .await;

    let queued = start_all(vec![world.submit(&room, "c2", user("bob"), take_seat(0))]).await;
    assert!(queued.ready(0).is_none(), "the mailbox has room for one");
    let refused = start_all(vec![world.submit(&room, "c3", user("carol"), take_seat(1))]).await;
    let answer = refused.ready(0).expect("answered without waiting");
    assert!(matches!(answer, Err(Error::Overloaded(_))), "{answer:?}");
    assert!(answer.as_ref().unwrap_err().is_retryable());

    probe.open_gate();
    held.join().await[0].as_ref().unwrap();
    queued.join().await[0].as_ref().unwrap();
    // Drained, the room takes the refused command.
    world
        .exec_as(&room, cid("c3"), user("carol"), take_seat(1))
        .await
        .unwrap();
    let state = world.state(&room).await;
    assert!(!state.settings.chat_enabled);
    let holders: Vec<_> = state.seats[..2]
        .iter()
        .map(|seat| seat.occupant.as_ref().map(|o| o.user.clone()))
        .collect();
    assert_eq!(holders, [Some(uid("bob")), Some(uid("carol"))]);
}

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

async fn snapshot_version(world: &World, room: &RoomId) -> Option<u64> {
    SnapshotStore::get_latest(&*world.store, room)
        .await
        .unwrap()
        .map(|snapshot| snapshot.state.version)
}

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

#[tokio::test]
async fn a_rejected_command_writes_nothing() {
    let world = World::new().await;
    let room = world.open_room("r1", "alice", &["bob"]).await;
    world.exec(&room, user("bob"), take_seat(0)).await.unwrap();
    let version = world.state(&room).await.version;
    let commits = world.probe.commit_calls();

    let refused = [
        (user("carol"), take_seat(1), "NotAMember"),
        (user("alice"), take_seat(0), "SeatOccupied"),
        (
            user("bob"),
            CommandKind::Kick {
                user: uid("alice"),
                ban_seconds: None,
            },
            "Forbidden",
        ),
    ];
    for (actor, kind, name) in refused {
        let answer = world.exec(&room, actor, kind).await;
        assert!(
            matches!(&answer, Err(Error::Rejected(r)) if format!("{r:?}").starts_with(name)),
            "{answer:?}"
        );
    }
    // A no-op is answered without a write too.
    let noop = world.exec(&room, user("bob"), join()).await.unwrap();
    assert!(noop.events.is_empty());
    assert_eq!(noop.version, version);

    assert_eq!(world.probe.commit_calls(), commits);
    assert_eq!(world.state(&room).await.version, version);
    assert_eq!(world.log(&room).await.len() as u64, version);
}

#[tokio::test]
async fn a_rejected_command_in_a_batch_leaves_the_others_to_commit() {
    let world = World::new().await;
    let room = world.open_room("r1", "alice", &["bob", "carol"]).await;
    let probe = &world.probe;
    let calls = probe.commit_calls();
    probe.close_gate();
    let held = start_all(vec![world.submit(&room, "held", user("dave"), join())]).await;
    eventually("the first commit is held", || async move {
        probe.commit_calls() == calls + 1
    })
    .await;
    let contenders = start_all(vec![
        world.submit(&room, "seat-bob", user("bob"), take_seat(3)),
        world.submit(&room, "seat-carol", user("carol"), take_seat(3)),
    ])
    .await;
    probe.open_gate();
    held.join().await[0].as_ref().unwrap();
    let answers = contenders.join().await;
    assert_eq!(answers[0].as_ref().unwrap().events.len(), 1);
    assert!(
        matches!(
            &answers[1],
            Err(Error::Rejected(Rejection::SeatOccupied {
                seat: SeatIndex(3)
            }))
        ),
        "{:?}",
        answers[1]
    );
    assert_eq!(probe.committed_batches().last(), Some(&1));
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
async fn a_failed_commit_reloads_the_room_and_a_retry_applies_the_command() {
    let world = World::new().await;
    let room = world.open_room("r1", "alice", &["bob"]).await;
    let version = world.state(&room).await.version;

    world.probe.fail_next_commit(Fault::UnavailableBefore);
    let answer = world
        .exec_as(&room, cid("seat-bob"), user("bob"), take_seat(0))
        .await;
    assert!(matches!(answer, Err(Error::Unavailable(_))), "{answer:?}");
    // The cell evolved its state before the commit; it must not keep what was not written.
    let state = world.state(&room).await;
    assert_eq!(state.version, version);
    assert!(state.seats[0].occupant.is_none());

    let reply = world
        .exec_as(&room, cid("seat-bob"), user("bob"), take_seat(0))
        .await
        .unwrap();
    assert_eq!(reply.version, version + 1);
    assert_eq!(world.log(&room).await.len() as u64, version + 1);
}

#[tokio::test]
async fn a_retry_after_a_lost_acknowledgement_gets_the_first_reply() {
    let world = World::new().await;
    let room = world.open_room("r1", "alice", &["bob"]).await;
    let version = world.state(&room).await.version;

    world.probe.fail_next_commit(Fault::UnavailableAfterWrite);
    let answer = world
        .exec_as(&room, cid("seat-bob"), user("bob"), take_seat(0))
        .await;
    assert!(matches!(answer, Err(Error::Unavailable(_))), "{answer:?}");
    // The commit did land: the reloaded cell has it.
    let state = world.state(&room).await;
    assert_eq!(state.version, version + 1);

    let reply = world
        .exec_as(&room, cid("seat-bob"), user("bob"), take_seat(0))
        .await
        .unwrap();
    assert_eq!(reply.version, version + 1);
    assert_eq!(reply.events.len(), 1, "the first reply, not a no-op");
    assert_eq!(world.log(&room).await.len() as u64, version + 1);
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

/// Holds the commits of `world` at the gate and starts bob's join of `room` (command `id`),
/// whose commit then waits at the gate.
async fn hold_bobs_join(
    world: &World,
    room: &RoomId,
    id: &str,
) -> Started<room_app::Result<Arc<room_app::CommandReply>>> {
    let probe = &world.probe;
    let calls = probe.commit_calls();
    probe.close_gate();
    let held = start_all(vec![world.submit(room, id, user("bob"), join())]).await;
    eventually("the commit is held", || async move {
        probe.commit_calls() == calls + 1
    })
    .await;
    held
}

/// Starts a query of `room`'s member count: the cell has the request once this returns.
async fn count_members(world: &World, room: &RoomId) -> Started<room_app::Result<usize>> {
    let (runtime, room) = (world.runtime().clone(), room.clone());
    start_all(vec![Box::pin(async move {
        runtime.query(&room, |state| state.members.len()).await
    })])
    .await
}

/// Waits until `room`'s cell has taken every request sent before this call off its channel:
/// a peek is answered as soon as the cell takes it, and the channel keeps its order.
async fn cell_caught_up(world: &World, room: &RoomId) {
    world
        .runtime()
        .peek(room, |_| ())
        .await
        .expect("the peek was answered");
}

/// The answer of a [`count_members`] query, which must come within 30 s.
async fn members_counted(query: Started<room_app::Result<usize>>) -> usize {
    let mut answers = tokio::time::timeout(Duration::from_secs(30), query.join())
        .await
        .expect("the query was answered");
    answers.pop().expect("one query").expect("query")
}

/// alice's room, where bob's join is held in its commit and carol's join is queued behind it.
struct HeldJoin {
    world: World,
    room: RoomId,
    calls_before: usize,
    held: Started<room_app::Result<Arc<room_app::CommandReply>>>,
    queued: Started<room_app::Result<Arc<room_app::CommandReply>>>,
}

impl HeldJoin {
    async fn new() -> HeldJoin {
        let world = World::new().await;
        let room = world.open_room("r1", "alice", &[]).await;
        let calls_before = world.probe.commit_calls();
        let held = hold_bobs_join(&world, &room, "held").await;
        let queued = start_all(vec![world.submit(&room, "after", user("carol"), join())]).await;
        HeldJoin {
            world,
            room,
            calls_before,
            held,
            queued,
        }
    }

    /// Carol's join has reached no commit: it waits for the next batch.
    fn assert_carol_waits(&self) {
        assert_eq!(
            self.world.probe.commit_calls(),
            self.calls_before + 1,
            "carol's join waits"
        );
    }

    /// Lets the commits through: both joins are answered and all three are in the room.
    async fn release(self) {
        self.world.probe.open_gate();
        let replies = self
            .held
            .join()
            .await
            .into_iter()
            .chain(self.queued.join().await);
        for reply in replies {
            assert_eq!(reply.expect("joined").events.len(), 1);
        }
        assert_eq!(self.world.state(&self.room).await.members.len(), 3);
    }
}

/// Reads see only what storage holds: a query that arrives while a commit is in flight is
/// answered once that commit has ended, before the commands that arrived meanwhile run.
#[tokio::test]
async fn queries_wait_for_a_commit_in_flight() {
    let joins = HeldJoin::new().await;
    let mut query = count_members(&joins.world, &joins.room).await;
    cell_caught_up(&joins.world, &joins.room).await;
    query.poll_again().await;
    assert!(query.ready(0).is_none(), "the query waits for the commit");
    joins.assert_carol_waits();
    joins.release().await;
    assert_eq!(
        members_counted(query).await,
        2,
        "alice, and bob whose join has committed; not carol yet"
    );
}

/// A peek does not wait for a commit in flight: it answers from the newest state, which holds
/// the batch being committed, while commands that arrive meanwhile wait for the next batch.
#[tokio::test]
async fn peeks_are_answered_while_a_commit_is_in_flight() {
    let joins = HeldJoin::new().await;
    let members = tokio::time::timeout(
        Duration::from_secs(30),
        joins
            .world
            .runtime()
            .peek(&joins.room, |state| state.members.len()),
    )
    .await
    .expect("the peek was answered while the commit was held")
    .expect("peek");
    assert_eq!(members, 2, "alice, and bob whose join is being committed");
    joins.assert_carol_waits();
    joins.release().await;
}

/// A query that arrives while a commit is in flight never sees what a failed commit takes
/// back: it is answered from the state reloaded from storage.
#[tokio::test]
async fn a_query_never_sees_a_batch_whose_commit_failed() {
    let world = World::new().await;
    let room = world.open_room("r1", "alice", &[]).await;
    world.probe.fail_next_commit(Fault::UnavailableBefore);
    let held = hold_bobs_join(&world, &room, "lost").await;
    let query = count_members(&world, &room).await;
    // The cell takes the query while the commit is held.
    cell_caught_up(&world, &room).await;
    world.probe.open_gate();
    assert_eq!(
        members_counted(query).await,
        1,
        "only alice: bob's join never committed"
    );
    for reply in held.join().await {
        assert!(reply.is_err(), "the failed commit is not acknowledged");
    }
}

/// A plain user acting through the service.
fn actor(name: &str) -> room_domain::UserActor {
    room_domain::UserActor {
        user_id: uid(name),
        vip_level: 0,
        platform_admin: false,
    }
}

/// Locks `room` with `password`, as its owner `owner`.
async fn lock_room(world: &World, room: &RoomId, owner: &str, password: &str) {
    let patch = room_app::RoomPatch {
        password: Some(Some(password.into())),
        ..room_app::RoomPatch::default()
    };
    world
        .service
        .update_room(&actor(owner), room, patch, None)
        .await
        .unwrap();
}

/// `n` joins of `room` by `name` with `password`, as tasks running at once: each one's first
/// step (reading the room's lock) is answered before any join is decided.
async fn joins_at_once(
    world: &World,
    room: &RoomId,
    name: &str,
    password: &str,
    n: usize,
) -> Vec<room_app::Result<()>> {
    let mut joins = tokio::task::JoinSet::new();
    for _ in 0..n {
        let (service, room) = (world.service.clone(), room.clone());
        let (who, password) = (actor(name), password.to_owned());
        joins.spawn(async move {
            service
                .join(&who, &room, Some(password), None)
                .await
                .map(drop)
        });
    }
    joins.join_all().await
}

/// Wrong passwords lock one user out of one room until the window ends; the right password
/// then lets them in.
#[tokio::test]
async fn wrong_passwords_lock_a_user_out_until_the_window_ends() {
    let world = World::new().await;
    let room = world.open_room("r1", "owner", &[]).await;
    lock_room(&world, &room, "owner", "1234").await;
    let join = |name: &'static str, password: &'static str| {
        let (service, room) = (&world.service, room.clone());
        async move {
            service
                .join(&actor(name), &room, Some(password.to_owned()), None)
                .await
                .map(drop)
        }
    };
    for _ in 0..room_app::MAX_WRONG_PASSWORDS {
        let refused = join("bob", "0000").await;
        assert!(
            matches!(refused, Err(Error::Rejected(Rejection::WrongPassword))),
            "{refused:?}"
        );
    }
    let locked_out = join("bob", "1234").await;
    assert!(
        matches!(locked_out, Err(Error::TooManyAttempts { .. })),
        "{locked_out:?}"
    );
    join("carol", "1234").await.unwrap();
    // The owner needs no password: their joins never count.
    for _ in 0..=room_app::MAX_WRONG_PASSWORDS {
        join("owner", "0000").await.unwrap();
    }

    world
        .clock
        .advance_secs(room_app::PASSWORD_WINDOW_MS / 1000);
    join("bob", "1234").await.unwrap();

    // Guesses sent at once are counted before the room answers any: no more get through.
    let guesses = joins_at_once(&world, &room, "dave", "0000", 20).await;
    let wrong = guesses
        .iter()
        .filter(|r| matches!(r, Err(Error::Rejected(Rejection::WrongPassword))))
        .count();
    assert_eq!(wrong, room_app::MAX_WRONG_PASSWORDS as usize, "{guesses:?}");
    assert!(guesses.iter().all(|r| matches!(
        r,
        Err(Error::Rejected(Rejection::WrongPassword) | Error::TooManyAttempts { .. })
    )));
}

/// bob in room x of alice, about to join room r of dave, where his join of r will commit and
/// his leave of x will meet `leave_fault`.
async fn bob_in_x_moving_to_r(
    leave_fault: Fault,
) -> (World, RoomId, RoomId, room_domain::UserActor) {
    let world = World::new().await;
    let x = world.open_room("x", "alice", &[]).await;
    let r = world.open_room("r", "dave", &[]).await;
    let bob = actor("bob");
    world.service.join(&bob, &x, None, None).await.unwrap();
    world.probe.fail_next_commit(Fault::Pass);
    world.probe.fail_next_commit(leave_fault);
    (world, x, r, bob)
}

/// Joining leaves the previous room once the new one let the user in. When that leave fails
/// (retryably), the join answers so and presence still names the previous room: the
/// client's retry leaves it then, instead of leaving the user in both rooms for good.
#[tokio::test]
async fn a_join_whose_leave_of_the_previous_room_failed_leaves_it_on_retry() {
    let (world, x, r, bob) = bob_in_x_moving_to_r(Fault::UnavailableBefore).await;

    let first = world.service.join(&bob, &r, None, None).await;
    assert!(first.as_ref().is_err_and(Error::is_retryable), "{first:?}");
    let current = world.service.current_room(&uid("bob")).await.unwrap();
    assert_eq!(current, Some(x.clone()));

    world.service.join(&bob, &r, None, None).await.unwrap();
    assert!(!world.state(&x).await.members.contains_key(&uid("bob")));
    assert!(world.state(&r).await.members.contains_key(&uid("bob")));
    let current = world.service.current_room(&uid("bob")).await.unwrap();
    assert_eq!(current, Some(r));
}

/// A previous room that can never be left (the store refuses its commit for good) does not
/// keep the user from joining another: presence lets go of it.
#[tokio::test]
async fn a_previous_room_that_cannot_be_left_does_not_block_joins() {
    let (world, _x, r, bob) = bob_in_x_moving_to_r(Fault::Refused).await;

    world.service.join(&bob, &r, None, None).await.unwrap();
    let current = world.service.current_room(&uid("bob")).await.unwrap();
    assert_eq!(current, Some(r));
}

/// The owner and admins need no password: their joins never count as wrong, not even while
/// they are in flight, so a burst of them is never locked out.
#[tokio::test]
async fn wrong_passwords_never_lock_out_the_owner_or_admins() {
    let world = World::new().await;
    let room = world.open_room("r1", "owner", &["admin"]).await;
    world
        .exec(
            &room,
            user("owner"),
            CommandKind::SetAdmin {
                user: uid("admin"),
                admin: true,
            },
        )
        .await
        .unwrap();
    lock_room(&world, &room, "owner", "1234").await;
    for name in ["owner", "admin"] {
        let burst = 4 * room_app::MAX_WRONG_PASSWORDS as usize;
        for joined in joins_at_once(&world, &room, name, "0000", burst).await {
            assert!(joined.is_ok(), "{name}: {joined:?}");
        }
    }
}
