//! Reads while a commit is in flight: queries wait for it, peeks answer from the newest
//! state, and no query sees a batch whose commit failed.

use std::sync::Arc;
use std::time::Duration;

use room_domain::RoomId;

use super::fixtures::join;
use crate::support::{Fault, Started, World, eventually, start_all, user};

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
