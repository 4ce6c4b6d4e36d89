//! The conformance suite of [`SnapshotStore`]: the newest snapshot per room wins.

use std::future::Future;
use std::sync::Arc;

use super::fixtures::{ok, room, same, snapshot};
use crate::ports::SnapshotStore;

/// Runs every [`SnapshotStore`] check, each against a fresh store from `fresh`.
pub async fn snapshot_store_suite<S, F, Fut>(fresh: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<S>>,
    S: SnapshotStore + 'static,
{
    absent_until_put(fresh().await).await;
    newest_wins(fresh().await).await;
    rooms_are_independent(fresh().await).await;
}

async fn absent_until_put<S: SnapshotStore>(store: Arc<S>) {
    let a = room("room-a");
    same(
        ok(store.get_latest(&a).await, "get_latest"),
        None,
        "a room without snapshots has none",
    );
    let five = snapshot(&a, 5);
    ok(store.put(&five).await, "put");
    same(
        ok(store.get_latest(&a).await, "get_latest"),
        Some(five),
        "the stored snapshot reads back whole",
    );
}

async fn newest_wins<S: SnapshotStore>(store: Arc<S>) {
    let a = room("room-a");
    ok(store.put(&snapshot(&a, 5)).await, "put v5");
    ok(store.put(&snapshot(&a, 3)).await, "put v3");
    same(
        ok(store.get_latest(&a).await, "get_latest"),
        Some(snapshot(&a, 5)),
        "an older snapshot does not replace a newer one",
    );
    ok(store.put(&snapshot(&a, 8)).await, "put v8");
    same(
        ok(store.get_latest(&a).await, "get_latest"),
        Some(snapshot(&a, 8)),
        "a newer snapshot replaces an older one",
    );
}

async fn rooms_are_independent<S: SnapshotStore>(store: Arc<S>) {
    let a = room("room-a");
    let b = room("room-b");
    ok(store.put(&snapshot(&a, 9)).await, "put a");
    ok(store.put(&snapshot(&b, 2)).await, "put b");
    same(
        ok(store.get_latest(&b).await, "get_latest"),
        Some(snapshot(&b, 2)),
        "another room's newer snapshot does not hide this room's",
    );
    same(
        ok(store.get_latest(&a).await, "get_latest"),
        Some(snapshot(&a, 9)),
        "room a keeps its snapshot",
    );
}
