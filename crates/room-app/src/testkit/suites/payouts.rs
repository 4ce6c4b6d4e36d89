//! The conformance suite of [`Payouts`]: commits record owed credits (the first record of an
//! op id wins), the payout worker lists them oldest first (on after a given one, to go past
//! credits it cannot pay) and deletes the paid ones.

use std::future::Future;
use std::sync::Arc;

use super::fixtures::{batch, ok, payout, room, same, user};
use crate::ports::{CellStore, CreditKind, Payout, Payouts};

/// Runs every [`Payouts`] check, each against a fresh store from `fresh`. Payouts are
/// recorded only by [`CellStore::commit`], so the store must implement both.
pub async fn payouts_suite<S, F, Fut>(fresh: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<S>>,
    S: Payouts + CellStore + 'static,
{
    list_and_delete(fresh().await).await;
    a_recorded_payout_is_never_replaced(fresh().await).await;
}

/// What `store` lists as owed after `after`, at most `limit`; the check fails on an error.
async fn pending<S: Payouts>(store: &S, after: Option<&str>, limit: u32) -> Vec<Payout> {
    ok(
        store.list_pending(after.map(str::to_owned), limit).await,
        "list_pending",
    )
}

async fn list_and_delete<S: Payouts + CellStore>(store: Arc<S>) {
    same(
        pending(&*store, None, 10).await,
        Vec::new(),
        "nothing owed at first",
    );
    let a = room("room-a");
    let b = room("room-b");
    let in_a = ok(store.activate(&a, "node-1").await, "activate");
    let in_b = ok(store.activate(&b, "node-1").await, "activate");
    // Op ids deliberately sort against the order of the commits.
    let first = vec![
        payout("rocket:a:9:zed", &a, 40),
        payout("rocket:a:9:amy", &a, 60),
    ];
    let second = vec![payout("rocket:b:1:kim", &b, 100)];
    let mut batch_a = batch(&a, in_a, 0, &[("c1", 1)]);
    batch_a.payouts = first.clone();
    let mut batch_b = batch(&b, in_b, 0, &[("c1", 1)]);
    batch_b.payouts = second.clone();
    ok(store.commit(&batch_a).await, "commit");
    ok(store.commit(&batch_b).await, "commit");

    let all: Vec<_> = first.iter().chain(&second).cloned().collect();
    same(
        pending(&*store, None, 10).await,
        all.clone(),
        "owed credits, oldest first",
    );
    same(
        pending(&*store, None, 2).await,
        all[..2].to_vec(),
        "limit keeps the oldest",
    );
    same(
        pending(&*store, Some("rocket:a:9:zed"), 10).await,
        all[1..].to_vec(),
        "after an owed credit: those owed after it",
    );
    same(
        pending(&*store, Some("rocket:a:9:amy"), 1).await,
        all[2..].to_vec(),
        "after and limit together",
    );
    same(
        pending(&*store, Some("never-owed"), 10).await,
        all.clone(),
        "after a credit not owed: from the oldest",
    );
    ok(Payouts::delete(&*store, "rocket:a:9:zed").await, "delete");
    ok(
        Payouts::delete(&*store, "never-owed").await,
        "deleting an unknown payout is not an error",
    );
    same(
        pending(&*store, None, 10).await,
        all[1..].to_vec(),
        "a paid credit is forgotten",
    );
}

async fn a_recorded_payout_is_never_replaced<S: Payouts + CellStore>(store: Arc<S>) {
    let a = room("room-a");
    let activation = ok(store.activate(&a, "node-1").await, "activate");
    let owed = payout("rocket:a:1:amy", &a, 40);
    let other = payout("rocket:a:1:kim", &a, 70);
    let mut first = batch(&a, activation, 0, &[("c1", 1)]);
    first.payouts = vec![owed.clone(), other.clone()];
    ok(store.commit(&first).await, "commit");

    // A later commit (a replayed launch) owes the same op id again, differently.
    let mut replayed = payout("rocket:a:1:amy", &room("room-b"), 999);
    replayed.kind = CreditKind::LuckyReward;
    replayed.user = user("mallory");
    let mut second = batch(&a, activation, 1, &[("c2", 1)]);
    second.payouts = vec![replayed, payout("rocket:a:2:amy", &a, 5)];
    ok(store.commit(&second).await, "commit");
    same(
        pending(&*store, None, 10).await,
        vec![owed, other, payout("rocket:a:2:amy", &a, 5)],
        "a second write of an owed op id leaves the first, in its place",
    );
}
