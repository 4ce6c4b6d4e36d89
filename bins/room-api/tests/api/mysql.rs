//! The service on MariaDB (`ROOM_TEST_MYSQL_URL`, a database of its own per test): it refuses
//! a schema that is behind and says to migrate; after `room-api migrate`'s step it serves a
//! gift from top-up to balance, and a second service over the same database sees it.

use axum::http::StatusCode;
use room_node::{App, Storage};
use room_testkit::mysql::MySqlServer;
use serde_json::json;

use crate::support::{TestApp, settings};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_runs_on_mysql_once_migrated() {
    let Some(server) = MySqlServer::from_env("room-api::mysql").await else {
        return;
    };
    let database = server.database().await;
    let dir = tempfile::TempDir::new().unwrap();
    let mut on_mysql = settings(&dir);
    on_mysql.storage.url = database.url.clone();
    on_mysql.cluster.single_node = true;

    let refused = App::build(on_mysql.clone())
        .await
        .err()
        .expect("a schema behind is refused");
    let message = format!("{refused:#}");
    assert!(message.contains("room-api migrate"), "{message}");

    Storage::migrate(&on_mysql.storage).await.unwrap();
    // Migrating again changes nothing.
    Storage::migrate(&on_mysql.storage).await.unwrap();

    let change = {
        let url = database.url.clone();
        move |s: &mut room_node::Settings| {
            s.storage.url = url;
            s.cluster.single_node = true;
        }
    };
    let t = TestApp::with(change.clone()).await;
    let room_id = t.room_with_members(100).await;
    let (status, body) = t.gift(&room_id, "alice", "o1", "rose", 3, &["bob"]).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let after = body["coin_balance_after"].as_i64().unwrap();
    assert!(after < 100, "{body}");
    let (status, repeat) = t.gift(&room_id, "alice", "o1", "rose", 3, &["bob"]).await;
    assert_eq!(status, StatusCode::OK, "{repeat}");
    assert_eq!(repeat["coin_balance_after"], json!(after));
    assert_eq!(t.balance("alice").await, after);
    t.app.stop().await;

    // Another process over the same database (after this one stopped) sees all of it.
    let again = TestApp::with(change).await;
    assert_eq!(again.balance("alice").await, after);
    let room = again.room(&room_id).await;
    assert!(room["heat"].as_i64().unwrap() > 0, "{room}");
}
