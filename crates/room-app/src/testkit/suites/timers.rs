//! The conformance suite of [`Timers`]: commits arm timers, the timer worker lists the due
//! ones earliest first and deletes a fired timer unless it was re-armed meanwhile.

use std::future::Future;
use std::sync::Arc;

use room_domain::RoomId;

use super::fixtures::{at, batch, far_future, ok, room, same, timer};
use crate::ports::{CellStore, Timer, Timers};

/// Runs every [`Timers`] check, each against a fresh store from `fresh`. Timers are armed
/// only by [`CellStore::commit`], so the store must implement both.
pub async fn timers_suite<S, F, Fut>(fresh: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<S>>,
    S: Timers + CellStore + 'static,
{
    list_due_orders_filters_and_limits(fresh().await).await;
    delete_only_when_due_at_matches(fresh().await).await;
}

/// Commits `timers` to `room_id` in one batch on top of `version`.
async fn arm<S: CellStore>(store: &S, room_id: &RoomId, version: u64, timers: Vec<Timer>) {
    // Activating again is the simplest way to learn a valid epoch.
    let activation = ok(store.activate(room_id, "node-1").await, "activate");
    let mut b = batch(
        room_id,
        activation,
        version,
        &[(&format!("arm-{version}"), 1)],
    );
    b.timers = timers;
    ok(store.commit(&b).await, "commit arming timers");
}

async fn list_due_orders_filters_and_limits<S: Timers + CellStore>(store: Arc<S>) {
    same(
        ok(store.list_due(far_future(), None, 10).await, "list_due"),
        Vec::new(),
        "no timers at first",
    );
    let a = room("room-a");
    let b = room("room-b");
    let t_a = timer("a:launch:1", &a, at(300));
    let t_b = timer("b:launch:1", &b, at(100));
    let t_c = timer("a:publish:3", &a, at(200));
    let t_d = timer("a:launch:2", &a, at(500));
    // Same due time as t_c: ties come by timer id.
    let t_e = timer("a:aaa", &a, at(200));
    arm(&*store, &a, 0, vec![t_a.clone(), t_c.clone(), t_d.clone()]).await;
    arm(&*store, &b, 0, vec![t_b.clone()]).await;
    arm(&*store, &a, 1, vec![t_e.clone()]).await;

    same(
        ok(store.list_due(at(300), None, 10).await, "list_due"),
        vec![t_b.clone(), t_e.clone(), t_c.clone(), t_a.clone()],
        "due timers of every room, earliest first (ties by id), `now` included",
    );
    same(
        ok(store.list_due(at(300), None, 2).await, "list_due"),
        vec![t_b.clone(), t_e.clone()],
        "limit keeps the earliest",
    );
    same(
        ok(store.list_due(at(99), None, 10).await, "list_due"),
        Vec::new(),
        "nothing is due before the earliest timer",
    );
    same(
        ok(store.list_due(far_future(), None, 10).await, "list_due"),
        vec![
            t_b.clone(),
            t_e.clone(),
            t_c.clone(),
            t_a.clone(),
            t_d.clone(),
        ],
        "every timer is due eventually",
    );
    same(
        ok(
            store.list_due(at(300), Some(t_e.cursor()), 10).await,
            "list_due",
        ),
        vec![t_c.clone(), t_a.clone()],
        "after a cursor: the timers past it (a tie on due time goes by id)",
    );
    // Paging by cursor, as the timer pass goes past timers it could not fire.
    let mut paged = Vec::new();
    let mut after = None;
    loop {
        let page = ok(store.list_due(far_future(), after, 2).await, "list_due");
        assert!(page.len() <= 2, "a page holds at most `limit`: {page:?}");
        let Some(last) = page.last() else { break };
        after = Some(last.cursor());
        paged.extend(page);
    }
    same(
        paged,
        vec![t_b, t_e, t_c, t_a, t_d],
        "pages of 2 reach every timer once, in order, none of them fired",
    );
}

async fn delete_only_when_due_at_matches<S: Timers + CellStore>(store: Arc<S>) {
    let a = room("room-a");
    let first = timer("a:launch:1", &a, at(100));
    let other = timer("a:launch:2", &a, at(150));
    arm(&*store, &a, 0, vec![first.clone(), other.clone()]).await;
    // Re-armed by a later commit before the worker deletes the fired one.
    let rearmed = timer("a:launch:1", &a, at(400));
    arm(&*store, &a, 1, vec![rearmed.clone()]).await;

    ok(
        Timers::delete(&*store, "a:launch:1", at(100)).await,
        "delete with the old due time",
    );
    same(
        ok(store.list_due(far_future(), None, 10).await, "list_due"),
        vec![other.clone(), rearmed.clone()],
        "a re-armed timer survives a delete for its old due time",
    );
    ok(
        Timers::delete(&*store, "a:launch:1", at(400)).await,
        "delete with the current due time",
    );
    ok(
        Timers::delete(&*store, "no-such-timer", at(400)).await,
        "deleting an unknown timer is not an error",
    );
    same(
        ok(store.list_due(far_future(), None, 10).await, "list_due"),
        vec![other],
        "a timer deleted at its due time is gone, others stay",
    );
}
