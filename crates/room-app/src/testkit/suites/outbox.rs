//! The conformance suite of [`Outbox`]: commits fill it in commit order, the publisher marks
//! rows delivered, retention deletes delivered rows in bounded batches.

use std::future::Future;
use std::sync::Arc;

use room_domain::EventEnvelope;

use super::fixtures::{at, batch, ok, room, same};
use crate::ports::{CellStore, CommitBatch, DeadLetter, Outbox, OutboxMessage};

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
    pending_rows_page_by_id(fresh().await).await;
    dead_letters_leave_the_pending_list_until_replayed(fresh().await).await;
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
        ok(
            Outbox::list_pending(&*store, 0, &[], 10).await,
            "list_pending",
        ),
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
    let all = ok(
        Outbox::list_pending(&*store, 0, &[], 100).await,
        "list_pending",
    );
    same(envelopes(&all), expected.clone(), "rows in commit order");
    assert!(
        all.windows(2).all(|w| w[0].id < w[1].id),
        "ids rise in commit order: {:?}",
        ids(&all)
    );
    let first = ok(
        Outbox::list_pending(&*store, 0, &[], 2).await,
        "list_pending",
    );
    same(first, all[..2].to_vec(), "limit keeps the oldest rows");
    same(
        ok(
            Outbox::list_pending(&*store, 0, &[], 0).await,
            "list_pending",
        ),
        Vec::new(),
        "limit 0 returns nothing",
    );
}

async fn delivered_rows_leave_the_pending_list<S: Outbox + CellStore>(store: Arc<S>) {
    three_commits(&*store).await;
    let all = ok(
        Outbox::list_pending(&*store, 0, &[], 100).await,
        "list_pending",
    );
    same(all.len(), 5, "five rows");
    let unknown = all.iter().map(|m| m.id).max().unwrap() + 1000;
    ok(
        store
            .mark_delivered(&[all[0].id, all[2].id, unknown], at(10))
            .await,
        "mark_delivered with an unknown id among known ones",
    );
    let pending = ok(
        Outbox::list_pending(&*store, 0, &[], 100).await,
        "list_pending",
    );
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
        ok(
            Outbox::list_pending(&*store, 0, &[], 100).await,
            "list_pending",
        )
        .len(),
        3,
        "marking again changes nothing",
    );
}

async fn retention_deletes_delivered_rows_in_batches<S: Outbox + CellStore>(store: Arc<S>) {
    three_commits(&*store).await;
    let all = ok(
        Outbox::list_pending(&*store, 0, &[], 100).await,
        "list_pending",
    );
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
        ok(
            Outbox::list_pending(&*store, 0, &[], 100).await,
            "list_pending",
        ),
        vec![all[4].clone()],
        "the undelivered row is still pending",
    );
}

async fn pending_rows_page_by_id<S: Outbox + CellStore>(store: Arc<S>) {
    three_commits(&*store).await;
    let all = ok(
        Outbox::list_pending(&*store, 0, &[], 100).await,
        "list_pending",
    );
    same(
        ok(
            Outbox::list_pending(&*store, all[1].id, &[], 2).await,
            "list_pending",
        ),
        all[2..4].to_vec(),
        "after an id: the pending rows past it, oldest first, at most `limit`",
    );
    ok(store.mark_delivered(&[all[3].id], at(10)).await, "mark");
    same(
        ok(
            Outbox::list_pending(&*store, all[1].id, &[], 10).await,
            "list_pending",
        ),
        vec![all[2].clone(), all[4].clone()],
        "delivered rows stay out of a page",
    );
    same(
        ok(
            Outbox::list_pending(&*store, all[4].id, &[], 10).await,
            "list_pending",
        ),
        Vec::new(),
        "nothing after the last row",
    );
    same(
        ok(
            Outbox::list_pending(&*store, 0, &[room("room-a")], 10).await,
            "list_pending",
        ),
        vec![all[2].clone()],
        "the rows of a skipped room stay out",
    );
    same(
        ok(
            Outbox::list_pending(&*store, 0, &[room("room-a"), room("room-b")], 10).await,
            "list_pending",
        ),
        Vec::new(),
        "every room skipped",
    );
    same(
        ok(
            Outbox::list_pending(&*store, 0, &[room("room-c")], 10).await,
            "list_pending",
        ),
        vec![
            all[0].clone(),
            all[1].clone(),
            all[2].clone(),
            all[4].clone(),
        ],
        "skipping an unknown room changes nothing",
    );
}

async fn dead_letters_leave_the_pending_list_until_replayed<S: Outbox + CellStore>(store: Arc<S>) {
    three_commits(&*store).await;
    let all = ok(
        Outbox::list_pending(&*store, 0, &[], 100).await,
        "list_pending",
    );
    same(
        ok(store.list_dead_letters(0, 10).await, "list_dead_letters"),
        Vec::new(),
        "no dead letters at first",
    );
    assert!(
        ok(
            store.dead_letter(all[0].id, "too large", at(50)).await,
            "dead_letter"
        ),
        "a pending row is set aside"
    );
    assert!(
        ok(
            store.dead_letter(all[2].id, "invalid", at(60)).await,
            "dead_letter"
        ),
        "another"
    );
    ok(store.mark_delivered(&[all[1].id], at(70)).await, "mark");
    assert!(
        !ok(
            store.dead_letter(all[1].id, "late", at(80)).await,
            "dead_letter"
        ),
        "a delivered row is not set aside"
    );
    assert!(
        !ok(
            store.dead_letter(all[0].id, "again", at(80)).await,
            "dead_letter"
        ),
        "a dead letter is not set aside twice"
    );
    same(
        ok(
            Outbox::list_pending(&*store, 0, &[], 100).await,
            "list_pending",
        ),
        vec![all[3].clone(), all[4].clone()],
        "dead letters are not pending; their room's later rows are",
    );
    let dead = |message: &OutboxMessage, reason: &str, when: i64| DeadLetter {
        id: message.id,
        envelope: message.envelope.clone(),
        reason: reason.to_owned(),
        dead_at: at(when),
    };
    same(
        ok(store.list_dead_letters(0, 10).await, "list_dead_letters"),
        vec![dead(&all[0], "too large", 50), dead(&all[2], "invalid", 60)],
        "dead letters in id order, with their reason and time",
    );
    same(
        ok(
            store.list_dead_letters(all[0].id, 10).await,
            "list_dead_letters",
        ),
        vec![dead(&all[2], "invalid", 60)],
        "dead letters page by id",
    );
    same(
        ok(store.list_dead_letters(0, 1).await, "list_dead_letters").len(),
        1,
        "at most `limit`",
    );
    assert!(
        ok(store.replay_dead_letter(all[0].id).await, "replay"),
        "a dead letter is replayed"
    );
    assert!(
        !ok(store.replay_dead_letter(all[0].id).await, "replay"),
        "a replayed dead letter is gone"
    );
    assert!(
        !ok(store.replay_dead_letter(all[4].id + 1000).await, "replay"),
        "an unknown id is no dead letter"
    );
    same(
        ok(
            Outbox::list_pending(&*store, 0, &[], 100).await,
            "list_pending",
        ),
        vec![all[0].clone(), all[3].clone(), all[4].clone()],
        "a replayed row is pending again under its own id",
    );
    same(
        ok(store.list_dead_letters(0, 10).await, "list_dead_letters"),
        vec![dead(&all[2], "invalid", 60)],
        "the other dead letter stays",
    );
}
