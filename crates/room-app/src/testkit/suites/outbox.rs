//! The conformance suite of [`Outbox`]: commits fill it in commit order, the publisher marks
//! rows delivered, retention deletes delivered rows in bounded batches.

use std::future::Future;
use std::sync::Arc;

use room_domain::EventEnvelope;

use super::fixtures::{at, batch, ok, room, same};
use crate::ports::{CellStore, CommitBatch, Outbox, OutboxMessage};

/// Runs every [`Outbox`] check, each against a fresh store from `fresh`. Outbox rows enter
/// only through [`CellStore::commit`], so the store must implement both.
pub async fn outbox_suite<S, F, Fut>(fresh: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<S>>,
    S: Outbox + CellStore + 'static,
{
    empty_outbox(fresh().await).await;
    pending_rows_come_in_commit_order(fresh().await).await;
    delivered_rows_leave_the_pending_list(fresh().await).await;
    retention_deletes_delivered_rows_in_batches(fresh().await).await;
}

/// Commits, in order, one batch to room a (2 events), one to room b (1 event), one to room a
/// (2 events); returns the envelopes in commit order.
async fn three_commits<S: CellStore>(store: &S) -> Vec<EventEnvelope> {
    let a = room("room-a");
    let b = room("room-b");
    let in_a = ok(store.activate(&a, "node-1").await, "activate");
    let in_b = ok(store.activate(&b, "node-1").await, "activate");
    let batches: Vec<CommitBatch> = vec![
        batch(&a, in_a, 0, &[("a1", 2)]),
        batch(&b, in_b, 0, &[("b1", 1)]),
        batch(&a, in_a, 2, &[("a2", 1), ("a3", 1)]),
    ];
    let mut envelopes = Vec::new();
    for b in &batches {
        ok(store.commit(b).await, "commit");
        envelopes.extend(b.outbox.iter().cloned());
    }
    envelopes
}

fn envelopes(messages: &[OutboxMessage]) -> Vec<EventEnvelope> {
    messages.iter().map(|m| m.envelope.clone()).collect()
}

fn ids(messages: &[OutboxMessage]) -> Vec<i64> {
    messages.iter().map(|m| m.id).collect()
}

async fn empty_outbox<S: Outbox + CellStore>(store: Arc<S>) {
    same(
        ok(Outbox::list_pending(&*store, 10).await, "list_pending"),
        Vec::new(),
        "a new outbox is empty",
    );
    ok(
        store.mark_delivered(&[1, 2, 3], at(0)).await,
        "marking unknown ids is not an error",
    );
    same(
        ok(store.delete_delivered_before(at(1000), 10).await, "delete"),
        0,
        "nothing to delete in an empty outbox",
    );
}

async fn pending_rows_come_in_commit_order<S: Outbox + CellStore>(store: Arc<S>) {
    let expected = three_commits(&*store).await;
    let all = ok(Outbox::list_pending(&*store, 100).await, "list_pending");
    same(envelopes(&all), expected.clone(), "rows in commit order");
    assert!(
        all.windows(2).all(|w| w[0].id < w[1].id),
        "ids rise in commit order: {:?}",
        ids(&all)
    );
    let first = ok(Outbox::list_pending(&*store, 2).await, "list_pending");
    same(first, all[..2].to_vec(), "limit keeps the oldest rows");
    same(
        ok(Outbox::list_pending(&*store, 0).await, "list_pending"),
        Vec::new(),
        "limit 0 returns nothing",
    );
}

async fn delivered_rows_leave_the_pending_list<S: Outbox + CellStore>(store: Arc<S>) {
    three_commits(&*store).await;
    let all = ok(Outbox::list_pending(&*store, 100).await, "list_pending");
    same(all.len(), 5, "five rows");
    let unknown = all.iter().map(|m| m.id).max().unwrap() + 1000;
    ok(
        store
            .mark_delivered(&[all[0].id, all[2].id, unknown], at(10))
            .await,
        "mark_delivered with an unknown id among known ones",
    );
    let pending = ok(Outbox::list_pending(&*store, 100).await, "list_pending");
    same(
        pending,
        vec![all[1].clone(), all[3].clone(), all[4].clone()],
        "delivered rows leave the pending list, the rest keep their order",
    );
    ok(store.mark_delivered(&[], at(10)).await, "marking nothing");
    ok(
        store.mark_delivered(&[all[0].id], at(20)).await,
        "marking a delivered row again",
    );
    same(
        ok(Outbox::list_pending(&*store, 100).await, "list_pending").len(),
        3,
        "marking again changes nothing",
    );
}

async fn retention_deletes_delivered_rows_in_batches<S: Outbox + CellStore>(store: Arc<S>) {
    three_commits(&*store).await;
    let all = ok(Outbox::list_pending(&*store, 100).await, "list_pending");
    ok(
        store
            .mark_delivered(&[all[0].id, all[1].id, all[2].id], at(100))
            .await,
        "mark_delivered",
    );
    ok(
        store.mark_delivered(&[all[3].id], at(300)).await,
        "mark_delivered",
    );
    // Delivered a second time later: the first delivery time stays.
    ok(
        store.mark_delivered(&[all[0].id], at(500)).await,
        "mark_delivered",
    );

    same(
        ok(store.delete_delivered_before(at(100), 10).await, "delete"),
        0,
        "rows delivered exactly at `before` stay",
    );
    same(
        ok(store.delete_delivered_before(at(200), 2).await, "delete"),
        2,
        "delete stops at the limit",
    );
    same(
        ok(store.delete_delivered_before(at(200), 2).await, "delete"),
        1,
        "the next batch deletes the rest delivered before 200",
    );
    same(
        ok(store.delete_delivered_before(at(200), 2).await, "delete"),
        0,
        "nothing left delivered before 200",
    );
    same(
        ok(
            store.delete_delivered_before(at(10_000), 100).await,
            "delete",
        ),
        1,
        "the row delivered at 300 goes with a later cut-off; pending rows never go",
    );
    same(
        ok(Outbox::list_pending(&*store, 100).await, "list_pending"),
        vec![all[4].clone()],
        "the undelivered row is still pending",
    );
}
