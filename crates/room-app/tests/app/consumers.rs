//! Consumers of the durable facts fed from the outbox ([`OutboxSource`]): every fact in commit
//! order, the position stored after the work and resumed from, a retryable failure holding the
//! consumer on its fact, a permanent one passed over, one reader per consumer, gaps in the ids
//! waited at; rows every consumer passed become delivered for retention ([`mark_passed`]);
//! and a room's creation handed over before it is answered ([`FactConsumer::hand_early`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use room_app::consumers::{
    FactConsumer, FactError, FactHandler, FactSource, GAP_WAIT, OutboxSource, mark_passed,
};
use room_app::ports::{
    ClockRef, ConsumerPositions, ConsumerPositionsRef, DeadLetter, Outbox, OutboxMessage, OutboxRef,
};
use room_app::testkit::eventually;
use room_app::{InMemoryStore, Result, workers};
use room_domain::{Event, EventEnvelope, RoomId, Timestamp};
use tokio_util::sync::CancellationToken;

use crate::support::{World, user_actor};

/// Records the facts it handled; fails the ones a test names.
#[derive(Default)]
struct Recorder {
    seen: Mutex<Vec<String>>,
    /// event id → fail retryably while set.
    failing: Mutex<HashMap<String, Arc<AtomicBool>>>,
    /// event ids refused for good (once each).
    refused: Mutex<Vec<String>>,
    /// Whether it takes runs of facts ([`FactHandler::handle_all`]).
    takes_runs: bool,
    /// The runs it handled.
    runs: Mutex<Vec<Vec<String>>>,
    /// event ids that fail (retryably) any run holding them.
    spoil_runs: Mutex<Vec<String>>,
}

impl Recorder {
    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }

    /// Fails `event_id` retryably until the returned flag is cleared.
    fn fail_while(&self, event_id: &str) -> Arc<AtomicBool> {
        let flag = Arc::new(AtomicBool::new(true));
        self.failing
            .lock()
            .unwrap()
            .insert(event_id.to_owned(), flag.clone());
        flag
    }
}

#[async_trait]
impl FactHandler for Recorder {
    async fn handle(&self, envelope: &EventEnvelope) -> std::result::Result<(), FactError> {
        let id = &envelope.event_id;
        if let Some(flag) = self.failing.lock().unwrap().get(id)
            && flag.load(Ordering::SeqCst)
        {
            return Err(FactError::retryable(format!("{id} cannot be handled yet")));
        }
        if self.refused.lock().unwrap().contains(id) {
            return Err(FactError::permanent(format!("{id} is refused")));
        }
        self.seen.lock().unwrap().push(id.clone());
        Ok(())
    }

    async fn handle_all(
        &self,
        envelopes: &[EventEnvelope],
    ) -> Option<std::result::Result<(), FactError>> {
        if !self.takes_runs {
            return None;
        }
        let ids: Vec<String> = envelopes.iter().map(|e| e.event_id.clone()).collect();
        if let Some(id) = ids
            .iter()
            .find(|id| self.spoil_runs.lock().unwrap().contains(id))
        {
            return Some(Err(FactError::retryable(format!("a run with {id} fails"))));
        }
        self.seen.lock().unwrap().extend(ids.iter().cloned());
        self.runs.lock().unwrap().push(ids);
        Some(Ok(()))
    }
}

fn claim(world: &World, owner: &str) -> workers::Claim {
    workers::Claim {
        claims: world.store.clone(),
        owner: owner.to_owned(),
        ttl: Duration::from_secs(30),
    }
}

/// Runs consumer `name` over `recorder` from `outbox`, reading as `owner`, until the token is
/// cancelled.
fn start(
    world: &World,
    outbox: OutboxRef,
    name: &str,
    owner: &str,
    recorder: Arc<dyn FactHandler>,
) -> (CancellationToken, tokio::task::JoinHandle<Result<()>>) {
    let source = OutboxSource::new(
        outbox,
        world.store.clone(),
        claim(world, owner),
        Duration::from_millis(10),
        3,
    );
    let consumer = Arc::new(FactConsumer::new(name, recorder, world.clock.clone()).unwrap());
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let cancel = cancel.clone();
        async move { source.run(consumer, cancel).await }
    });
    (cancel, task)
}

/// Every outbox row, in id order.
async fn rows(world: &World) -> Vec<OutboxMessage> {
    world.store.list_after(0, 10_000).await.unwrap()
}

fn ids(rows: &[OutboxMessage]) -> Vec<String> {
    rows.iter()
        .map(|row| row.envelope.event_id.clone())
        .collect()
}

async fn position(world: &World, name: &str) -> Option<i64> {
    world.store.get_position(name).await.unwrap()
}

#[tokio::test]
async fn every_fact_is_handled_in_commit_order_and_the_position_follows() {
    let world = World::new().await;
    world.open_room("r1", "alice", &["bob"]).await;
    world.open_room("r2", "carol", &[]).await;
    let recorder = Arc::new(Recorder::default());
    let (cancel, task) = start(
        &world,
        world.store.clone(),
        "stats",
        "node-a",
        recorder.clone(),
    );
    let all = rows(&world).await;
    assert!(all.len() >= 5, "facts to consume: {all:?}");
    eventually("every fact is handled", || {
        std::future::ready(recorder.seen() == ids(&all))
    })
    .await;
    eventually("the position is the last row's", || async {
        position(&world, "stats").await == all.last().map(|row| row.id)
    })
    .await;

    world.open_room("r3", "dave", &[]).await;
    let all = rows(&world).await;
    eventually("facts committed later are handled too", || {
        std::future::ready(recorder.seen() == ids(&all))
    })
    .await;
    cancel.cancel();
    task.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_consumer_that_takes_runs_gets_the_facts_of_a_page_as_one_run() {
    let world = World::new().await;
    world.open_room("r1", "alice", &["bob"]).await;
    world.open_room("r2", "carol", &["dave"]).await;
    let recorder = Arc::new(Recorder {
        takes_runs: true,
        ..Recorder::default()
    });
    let (cancel, task) = start(
        &world,
        world.store.clone(),
        "stats",
        "node-a",
        recorder.clone(),
    );
    let all = rows(&world).await;
    assert!(all.len() >= 6, "facts to consume: {all:?}");
    eventually("every fact is handled once, in order", || {
        std::future::ready(recorder.seen() == ids(&all))
    })
    .await;
    eventually("the position is the last row's", || async {
        position(&world, "stats").await == all.last().map(|row| row.id)
    })
    .await;
    let runs = recorder.runs.lock().unwrap().clone();
    // Pages of 3 (see `start`): runs of up to 3, in order; a page of one fact goes alone.
    assert!(runs.iter().all(|run| run.len() <= 3), "{runs:?}");
    assert!(
        runs.iter().filter(|run| run.len() > 1).count() >= 2,
        "{runs:?}"
    );
    cancel.cancel();
    task.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_failed_run_is_handed_over_one_fact_at_a_time() {
    let world = World::new().await;
    world.open_room("r1", "alice", &["bob", "carol"]).await;
    let all = rows(&world).await;
    let bad = all[1].envelope.event_id.clone();
    let recorder = Arc::new(Recorder {
        takes_runs: true,
        spoil_runs: Mutex::new(vec![bad.clone()]),
        refused: Mutex::new(vec![bad.clone()]),
        ..Recorder::default()
    });
    let (cancel, task) = start(
        &world,
        world.store.clone(),
        "stats",
        "node-a",
        recorder.clone(),
    );
    let others: Vec<String> = ids(&all).into_iter().filter(|id| *id != bad).collect();
    eventually(
        "the others are handled, each once, and the bad one passed over",
        || std::future::ready(recorder.seen() == others),
    )
    .await;
    eventually("the position passes it", || async {
        position(&world, "stats").await == all.last().map(|row| row.id)
    })
    .await;
    let runs = recorder.runs.lock().unwrap().clone();
    assert!(runs.iter().all(|run| !run.contains(&bad)), "{runs:?}");
    cancel.cancel();
    task.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_consumer_started_again_resumes_after_its_position() {
    let world = World::new().await;
    world.open_room("r1", "alice", &["bob"]).await;
    let first = Arc::new(Recorder::default());
    let (cancel, task) = start(
        &world,
        world.store.clone(),
        "stats",
        "node-a",
        first.clone(),
    );
    let before = rows(&world).await;
    eventually("the first run handles what is there", || async {
        position(&world, "stats").await == before.last().map(|row| row.id)
    })
    .await;
    cancel.cancel();
    task.await.unwrap().unwrap();

    world.open_room("r2", "carol", &[]).await;
    let after: Vec<OutboxMessage> = rows(&world).await[before.len()..].to_vec();
    let second = Arc::new(Recorder::default());
    let (cancel, task) = start(
        &world,
        world.store.clone(),
        "stats",
        "node-a",
        second.clone(),
    );
    eventually("the second run handles what came since", || {
        std::future::ready(second.seen() == ids(&after))
    })
    .await;
    assert_eq!(first.seen(), ids(&before));
    cancel.cancel();
    task.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_retryable_failure_holds_the_consumer_on_its_fact_and_keeps_what_was_done() {
    let world = World::new().await;
    world.open_room("r1", "alice", &["bob", "carol"]).await;
    let all = rows(&world).await;
    let stuck = &all[2];
    let recorder = Arc::new(Recorder::default());
    let failing = recorder.fail_while(&stuck.envelope.event_id);
    let (cancel, task) = start(
        &world,
        world.store.clone(),
        "stats",
        "node-a",
        recorder.clone(),
    );
    eventually(
        "what came before the failing fact is stored as done",
        || async { position(&world, "stats").await == Some(all[1].id) },
    )
    .await;
    // Minutes of retries later, nothing after the failing fact was handled.
    tokio::time::sleep(Duration::from_secs(120)).await;
    assert_eq!(recorder.seen(), ids(&all[..2]));
    assert_eq!(position(&world, "stats").await, Some(all[1].id));

    failing.store(false, Ordering::SeqCst);
    eventually(
        "the fact and the ones after it are handled, in order",
        || std::future::ready(recorder.seen() == ids(&all)),
    )
    .await;
    cancel.cancel();
    task.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_permanent_failure_is_passed_over() {
    let world = World::new().await;
    world.open_room("r1", "alice", &["bob"]).await;
    let all = rows(&world).await;
    let recorder = Arc::new(Recorder::default());
    recorder
        .refused
        .lock()
        .unwrap()
        .push(all[1].envelope.event_id.clone());
    let (cancel, task) = start(
        &world,
        world.store.clone(),
        "stats",
        "node-a",
        recorder.clone(),
    );
    eventually("the position passes the refused fact", || async {
        position(&world, "stats").await == all.last().map(|row| row.id)
    })
    .await;
    let mut expected = ids(&all);
    expected.remove(1);
    assert_eq!(recorder.seen(), expected);
    cancel.cancel();
    task.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_process_reads_for_a_consumer_and_another_takes_over_when_it_stops() {
    let world = World::new().await;
    world.open_room("r1", "alice", &["bob"]).await;
    let (a, b) = (Arc::new(Recorder::default()), Arc::new(Recorder::default()));
    let (a_stop, a_task) = start(&world, world.store.clone(), "stats", "node-a", a.clone());
    let before = rows(&world).await;
    eventually("node a reads the facts", || {
        std::future::ready(a.seen() == ids(&before))
    })
    .await;
    let (b_stop, b_task) = start(&world, world.store.clone(), "stats", "node-b", b.clone());
    world.open_room("r2", "carol", &[]).await;
    let all = rows(&world).await;
    eventually("node a reads the new facts too", || {
        std::future::ready(a.seen() == ids(&all))
    })
    .await;
    assert_eq!(b.seen(), Vec::<String>::new(), "node b read nothing");

    // Stopping releases the claim: b takes over from the stored position.
    a_stop.cancel();
    a_task.await.unwrap().unwrap();
    world.open_room("r3", "dave", &[]).await;
    let later: Vec<OutboxMessage> = rows(&world).await[all.len()..].to_vec();
    eventually("node b reads what came after a stopped", || {
        std::future::ready(b.seen() == ids(&later))
    })
    .await;
    b_stop.cancel();
    b_task.await.unwrap().unwrap();
}

/// An outbox that hides one row from readers while `hidden` is set: a transaction that has
/// its id but has not committed yet, or one that rolled back.
struct Hiding {
    inner: Arc<InMemoryStore>,
    id: i64,
    hidden: AtomicBool,
}

#[async_trait]
impl Outbox for Hiding {
    async fn list_pending(
        &self,
        after: i64,
        skip: &[RoomId],
        limit: u32,
    ) -> Result<Vec<OutboxMessage>> {
        self.inner.list_pending(after, skip, limit).await
    }
    async fn mark_delivered(&self, ids: &[i64], at: Timestamp) -> Result<()> {
        self.inner.mark_delivered(ids, at).await
    }
    async fn delete_delivered_before(&self, before: Timestamp, limit: u32) -> Result<u64> {
        self.inner.delete_delivered_before(before, limit).await
    }
    async fn list_after(&self, after: i64, limit: u32) -> Result<Vec<OutboxMessage>> {
        let mut rows = self.inner.list_after(after, limit).await?;
        if self.hidden.load(Ordering::SeqCst) {
            rows.retain(|row| row.id != self.id);
        }
        Ok(rows)
    }
    async fn mark_passed(&self, through: i64, at: Timestamp, limit: u32) -> Result<u64> {
        self.inner.mark_passed(through, at, limit).await
    }
    async fn dead_letter(&self, id: i64, reason: &str, at: Timestamp) -> Result<bool> {
        self.inner.dead_letter(id, reason, at).await
    }
    async fn list_dead_letters(&self, after: i64, limit: u32) -> Result<Vec<DeadLetter>> {
        self.inner.list_dead_letters(after, limit).await
    }
    async fn replay_dead_letter(&self, id: i64) -> Result<bool> {
        self.inner.replay_dead_letter(id).await
    }
}

#[tokio::test(start_paused = true)]
async fn a_gap_in_the_ids_holds_the_consumer_until_the_row_comes_in_order() {
    let world = World::new().await;
    world.open_room("r1", "alice", &["bob", "carol"]).await;
    let all = rows(&world).await;
    let hiding = Arc::new(Hiding {
        inner: world.store.clone(),
        id: all[2].id,
        hidden: AtomicBool::new(true),
    });
    let recorder = Arc::new(Recorder::default());
    let (cancel, task) = start(&world, hiding.clone(), "stats", "node-a", recorder.clone());
    eventually("the consumer handles what lies before the gap", || {
        std::future::ready(recorder.seen() == ids(&all[..2]))
    })
    .await;
    tokio::time::sleep(GAP_WAIT / 2).await;
    assert_eq!(
        recorder.seen(),
        ids(&all[..2]),
        "nothing after the gap is handled while it may still fill"
    );
    hiding.hidden.store(false, Ordering::SeqCst);
    eventually("the late row and the rest are handled, in order", || {
        std::future::ready(recorder.seen() == ids(&all))
    })
    .await;
    cancel.cancel();
    task.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_gap_that_never_fills_is_passed_after_a_wait() {
    let world = World::new().await;
    world.open_room("r1", "alice", &["bob", "carol"]).await;
    let all = rows(&world).await;
    let hiding = Arc::new(Hiding {
        inner: world.store.clone(),
        id: all[2].id,
        hidden: AtomicBool::new(true),
    });
    let recorder = Arc::new(Recorder::default());
    let (cancel, task) = start(&world, hiding, "stats", "node-a", recorder.clone());
    let mut expected = ids(&all);
    expected.remove(2);
    eventually("the rows after the gap are handled", || {
        std::future::ready(recorder.seen() == expected)
    })
    .await;
    eventually("the position passes the gap", || async {
        position(&world, "stats").await == all.last().map(|row| row.id)
    })
    .await;
    cancel.cancel();
    task.await.unwrap().unwrap();
}

#[tokio::test]
async fn rows_every_consumer_passed_go_after_the_retention_and_no_others() {
    let world = World::new().await;
    world.open_room("r1", "alice", &["bob", "carol"]).await;
    let all = rows(&world).await;
    let outbox: OutboxRef = world.store.clone();
    let positions: ConsumerPositionsRef = world.store.clone();
    let clock: ClockRef = world.clock.clone();
    let consumers = ["im".to_owned(), "stats".to_owned()];
    let retention = Duration::from_secs(3 * 86_400);
    let prune = || workers::prune_outbox(&outbox, &clock, retention, 100, 10);

    positions
        .advance_position("im", None, all[3].id)
        .await
        .unwrap();
    assert_eq!(
        mark_passed(&outbox, &positions, &consumers, &clock, 100, 10)
            .await
            .unwrap(),
        0,
        "a consumer without a position has passed nothing"
    );
    positions
        .advance_position("stats", None, all[1].id)
        .await
        .unwrap();
    assert_eq!(
        mark_passed(&outbox, &positions, &consumers, &clock, 100, 10)
            .await
            .unwrap(),
        2,
        "the rows both consumers passed"
    );
    world.clock.advance(retention - Duration::from_secs(1));
    assert_eq!(prune().await.unwrap(), 0, "not before the retention");
    world.clock.advance(Duration::from_secs(2));
    assert_eq!(prune().await.unwrap(), 2, "passed rows go after it");
    assert_eq!(rows(&world).await, all[2..].to_vec(), "the others stay");

    world.clock.advance(retention * 10);
    assert_eq!(
        prune().await.unwrap(),
        0,
        "rows a consumer has not passed never go"
    );
    assert_eq!(
        mark_passed(&outbox, &positions, &[], &clock, 100, 10)
            .await
            .unwrap(),
        (all.len() - 2) as u64,
        "with no consumer, every row is passed"
    );
}

#[tokio::test(start_paused = true)]
async fn a_rooms_creation_is_handed_early_before_it_is_answered_and_never_fails_it() {
    let recorder = Arc::new(Recorder::default());
    let clock = room_testkit::ManualClock::at(crate::support::T0);
    let world = World::builder()
        .early(Arc::new(
            FactConsumer::new("im", recorder.clone(), clock.clone()).unwrap(),
        ))
        .build()
        .await;
    let alice = user_actor("alice");
    let room = world
        .service
        .create_room(&alice, "room".into(), None, "sg".into(), None)
        .await
        .unwrap();
    let created = format!("{}:1", room.room_id);
    assert_eq!(
        recorder.seen(),
        vec![created],
        "the creation fact was handed over before the creation was answered"
    );
    let log = world.log(&room.room_id).await;
    assert!(matches!(log[0].event, Event::RoomCreated { .. }));

    // A consumer that fails, or does not answer, does not fail the creation.
    let stuck = Arc::new(Stuck);
    let world = World::builder()
        .early(Arc::new(FactConsumer::new("im", stuck, clock).unwrap()))
        .build()
        .await;
    world
        .service
        .create_room(&alice, "room".into(), None, "sg".into(), None)
        .await
        .expect("created although the early consumer never answers");
}

/// A consumer that never answers.
struct Stuck;

#[async_trait]
impl FactHandler for Stuck {
    async fn handle(&self, _envelope: &EventEnvelope) -> std::result::Result<(), FactError> {
        std::future::pending().await
    }
}
