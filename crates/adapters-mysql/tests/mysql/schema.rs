//! The schema as a step of its own: a migrated database reopened keeps its rows, a fresh one
//! is refused until `migrate` runs, migrating twice (or at once) changes nothing, a schema
//! behind, ahead, failed or edited is refused, and a bad or unreachable server is named.

use adapters_mysql::{Error, MySqlSettings, MySqlStore};
use room_app::ports::{CellStore, CreditKind, Wallet};
use room_domain::Coins;
use room_testkit::mysql::MySqlServer;
use sqlx::{Executor, MySqlConnection};

use crate::fixtures::{batch, fixture, room, user};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opening_a_migrated_database_again_keeps_its_rows() {
    let Some(f) = fixture("mysql::reopen", |_| {}).await else {
        return;
    };
    let a = room("room-a");
    let activation = f.store.activate(&a, "node-1").await.unwrap();
    f.store
        .commit(&batch(&a, activation, 0, "c1"))
        .await
        .unwrap();
    f.store.close().await;

    let settings = MySqlSettings::new(f.database.url.clone());
    let (one, two) = tokio::join!(MySqlStore::open(&settings), MySqlStore::open(&settings));
    let (one, two) = (one.expect("reopen"), two.expect("reopen at the same time"));
    assert_eq!(one.list_events(&a, 0, 10).await.unwrap().len(), 1);
    let again = two.activate(&a, "node-2").await.unwrap();
    assert_eq!(again.version, 1);
}

/// The rows of sqlx's bookkeeping table, as they identify each applied migration.
async fn migration_rows(conn: &mut MySqlConnection) -> Vec<(i64, bool, Vec<u8>, String)> {
    sqlx::query_as(
        "SELECT version, success, checksum, CAST(installed_on AS CHAR) FROM _sqlx_migrations
         ORDER BY version",
    )
    .fetch_all(&mut *conn)
    .await
    .expect("read _sqlx_migrations")
}

/// The error of opening a store on `settings`' database, checked to be a non-retryable
/// [`Error::Invalid`].
async fn refused_open(settings: &MySqlSettings) -> String {
    let error = MySqlStore::open(settings)
        .await
        .expect_err("the store refuses the schema");
    assert!(matches!(error, Error::Invalid(_)), "{error:?}");
    assert!(!error.is_retryable(), "{error:?}");
    error.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opening_a_fresh_database_fails_and_says_to_run_migrate() {
    let Some(server) = MySqlServer::from_env("mysql::fresh_open").await else {
        return;
    };
    let database = server.database().await;
    let settings = MySqlSettings::new(database.url.clone());
    let status = MySqlStore::schema_status(&settings).await.unwrap();
    assert_eq!(status.applied, 0, "{status:?}");
    assert!(
        status.known >= 2,
        "this build knows the wallet's migration: {status:?}"
    );
    assert!(!status.is_current());

    let message = refused_open(&settings).await;
    assert!(
        message.contains(&format!(
            "behind this build: at version 0 of {}",
            status.known
        )),
        "{message}"
    );
    assert!(message.contains("run `room-api migrate`"), "{message}");
    let mut conn = database.connect().await;
    let tables: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE()",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!(tables, 0, "opening created nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_migrate_the_store_opens_and_migrating_again_changes_nothing() {
    let Some(server) = MySqlServer::from_env("mysql::migrate").await else {
        return;
    };
    let database = server.database().await;
    let settings = MySqlSettings::new(database.url.clone());
    // Two deploy jobs at once: the migrator's lock lets one apply each migration.
    let (one, two) = tokio::join!(
        MySqlStore::migrate(&settings),
        MySqlStore::migrate(&settings)
    );
    one.expect("migrate");
    two.expect("migrate at the same time");
    let status = MySqlStore::schema_status(&settings).await.unwrap();
    assert!(status.is_current(), "{status:?}");
    assert_eq!(status.applied, status.known);

    let store = MySqlStore::open(&settings)
        .await
        .expect("a migrated database opens");
    store
        .credit("seed", CreditKind::Admin, &user("alice"), Coins(10))
        .await
        .unwrap();
    store.close().await;

    let mut conn = database.connect().await;
    let before = migration_rows(&mut conn).await;
    // Counted from the files: versions may leave gaps (the highest is `status.known`).
    let files = std::fs::read_dir(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations/mysql"),
    )
    .unwrap()
    .filter(|entry| {
        entry
            .as_ref()
            .is_ok_and(|entry| entry.path().extension().is_some_and(|ext| ext == "sql"))
    })
    .count();
    assert_eq!(before.len(), files, "one row per migration");
    assert_eq!(
        before.iter().map(|(version, ..)| *version).max(),
        Some(status.known)
    );
    assert!(before.iter().all(|(_, success, ..)| *success));
    MySqlStore::migrate(&settings)
        .await
        .expect("migrating a current schema succeeds");
    assert_eq!(
        migration_rows(&mut conn).await,
        before,
        "migrating again applied nothing"
    );
    let store = MySqlStore::open(&settings).await.expect("opens again");
    assert_eq!(
        store.balance(&user("alice")).await.unwrap(),
        Coins(10),
        "the rows are kept"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_behind_at_a_later_version_names_it() {
    let Some(f) = fixture("mysql::schema_behind", |_| {}).await else {
        return;
    };
    let settings = MySqlSettings::new(f.database.url.clone());
    let known = MySqlStore::schema_status(&settings).await.unwrap().known;
    // As if the newest migration had not run yet.
    let mut conn = f.database.connect().await;
    sqlx::query("DELETE FROM _sqlx_migrations WHERE version = ?")
        .bind(known)
        .execute(&mut conn)
        .await
        .unwrap();
    let message = refused_open(&settings).await;
    assert!(
        message.contains(&format!("at version {} of {known}", known - 1)),
        "{message}"
    );
    assert!(message.contains("room-api migrate"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_ahead_of_this_build_is_refused_by_open_and_migrate() {
    let Some(f) = fixture("mysql::schema_ahead", |_| {}).await else {
        return;
    };
    let settings = MySqlSettings::new(f.database.url.clone());
    let mut conn = f.database.connect().await;
    // What a newer build's `migrate` leaves.
    conn.execute(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time)
         VALUES (9999, 'from the future', TRUE, x'00', 0)",
    )
    .await
    .unwrap();
    let status = MySqlStore::schema_status(&settings).await.unwrap();
    assert_eq!(status.unknown, [9999], "{status:?}");
    assert_eq!(
        status.applied, status.known,
        "every known migration is there"
    );

    let message = refused_open(&settings).await;
    assert!(message.contains("ahead of this build"), "{message}");
    assert!(
        message.contains("9999"),
        "names the unknown migration: {message}"
    );
    let error = MySqlStore::migrate(&settings)
        .await
        .expect_err("an older build does not migrate a newer schema");
    assert!(matches!(error, Error::Invalid(_)), "{error:?}");
    assert!(error.to_string().contains("ahead of this build"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_or_edited_migration_is_refused() {
    let Some(f) = fixture("mysql::schema_damaged", |_| {}).await else {
        return;
    };
    let settings = MySqlSettings::new(f.database.url.clone());
    let mut conn = f.database.connect().await;
    conn.execute("UPDATE _sqlx_migrations SET checksum = x'00' WHERE version = 1")
        .await
        .unwrap();
    let message = refused_open(&settings).await;
    assert!(
        message.contains("migration 1 was applied with other contents"),
        "{message}"
    );

    conn.execute("UPDATE _sqlx_migrations SET success = FALSE WHERE version = 2")
        .await
        .unwrap();
    let status = MySqlStore::schema_status(&settings).await.unwrap();
    assert_eq!((status.failed, status.modified), (vec![2], vec![1]));
    let message = refused_open(&settings).await;
    assert!(message.contains("migration 2 failed part way"), "{message}");
    assert!(
        MySqlStore::migrate(&settings).await.is_err(),
        "migrate cannot mend it"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_server_is_unavailable_and_a_bad_url_is_invalid() {
    // Port 1 on loopback: nothing listens there.
    let mut settings = MySqlSettings::new("mysql://root@127.0.0.1:1/room");
    settings.acquire_timeout_ms = 2_000;
    let error = MySqlStore::open(&settings)
        .await
        .expect_err("nothing listens");
    assert!(matches!(error, Error::Unavailable(_)), "{error:?}");

    let error = MySqlStore::open(&MySqlSettings::new("postgres://x"))
        .await
        .expect_err("not a MySQL url");
    assert!(matches!(error, Error::Invalid(_)), "{error:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_without_a_database_is_invalid_to_migrate_and_open() {
    let Some(server) = MySqlServer::from_env("mysql::no_database").await else {
        return;
    };
    let settings = MySqlSettings::new(server.url_of(""));
    let migrated = MySqlStore::migrate(&settings).await;
    assert!(
        matches!(&migrated, Err(Error::Invalid(m)) if m.contains("names no database")),
        "{migrated:?}"
    );
    let opened = MySqlStore::open(&settings).await;
    assert!(
        matches!(&opened, Err(Error::Invalid(m)) if m.contains("names no database")),
        "{:?}",
        opened.err()
    );
}
