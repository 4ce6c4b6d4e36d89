//! Group commit and what a batch costs: commands sharing commits, repeats of one command id
//! answered once, a full mailbox, rejected commands writing nothing, and failed commits
//! retried.

use std::time::Duration;

use room_app::{CellConfig, Error};
use room_domain::{CommandKind, Event, MicChange, Rejection, RoomId, SeatIndex};

use super::fixtures::{join, take_seat};
use crate::support::{Fault, World, cid, config, eventually, start_all, uid, user};

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
