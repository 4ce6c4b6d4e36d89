//! The error translation against a real server's errors (on the server in
//! `ROOM_TEST_MYSQL_URL`; skipped when it is unset, see `room_app::testkit::service_url`).

use room_testkit::mysql;
use sqlx::{Connection, Executor, MySqlConnection};

use super::*;

/// A connection to a fresh database with one table, in strict mode as the store's are.
async fn table(test: &str) -> Option<(mysql::TestDatabase, MySqlConnection)> {
    let server = mysql::MySqlServer::from_env(test).await?;
    let database = server.database().await;
    let mut conn = database.connect().await;
    conn.execute(
        "CREATE TABLE t (id VARCHAR(4) NOT NULL PRIMARY KEY, n BIGINT NOT NULL CHECK (n >= 0))
         ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin",
    )
    .await
    .unwrap();
    conn.execute("SET SESSION sql_mode = CONCAT(@@SESSION.sql_mode, ',STRICT_ALL_TABLES')")
        .await
        .unwrap();
    conn.execute("INSERT INTO t VALUES ('a', 1)").await.unwrap();
    Some((database, conn))
}

#[tokio::test]
async fn constraint_violations_are_already_exists_or_invalid() {
    let Some((_database, mut conn)) = table("codec::constraints").await else {
        return;
    };
    let duplicate = conn
        .execute("INSERT INTO t VALUES ('a', 2)")
        .await
        .unwrap_err();
    assert!(is_duplicate_key(&duplicate));
    assert!(matches!(db(duplicate), Error::AlreadyExists(_)));

    let negative = conn
        .execute("INSERT INTO t VALUES ('b', -1)")
        .await
        .unwrap_err();
    let error = db(negative);
    assert!(matches!(error, Error::Invalid(_)), "{error:?}");
}

#[tokio::test]
async fn values_the_columns_cannot_hold_are_internal_and_bad_columns_corrupt() {
    let Some((_database, mut conn)) = table("codec::values").await else {
        return;
    };
    let too_long = conn
        .execute("INSERT INTO t VALUES ('abcde', 1)")
        .await
        .unwrap_err();
    let error = db(too_long);
    assert!(matches!(error, Error::Internal(_)), "{error:?}");
    assert!(!error.is_retryable());

    let unknown = conn.execute("SELECT nope FROM t").await.unwrap_err();
    assert!(matches!(db(unknown), Error::Internal(_)));

    let row = sqlx::query("SELECT id FROM t")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    let error = col::<i64>(&row, "id").unwrap_err();
    assert!(matches!(error, Error::Corrupt(_)), "{error:?}");
}

#[tokio::test]
async fn a_read_only_server_and_lock_failures_are_retryable() {
    let Some((database, mut conn)) = table("codec::retryable").await else {
        return;
    };
    conn.execute("SET SESSION TRANSACTION READ ONLY")
        .await
        .unwrap();
    conn.execute("BEGIN").await.unwrap();
    let read_only = conn
        .execute("INSERT INTO t VALUES ('c', 1)")
        .await
        .unwrap_err();
    let number = server_error(&read_only).map(|e| e.number());
    assert_eq!(number, Some(number::READ_ONLY_TRANSACTION), "{read_only:?}");
    assert!(!is_lock_failure(&read_only));
    let error = db(read_only);
    assert!(matches!(error, Error::Unavailable(_)), "{error:?}");
    conn.execute("ROLLBACK").await.unwrap();

    // A row lock held by another connection, and a wait of one second for it.
    let mut holder = database.connect().await;
    holder.execute("BEGIN").await.unwrap();
    holder
        .execute("SELECT * FROM t WHERE id = 'a' FOR UPDATE")
        .await
        .unwrap();
    conn.execute("SET SESSION TRANSACTION READ WRITE")
        .await
        .unwrap();
    conn.execute("SET SESSION innodb_lock_wait_timeout = 1")
        .await
        .unwrap();
    let timeout = conn
        .execute("UPDATE t SET n = 5 WHERE id = 'a'")
        .await
        .unwrap_err();
    assert!(is_lock_failure(&timeout), "{timeout:?}");
    assert!(db(timeout).is_retryable());
    holder.execute("ROLLBACK").await.unwrap();
    let _ = holder.close().await;

    for error in [sqlx::Error::PoolTimedOut, sqlx::Error::PoolClosed] {
        assert!(matches!(db(error), Error::Unavailable(_)));
    }
}
