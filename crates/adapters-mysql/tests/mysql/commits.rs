//! Commits on MySQL: a fenced commit writes no row, a commit that times out on a lock is
//! retried (and answered as retryable when it never gets it), and ids compare as exact
//! strings of up to 64 characters.

use adapters_mysql::Error;
use room_app::ports::CellStore;
use room_app::testkit::eventually;
use room_domain::{CommandId, RoomId};
use room_testkit::mysql::TestDatabase;
use sqlx::{AssertSqlSafe, Executor, MySqlConnection};

use crate::fixtures::{batch, fixture, room};

/// Every row a commit can write, counted per table, plus the room's cell row.
async fn rows(conn: &mut MySqlConnection) -> Vec<(String, i64)> {
    let mut counts = Vec::new();
    for table in [
        "room_commands",
        "room_events",
        "room_outbox",
        "room_timers",
        "room_payouts",
        "room_summaries",
    ] {
        let count: i64 = sqlx::query_scalar(AssertSqlSafe(format!("SELECT COUNT(*) FROM {table}")))
            .fetch_one(&mut *conn)
            .await
            .expect("count rows");
        counts.push((table.to_owned(), count));
    }
    let cell: (i64, i64) = sqlx::query_as("SELECT epoch, version FROM room_cells")
        .fetch_one(&mut *conn)
        .await
        .expect("the cell row");
    counts.push(("room_cells epoch".into(), cell.0));
    counts.push(("room_cells version".into(), cell.1));
    counts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_epoch_commits_nothing_and_is_not_owner() {
    let Some(f) = fixture("mysql::stale_epoch", |_| {}).await else {
        return;
    };
    let a = room("room-a");
    let old = f.store.activate(&a, "node-1").await.unwrap();
    f.store.commit(&batch(&a, old, 0, "c1")).await.unwrap();
    let new = f.store.activate(&a, "node-2").await.unwrap();
    assert!(new.epoch > old.epoch);

    let mut conn = f.database.connect().await;
    let before = rows(&mut conn).await;
    let fenced = f.store.commit(&batch(&a, old, 1, "c2")).await;
    assert!(matches!(fenced, Err(Error::NotOwner(_))), "{fenced:?}");
    assert!(fenced.unwrap_err().is_retryable());
    assert_eq!(
        rows(&mut conn).await,
        before,
        "a fenced commit writes no row"
    );

    f.store.commit(&batch(&a, new, 1, "c2")).await.unwrap();
    let after = rows(&mut conn).await;
    assert_ne!(after, before, "the owner's commit writes");
}

/// Takes the room's cell row lock on a connection of its own, as another node's commit
/// would, until the returned connection rolls back.
async fn hold_cell_lock(database: &TestDatabase, room_id: &RoomId) -> MySqlConnection {
    let mut holder = database.connect().await;
    holder.execute("BEGIN").await.unwrap();
    let locked: Option<i64> =
        sqlx::query_scalar("SELECT epoch FROM room_cells WHERE room_id = ? FOR UPDATE")
            .bind(room_id.as_str())
            .fetch_optional(&mut holder)
            .await
            .unwrap();
    assert!(locked.is_some(), "the room's cell row exists");
    holder
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_that_keeps_timing_out_on_a_lock_is_retried_then_retryable() {
    let Some(f) = fixture("mysql::lock_wait_timeout", |s| {
        s.lock_wait_timeout_secs = 1;
        s.lock_attempts = 3;
    })
    .await
    else {
        return;
    };
    let a = room("room-a");
    let activation = f.store.activate(&a, "node-1").await.unwrap();
    let mut holder = hold_cell_lock(&f.database, &a).await;

    let error = f
        .store
        .commit(&batch(&a, activation, 0, "c1"))
        .await
        .expect_err("the cell row stays locked through every attempt");
    assert!(matches!(error, Error::Unavailable(_)), "{error:?}");
    assert!(error.is_retryable(), "{error:?}");
    let message = error.to_string();
    assert!(
        message.contains("1205"),
        "names the lock wait timeout: {message}"
    );
    assert!(message.contains("3 attempts"), "says it retried: {message}");
    assert_eq!(
        f.store.lock_retries(),
        2,
        "two retries after the first attempt"
    );

    holder.execute("ROLLBACK").await.unwrap();
    let mut conn = f.database.connect().await;
    assert!(
        rows(&mut conn).await[..6]
            .iter()
            .all(|(_, count)| *count == 0),
        "the timed-out commit wrote nothing"
    );
    f.store
        .commit(&batch(&a, activation, 0, "c1"))
        .await
        .expect("the same commit succeeds once the lock is free");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_that_timed_out_on_a_lock_succeeds_on_a_later_attempt() {
    let Some(f) = fixture("mysql::lock_retry", |s| {
        s.lock_wait_timeout_secs = 1;
        s.lock_attempts = 5;
    })
    .await
    else {
        return;
    };
    let a = room("room-a");
    let activation = f.store.activate(&a, "node-1").await.unwrap();
    let mut holder = hold_cell_lock(&f.database, &a).await;

    let store = f.store.clone();
    let room_a = a.clone();
    let commit =
        tokio::spawn(async move { store.commit(&batch(&room_a, activation, 0, "c1")).await });
    let store = f.store.clone();
    eventually(
        "the first attempt timed out and the commit is retried",
        || {
            let store = store.clone();
            async move { store.lock_retries() >= 1 }
        },
    )
    .await;
    holder.execute("ROLLBACK").await.unwrap();

    commit
        .await
        .unwrap()
        .expect("a retry after the lock is released succeeds");
    let events = f.store.list_events(&a, 0, 10).await.unwrap();
    assert_eq!(events.len(), 1, "the commit is stored once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_compare_as_exact_strings_and_hold_64_characters() {
    let Some(f) = fixture("mysql::ids", |_| {}).await else {
        return;
    };
    // A case-insensitive or accent-insensitive collation would take these for one room.
    let rooms = ["room-a", "Room-A", "room-á", "ROOM-A"].map(room);
    for r in &rooms {
        let activation = f.store.activate(r, "node-1").await.unwrap();
        assert_eq!(activation.epoch, 1, "{r} is a room of its own");
        f.store
            .commit(&batch(r, activation, 0, "c1"))
            .await
            .unwrap();
    }
    for r in &rooms {
        let events = f.store.list_events(r, 0, 10).await.unwrap();
        assert_eq!(events.len(), 1, "{r} has its own log");
    }

    // 64 characters of 3 bytes each (the most an id's characters take: they are of the Basic
    // Multilingual Plane): the limit is in characters.
    let long = room(&"用".repeat(64));
    let activation = f.store.activate(&long, "node-1").await.unwrap();
    f.store
        .commit(&batch(&long, activation, 0, &"c".repeat(64)))
        .await
        .expect("a 64-character room id and command id are stored");
    let stored = f
        .store
        .get_command(&long, &CommandId::new("c".repeat(64)).unwrap())
        .await
        .unwrap();
    assert!(stored.is_some());
}
