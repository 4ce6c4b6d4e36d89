//! What an in-process consumer reading the outbox by position relies on, that only a real
//! server shows: ids are allotted when a row is inserted, and transactions commit in any
//! order, so a row may become visible after a higher one. `Outbox::list_after` must not skip
//! it: it waits for the transaction still writing in the range it reads. Runs on a database of
//! its own on the server in `ROOM_TEST_MYSQL_URL` (skipped or failed as
//! `room_app::testkit::service_url` says).

use std::time::Duration;

use adapters_mysql::{MySqlSettings, MySqlStore};
use room_app::ports::Outbox;
use room_domain::{Event, EventEnvelope, RoomId, Timestamp};
use room_testkit::mysql::MySqlServer;
use sqlx::{Executor, MySqlConnection};

/// Inserts one outbox row of `room` on `conn` (inside whatever transaction it has open) and
/// answers its id.
async fn insert_row(conn: &mut MySqlConnection, room: &str) -> i64 {
    let room_id = RoomId::new(room).unwrap();
    let event = Event::RoomHeatChanged {
        heat: 10,
        delta: 10,
    };
    let envelope = EventEnvelope::new(room_id, 1, Timestamp(1_764_460_800_000), &event);
    let inserted = sqlx::query("INSERT INTO room_outbox (room_id, seq, envelope) VALUES (?, 1, ?)")
        .bind(room)
        .bind(serde_json::to_string(&envelope).unwrap())
        .execute(&mut *conn)
        .await
        .unwrap();
    i64::try_from(inserted.last_insert_id()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_committed_after_a_higher_one_is_not_skipped() {
    let Some(server) = MySqlServer::from_env("outbox_order::not_skipped").await else {
        return;
    };
    let database = server.database().await;
    let mut settings = MySqlSettings::new(database.url.clone());
    settings.max_connections = 4;
    // Long enough that the reader's lock wait outlasts the test's polling.
    settings.lock_wait_timeout_secs = 30;
    MySqlStore::migrate(&settings).await.unwrap();
    let store = MySqlStore::open(&settings).await.unwrap();

    // Room a's commit takes the lower id and is still open; room b's takes the next and
    // commits.
    let mut slow = database.connect().await;
    slow.execute("BEGIN").await.unwrap();
    let lower = insert_row(&mut slow, "room-a").await;
    let mut fast = database.connect().await;
    let higher = insert_row(&mut fast, "room-b").await;
    assert!(lower < higher, "ids are allotted in insert order");

    let reader = tokio::spawn({
        let store = store.clone();
        async move { store.list_after(0, 10).await }
    });
    // The reader's statement runs on the server (and waits there for room a's transaction):
    // a read that did not wait would have taken its snapshot without room a's row.
    let mut watcher = database.connect().await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let running: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST
             WHERE DB = DATABASE() AND ID <> CONNECTION_ID() AND INFO LIKE 'SELECT id, room_id, seq, envelope%'",
        )
        .fetch_one(&mut watcher)
        .await
        .unwrap();
        if running > 0 {
            break;
        }
        assert!(
            !reader.is_finished(),
            "the read ended before room a's transaction did: {:?}",
            reader
                .await
                .unwrap()
                .map(|rows| rows.iter().map(|r| r.id).collect::<Vec<_>>())
        );
        assert!(
            tokio::time::Instant::now() < deadline,
            "the reader's statement never ran"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    slow.execute("COMMIT").await.unwrap();

    let rows = reader.await.unwrap().expect("the read succeeds");
    let ids: Vec<i64> = rows.iter().map(|row| row.id).collect();
    assert_eq!(
        ids,
        vec![lower, higher],
        "the row committed last is read with the other, in id order"
    );
    store.close().await;
}
