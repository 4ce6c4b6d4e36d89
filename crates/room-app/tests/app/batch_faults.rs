//! A group commit the store refuses for good: its commands are committed one by one, so one
//! bad command fails alone.

use std::sync::Arc;

use async_trait::async_trait;
use room_app::ports::{
    Activation, CellStore, CellStoreRef, CommandRecord, CommitBatch, StoredEvent,
};
use room_app::testkit::InMemoryStore;
use room_app::{Error, Result};
use room_domain::{CommandId, CommandKind, RoomId, Timestamp};

use crate::support::{World, eventually, start_all, uid, user};

/// Refuses for good (as a statement the database rejects) every batch holding a command whose
/// id starts with `bad`.
struct RefusingStore(Arc<InMemoryStore>);

#[async_trait]
impl CellStore for RefusingStore {
    async fn activate(&self, room_id: &RoomId, node: &str) -> Result<Activation> {
        self.0.activate(room_id, node).await
    }

    async fn commit(&self, batch: &CommitBatch) -> Result<()> {
        if batch
            .commands
            .iter()
            .any(|c| c.command_id.as_str().starts_with("bad"))
        {
            return Err(Error::Internal("injected: statement refused".into()));
        }
        self.0.commit(batch).await
    }

    async fn list_events(
        &self,
        room_id: &RoomId,
        after: u64,
        limit: u32,
    ) -> Result<Vec<StoredEvent>> {
        self.0.list_events(room_id, after, limit).await
    }

    async fn get_command(&self, room_id: &RoomId, id: &CommandId) -> Result<Option<CommandRecord>> {
        self.0.get_command(room_id, id).await
    }

    async fn prune_log(&self, older_than: Timestamp, limit: u32) -> Result<u64> {
        self.0.prune_log(older_than, limit).await
    }
}

fn join() -> CommandKind {
    CommandKind::Join {
        password_verified: false,
        verified_lock: None,
    }
}

#[tokio::test]
async fn one_command_the_store_refuses_fails_alone_and_the_rest_of_its_batch_applies() {
    let store = Arc::new(InMemoryStore::new());
    let refusing: CellStoreRef = Arc::new(RefusingStore(store.clone()));
    let world = World::builder()
        .store(store)
        .cell_store(refusing)
        .build()
        .await;
    let room = world.open_room("r1", "alice", &[]).await;
    let version = world.state(&room).await.version;

    // One join held in its commit; three more queue behind it and share the next commit.
    let probe = &world.probe;
    let calls = probe.commit_calls();
    probe.close_gate();
    let held = start_all(vec![world.submit(&room, "held", user("held"), join())]).await;
    eventually("the first commit is held", || async move {
        probe.commit_calls() == calls + 1
    })
    .await;
    let queued = start_all(vec![
        world.submit(&room, "ok-bob", user("bob"), join()),
        world.submit(&room, "bad-carol", user("carol"), join()),
        world.submit(&room, "ok-dave", user("dave"), join()),
    ])
    .await;
    probe.open_gate();
    held.join().await[0].as_ref().expect("held join applied");
    let answers = queued.join().await;
    assert_eq!(answers[0].as_ref().expect("bob joined").events.len(), 1);
    assert!(
        matches!(answers[1], Err(Error::Internal(_))),
        "{:?}",
        answers[1]
    );
    assert_eq!(answers[2].as_ref().expect("dave joined").events.len(), 1);
    // The three were tried together first, then each alone.
    assert!(
        probe.commit_calls() >= calls + 5,
        "{}",
        probe.commit_calls()
    );

    // The cell's state is what storage holds: bob and dave in, carol not.
    let state = world.state(&room).await;
    assert_eq!(state.version, version + 3);
    assert_eq!(world.log(&room).await.len() as u64, state.version);
    assert!(state.members.contains_key(&uid("bob")));
    assert!(state.members.contains_key(&uid("dave")));
    assert!(!state.members.contains_key(&uid("carol")));

    // A repeat of an applied command gets its first reply, not a second join.
    let again = world
        .runtime()
        .execute(
            &room,
            room_domain::Command::new(crate::support::cid("ok-bob"), join()),
            user("bob"),
            None,
        )
        .await
        .unwrap();
    assert_eq!(&again, answers[0].as_ref().unwrap());
}

/// Answers every batch holding a command whose id starts with `ghost` as a duplicate, while
/// the log never shows that command: the window in which a pruned command's record is still
/// stored but its first events are gone.
struct GhostStore(Arc<InMemoryStore>);

#[async_trait]
impl CellStore for GhostStore {
    async fn activate(&self, room_id: &RoomId, node: &str) -> Result<Activation> {
        self.0.activate(room_id, node).await
    }

    async fn commit(&self, batch: &CommitBatch) -> Result<()> {
        if batch
            .commands
            .iter()
            .any(|c| c.command_id.as_str().starts_with("ghost"))
        {
            return Err(Error::AlreadyExists("injected: a stored command id".into()));
        }
        self.0.commit(batch).await
    }

    async fn list_events(
        &self,
        room_id: &RoomId,
        after: u64,
        limit: u32,
    ) -> Result<Vec<StoredEvent>> {
        self.0.list_events(room_id, after, limit).await
    }

    async fn get_command(&self, room_id: &RoomId, id: &CommandId) -> Result<Option<CommandRecord>> {
        self.0.get_command(room_id, id).await
    }

    async fn prune_log(&self, older_than: Timestamp, limit: u32) -> Result<u64> {
        self.0.prune_log(older_than, limit).await
    }
}

#[tokio::test]
async fn a_command_id_the_store_holds_but_the_log_no_longer_answers_gets_a_definite_refusal() {
    let store = Arc::new(InMemoryStore::new());
    let ghostly: CellStoreRef = Arc::new(GhostStore(store.clone()));
    let world = World::builder()
        .store(store)
        .cell_store(ghostly)
        .build()
        .await;
    let room = world.open_room("r1", "alice", &[]).await;

    // Alone: refused as a duplicate once, not planned again and again.
    let alone = start_all(vec![world.submit(&room, "ghost-1", user("bob"), join())])
        .await
        .join()
        .await;
    assert!(
        matches!(alone[0], Err(Error::AlreadyExists(_))),
        "{:?}",
        alone[0]
    );

    // In a batch: the others still commit.
    let probe = &world.probe;
    let calls = probe.commit_calls();
    probe.close_gate();
    let held = start_all(vec![world.submit(&room, "held", user("held"), join())]).await;
    eventually("the first commit is held", || async move {
        probe.commit_calls() == calls + 1
    })
    .await;
    let queued = start_all(vec![
        world.submit(&room, "ok-carol", user("carol"), join()),
        world.submit(&room, "ghost-2", user("dave"), join()),
        world.submit(&room, "ok-erin", user("erin"), join()),
    ])
    .await;
    probe.open_gate();
    held.join().await[0].as_ref().expect("held join applied");
    let answers = queued.join().await;
    assert!(answers[0].is_ok(), "{:?}", answers[0]);
    assert!(
        matches!(answers[1], Err(Error::AlreadyExists(_))),
        "{:?}",
        answers[1]
    );
    assert!(answers[2].is_ok(), "{:?}", answers[2]);
    let state = world.state(&room).await;
    assert!(state.members.contains_key(&uid("carol")));
    assert!(state.members.contains_key(&uid("erin")));
    assert!(!state.members.contains_key(&uid("dave")));
}
