//! The checks of [`CellStore::prune_log`]: what goes is behind both the newest snapshot and
//! the cut-off, the log stays one run of events that activation replays to the same state,
//! commands younger than the cut-off are answered with their events, a command is never
//! answered without them, and `limit` bounds every call.

use room_domain::{RoomId, RoomState, Snapshot, evolve};

use super::super::fixtures::{at, batch, expect_err, far_future, ok, room, same};
use crate::Error;
use crate::ports::{CellStore, CommitBatch, SnapshotStore, StoredEvent};

/// Every command of a room, as one batch from version 0 (the fixture's timing: each command
/// applied about a second after the one before).
async fn commit_log<S>(store: &S, room_id: &RoomId, commands: &[(&str, u64)]) -> CommitBatch
where
    S: CellStore,
{
    let activation = ok(store.activate(room_id, "node-1").await, "activate");
    let log = batch(room_id, activation, 0, commands);
    ok(store.commit(&log).await, "commit the log");
    log
}

/// The state after `events`, replayed on a new room.
fn replayed(room_id: &RoomId, events: &[StoredEvent]) -> RoomState {
    let mut state = RoomState::new(room_id.clone());
    for stored in events {
        evolve(&mut state, &stored.event);
    }
    state
}

/// Stores the snapshot of the room after the events of `log` up to `version`.
async fn snapshot_at<S>(store: &S, log: &CommitBatch, version: u64)
where
    S: SnapshotStore,
{
    let events: Vec<StoredEvent> = log
        .events
        .iter()
        .filter(|e| e.seq <= version)
        .cloned()
        .collect();
    let snapshot = Snapshot::new(replayed(&log.room_id, &events));
    ok(
        SnapshotStore::put(store, &snapshot).await,
        "put the snapshot",
    );
}

/// The room's state as activation rebuilds it: its newest snapshot, then every event after it,
/// which must follow on without a gap.
async fn restored<S>(store: &S, room_id: &RoomId) -> RoomState
where
    S: CellStore + SnapshotStore,
{
    let mut state = match ok(store.get_latest(room_id).await, "get_latest") {
        Some(snapshot) => snapshot.into_state().expect("a snapshot of this build"),
        None => RoomState::new(room_id.clone()),
    };
    let events = ok(
        store.list_events(room_id, state.version, 10_000).await,
        "list_events after the snapshot",
    );
    for stored in &events {
        assert_eq!(
            stored.seq,
            state.version + 1,
            "the events after the snapshot follow it without a gap"
        );
        evolve(&mut state, &stored.event);
    }
    state
}

/// Checks what a pruned log must still be: one run of events ending at the room's version,
/// and every command of `log` either absent or found with every one of its events.
async fn check_log<S>(store: &S, log: &CommitBatch, what: &str)
where
    S: CellStore,
{
    let room_id = &log.room_id;
    let events = ok(store.list_events(room_id, 0, 10_000).await, "list_events");
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert!(
        seqs.windows(2).all(|w| w[1] == w[0] + 1),
        "{what}: the log is one run of events: {seqs:?}"
    );
    if let Some(last) = events.last() {
        same(
            last.seq,
            log.new_version(),
            &format!("{what}: the log ends at the room's version"),
        );
    }
    same(
        &events[..],
        &log.events[log.events.len() - events.len()..],
        &format!("{what}: the events kept read back as written"),
    );
    for record in &log.commands {
        let Some(found) = ok(
            store.get_command(room_id, &record.command_id).await,
            "get_command",
        ) else {
            continue;
        };
        same(
            &found,
            record,
            &format!("{what}: a command found is as stored"),
        );
        let count = (record.last_seq + 1 - record.first_seq) as u32;
        let its_events = ok(
            store
                .list_events(room_id, record.first_seq - 1, count)
                .await,
            "list_events of a command",
        );
        let expected: Vec<StoredEvent> = log
            .events
            .iter()
            .filter(|e| (record.first_seq..=record.last_seq).contains(&e.seq))
            .cloned()
            .collect();
        same(
            its_events,
            expected,
            &format!(
                "{what}: command {} is found only with every one of its events",
                record.command_id
            ),
        );
    }
}

/// The ids of the commands of `log` that `get_command` finds.
async fn found_commands<S>(store: &S, log: &CommitBatch) -> Vec<String>
where
    S: CellStore,
{
    let mut found = Vec::new();
    for record in &log.commands {
        if ok(
            store.get_command(&log.room_id, &record.command_id).await,
            "get_command",
        )
        .is_some()
        {
            found.push(record.command_id.to_string());
        }
    }
    found
}

fn seqs(events: &[StoredEvent]) -> Vec<u64> {
    events.iter().map(|e| e.seq).collect()
}

pub(super) async fn nothing_after_the_newest_snapshot_goes<S>(store: &S)
where
    S: CellStore + SnapshotStore,
{
    let a = room("room-a");
    let log = commit_log(store, &a, &[("c1", 2), ("c2", 1), ("c3", 2), ("c4", 1)]).await;
    let whole = replayed(&a, &log.events);
    snapshot_at(store, &log, 3).await;
    // Everything is older than the cut-off: only the snapshot holds the log back.
    same(
        ok(store.prune_log(far_future(), 1_000).await, "prune_log"),
        5,
        "events 1 to 3 and the commands c1 and c2 (which end at the snapshot) go",
    );
    same(
        seqs(&ok(store.list_events(&a, 0, 100).await, "list_events")),
        vec![4, 5, 6],
        "the events after the snapshot stay",
    );
    same(
        found_commands(store, &log).await,
        vec!["c3".to_owned(), "c4".to_owned()],
        "the commands after the snapshot stay",
    );
    check_log(store, &log, "pruned up to the snapshot").await;
    same(
        restored(store, &a).await,
        whole.clone(),
        "the snapshot and the events after it give the state the whole log gave",
    );
    same(
        ok(store.prune_log(far_future(), 1_000).await, "prune_log"),
        0,
        "pruning again finds nothing more",
    );

    // A newer snapshot lets the rest go; the room goes on from its version.
    snapshot_at(store, &log, 6).await;
    same(
        ok(store.prune_log(far_future(), 1_000).await, "prune_log"),
        5,
        "events 4 to 6 and the commands c3 and c4 go",
    );
    same(
        ok(store.list_events(&a, 0, 100).await, "list_events"),
        Vec::new(),
        "nothing is left before the snapshot at the room's version",
    );
    same(
        restored(store, &a).await,
        whole,
        "the snapshot alone gives the state",
    );
    let activation = ok(store.activate(&a, "node-2").await, "activate after pruning");
    same(
        activation.version,
        6,
        "activation reports the version the log reached",
    );
    let next = batch(&a, activation, 6, &[("c5", 2)]);
    ok(store.commit(&next).await, "a commit after pruning");
    same(
        ok(store.list_events(&a, 0, 100).await, "list_events"),
        next.events.clone(),
        "the log goes on from the room's version",
    );
}

pub(super) async fn nothing_younger_than_the_cut_off_goes<S>(store: &S)
where
    S: CellStore + SnapshotStore,
{
    let a = room("room-a");
    let log = commit_log(
        store,
        &a,
        &[("c1", 1), ("c2", 2), ("c3", 1), ("c4", 2), ("c5", 1)],
    )
    .await;
    snapshot_at(store, &log, log.new_version()).await;
    // The cut-off is c3's time: c1 and c2 are older, c3 and later are not.
    let c3 = log.commands[2].clone();
    same(
        ok(store.prune_log(c3.applied_at, 1_000).await, "prune_log"),
        5,
        "the events (1 to 3) and the commands of c1 and c2 go",
    );
    same(
        found_commands(store, &log).await,
        vec!["c3".to_owned(), "c4".to_owned(), "c5".to_owned()],
        "the commands applied at or after the cut-off stay",
    );
    check_log(store, &log, "pruned up to the cut-off").await;
    same(
        seqs(&ok(store.list_events(&a, 0, 100).await, "list_events")),
        (c3.first_seq..=log.new_version()).collect(),
        "the events of the commands applied at or after the cut-off stay",
    );
    // A repeat of a command younger than the cut-off is still refused by the store.
    let activation = ok(store.activate(&a, "node-2").await, "activate");
    let repeat = batch(&a, activation, log.new_version(), &[("c3", 1)]);
    expect_err!(
        store.commit(&repeat).await,
        Error::AlreadyExists(_),
        "a batch repeating a command younger than the cut-off"
    );
    same(
        ok(store.prune_log(c3.applied_at, 1_000).await, "prune_log"),
        0,
        "pruning again at the same cut-off finds nothing more",
    );
    same(
        restored(store, &a).await,
        replayed(&a, &log.events),
        "activation restores the state",
    );
}

pub(super) async fn a_command_kept_keeps_the_log_behind_it<S>(store: &S)
where
    S: CellStore + SnapshotStore,
{
    // Clocks of different nodes disagree: a command committed later may carry an earlier time.
    let a = room("room-a");
    let activation = ok(store.activate(&a, "node-1").await, "activate");
    let mut log = batch(&a, activation, 0, &[("c1", 1), ("c2", 1), ("c3", 1)]);
    for (record, time) in log.commands.iter_mut().zip([at(100), at(9_000), at(200)]) {
        record.applied_at = time;
    }
    for (event, time) in log.events.iter_mut().zip([at(100), at(9_000), at(200)]) {
        event.occurred_at = time;
    }
    ok(store.commit(&log).await, "commit the log");
    snapshot_at(store, &log, 3).await;
    same(
        ok(store.prune_log(at(1_000), 1_000).await, "prune_log"),
        2,
        "c1 and its event go; c3 is older than the cut-off, but c2 before it is not",
    );
    same(
        found_commands(store, &log).await,
        vec!["c2".to_owned(), "c3".to_owned()],
        "c2 stays, and c3 behind it",
    );
    check_log(store, &log, "pruned up to a younger command").await;
}

pub(super) async fn a_room_without_a_snapshot_keeps_everything<S>(store: &S)
where
    S: CellStore + SnapshotStore,
{
    let a = room("room-a");
    let b = room("room-b");
    let with = commit_log(store, &a, &[("c1", 2), ("c2", 1)]).await;
    let without = commit_log(store, &b, &[("c1", 2), ("c2", 1)]).await;
    snapshot_at(store, &with, with.new_version()).await;
    same(
        ok(store.prune_log(far_future(), 1_000).await, "prune_log"),
        5,
        "room a's log goes",
    );
    same(
        ok(store.list_events(&b, 0, 100).await, "list_events"),
        without.events.clone(),
        "room b, without a snapshot, keeps every event",
    );
    same(
        found_commands(store, &without).await,
        vec!["c1".to_owned(), "c2".to_owned()],
        "room b keeps every command",
    );
    same(
        ok(store.list_events(&a, 0, 100).await, "list_events"),
        Vec::new(),
        "room a kept nothing",
    );
}

pub(super) async fn every_call_honours_the_limit<S>(store: &S)
where
    S: CellStore + SnapshotStore,
{
    let commands: &[(&str, u64)] = &[("c1", 3), ("c2", 1), ("c3", 2), ("c4", 1), ("c5", 2)];
    let mut logs = Vec::new();
    for name in ["room-a", "room-b", "room-c"] {
        let log = commit_log(store, &room(name), commands).await;
        // Room c's snapshot stops before its last command.
        let version = if name == "room-c" { 7 } else { 9 };
        snapshot_at(store, &log, version).await;
        logs.push(log);
    }
    let unsnapshotted = commit_log(store, &room("room-d"), commands).await;
    // Rooms a and b lose their 9 events and 5 commands; room c its events 1 to 7 and the
    // commands c1 to c4.
    let expected = 2 * (9 + 5) + (7 + 4);
    same(
        ok(store.prune_log(far_future(), 0).await, "prune_log"),
        0,
        "limit 0 deletes nothing",
    );
    for limit in [2, 1] {
        if limit == 1 {
            // Start over: fresh rooms, the same logs.
            logs.clear();
            for name in ["room-e", "room-f", "room-g"] {
                let log = commit_log(store, &room(name), commands).await;
                let version = if name == "room-g" { 7 } else { 9 };
                snapshot_at(store, &log, version).await;
                logs.push(log);
            }
        }
        let mut total = 0;
        let mut calls = 0;
        loop {
            let gone = ok(store.prune_log(far_future(), limit).await, "prune_log");
            calls += 1;
            assert!(
                gone <= u64::from(limit),
                "a call with limit {limit} deleted {gone} rows"
            );
            total += gone;
            for log in &logs {
                check_log(
                    store,
                    log,
                    &format!("after call {calls} with limit {limit}"),
                )
                .await;
            }
            if gone < u64::from(limit) {
                break;
            }
            assert!(
                calls <= 100,
                "pruning with limit {limit} does not come to an end"
            );
        }
        same(
            total,
            expected,
            &format!("calls with limit {limit} delete everything that may go, once"),
        );
        same(
            ok(store.prune_log(far_future(), limit).await, "prune_log"),
            0,
            "a call after the last finds nothing",
        );
        for log in &logs {
            same(
                restored(store, &log.room_id).await,
                replayed(&log.room_id, &log.events),
                "activation restores every pruned room",
            );
        }
    }
    same(
        ok(
            store.list_events(&unsnapshotted.room_id, 0, 100).await,
            "list_events",
        ),
        unsnapshotted.events.clone(),
        "the room without a snapshot kept its log",
    );
}
