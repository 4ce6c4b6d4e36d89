//! The conformance suite of what in-process consumers of the durable facts need from a store:
//! [`ConsumerPositions`] (a position per consumer, moved only by compare-and-set, one winner
//! when two move it at once), [`Outbox::list_after`] (rows after a position in commit order,
//! delivered or not) and [`Outbox::mark_passed`] (rows every consumer passed become delivered,
//! so that retention deletes them).

use std::future::Future;
use std::sync::Arc;

use room_domain::EventEnvelope;

use super::fixtures::{at, batch, ok, room, same};
use crate::ports::{CellStore, ConsumerPositions, Outbox, OutboxMessage};

/// Runs every check, each against a fresh store from `fresh`. Outbox rows enter only
/// through [`CellStore::commit`], so the store must implement it too.
pub async fn consumer_positions_suite<S, F, Fut>(fresh: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<S>>,
    S: ConsumerPositions + Outbox + CellStore + 'static,
{
    positions_move_by_compare_and_set(fresh().await).await;
    one_of_two_concurrent_moves_wins(fresh().await).await;
    rows_after_a_position_come_in_commit_order(fresh().await).await;
    passed_rows_become_delivered_and_go_with_retention(fresh().await).await;
}

/// Commits three batches (rooms a, b, a; five rows) and returns the outbox rows in order.
async fn five_rows<S: CellStore + Outbox>(store: &S) -> Vec<OutboxMessage> {
    let a = room("room-a");
    let b = room("room-b");
    let in_a = ok(store.activate(&a, "node-1").await, "activate");
    let in_b = ok(store.activate(&b, "node-1").await, "activate");
    for commit in [
        batch(&a, in_a, 0, &[("a1", 2)]),
        batch(&b, in_b, 0, &[("b1", 1)]),
        batch(&a, in_a, 2, &[("a2", 1), ("a3", 1)]),
    ] {
        ok(store.commit(&commit).await, "commit");
    }
    let rows = ok(store.list_after(0, 100).await, "list_after");
    same(rows.len(), 5, "five rows after position 0");
    rows
}

fn envelopes(rows: &[OutboxMessage]) -> Vec<EventEnvelope> {
    rows.iter().map(|row| row.envelope.clone()).collect()
}

async fn positions_move_by_compare_and_set<S: ConsumerPositions>(store: Arc<S>) {
    same(
        ok(store.get_position("im").await, "get_position"),
        None,
        "a consumer without a stored position has none",
    );
    same(
        ok(store.advance_position("im", Some(0), 5).await, "advance"),
        false,
        "a position that is not stored is not 0",
    );
    same(
        ok(store.advance_position("im", None, 5).await, "advance"),
        true,
        "the first position is stored from none",
    );
    same(
        ok(store.advance_position("im", None, 7).await, "advance"),
        false,
        "from none again: the stored position stays",
    );
    same(
        ok(store.get_position("im").await, "get_position"),
        Some(5),
        "the position stored",
    );
    same(
        ok(store.advance_position("im", Some(4), 9).await, "advance"),
        false,
        "a stale position moves nothing",
    );
    same(
        ok(store.advance_position("im", Some(5), 9).await, "advance"),
        true,
        "the current position moves",
    );
    same(
        ok(store.get_position("im").await, "get_position"),
        Some(9),
        "moved",
    );
    same(
        ok(store.get_position("income").await, "get_position"),
        None,
        "consumers are independent",
    );
    same(
        ok(store.advance_position("income", None, 3).await, "advance"),
        true,
        "another consumer stores its own",
    );
    same(
        ok(store.get_position("im").await, "get_position"),
        Some(9),
        "and leaves the first one alone",
    );
}

async fn one_of_two_concurrent_moves_wins<S: ConsumerPositions + 'static>(store: Arc<S>) {
    ok(store.advance_position("im", None, 10).await, "advance");
    for round in 0..20 {
        let from = 10 + round * 100;
        let racers: Vec<_> = (1..=2)
            .map(|n| {
                let store = store.clone();
                tokio::spawn(
                    async move { store.advance_position("im", Some(from), from + n).await },
                )
            })
            .collect();
        let mut won = Vec::new();
        for (n, racer) in (1..=2).zip(racers) {
            if ok(racer.await.expect("the racer ran"), "advance") {
                won.push(from + n);
            }
        }
        same(
            won.len(),
            1,
            "exactly one of two moves from one position wins",
        );
        same(
            ok(store.get_position("im").await, "get_position"),
            Some(won[0]),
            "the winner's position is stored",
        );
        // The next round starts from a known position.
        ok(
            store.advance_position("im", Some(won[0]), from + 100).await,
            "advance",
        );
    }
}

async fn rows_after_a_position_come_in_commit_order<S: CellStore + Outbox>(store: Arc<S>) {
    same(
        ok(store.list_after(0, 10).await, "list_after"),
        Vec::new(),
        "an empty outbox has nothing after 0",
    );
    let rows = five_rows(&*store).await;
    assert!(
        rows.windows(2).all(|w| w[0].id < w[1].id),
        "ids rise in commit order"
    );
    same(
        envelopes(&rows),
        envelopes(&ok(store.list_pending(0, &[], 100).await, "list_pending")),
        "the same rows as the publisher sees, in the same order",
    );
    same(
        ok(store.list_after(rows[1].id, 2).await, "list_after"),
        rows[2..4].to_vec(),
        "after a position, at most the limit",
    );
    same(
        ok(store.list_after(rows[4].id, 10).await, "list_after"),
        Vec::new(),
        "nothing after the last row",
    );
    same(
        ok(store.list_after(0, 0).await, "list_after"),
        Vec::new(),
        "limit 0 returns nothing",
    );
    ok(
        store
            .mark_delivered(&[rows[0].id, rows[2].id], at(10))
            .await,
        "mark_delivered",
    );
    same(
        ok(store.list_after(0, 100).await, "list_after"),
        rows.clone(),
        "delivered rows are still read after a position",
    );
}

async fn passed_rows_become_delivered_and_go_with_retention<S: CellStore + Outbox>(store: Arc<S>) {
    let rows = five_rows(&*store).await;
    ok(
        store.mark_delivered(&[rows[1].id], at(50)).await,
        "mark_delivered",
    );
    same(
        ok(
            store.mark_passed(rows[3].id, at(100), 2).await,
            "mark_passed",
        ),
        2,
        "at most the limit, lowest undelivered ids first",
    );
    same(
        ok(store.list_pending(0, &[], 100).await, "list_pending"),
        vec![rows[3].clone(), rows[4].clone()],
        "the passed rows are delivered now",
    );
    same(
        ok(
            store.mark_passed(rows[3].id, at(200), 10).await,
            "mark_passed",
        ),
        1,
        "the rest up to the position; rows delivered already are not counted",
    );
    same(
        ok(
            store.mark_passed(rows[3].id, at(300), 10).await,
            "mark_passed",
        ),
        0,
        "nothing more up to the position",
    );
    same(
        ok(store.list_pending(0, &[], 100).await, "list_pending"),
        vec![rows[4].clone()],
        "the row after the position stays pending",
    );
    same(
        ok(store.delete_delivered_before(at(150), 100).await, "delete"),
        3,
        "retention deletes rows passed (and delivered) before the cut-off",
    );
    same(
        ok(
            store.delete_delivered_before(at(1_000), 100).await,
            "delete",
        ),
        1,
        "and the row passed later with a later cut-off",
    );
    same(
        ok(store.list_after(0, 100).await, "list_after"),
        vec![rows[4].clone()],
        "only the row no consumer passed is left",
    );
    same(
        ok(
            store.mark_passed(i64::MAX, at(400), 10).await,
            "mark_passed",
        ),
        1,
        "with no consumer every row is passed",
    );
}
