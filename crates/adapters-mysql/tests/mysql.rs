//! What the conformance suites cannot see of [`MySqlStore`]: the rows a fenced commit leaves
//! in the tables, transactions retried after a lock wait timeout, the schema's id rules,
//! migrations as a step of their own (and stores that refuse a schema behind or ahead of
//! them), the wallet's operations racing on two nodes of one database, the schema's own
//! guard against a negative balance, and the index the recovery worker's query reads. Each test runs on a database of its own on the server in
//! `ROOM_TEST_MYSQL_URL` (skipped or failed as `room_app::testkit::service_url` says).

use std::sync::Arc;

use adapters_mysql::{Error, MySqlSettings, MySqlStore};
use room_app::ports::{
    Activation, CellStore, CommandRecord, CommitBatch, CreditKind, DebitStatus, GiftOrders, Payout,
    RoomSummary, StoredEvent, Timer, Wallet,
};
use room_app::testkit::eventually;
use room_domain::{
    Actor, ApplyGift, Coins, Command, CommandId, CommandKind, Event, EventEnvelope, GiftId,
    GiftOrder, GiftSnapshot, OrderId, OrderStatus, RocketId, RoomId, Timestamp, UserId,
};
use room_testkit::mysql::{MySqlServer, TestDatabase};
use sqlx::{AssertSqlSafe, Executor, MySqlConnection};

const T0: Timestamp = Timestamp(1_764_460_800_000);

fn room(id: &str) -> RoomId {
    RoomId::new(id).expect("valid room id")
}

fn user(id: &str) -> UserId {
    UserId::new(id).expect("valid user id")
}

/// A batch of one command with one event at `version + 1` that also writes the outbox, a
/// timer, a payout and the summary: every table a commit touches.
fn batch(room_id: &RoomId, activation: Activation, version: u64, command: &str) -> CommitBatch {
    let seq = version + 1;
    let event = Event::RoomHeatChanged {
        heat: 10,
        delta: 10,
    };
    let command_id = CommandId::new(command).expect("valid command id");
    CommitBatch {
        room_id: room_id.clone(),
        epoch: activation.epoch,
        expected_version: version,
        commands: vec![CommandRecord {
            command_id: command_id.clone(),
            command: Command::new(
                command_id,
                CommandKind::Kick {
                    user: user("mallory"),
                    ban_seconds: Some(60),
                },
            ),
            actor: Actor::user(user("owner")),
            applied_at: T0,
            first_seq: seq,
            last_seq: seq,
        }],
        outbox: vec![EventEnvelope::new(room_id.clone(), seq, T0, &event)],
        events: vec![StoredEvent {
            seq,
            occurred_at: T0,
            event,
        }],
        orders: Vec::new(),
        timers: vec![Timer {
            timer_id: format!("{room_id}:{command}"),
            room_id: room_id.clone(),
            due_at: T0,
            command: CommandKind::LaunchRocket {
                rocket_id: RocketId(1),
                level: 1,
                scheduled_at: T0,
            },
        }],
        payouts: vec![Payout {
            op_id: format!("{room_id}:{command}"),
            kind: CreditKind::RocketReward,
            user: user("dave"),
            amount: Coins(5),
            room_id: room_id.clone(),
        }],
        summary: Some(RoomSummary {
            room_id: room_id.clone(),
            owner: user("owner"),
            name: format!("Room {command}"),
            open: true,
            heat: 10,
            online: 1,
            locked: false,
            version: seq,
        }),
    }
}

/// A migrated database and a store on it.
struct Fixture {
    database: TestDatabase,
    store: Arc<MySqlStore>,
}

async fn fixture(test: &str, tune: impl FnOnce(&mut MySqlSettings)) -> Option<Fixture> {
    let server = MySqlServer::from_env(test).await?;
    let database = server.database().await;
    let mut settings = MySqlSettings::new(database.url.clone());
    settings.max_connections = 4;
    tune(&mut settings);
    MySqlStore::migrate(&settings)
        .await
        .expect("the new database migrates");
    let store = Arc::new(MySqlStore::open(&settings).await.expect("the store opens"));
    Some(Fixture { database, store })
}

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
    assert_eq!(before.len() as i64, status.known, "one row per migration");
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

/// A second store on the fixture's database: another node of one deployment.
async fn second_node(f: &Fixture) -> Arc<MySqlStore> {
    let mut settings = MySqlSettings::new(f.database.url.clone());
    settings.max_connections = 4;
    Arc::new(
        MySqlStore::open(&settings)
            .await
            .expect("the second store opens"),
    )
}

/// The sum and count of the done debits the ledger holds.
async fn debited(conn: &mut MySqlConnection) -> (i64, i64) {
    sqlx::query_as(
        "SELECT CAST(COALESCE(SUM(amount), 0) AS SIGNED), COUNT(*) FROM wallet_entries
         WHERE kind = 'debit' AND state = 'done'",
    )
    .fetch_one(&mut *conn)
    .await
    .expect("sum the debits")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_debits_and_credits_of_one_user_on_two_nodes_never_overdraw() {
    let Some(f) = fixture("mysql::wallet_concurrent_debits", |_| {}).await else {
        return;
    };
    let nodes = [f.store.clone(), second_node(&f).await];
    let alice = user("alice");
    const START: i64 = 500;
    const CREDITS: i64 = 10;
    const CREDIT: i64 = 20;
    nodes[0]
        .credit("seed", CreditKind::Admin, &alice, Coins(START))
        .await
        .unwrap();

    // 200 debits of 1 to 7 coins (about 800 coins asked, 700 there) and 10 credits, spread
    // over both nodes and started together.
    let start = Arc::new(tokio::sync::Barrier::new(210));
    let mut debits = Vec::new();
    for i in 0..200_i64 {
        let (store, alice, start) = (nodes[i as usize % 2].clone(), alice.clone(), start.clone());
        let amount = i % 7 + 1;
        debits.push(tokio::spawn(async move {
            start.wait().await;
            (
                amount,
                store.debit(&format!("d-{i}"), &alice, Coins(amount)).await,
            )
        }));
    }
    let mut credits = Vec::new();
    for i in 0..CREDITS {
        let (store, alice, start) = (nodes[i as usize % 2].clone(), alice.clone(), start.clone());
        credits.push(tokio::spawn(async move {
            start.wait().await;
            store
                .credit(&format!("c-{i}"), CreditKind::Refund, &alice, Coins(CREDIT))
                .await
        }));
    }
    let (mut taken, mut successes, mut refused) = (0, 0, 0);
    for task in debits {
        match task.await.unwrap() {
            (amount, Ok(after)) => {
                assert!(
                    after.0 >= 0,
                    "a debit answered a negative balance {after:?}"
                );
                taken += amount;
                successes += 1;
            }
            (_, Err(Error::InsufficientFunds { balance })) => {
                assert!(balance.0 >= 0, "a refusal reported a negative balance");
                refused += 1;
            }
            (_, Err(other)) => panic!("a debit must succeed or find the funds short: {other:?}"),
        }
    }
    for task in credits {
        task.await.unwrap().expect("a concurrent credit succeeds");
    }

    let end = nodes[1].balance(&alice).await.unwrap().0;
    assert!(end >= 0, "the balance went to {end}");
    assert_eq!(
        START + CREDITS * CREDIT - taken,
        end,
        "the successful debits are exactly the balance drop"
    );
    assert!(refused > 0, "the debits asked for more than there was");
    let mut conn = f.database.connect().await;
    assert_eq!(
        debited(&mut conn).await,
        (taken, successes),
        "the ledger holds one entry per successful debit"
    );
    // Every transaction takes the account row and then its entry key: no deadlock to retry.
    assert_eq!(
        (nodes[0].lock_retries(), nodes[1].lock_retries()),
        (0, 0),
        "no wallet transaction was a deadlock victim or timed out on a lock"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn one_op_id_debited_at_once_on_two_nodes_moves_coins_once() {
    let Some(f) = fixture("mysql::wallet_same_op", |_| {}).await else {
        return;
    };
    let nodes = [f.store.clone(), second_node(&f).await];
    // Alice has plenty: a repeat's own debit succeeds and must be rolled back when it finds
    // the entry. Bob has exactly the amount: a repeat finds the funds short and must answer
    // from the entry, not with InsufficientFunds.
    let (alice, bob) = (user("alice"), user("bob"));
    nodes[0]
        .credit("seed-a", CreditKind::Admin, &alice, Coins(100))
        .await
        .unwrap();
    nodes[0]
        .credit("seed-b", CreditKind::Admin, &bob, Coins(5))
        .await
        .unwrap();

    let start = Arc::new(tokio::sync::Barrier::new(40));
    let mut tasks = Vec::new();
    for i in 0..40 {
        let (store, start) = (nodes[i % 2].clone(), start.clone());
        let (who, op) = if i % 4 < 2 {
            (alice.clone(), "gift-a")
        } else {
            (bob.clone(), "gift-b")
        };
        tasks.push(tokio::spawn(async move {
            start.wait().await;
            (who.clone(), store.debit(op, &who, Coins(5)).await)
        }));
    }
    for task in tasks {
        let (who, answer) = task.await.unwrap();
        let expected = if who == alice { 95 } else { 0 };
        assert_eq!(
            answer
                .expect("every attempt of the debit gets its answer")
                .0,
            expected,
            "{who}: every attempt answers the first one's balance"
        );
    }
    assert_eq!(nodes[1].balance(&alice).await.unwrap(), Coins(95));
    assert_eq!(nodes[1].balance(&bob).await.unwrap(), Coins(0));
    let mut conn = f.database.connect().await;
    assert_eq!(debited(&mut conn).await, (10, 2), "one entry per operation");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn settling_a_debit_while_another_node_runs_it_is_all_or_nothing() {
    let Some(f) = fixture("mysql::wallet_settle_race", |_| {}).await else {
        return;
    };
    let nodes = [f.store.clone(), second_node(&f).await];
    let alice = user("alice");
    nodes[0]
        .credit("seed", CreditKind::Admin, &alice, Coins(1_000))
        .await
        .unwrap();
    for round in 0..20 {
        let op = format!("gift-{round}");
        let before = nodes[0].balance(&alice).await.unwrap().0;
        let start = Arc::new(tokio::sync::Barrier::new(5));
        let mut debits = Vec::new();
        for _ in 0..4 {
            let (store, alice, op, start) =
                (nodes[0].clone(), alice.clone(), op.clone(), start.clone());
            debits.push(tokio::spawn(async move {
                start.wait().await;
                store.debit(&op, &alice, Coins(7)).await
            }));
        }
        start.wait().await;
        let settled = nodes[1].settle_debit(&op).await.unwrap();
        let mut answers = Vec::new();
        for task in debits {
            answers.push(task.await.unwrap());
        }
        let after = nodes[0].balance(&alice).await.unwrap().0;
        match settled {
            DebitStatus::Debited => {
                assert_eq!(after, before - 7, "round {round}: debited once");
                assert!(
                    answers
                        .iter()
                        .all(|a| matches!(a, Ok(b) if b.0 == before - 7)),
                    "round {round}: every debit answers the one debit: {answers:?}"
                );
            }
            DebitStatus::Void => {
                assert_eq!(after, before, "round {round}: a void debit moved nothing");
                assert!(
                    answers.iter().all(|a| matches!(a, Err(Error::Conflict(_)))),
                    "round {round}: every debit of a void id fails: {answers:?}"
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_schema_refuses_a_negative_balance_whoever_writes_it() {
    let Some(f) = fixture("mysql::wallet_check", |_| {}).await else {
        return;
    };
    let alice = user("alice");
    f.store
        .credit("seed", CreditKind::Admin, &alice, Coins(10))
        .await
        .unwrap();

    let mut conn = f.database.connect().await;
    for statement in [
        "UPDATE wallet_accounts SET balance = balance - 11 WHERE user_id = 'alice'",
        "INSERT INTO wallet_accounts (user_id, balance) VALUES ('mallory', -1)",
    ] {
        let error = conn
            .execute(statement)
            .await
            .expect_err("the CHECK constraint refuses a negative balance");
        let server = error.as_database_error().expect("a server error");
        assert_eq!(
            server.kind(),
            sqlx::error::ErrorKind::CheckViolation,
            "{statement}: {server}"
        );
        assert!(
            server
                .message()
                .contains("wallet_accounts_balance_not_negative"),
            "{statement}: names the constraint: {server}"
        );
    }
    assert_eq!(f.store.balance(&alice).await.unwrap(), Coins(10));
    assert_eq!(f.store.balance(&user("mallory")).await.unwrap(), Coins(0));
}

fn gift_order(sender: &str, id: &str, created_at: i64) -> GiftOrder {
    let apply = ApplyGift {
        order_id: OrderId::new(id).expect("valid order id"),
        sender: user(sender),
        recipients: vec![user("bob")],
        gift: GiftSnapshot {
            gift_id: GiftId::new("rose").expect("valid gift id"),
            price: Coins(10),
            heat: 10,
            fuel: 5,
            lucky: false,
        },
        count: 1,
        lucky_draw: 0,
    };
    GiftOrder::new(room("room-a"), &apply, Timestamp(T0.0 + created_at)).expect("total fits")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unfinished_orders_are_read_through_their_own_index() {
    let Some(f) = fixture("mysql::unfinished_index", |_| {}).await else {
        return;
    };
    let orders: Vec<GiftOrder> = (0..6)
        .map(|i| gift_order("alice", &format!("o-{i}"), i))
        .collect();
    for order in &orders {
        f.store.create_or_get(order).await.unwrap();
    }
    // Every status the saga writes, the last three finished.
    let statuses = [
        OrderStatus::Pending,
        OrderStatus::Debited,
        OrderStatus::Applied,
        OrderStatus::Completed,
        OrderStatus::Failed,
        OrderStatus::Compensated,
    ];
    for (order, status) in orders.iter().zip(statuses) {
        let mut moved = order.clone();
        moved.status = status;
        f.store.update(&moved, OrderStatus::Pending).await.unwrap();
    }

    let mut conn = f.database.connect().await;
    let pending_at: Vec<(String, Option<i64>)> =
        sqlx::query_as("SELECT order_id, pending_at FROM gift_orders ORDER BY order_id")
            .fetch_all(&mut conn)
            .await
            .unwrap();
    let expected: Vec<(String, Option<i64>)> = orders
        .iter()
        .zip(statuses)
        .map(|(order, status)| {
            let at = (!status.is_terminal()).then_some(order.created_at.as_millis());
            (order.order_id.to_string(), at)
        })
        .collect();
    assert_eq!(
        pending_at, expected,
        "pending_at is the creation time of unfinished orders only"
    );

    let listed = f
        .store
        .list_unfinished(Timestamp(T0.0 + 100), None, 10)
        .await
        .unwrap();
    let listed: Vec<&str> = listed.iter().map(|o| o.order_id.as_str()).collect();
    assert_eq!(listed, ["o-0", "o-1", "o-2"]);

    // The range the recovery worker asks for is read from the index of unfinished orders,
    // not from the table's rows of every order: with many finished orders (the usual table),
    // the planner takes the index.
    let finished: Vec<String> = (0..2_000)
        .map(|i| format!("('f-{i}', 'room-a', 'alice', 'COMPLETED', {i}, '{{}}')"))
        .collect();
    conn.execute(AssertSqlSafe(format!(
        "INSERT INTO gift_orders (order_id, room_id, sender, status, created_at, body) VALUES {}",
        finished.join(", ")
    )))
    .await
    .unwrap();
    conn.execute("ANALYZE TABLE gift_orders").await.unwrap();
    let plan: String = sqlx::query_scalar(
        "EXPLAIN FORMAT=JSON SELECT body FROM gift_orders
         WHERE pending_at >= 0 AND pending_at < 9223372036854775807
         ORDER BY pending_at, order_id, sender LIMIT 10",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert!(
        plan.contains(r#""key": "gift_orders_unfinished""#),
        "the query uses the index: {plan}"
    );
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
