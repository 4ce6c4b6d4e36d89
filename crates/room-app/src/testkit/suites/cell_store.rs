//! The conformance suite of [`CellStore`]: activation fences earlier epochs, a commit is
//! conditional on epoch and version, writes everything of its batch or nothing, the log
//! reads back as written, and pruning keeps what activation and repeated commands need
//! ([`pruning`]).

mod pruning;

use std::future::Future;
use std::sync::Arc;

use room_domain::{CommandId, GiftOrder, OrderStatus, RoomId};

use super::fixtures::{
    T0, at, batch, expect_err, far_future, ok, order, order_in, payout, room, same, summary, timer,
};
use crate::Error;
use crate::ports::{
    Activation, CellStore, CommitBatch, GiftOrders, Outbox, OutboxMessage, Payout, Payouts,
    RoomDirectory, RoomSummary, SnapshotStore, StoredEvent, Timer, Timers,
};

/// Everything a commit may write, as the store's ports show it.
#[derive(Debug, PartialEq)]
struct Observed {
    events: Vec<StoredEvent>,
    commands: Vec<Option<room_domain::Command>>,
    outbox: Vec<OutboxMessage>,
    orders: Vec<Option<GiftOrder>>,
    timers: Vec<Timer>,
    payouts: Vec<Payout>,
    summary: Option<RoomSummary>,
}

async fn observe<S>(store: &S, room_id: &RoomId, batch: &CommitBatch) -> Observed
where
    S: CellStore + GiftOrders + Outbox + Timers + Payouts + RoomDirectory,
{
    let mut commands = Vec::new();
    for record in &batch.commands {
        let stored = ok(
            store.get_command(room_id, &record.command_id).await,
            "get_command",
        );
        commands.push(stored.map(|r| r.command));
    }
    let mut orders = Vec::new();
    for order in &batch.orders {
        orders.push(ok(
            GiftOrders::get(store, &order.sender, &order.order_id).await,
            "GiftOrders::get",
        ));
    }
    Observed {
        events: ok(store.list_events(room_id, 0, 10_000).await, "list_events"),
        commands,
        outbox: ok(
            Outbox::list_pending(store, 0, &[], 10_000).await,
            "Outbox::list_pending",
        ),
        orders,
        timers: ok(store.list_due(far_future(), None, 10_000).await, "list_due"),
        payouts: ok(
            Payouts::list_pending(store, None, 10_000).await,
            "Payouts::list_pending",
        ),
        summary: ok(store.get_summary(room_id).await, "get_summary"),
    }
}

/// A batch that carries something for every kind of write: an order update, a timer, a
/// payout, outbox rows and the summary.
async fn full_batch<S>(store: &S, room_id: &RoomId, base: &CommitBatch, tag: &str) -> CommitBatch
where
    S: GiftOrders,
{
    let pending = order(&format!("order-{tag}"), room_id, T0);
    ok(store.create_or_get(&pending).await, "create_or_get");
    let mut batch = base.clone();
    batch.orders = vec![order_in(&pending, OrderStatus::Applied)];
    batch.timers = vec![timer(&format!("timer-{tag}"), room_id, T0)];
    batch.payouts = vec![payout(&format!("payout-{tag}"), room_id, 25)];
    batch
}

/// Runs every [`CellStore`] check, each against a fresh store from `fresh`. The store must
/// also implement the ports a commit writes to, so that the suite can see what it wrote, and
/// [`SnapshotStore`], whose snapshots [`CellStore::prune_log`] prunes behind.
pub async fn cell_store_suite<S, F, Fut>(fresh: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<S>>,
    S: CellStore + SnapshotStore + GiftOrders + Outbox + Timers + Payouts + RoomDirectory + 'static,
{
    activate_bumps_the_epoch_and_reports_the_version(fresh().await).await;
    commit_writes_every_part_of_the_batch(fresh().await).await;
    list_events_pages_by_seq(fresh().await).await;
    stale_epoch_is_not_owner_and_writes_nothing(fresh().await).await;
    never_activated_room_is_not_owner(fresh().await).await;
    stale_version_is_conflict_and_writes_nothing(fresh().await).await;
    stored_command_id_is_already_exists_and_writes_nothing(fresh().await).await;
    command_id_twice_in_a_batch_is_already_exists(fresh().await).await;
    unknown_order_fails_and_writes_nothing(fresh().await).await;
    order_of_another_room_fails_and_writes_nothing(fresh().await).await;
    settled_order_fails_and_writes_nothing(fresh().await).await;
    event_seq_gap_is_invalid_and_writes_nothing(fresh().await).await;
    rearming_a_timer_in_a_commit_replaces_it(fresh().await).await;
    rooms_are_independent(fresh().await).await;
    concurrent_commits_at_one_version_let_exactly_one_win(fresh().await).await;
    concurrent_commits_to_many_rooms_all_succeed(fresh().await).await;
    pruning::nothing_after_the_newest_snapshot_goes(&*fresh().await).await;
    pruning::nothing_younger_than_the_cut_off_goes(&*fresh().await).await;
    pruning::a_command_kept_keeps_the_log_behind_it(&*fresh().await).await;
    pruning::a_room_without_a_snapshot_keeps_everything(&*fresh().await).await;
    pruning::every_call_honours_the_limit(&*fresh().await).await;
}

async fn activate_bumps_the_epoch_and_reports_the_version<S>(store: Arc<S>)
where
    S: CellStore,
{
    let what = "activate";
    let a = room("room-a");
    let first = ok(store.activate(&a, "node-1").await, what);
    same(first.version, 0, "a new room is at version 0");
    let second = ok(store.activate(&a, "node-2").await, what);
    assert!(
        second.epoch > first.epoch,
        "activate must bump the epoch: {} then {}",
        first.epoch,
        second.epoch
    );
    same(second.version, 0, "activation alone commits nothing");

    let batch = batch(&a, second, 0, &[("c1", 2), ("c2", 1)]);
    ok(store.commit(&batch).await, "commit after activation");
    let third = ok(store.activate(&a, "node-1").await, what);
    assert!(
        third.epoch > second.epoch,
        "every activation bumps the epoch: {} then {}",
        second.epoch,
        third.epoch
    );
    same(third.version, 3, "activate returns the committed version");

    let other = ok(store.activate(&room("room-b"), "node-1").await, what);
    same(other.version, 0, "another room's version is its own");
    let again = ok(store.activate(&a, "node-3").await, what);
    assert!(
        again.epoch > third.epoch,
        "activating another room does not reset this room's epoch"
    );
}

async fn commit_writes_every_part_of_the_batch<S>(store: Arc<S>)
where
    S: CellStore + GiftOrders + Outbox + Timers + Payouts + RoomDirectory,
{
    let a = room("room-a");
    let activation = ok(store.activate(&a, "node-1").await, "activate");
    let base = batch(&a, activation, 0, &[("c1", 2), ("c2", 1)]);
    let first = full_batch(&*store, &a, &base, "1").await;
    ok(store.commit(&first).await, "a good commit");

    let seen = observe(&*store, &a, &first).await;
    same(
        &seen.events,
        &first.events,
        "the commit's events, in seq order",
    );
    for record in &first.commands {
        same(
            ok(
                store.get_command(&a, &record.command_id).await,
                "get_command",
            ),
            Some(record.clone()),
            "get_command returns the stored record",
        );
    }
    same(
        ok(
            store
                .get_command(&a, &CommandId::new("nope").unwrap())
                .await,
            "get_command",
        ),
        None,
        "an unknown command id is absent",
    );
    let envelopes: Vec<_> = seen.outbox.iter().map(|m| m.envelope.clone()).collect();
    same(
        &envelopes,
        &first.outbox,
        "the outbox holds the batch's envelopes in order",
    );
    assert!(
        seen.outbox.windows(2).all(|w| w[0].id < w[1].id),
        "outbox ids rise in commit order: {:?}",
        seen.outbox.iter().map(|m| m.id).collect::<Vec<_>>()
    );
    same(
        seen.orders,
        first.orders.iter().cloned().map(Some).collect(),
        "the commit replaced the order",
    );
    same(&seen.timers, &first.timers, "the commit armed the timer");
    same(
        &seen.payouts,
        &first.payouts,
        "the commit recorded the payout",
    );
    same(
        seen.summary,
        first.summary.clone(),
        "the commit wrote the summary",
    );

    // The next batch starts where the first ended.
    let base = batch(&a, activation, 3, &[("c3", 1), ("c4", 1)]);
    let second = full_batch(&*store, &a, &base, "2").await;
    ok(
        store.commit(&second).await,
        "a second commit on the new version",
    );
    let all = ok(store.list_events(&a, 0, 100).await, "list_events");
    let expected: Vec<_> = first.events.iter().chain(&second.events).cloned().collect();
    same(all, expected, "events of both commits, in seq order");
    let outbox = ok(
        Outbox::list_pending(&*store, 0, &[], 100).await,
        "Outbox::list_pending",
    );
    let envelopes: Vec<_> = outbox.iter().map(|m| m.envelope.clone()).collect();
    let expected: Vec<_> = first.outbox.iter().chain(&second.outbox).cloned().collect();
    same(
        envelopes,
        expected,
        "outbox rows of both commits, in commit order",
    );
    let timers = ok(store.list_due(far_future(), None, 100).await, "list_due");
    same(timers.len(), 2, "both commits' timers are armed");
    same(
        ok(store.get_summary(&a).await, "get_summary"),
        second.summary.clone(),
        "the newest commit's summary replaces the older one",
    );
    same(
        ok(store.activate(&a, "node-2").await, "activate").version,
        5,
        "the version counts every committed event",
    );
}

async fn list_events_pages_by_seq<S>(store: Arc<S>)
where
    S: CellStore,
{
    let a = room("room-a");
    let activation = ok(store.activate(&a, "node-1").await, "activate");
    let batch = batch(&a, activation, 0, &[("c1", 3), ("c2", 2)]);
    ok(store.commit(&batch).await, "commit");
    let page = |after: u64, limit: u32| {
        let store = store.clone();
        let a = a.clone();
        async move { ok(store.list_events(&a, after, limit).await, "list_events") }
    };
    same(page(0, 100).await, batch.events.clone(), "all events");
    same(
        page(0, 2).await,
        batch.events[..2].to_vec(),
        "limit keeps the first events",
    );
    same(
        page(2, 2).await,
        batch.events[2..4].to_vec(),
        "after skips seq <= after",
    );
    same(page(4, 100).await, batch.events[4..].to_vec(), "the tail");
    same(page(5, 100).await, Vec::new(), "nothing after the last seq");
    same(page(0, 0).await, Vec::new(), "limit 0 returns nothing");
    same(
        ok(
            store.list_events(&room("room-z"), 0, 100).await,
            "list_events",
        ),
        Vec::new(),
        "an unknown room has no events",
    );
}

async fn stale_epoch_is_not_owner_and_writes_nothing<S>(store: Arc<S>)
where
    S: CellStore + GiftOrders + Outbox + Timers + Payouts + RoomDirectory,
{
    let a = room("room-a");
    let old = ok(store.activate(&a, "node-1").await, "activate");
    let setup = batch(&a, old, 0, &[("c1", 1)]);
    ok(store.commit(&setup).await, "commit before the fence");
    let new = ok(store.activate(&a, "node-2").await, "activate");

    let fenced = full_batch(&*store, &a, &batch(&a, old, 1, &[("c2", 2)]), "x").await;
    let before = observe(&*store, &a, &fenced).await;
    expect_err!(
        store.commit(&fenced).await,
        Error::NotOwner(_),
        "a commit with an earlier epoch"
    );
    same(
        observe(&*store, &a, &fenced).await,
        before,
        "a fenced commit writes nothing",
    );

    let mut current = fenced.clone();
    current.epoch = new.epoch;
    ok(
        store.commit(&current).await,
        "the same batch with the new epoch",
    );
    same(
        ok(store.list_events(&a, 1, 100).await, "list_events"),
        current.events.clone(),
        "the new owner's commit is stored",
    );
}

async fn never_activated_room_is_not_owner<S>(store: Arc<S>)
where
    S: CellStore,
{
    let ghost = room("never-activated");
    let unowned = Activation {
        epoch: 0,
        version: 0,
    };
    expect_err!(
        store.commit(&batch(&ghost, unowned, 0, &[("c1", 1)])).await,
        Error::NotOwner(_),
        "a commit to a room nobody activated"
    );
    same(
        ok(store.list_events(&ghost, 0, 100).await, "list_events"),
        Vec::new(),
        "nothing is stored for it",
    );
}

async fn stale_version_is_conflict_and_writes_nothing<S>(store: Arc<S>)
where
    S: CellStore + GiftOrders + Outbox + Timers + Payouts + RoomDirectory,
{
    let a = room("room-a");
    let activation = ok(store.activate(&a, "node-1").await, "activate");
    ok(
        store.commit(&batch(&a, activation, 0, &[("c1", 2)])).await,
        "first commit",
    );

    for (version, label) in [(0, "behind"), (1, "behind"), (3, "ahead")] {
        let stale = full_batch(
            &*store,
            &a,
            &batch(&a, activation, version, &[("c2", 1)]),
            &format!("{version}"),
        )
        .await;
        let before = observe(&*store, &a, &stale).await;
        expect_err!(
            store.commit(&stale).await,
            Error::Conflict(_),
            "a commit expecting version {version} ({label}) of a room at version 2"
        );
        same(
            observe(&*store, &a, &stale).await,
            before,
            "a conflicting commit writes nothing",
        );
    }
    ok(
        store.commit(&batch(&a, activation, 2, &[("c2", 1)])).await,
        "a commit at the current version",
    );
}

async fn stored_command_id_is_already_exists_and_writes_nothing<S>(store: Arc<S>)
where
    S: CellStore + GiftOrders + Outbox + Timers + Payouts + RoomDirectory,
{
    let a = room("room-a");
    let activation = ok(store.activate(&a, "node-1").await, "activate");
    let first = batch(&a, activation, 0, &[("c1", 1)]);
    ok(store.commit(&first).await, "first commit");

    let repeat = full_batch(
        &*store,
        &a,
        &batch(&a, activation, 1, &[("c2", 1), ("c1", 1)]),
        "r",
    )
    .await;
    let before = observe(&*store, &a, &repeat).await;
    expect_err!(
        store.commit(&repeat).await,
        Error::AlreadyExists(_),
        "a batch repeating a stored command id"
    );
    same(
        observe(&*store, &a, &repeat).await,
        before,
        "a batch with a stored command id writes nothing, not even its other commands",
    );
    same(
        ok(
            store.get_command(&a, &first.commands[0].command_id).await,
            "get_command",
        ),
        Some(first.commands[0].clone()),
        "the stored command is untouched",
    );
    ok(
        store.commit(&batch(&a, activation, 1, &[("c2", 1)])).await,
        "the version did not move",
    );
}

async fn command_id_twice_in_a_batch_is_already_exists<S>(store: Arc<S>)
where
    S: CellStore + GiftOrders + Outbox + Timers + Payouts + RoomDirectory,
{
    let a = room("room-a");
    let activation = ok(store.activate(&a, "node-1").await, "activate");
    let twice = full_batch(
        &*store,
        &a,
        &batch(&a, activation, 0, &[("c1", 1), ("c2", 1), ("c1", 1)]),
        "t",
    )
    .await;
    let before = observe(&*store, &a, &twice).await;
    expect_err!(
        store.commit(&twice).await,
        Error::AlreadyExists(_),
        "a batch with one command id twice"
    );
    same(
        observe(&*store, &a, &twice).await,
        before,
        "a batch with a repeated command id writes nothing",
    );
    ok(
        store.commit(&batch(&a, activation, 0, &[("c1", 1)])).await,
        "the version did not move",
    );
}

async fn unknown_order_fails_and_writes_nothing<S>(store: Arc<S>)
where
    S: CellStore + GiftOrders + Outbox + Timers + Payouts + RoomDirectory,
{
    let a = room("room-a");
    let activation = ok(store.activate(&a, "node-1").await, "activate");
    let mut with_ghost =
        full_batch(&*store, &a, &batch(&a, activation, 0, &[("c1", 1)]), "k").await;
    // The order the batch applies was never created.
    let ghost = order_in(&order("ghost", &a, T0), OrderStatus::Applied);
    with_ghost.orders.push(ghost);
    let before = observe(&*store, &a, &with_ghost).await;
    expect_err!(
        store.commit(&with_ghost).await,
        Error::NotFound(_),
        "a batch applying an order that does not exist"
    );
    same(
        observe(&*store, &a, &with_ghost).await,
        before,
        "a batch naming an unknown order writes nothing",
    );
}

async fn order_of_another_room_fails_and_writes_nothing<S>(store: Arc<S>)
where
    S: CellStore + GiftOrders + Outbox + Timers + Payouts + RoomDirectory,
{
    let a = room("room-a");
    let b = room("room-b");
    let activation = ok(store.activate(&a, "node-1").await, "activate");
    // An order placed for room b, that room a's commit claims to apply.
    let elsewhere = order("elsewhere", &b, T0);
    ok(store.create_or_get(&elsewhere).await, "create_or_get");
    let mut batch = full_batch(&*store, &a, &batch(&a, activation, 0, &[("c1", 1)]), "k").await;
    let mut moved = order_in(&elsewhere, OrderStatus::Applied);
    moved.room_id = a.clone();
    batch.orders.push(moved);
    let before = observe(&*store, &a, &batch).await;
    expect_err!(
        store.commit(&batch).await,
        Error::NotFound(_),
        "a batch applying another room's order"
    );
    same(
        observe(&*store, &a, &batch).await,
        before,
        "a batch applying another room's order writes nothing",
    );
    let stored = ok(
        store.get(&elsewhere.sender, &elsewhere.order_id).await,
        "get",
    )
    .expect("stored");
    assert_eq!(stored.room_id, b, "the order stays room b's");
    assert_eq!(stored.status, OrderStatus::Pending, "and unapplied");
}

async fn settled_order_fails_and_writes_nothing<S>(store: Arc<S>)
where
    S: CellStore + GiftOrders + Outbox + Timers + Payouts + RoomDirectory,
{
    let a = room("room-a");
    let activation = ok(store.activate(&a, "node-1").await, "activate");
    let batch = full_batch(&*store, &a, &batch(&a, activation, 0, &[("c1", 1)]), "k").await;
    // Another drive recorded the room's refusal of the order the batch applies: a refund is
    // due, and applying it now would move its coins twice.
    let applied = &batch.orders[0];
    let mut refused = order_in(applied, OrderStatus::Debited);
    refused.rejection = Some(room_domain::Rejection::RoomClosed);
    ok(
        store.update(&refused, OrderStatus::Pending).await,
        "update to DEBITED with a refusal",
    );
    let before = observe(&*store, &a, &batch).await;
    expect_err!(
        store.commit(&batch).await,
        Error::OrderSettled(_),
        "a batch applying an order whose refusal is recorded"
    );
    same(
        observe(&*store, &a, &batch).await,
        before,
        "a batch applying a settled order writes nothing",
    );
    // Ended orders cannot be applied either; an order DEBITED with no refusal (as stored by
    // earlier releases) can.
    for (status, applies) in [
        (OrderStatus::Compensated, false),
        (OrderStatus::Completed, false),
        (OrderStatus::Debited, true),
    ] {
        let stored = ok(
            store.get(&applied.sender, &applied.order_id).await,
            "GiftOrders::get",
        )
        .expect("stored");
        let mut next = order_in(applied, status);
        if status == OrderStatus::Debited {
            next.rejection = None;
        }
        ok(store.update(&next, stored.status).await, "update");
        let committed = store.commit(&batch).await;
        match (applies, committed) {
            (true, Ok(())) => {}
            (false, Err(Error::OrderSettled(_))) => {}
            (applies, other) => panic!("stored {status:?}: applies {applies}, got {other:?}"),
        }
    }
}

async fn event_seq_gap_is_invalid_and_writes_nothing<S>(store: Arc<S>)
where
    S: CellStore + GiftOrders + Outbox + Timers + Payouts + RoomDirectory,
{
    let a = room("room-a");
    let activation = ok(store.activate(&a, "node-1").await, "activate");
    let mut gap = full_batch(&*store, &a, &batch(&a, activation, 0, &[("c1", 3)]), "g").await;
    gap.events.remove(1);
    let before = observe(&*store, &a, &gap).await;
    expect_err!(
        store.commit(&gap).await,
        Error::Invalid(_),
        "a batch whose event seqs have a gap"
    );
    same(
        observe(&*store, &a, &gap).await,
        before,
        "a batch with a seq gap writes nothing",
    );
}

async fn rearming_a_timer_in_a_commit_replaces_it<S>(store: Arc<S>)
where
    S: CellStore + Timers,
{
    let a = room("room-a");
    let activation = ok(store.activate(&a, "node-1").await, "activate");
    let mut first = batch(&a, activation, 0, &[("c1", 1)]);
    first.timers = vec![timer("room-a:launch:1", &a, at(100))];
    ok(store.commit(&first).await, "commit arming the timer");
    let mut second = batch(&a, activation, 1, &[("c2", 1)]);
    let rearmed = timer("room-a:launch:1", &a, at(200));
    second.timers = vec![rearmed.clone()];
    ok(store.commit(&second).await, "commit re-arming the timer");
    same(
        ok(store.list_due(far_future(), None, 100).await, "list_due"),
        vec![rearmed],
        "re-arming a timer id replaces the timer",
    );
}

async fn rooms_are_independent<S>(store: Arc<S>)
where
    S: CellStore + RoomDirectory,
{
    let a = room("room-a");
    let b = room("room-b");
    let in_a = ok(store.activate(&a, "node-1").await, "activate");
    let in_b = ok(store.activate(&b, "node-1").await, "activate");
    let batch_a = batch(&a, in_a, 0, &[("c1", 2)]);
    // The same command id in another room is another command.
    let batch_b = batch(&b, in_b, 0, &[("c1", 1)]);
    ok(store.commit(&batch_a).await, "commit in room a");
    ok(
        store.commit(&batch_b).await,
        "commit in room b with the same command id",
    );
    same(
        ok(store.list_events(&a, 0, 100).await, "list_events"),
        batch_a.events.clone(),
        "room a's events",
    );
    same(
        ok(store.list_events(&b, 0, 100).await, "list_events"),
        batch_b.events.clone(),
        "room b's events",
    );
    same(
        ok(
            store.get_command(&b, &batch_b.commands[0].command_id).await,
            "get_command",
        ),
        Some(batch_b.commands[0].clone()),
        "room b's command",
    );
    same(
        ok(store.get_summary(&b).await, "get_summary"),
        Some(summary(&b, 10, true, 1)),
        "room b's summary",
    );
}

async fn concurrent_commits_at_one_version_let_exactly_one_win<S>(store: Arc<S>)
where
    S: CellStore + 'static,
{
    let a = room("room-a");
    let activation = ok(store.activate(&a, "node-1").await, "activate");
    let mut tasks = Vec::new();
    for i in 0..20 {
        let store = store.clone();
        let batch = batch(&a, activation, 0, &[(&format!("c{i}"), 1)]);
        tasks.push(tokio::spawn(async move { store.commit(&batch).await }));
    }
    let mut wins = 0;
    for task in tasks {
        match task.await.expect("commit task panicked") {
            Ok(()) => wins += 1,
            Err(Error::Conflict(_)) => {}
            Err(other) => panic!("a racing commit must win or conflict, got {other:?}"),
        }
    }
    same(
        wins,
        1,
        "exactly one of the commits racing for one version wins",
    );
    same(
        ok(store.list_events(&a, 0, 100).await, "list_events").len(),
        1,
        "only the winner's event is stored",
    );
}

async fn concurrent_commits_to_many_rooms_all_succeed<S>(store: Arc<S>)
where
    S: CellStore + 'static,
{
    let mut tasks = Vec::new();
    for i in 0..20 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let r = room(&format!("room-{i}"));
            let activation = store.activate(&r, "node-1").await?;
            for version in 0..3 {
                let b = batch(&r, activation, version, &[(&format!("c{version}"), 1)]);
                store.commit(&b).await?;
            }
            Ok::<_, Error>(r)
        }));
    }
    for task in tasks {
        let r = ok(
            task.await.expect("commit task panicked"),
            "commits to distinct rooms",
        );
        same(
            ok(store.list_events(&r, 0, 100).await, "list_events").len(),
            3,
            "every commit of every room is stored",
        );
    }
}
