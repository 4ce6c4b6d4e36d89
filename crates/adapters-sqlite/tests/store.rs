//! What the conformance suites cannot see: the file on disk, reopening, corrupt rows, and the
//! single writer under load from many tasks.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use adapters_sqlite::{Error, SqliteSettings, SqliteStore};
use room_app::ports::{
    Activation, CatalogGift, CellStore, CommandRecord, CommitBatch, CreditKind, GiftCatalog,
    GiftOrders, Outbox, Payout, Payouts, RoomDirectory, RoomSummary, SnapshotStore, StoredEvent,
    Timer, Timers, Wallet,
};
use room_domain::{
    Actor, ApplyGift, Coins, Command, CommandId, CommandKind, Event, EventEnvelope, GiftId,
    GiftOrder, GiftSnapshot, OrderId, OrderKeys, OrderStatus, RocketId, RoomId, RoomState,
    Snapshot, Timestamp, UserId,
};
use sqlx::{ConnectOptions, Connection};
use tempfile::TempDir;

const T0: Timestamp = Timestamp(1_764_460_800_000);

fn room(id: &str) -> RoomId {
    RoomId::new(id).unwrap()
}

fn user(id: &str) -> UserId {
    UserId::new(id).unwrap()
}

fn url(path: &Path) -> String {
    format!("sqlite://{}", path.display())
}

async fn open(path: &Path) -> SqliteStore {
    SqliteStore::open(&SqliteSettings::new(url(path)))
        .await
        .expect("the store opens")
}

/// A new database at `path` with the migrations numbered below `version` applied, as a
/// release before them left it; answers the connection to write its rows with.
async fn schema_before(path: &Path, version: u32) -> sqlx::SqliteConnection {
    let previous = TempDir::new().unwrap();
    let migrations = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations/sqlite");
    for entry in std::fs::read_dir(&migrations).unwrap() {
        let name = entry.unwrap().file_name();
        let number: u32 = name.to_str().unwrap()[..4].parse().unwrap();
        if number < version {
            std::fs::copy(migrations.join(&name), previous.path().join(&name)).unwrap();
        }
    }
    let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .connect()
        .await
        .unwrap();
    sqlx::migrate::Migrator::new(previous.path())
        .await
        .unwrap()
        .run(&mut conn)
        .await
        .unwrap();
    conn
}

/// A batch of `commands` (one heat event each) on top of `version`, with an outbox row per
/// event and the room's summary.
fn batch(room_id: &RoomId, activation: Activation, version: u64, commands: &[&str]) -> CommitBatch {
    let mut b = CommitBatch {
        room_id: room_id.clone(),
        epoch: activation.epoch,
        expected_version: version,
        commands: Vec::new(),
        events: Vec::new(),
        outbox: Vec::new(),
        orders: Vec::new(),
        timers: Vec::new(),
        payouts: Vec::new(),
        summary: None,
    };
    for (i, id) in commands.iter().enumerate() {
        let seq = version + 1 + i as u64;
        let event = Event::RoomHeatChanged {
            heat: seq as i64,
            delta: 1,
        };
        let command_id = CommandId::new(id).unwrap();
        b.commands.push(CommandRecord {
            command_id: command_id.clone(),
            command: Command::new(command_id, CommandKind::SetChatEnabled { enabled: true }),
            actor: Actor::System,
            applied_at: T0,
            first_seq: seq,
            last_seq: seq,
        });
        b.outbox
            .push(EventEnvelope::new(room_id.clone(), seq, T0, &event));
        b.events.push(StoredEvent {
            seq,
            occurred_at: T0,
            event,
        });
    }
    b.summary = Some(RoomSummary {
        room_id: room_id.clone(),
        owner: user("owner"),
        name: "Night talk".into(),
        open: true,
        heat: (version + commands.len() as u64) as i64,
        online: 2,
        locked: false,
        version: version + commands.len() as u64,
        region: "eu-west".into(),
        cover_url: Some("https://img.example/night.png".into()),
        seats_taken: 2,
        created_at: T0,
        recent_heat_milli: (version + commands.len() as u64) as i64 * 1_000,
        recent_heat_at: T0,
    });
    b
}

fn order(id: &str, room_id: &RoomId) -> GiftOrder {
    let apply = ApplyGift {
        order_id: OrderId::new(id).unwrap(),
        sender: user("alice"),
        recipients: vec![user("bob")],
        gift: GiftSnapshot {
            gift_id: GiftId::new("rose").unwrap(),
            price: Coins(10),
            heat: 10,
            fuel: 10,
            lucky: false,
            billing_version: None,
        },
        count: 2,
        lucky_draw: 5,
        scope: None,
    };
    GiftOrder::new(room_id.clone(), &apply, T0).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_survives_closing_and_reopening() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("room.db");
    let a = room("room-a");
    let store = open(&path).await;

    let activation = store.activate(&a, "node-1").await.unwrap();
    let pending = order("o-1", &a);
    store.create_or_get(&pending).await.unwrap();
    let mut applied = pending.clone();
    applied.status = OrderStatus::Completed;
    let mut b = batch(&a, activation, 0, &["c1", "c2"]);
    b.orders = vec![applied.clone()];
    let timer = Timer {
        timer_id: "room-a:launch:1".into(),
        room_id: a.clone(),
        due_at: T0.plus_secs(10),
        command: CommandKind::LaunchRocket {
            rocket_id: RocketId(1),
            level: 1,
            scheduled_at: T0.plus_secs(10),
        },
    };
    b.timers = vec![timer.clone()];
    let payout = Payout {
        op_id: "rocket:room-a:1:bob".into(),
        kind: CreditKind::RocketReward,
        user: user("bob"),
        amount: Coins(77),
        room_id: a.clone(),
    };
    b.payouts = vec![payout.clone()];
    store.commit(&b).await.unwrap();
    let mut state = RoomState::new(a.clone());
    state.version = 2;
    let snapshot = Snapshot::new(state);
    SnapshotStore::put(&store, &snapshot).await.unwrap();
    store
        .credit("top-1", CreditKind::Admin, &user("alice"), Coins(500))
        .await
        .unwrap();
    store.debit("o-1", &user("alice"), Coins(20)).await.unwrap();
    let gift = CatalogGift {
        gift_id: GiftId::new("rose").unwrap(),
        name: "Rose".into(),
        price: Coins(10),
        heat: 10,
        fuel: 10,
        lucky: false,
        enabled: true,
    };
    GiftCatalog::put(&store, &gift).await.unwrap();
    assert!(store.reserve_short_id(&a, 4242).await.unwrap());
    store.close().await;
    expect_unavailable(store.debit("late", &user("alice"), Coins(1)).await);

    let store = open(&path).await;
    assert_eq!(store.list_events(&a, 0, 100).await.unwrap(), b.events);
    assert_eq!(
        store
            .get_command(&a, &b.commands[1].command_id)
            .await
            .unwrap(),
        Some(b.commands[1].clone())
    );
    let outbox = Outbox::list_pending(&store, 0, &[], 100).await.unwrap();
    assert_eq!(
        outbox.into_iter().map(|m| m.envelope).collect::<Vec<_>>(),
        b.outbox
    );
    assert_eq!(
        GiftOrders::get(&store, &pending.sender, &pending.order_id)
            .await
            .unwrap(),
        Some(applied)
    );
    assert_eq!(
        store.list_due(T0.plus_secs(60), None, 10).await.unwrap(),
        vec![timer]
    );
    assert_eq!(
        Payouts::list_pending(&store, None, 10).await.unwrap(),
        vec![payout]
    );
    assert_eq!(store.get_summary(&a).await.unwrap(), b.summary);
    assert_eq!(store.get_latest(&a).await.unwrap(), Some(snapshot));
    assert_eq!(store.balance(&user("alice")).await.unwrap(), Coins(480));
    assert_eq!(
        store.debit("o-1", &user("alice"), Coins(20)).await.unwrap(),
        Coins(480),
        "the ledger remembers the debit across a restart"
    );
    assert_eq!(
        GiftCatalog::get(&store, &gift.gift_id).await.unwrap(),
        Some(gift)
    );
    assert_eq!(store.get_by_short_id(4242).await.unwrap(), Some(a.clone()));

    let again = store.activate(&a, "node-2").await.unwrap();
    assert!(
        again.epoch > activation.epoch,
        "the epoch survives a restart"
    );
    assert_eq!(again.version, 2, "the version survives a restart");
    assert!(
        matches!(
            store.commit(&batch(&a, activation, 2, &["c3"])).await,
            Err(Error::NotOwner(_))
        ),
        "the fence survives a restart"
    );
    store.close().await;
}

fn expect_unavailable<T: std::fmt::Debug>(result: Result<T, Error>) {
    assert!(
        matches!(result, Err(Error::Unavailable(_))),
        "expected Unavailable, got {result:?}"
    );
}

#[tokio::test]
async fn opening_creates_the_file_and_its_directories_in_wal_mode() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("data").join("nested").join("room.db");
    let store = open(&path).await;
    assert!(path.exists(), "the database file is created");
    store.close().await;

    let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(&path)
        .connect()
        .await
        .unwrap();
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(mode, "wal");
    conn.close().await.unwrap();

    // Opening an existing database applies no migration twice.
    open(&path).await.close().await;
}

#[tokio::test]
async fn in_memory_and_malformed_urls_are_refused() {
    for bad in [
        "sqlite::memory:",
        "sqlite://room.db?mode=memory",
        "postgres://x/y",
    ] {
        let result = SqliteStore::open(&SqliteSettings::new(bad)).await;
        assert!(
            matches!(result, Err(Error::Invalid(_))),
            "{bad}: expected Invalid, got {result:?}"
        );
    }
}

#[tokio::test]
async fn bad_stored_json_is_corrupt() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("room.db");
    let store = open(&path).await;
    let a = room("room-a");
    store.create_or_get(&order("o-1", &a)).await.unwrap();
    store.close().await;

    // A manual edit breaks the stored order.
    let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(&path)
        .connect()
        .await
        .unwrap();
    sqlx::query("UPDATE gift_orders SET body = CAST('{\"order_id\": 7' AS BLOB)")
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();

    let store = open(&path).await;
    let got = GiftOrders::get(&store, &user("alice"), &OrderId::new("o-1").unwrap()).await;
    assert!(matches!(got, Err(Error::Corrupt(_))), "got {got:?}");
    let listed = store.list_unfinished(T0.plus_secs(1), None, 10).await;
    assert!(matches!(listed, Err(Error::Corrupt(_))), "got {listed:?}");
    let repeated = store.create_or_get(&order("o-1", &a)).await;
    assert!(
        matches!(repeated, Err(Error::Corrupt(_))),
        "got {repeated:?}"
    );
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_commits_and_debits_all_succeed_or_fail_cleanly() {
    let dir = TempDir::new().unwrap();
    let store = Arc::new(open(&dir.path().join("room.db")).await);
    let submitted = Arc::new(AtomicU64::new(0));
    let before = store.write_stats();

    const ROOMS: usize = 6;
    const WRITERS_PER_ROOM: usize = 5;
    const USERS: usize = 8;
    let mut activations = Vec::new();
    for r in 0..ROOMS {
        let id = room(&format!("room-{r}"));
        activations.push((id.clone(), store.activate(&id, "node-1").await.unwrap()));
        submitted.fetch_add(1, Ordering::Relaxed);
    }
    for u in 0..USERS {
        store
            .credit(
                &format!("seed-{u}"),
                CreditKind::Admin,
                &user(&format!("u{u}")),
                Coins(40),
            )
            .await
            .unwrap();
        submitted.fetch_add(1, Ordering::Relaxed);
    }

    let mut tasks = tokio::task::JoinSet::new();
    // Several writers race on each room's version; each retries on Conflict until its
    // command is in.
    for (id, activation) in &activations {
        for w in 0..WRITERS_PER_ROOM {
            let (store, id, activation) = (store.clone(), id.clone(), *activation);
            let submitted = submitted.clone();
            tasks.spawn(async move {
                loop {
                    let version = store.list_events(&id, 0, 1000).await?.len() as u64;
                    let command = format!("w{w}");
                    submitted.fetch_add(1, Ordering::Relaxed);
                    match store
                        .commit(&batch(&id, activation, version, &[&command]))
                        .await
                    {
                        Ok(()) => return Ok::<i64, Error>(0),
                        Err(Error::Conflict(_)) => continue,
                        Err(other) => return Err(other),
                    }
                }
            });
        }
    }
    // Debits of 1 to 5 coins, far more than the users have.
    for i in 0..240usize {
        let store = store.clone();
        let submitted = submitted.clone();
        tasks.spawn(async move {
            let amount = (i % 5 + 1) as i64;
            submitted.fetch_add(1, Ordering::Relaxed);
            match store
                .debit(
                    &format!("d-{i}"),
                    &user(&format!("u{}", i % USERS)),
                    Coins(amount),
                )
                .await
            {
                Ok(after) => {
                    assert!(!after.is_negative());
                    Ok(amount)
                }
                Err(Error::InsufficientFunds { .. }) => Ok(0),
                Err(other) => Err(other),
            }
        });
    }
    let mut debited = 0;
    while let Some(joined) = tasks.join_next().await {
        match joined.expect("a task panicked") {
            Ok(amount) => debited += amount,
            Err(error) => panic!("a concurrent write failed uncleanly: {error:?}"),
        }
    }

    let mut total = 0;
    for u in 0..USERS {
        let balance = store.balance(&user(&format!("u{u}"))).await.unwrap().0;
        assert!(balance >= 0, "u{u} went negative");
        total += balance;
    }
    assert_eq!(total, 40 * USERS as i64 - debited, "coins are conserved");
    for (id, _) in &activations {
        let events = store.list_events(id, 0, 1000).await.unwrap();
        assert_eq!(
            events.iter().map(|e| e.seq).collect::<Vec<_>>(),
            (1..=WRITERS_PER_ROOM as u64).collect::<Vec<_>>(),
            "every writer's command is in {id}, without gaps"
        );
        for w in 0..WRITERS_PER_ROOM {
            let command = CommandId::new(format!("w{w}")).unwrap();
            assert!(store.get_command(id, &command).await.unwrap().is_some());
        }
    }
    let stats = store.write_stats();
    assert_eq!(stats.failed_transactions, before.failed_transactions);
    assert_eq!(
        stats.jobs - before.jobs,
        submitted.load(Ordering::Relaxed),
        "every write ran as a job of a committed transaction"
    );
    store.close().await;
}

/// A job that fails after writing (a commit whose order is unknown writes its cell, commands,
/// events and outbox rows first) leaves no trace, and the jobs around it are unaffected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_jobs_roll_back_alone() {
    let dir = TempDir::new().unwrap();
    let store = open(&dir.path().join("room.db")).await;
    let a = room("room-a");
    let alice = user("alice");
    store
        .credit("top-1", CreditKind::Admin, &alice, Coins(100))
        .await
        .unwrap();
    let activation = store.activate(&a, "node-1").await.unwrap();
    let before = store.write_stats();

    assert_eq!(
        store.debit("ok-1", &alice, Coins(30)).await.unwrap(),
        Coins(70)
    );
    let refused = store.debit("too-much", &alice, Coins(1000)).await;
    assert!(
        matches!(
            refused,
            Err(Error::InsufficientFunds { balance: Coins(70) })
        ),
        "got {refused:?}"
    );
    let mut ghost = batch(&a, activation, 0, &["c-ghost"]);
    ghost.orders = vec![order("ghost", &a)];
    let failed = store.commit(&ghost).await;
    assert!(matches!(failed, Err(Error::NotFound(_))), "got {failed:?}");
    let good = batch(&a, activation, 0, &["c-good"]);
    store
        .commit(&good)
        .await
        .expect("the failed commit's version bump was rolled back");
    assert_eq!(
        store
            .credit("gift-1", CreditKind::Refund, &user("bob"), Coins(5))
            .await
            .unwrap(),
        Coins(5)
    );

    let stats = store.write_stats();
    assert_eq!(stats.jobs - before.jobs, 5);
    assert_eq!(stats.failed_transactions, 0);
    assert_eq!(store.list_events(&a, 0, 10).await.unwrap(), good.events);
    assert_eq!(
        store
            .get_command(&a, &CommandId::new("c-ghost").unwrap())
            .await
            .unwrap(),
        None
    );
    let outbox = Outbox::list_pending(&store, 0, &[], 10).await.unwrap();
    assert_eq!(
        outbox.into_iter().map(|m| m.envelope).collect::<Vec<_>>(),
        good.outbox
    );
    assert_eq!(store.balance(&alice).await.unwrap(), Coins(70));
    assert_eq!(store.balance(&user("bob")).await.unwrap(), Coins(5));
    store.close().await;
}

#[tokio::test]
async fn one_process_at_a_time_serves_a_database() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("room.db");
    let first = open(&path).await;
    let second = SqliteStore::open(&SqliteSettings::new(url(&path))).await;
    match second {
        Err(Error::Unavailable(message)) => {
            assert!(message.contains("in use by another process"), "{message}")
        }
        other => panic!("a second store opened the same file: {other:?}"),
    }
    // Closing lets the next one in, as a restart does.
    first.close().await;
    open(&path).await.close().await;
}

/// A database made before orders were keyed by sender: its orders move to the new key when
/// the store opens it, keep their order-id names (the wallet operation their debit was stored
/// under still answers), the ledger's entries and balances come through its table's rebuild,
/// and another sender can now use the same order id.
#[tokio::test]
async fn orders_stored_under_the_first_schema_move_to_the_sender_key() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("room.db");
    let first_only = dir.path().join("first-migration");
    std::fs::create_dir(&first_only).unwrap();
    let migrations = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations/sqlite");
    std::fs::copy(
        migrations.join("0001_room_service.sql"),
        first_only.join("0001_room_service.sql"),
    )
    .unwrap();

    // The first schema, with a pending order stored as it was then (no `keys` in its body)
    // and its debit under the bare order id.
    let a = room("room-a");
    let mut old = order("o-old", &a);
    old.keys = OrderKeys::OrderId;
    let mut body = serde_json::to_value(&old).unwrap();
    body.as_object_mut().unwrap().remove("keys");
    let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(&path)
        .create_if_missing(true)
        .connect()
        .await
        .unwrap();
    sqlx::migrate::Migrator::new(first_only.as_path())
        .await
        .unwrap()
        .run(&mut conn)
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO gift_orders (order_id, room_id, sender, status, created_at, body)
         VALUES ('o-old', 'room-a', 'alice', 'PENDING', ?1, ?2)",
    )
    .bind(T0.as_millis())
    .bind(body.to_string())
    .execute(&mut conn)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO wallet_entries (op_id, kind, state, user_id, amount, balance_after)
         VALUES ('fund', 'credit_admin', 'done', 'alice', 100, 100),
                ('o-old', 'debit', 'done', 'alice', 20, 80)",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    conn.close().await.unwrap();

    let store = open(&path).await;
    assert_eq!(
        GiftOrders::get(&store, &user("alice"), &old.order_id)
            .await
            .unwrap(),
        Some(old.clone()),
        "the order is found by sender and order id, with its old names"
    );
    assert_eq!(old.wallet_op_id(), "o-old");
    assert_eq!(
        store.settle_debit(&old.wallet_op_id()).await.unwrap(),
        room_app::ports::DebitStatus::Debited,
        "its debit is found under its operation id"
    );
    assert_eq!(
        store
            .debit(&old.wallet_op_id(), &user("alice"), Coins(20))
            .await
            .unwrap(),
        Coins(80),
        "a repeat of the debit moves nothing"
    );
    assert_eq!(
        store.balance(&user("alice")).await.unwrap(),
        Coins(80),
        "rebuilding the ledger's table moved no coins"
    );
    assert!(
        matches!(
            store.debit("after", &user("alice"), Coins(81)).await,
            Err(Error::InsufficientFunds { balance: Coins(80) })
        ),
        "the rebuilt ledger still refuses an overdraft"
    );

    // Bob's order with the same id is another order.
    let mut bobs = order("o-old", &a);
    bobs.sender = user("bob");
    bobs.recipients = vec![user("alice")];
    assert_eq!(
        store.create_or_get(&bobs).await.unwrap(),
        (bobs.clone(), true)
    );
    let listed = store
        .list_unfinished(T0.plus_secs(1), None, 10)
        .await
        .unwrap();
    assert_eq!(listed, vec![old.clone(), bobs.clone()]);
    let mut debited = old.clone();
    debited.status = OrderStatus::Debited;
    store.update(&debited, OrderStatus::Pending).await.unwrap();
    assert_eq!(
        GiftOrders::get(&store, &user("bob"), &bobs.order_id)
            .await
            .unwrap(),
        Some(bobs)
    );
    assert_eq!(
        Wallet::balance(&store, &user("alice")).await.unwrap(),
        Coins(80)
    );
}

/// A database written before the compact bodies (every migration up to 0007, rows as JSON
/// text): opening it converts the tables, and every old row reads back as it was written (the
/// log, the outbox, orders with and without a refusal); new rows go in beside them in the
/// compact form and read back too, the outbox's ids go on rising past every id used, and the
/// orders lost the fields their columns hold.
#[tokio::test]
async fn rows_written_before_the_compact_bodies_read_back_after_the_upgrade() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("room.db");
    let mut conn = schema_before(&path, 30).await;

    // Rows as the previous release wrote them.
    let a = room("room-a");
    let event = Event::RoomHeatChanged { heat: 7, delta: 7 };
    let command_id = CommandId::new("c-old").unwrap();
    let command = Command::new(
        command_id.clone(),
        CommandKind::SetChatEnabled { enabled: false },
    );
    let actor = Actor::user(user("owner"));
    let envelope = EventEnvelope::new(a.clone(), 1, T0, &event);
    let pending = order("o-pending", &a);
    let mut refused = order("o-refused", &a);
    refused.status = OrderStatus::Debited;
    refused.rejection = Some(room_domain::Rejection::RoomClosed);
    for statement in [
        "INSERT INTO room_cells (room_id, epoch, version, owner_node) VALUES ('room-a', 1, 1, 'n')"
            .to_owned(),
        format!(
            "INSERT INTO room_events (room_id, seq, occurred_at, event) VALUES ('room-a', 1, {}, '{}')",
            T0.as_millis(),
            serde_json::to_string(&event).unwrap()
        ),
        format!(
            "INSERT INTO room_commands
                 (room_id, command_id, command, actor, applied_at, first_seq, last_seq)
             VALUES ('room-a', 'c-old', '{}', '{}', {}, 1, 1)",
            serde_json::to_string(&command).unwrap(),
            serde_json::to_string(&actor).unwrap(),
            T0.as_millis()
        ),
        // Ids 1 to 3 were used; the newest two were delivered and deleted.
        format!(
            "INSERT INTO room_outbox (id, room_id, seq, envelope) VALUES (1, 'room-a', 1, '{}')",
            serde_json::to_string(&envelope).unwrap()
        ),
        "INSERT INTO room_outbox (id, room_id, seq, envelope) VALUES (3, 'room-a', 3, '{}')"
            .to_owned(),
        "DELETE FROM room_outbox WHERE id = 3".to_owned(),
    ] {
        sqlx::query(sqlx::AssertSqlSafe(statement))
            .execute(&mut conn)
            .await
            .unwrap();
    }
    for old in [&pending, &refused] {
        sqlx::query(
            "INSERT INTO gift_orders (order_id, room_id, sender, status, created_at, body)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .bind(old.order_id.as_str())
        .bind(old.room_id.as_str())
        .bind(old.sender.as_str())
        .bind(old.status.as_str())
        .bind(old.created_at.as_millis())
        .bind(serde_json::to_string(old).unwrap())
        .execute(&mut conn)
        .await
        .unwrap();
    }
    conn.close().await.unwrap();

    let store = open(&path).await;
    assert_eq!(
        store.list_events(&a, 0, 10).await.unwrap(),
        vec![StoredEvent {
            seq: 1,
            occurred_at: T0,
            event: event.clone()
        }]
    );
    let record = store.get_command(&a, &command_id).await.unwrap().unwrap();
    assert_eq!((record.command, record.actor), (command, actor));
    let pending_rows = Outbox::list_pending(&store, 0, &[], 10).await.unwrap();
    assert_eq!(pending_rows.len(), 1);
    assert_eq!(
        (pending_rows[0].id, &pending_rows[0].envelope),
        (1, &envelope)
    );
    for old in [&pending, &refused] {
        assert_eq!(
            GiftOrders::get(&store, &old.sender, &old.order_id)
                .await
                .unwrap()
                .as_ref(),
            Some(old)
        );
    }
    // The refusal moved to its column: the refused order no longer awaits its room.
    let mut applied = refused.clone();
    applied.status = OrderStatus::Applied;
    applied.rejection = None;
    let mut next = batch(
        &a,
        Activation {
            epoch: 1,
            version: 1,
        },
        1,
        &["c-new"],
    );
    next.orders = vec![applied];
    assert!(matches!(
        store.commit(&next).await,
        Err(Error::OrderSettled(_))
    ));

    // New rows beside the old ones.
    let mut next = batch(
        &a,
        Activation {
            epoch: 1,
            version: 1,
        },
        1,
        &["c-new"],
    );
    let mut debited = pending.clone();
    debited.status = OrderStatus::Applied;
    next.orders = vec![debited.clone()];
    store.commit(&next).await.unwrap();
    let events = store.list_events(&a, 0, 10).await.unwrap();
    assert_eq!(events.len(), 2);
    assert_eq!(events[1], next.events[0]);
    let listed = Outbox::list_pending(&store, 0, &[], 10).await.unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[1].envelope, next.outbox[0]);
    assert!(
        listed[1].id > 3,
        "ids rise past every id used: {}",
        listed[1].id
    );
    assert_eq!(
        GiftOrders::get(&store, &debited.sender, &debited.order_id)
            .await
            .unwrap(),
        Some(debited)
    );
    store.close().await;

    // Stored once: the orders' bodies hold none of their columns, and the new rows are
    // compact.
    let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(&path)
        .connect()
        .await
        .unwrap();
    let bodies: Vec<(String, Vec<u8>)> =
        sqlx::query_as("SELECT order_id, body FROM gift_orders ORDER BY order_id")
            .fetch_all(&mut conn)
            .await
            .unwrap();
    for (order_id, body) in bodies {
        if room_app::stored::is_compact(&body) {
            assert_eq!(order_id, "o-pending", "the order written since");
            continue;
        }
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        for column in [
            "order_id",
            "room_id",
            "sender",
            "status",
            "created_at",
            "rejection",
        ] {
            assert!(body.get(column).is_none(), "{order_id}: {column} in {body}");
        }
    }
    let compact: i64 =
        sqlx::query_scalar("SELECT count(*) FROM room_events WHERE substr(event, 1, 1) = X'02'")
            .fetch_one(&mut conn)
            .await
            .unwrap();
    assert_eq!(
        compact, 1,
        "the new event is compact (version 2), the old one JSON"
    );
    // The pruning pass finds the room through its first command's time (migration 0031).
    let first: Option<i64> =
        sqlx::query_scalar("SELECT first_command_at FROM room_cells WHERE room_id = 'room-a'")
            .fetch_one(&mut conn)
            .await
            .unwrap();
    assert_eq!(first, Some(T0.as_millis()));
    conn.close().await.unwrap();
}

/// A robot room configuration of `room_id` with `robots`, as the service stores one.
fn robot_room(room_id: &str, robots: &[&str]) -> room_app::ports::RobotRoomConfig {
    room_app::ports::RobotRoomConfig {
        room_id: room(room_id),
        profile: room_app::ports::RobotProfile {
            name: format!("Robots of {room_id}"),
            notice: String::new(),
            cover_url: None,
        },
        seat_count: 8,
        robots: robots.iter().map(|robot| user(robot)).collect(),
        audience: vec![0; 24],
        seats: 0,
        gift_rate_per_minute: 0,
        gift_mix: vec![room_app::ports::GiftShare {
            gift_id: GiftId::new("rose").unwrap(),
            weight: 1,
        }],
        enabled: true,
        version: 1,
        created_at: T0,
        updated_at: T0,
    }
}

/// A database whose robot rooms were stored before the pools were the store's: opening it
/// brings every pool's robots over (a robot two configurations named stays with the first room
/// by id), after which the key refuses a second claim of any of them.
#[tokio::test]
async fn robot_pools_stored_before_the_pool_key_are_brought_over() {
    use room_app::ports::RobotRooms;

    let dir = TempDir::new().unwrap();
    let path = dir.path().join("room.db");
    let mut conn = schema_before(&path, 10).await;
    let (a, b) = (
        robot_room("room-a", &["robot-1", "robot-2"]),
        robot_room("room-b", &["robot-3", "robot-2"]),
    );
    for config in [&b, &a] {
        sqlx::query(
            "INSERT INTO robot_rooms (room_id, version, enabled, body) VALUES (?1, 1, 1, ?2)",
        )
        .bind(config.room_id.as_str())
        .bind(serde_json::to_string(config).unwrap())
        .execute(&mut conn)
        .await
        .unwrap();
    }
    conn.close().await.unwrap();

    let store = open(&path).await;
    let robots = [
        user("robot-1"),
        user("robot-2"),
        user("robot-3"),
        user("robot-4"),
    ];
    assert_eq!(
        store.list_by_robots(&robots).await.unwrap(),
        vec![
            (user("robot-1"), room("room-a")),
            (user("robot-2"), room("room-a")),
            (user("robot-3"), room("room-b")),
        ],
        "every pool came over; the robot both named is the first room's"
    );
    match store
        .create(&robot_room("room-c", &["robot-4", "robot-3"]))
        .await
    {
        Err(Error::RobotTaken { robot, room_id }) => {
            assert_eq!((robot, room_id), (user("robot-3"), room("room-b")));
        }
        other => panic!("a migrated robot was claimed again: {other:?}"),
    }
    assert_eq!(
        RobotRooms::get(&store, &room("room-c")).await.unwrap(),
        None
    );
}

/// A database of the release before VIP grants (every migration before 0090), with a
/// profile in it: opening it adds the VIP tables (the level table at version 0, empty), the
/// profile stays, and grants and tables go in and read back.
#[tokio::test]
async fn a_database_before_vip_grants_gets_them_on_opening() {
    use room_app::ports::{UserDirectory, VipGrant, VipGrants, VipLevels};

    let dir = TempDir::new().unwrap();
    let path = dir.path().join("room.db");
    let mut conn = schema_before(&path, 90).await;
    sqlx::query("INSERT INTO user_profiles (user_id, nickname) VALUES ('alice', 'Alice')")
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();

    let store = open(&path).await;
    assert_eq!(
        store
            .get_profile(&user("alice"))
            .await
            .unwrap()
            .and_then(|p| p.nickname)
            .as_deref(),
        Some("Alice"),
        "the profile written before the upgrade stays"
    );
    assert_eq!(store.vip_levels().await.unwrap(), VipLevels::default());
    assert_eq!(store.get_vip_grant(&user("alice")).await.unwrap(), None);
    let levels = vec![room_domain::VipPrivileges {
        kick_shield: true,
        ..Default::default()
    }];
    assert_eq!(store.put_vip_levels(0, &levels).await.unwrap(), 1);
    store
        .grant_vip(&user("alice"), 1, T0.plus_secs(60))
        .await
        .unwrap();
    assert_eq!(
        store.get_vip_grant(&user("alice")).await.unwrap(),
        Some(VipGrant {
            level: 1,
            expires_at: T0.plus_secs(60)
        })
    );
    assert_eq!(store.vip_levels().await.unwrap().levels, levels);
}

/// A room summarised before the room lists' fields (every migration before 0100): opening
/// the database gives its summary the defaults (no region or cover, no seat taken, created and
/// heated at 0), it joins the scan of open rooms with its short id (a closed one does not),
/// and the room's next commit writes the new fields.
#[tokio::test]
async fn summaries_written_before_the_room_list_fields_read_back_after_the_upgrade() {
    use room_app::ports::OpenRoom;

    let dir = TempDir::new().unwrap();
    let path = dir.path().join("room.db");
    let mut conn = schema_before(&path, 100).await;
    sqlx::raw_sql(
        "INSERT INTO room_summaries (room_id, owner, name, open, heat, online, locked, version)
         VALUES ('room-old', 'owner', 'Old times', 1, 42, 3, 1, 7),
                ('room-shut', 'owner', 'Shut', 0, 9, 0, 0, 2);
         INSERT INTO room_short_ids (short_id, room_id) VALUES (555, 'room-old');",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    conn.close().await.unwrap();

    let store = open(&path).await;
    let old = room("room-old");
    let upgraded = RoomSummary {
        room_id: old.clone(),
        owner: user("owner"),
        name: "Old times".into(),
        open: true,
        heat: 42,
        online: 3,
        locked: true,
        version: 7,
        region: String::new(),
        cover_url: None,
        seats_taken: 0,
        created_at: Timestamp(0),
        recent_heat_milli: 0,
        recent_heat_at: Timestamp(0),
    };
    assert_eq!(
        store.get_summary(&old).await.unwrap(),
        Some(upgraded.clone())
    );
    assert_eq!(
        store.scan_open(None, 10).await.unwrap(),
        [OpenRoom {
            summary: upgraded,
            short_id: Some(555)
        }],
        "the open room, with its short id; the closed one left out"
    );

    let activation = store.activate(&old, "node-1").await.unwrap();
    let b = batch(&old, activation, activation.version, &["c-new"]);
    store.commit(&b).await.unwrap();
    let written = b.summary.clone().unwrap();
    assert!(written.cover_url.is_some() && written.created_at != Timestamp(0));
    assert_eq!(
        store.get_summary(&old).await.unwrap(),
        Some(written.clone())
    );
    assert_eq!(
        store.scan_open(None, 10).await.unwrap(),
        [OpenRoom {
            summary: written,
            short_id: Some(555)
        }]
    );
}

/// A database whose income was credited under the ledger of a row per part (migrations before
/// 0080): opening it stores income by gift, and every entry, its position and every balance
/// read back as they were; new credits take positions after the old ones and skip the parts
/// credited before.
#[tokio::test]
async fn income_credited_before_it_was_stored_by_gift_reads_back_after_the_upgrade() {
    use room_app::ports::{IncomeEntry, IncomeLedger};
    use room_domain::{Coins, GiftId, IncomePart, OrderId};

    let dir = TempDir::new().unwrap();
    let path = dir.path().join("room.db");
    let mut conn = schema_before(&path, 80).await;
    let entry =
        |order: &str, recipient: &str, part: IncomePart, to: &str, amount: i64| IncomeEntry {
            sender: user("carol"),
            order_id: OrderId::new(order).unwrap(),
            recipient: user(recipient),
            part,
            user: user(to),
            amount: Coins(amount),
            room_id: room("room-a"),
            gift_id: Some(GiftId::new("rose").unwrap()),
            billing_version: 3,
            at: T0,
        };
    // As the previous release wrote them: two orders, three parts, ids 1, 2 and 4.
    let old = [
        (1, entry("o-1", "alice", IncomePart::Recipient, "alice", 50)),
        (2, entry("o-1", "alice", IncomePart::Owner, "olga", 10)),
        (4, entry("o-2", "bob", IncomePart::Agency, "agency-1", 20)),
    ];
    for (id, e) in &old {
        sqlx::query(
            "INSERT INTO income_entries
             (id, sender, order_id, recipient, part, user_id, amount, room_id, gift_id,
              billing_version, credited_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
        )
        .bind(id)
        .bind(e.sender.as_str())
        .bind(e.order_id.as_str())
        .bind(e.recipient.as_str())
        .bind(e.part.as_str())
        .bind(e.user.as_str())
        .bind(e.amount.0)
        .bind(e.room_id.as_str())
        .bind(e.gift_id.as_ref().map_or("", |g| g.as_str()))
        .bind(3_i64)
        .bind(T0.as_millis())
        .execute(&mut conn)
        .await
        .unwrap();
    }
    for (who, balance) in [("alice", 50), ("olga", 10), ("agency-1", 20)] {
        sqlx::query("INSERT INTO income_accounts (user_id, balance) VALUES (?1, ?2)")
            .bind(who)
            .bind(balance)
            .execute(&mut conn)
            .await
            .unwrap();
    }
    conn.close().await.unwrap();

    let store = open(&path).await;
    for (id, e) in &old {
        let listed = store.list_income(&e.user, None, 10).await.unwrap();
        assert_eq!(listed.len(), 1, "{listed:?}");
        assert_eq!((listed[0].id, &listed[0].entry), (*id, e));
    }
    // A repeat credits nothing; a new part goes after every old position.
    let owner_of_o2 = entry("o-2", "bob", IncomePart::Owner, "olga", 5);
    let again = [old[1].1.clone(), owner_of_o2.clone()];
    assert_eq!(store.credit_income(&again).await.unwrap(), 1);
    let olga = store.list_income(&user("olga"), None, 10).await.unwrap();
    assert_eq!(olga.len(), 2);
    assert_eq!((olga[0].id, &olga[0].entry), (5, &owner_of_o2));
    for (who, balance) in [("alice", 50), ("olga", 15), ("agency-1", 20), ("bob", 0)] {
        assert_eq!(
            store.income_balance(&user(who)).await.unwrap(),
            Coins(balance),
            "{who}"
        );
    } // Migration 0120: a room's turnover reward (part 4, without a gift) credits after it.
    let reward = IncomeEntry {
        sender: user("room-a"),
        order_id: OrderId::new("sys-turnover-2025-11-30").unwrap(),
        recipient: user("olga"),
        part: IncomePart::Turnover,
        user: user("olga"),
        amount: Coins(7),
        room_id: room("room-a"),
        gift_id: None,
        billing_version: 1,
        at: Timestamp(1_764_460_800_000),
    };
    assert_eq!(
        store
            .credit_income(std::slice::from_ref(&reward))
            .await
            .unwrap(),
        1
    );
    let newest = store.list_income(&user("olga"), None, 1).await.unwrap();
    assert_eq!(newest[0].entry, reward);
    assert_eq!(
        store.income_balance(&user("olga")).await.unwrap(),
        Coins(22)
    );
}

#[tokio::test]
async fn covers_shown_before_cover_claims_are_claimed_by_the_upgrade() {
    use room_app::testkit::covers_claimed_by_the_upgrade;

    let dir = TempDir::new().unwrap();
    let path = dir.path().join("room.db");
    let mut conn = schema_before(&path, 110).await;
    sqlx::raw_sql(
        "INSERT INTO room_summaries (room_id, owner, name, open, heat, online, locked, version,
             region, cover_url, seats_taken, created_at, recent_heat_milli, recent_heat_at)
         VALUES ('room-b', 'owner', 'B', 1, 0, 0, 0, 1, '', 'https://img.example/a.png', 0, 0, 0, 0),
                ('room-a', 'owner', 'A', 1, 0, 0, 0, 1, '', 'https://img.example/a.png', 0, 0, 0, 0),
                ('room-c', 'owner', 'C', 0, 0, 0, 0, 1, '', 'https://img.example/c.png', 0, 0, 0, 0);",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    conn.close().await.unwrap();

    let store = open(&path).await;
    covers_claimed_by_the_upgrade(&store).await;
}

/// A ledger written by the release before the board rewards (every migration before 0131,
/// entries inserted as its wallet inserted them, the trigger moving the balances): opening it
/// rebuilds `wallet_entries` for the kind 'board_reward', and every entry and balance reads
/// back as it was (a repeat answers its first answer and moves nothing, a voided debit stays
/// void); a board reward credits after it, once.
#[tokio::test]
async fn wallet_entries_written_before_the_board_rewards_read_back_after_the_upgrade() {
    use room_app::ports::DebitStatus;

    let dir = TempDir::new().unwrap();
    let path = dir.path().join("room.db");
    let mut conn = schema_before(&path, 131).await;
    sqlx::raw_sql(
        "INSERT INTO wallet_entries (op_id, kind, state, user_id, amount, balance_after)
         VALUES ('top-up', 'credit_admin', 'done', 'alice', 100, 100);
         INSERT INTO wallet_entries (op_id, kind, state, user_id, amount, balance_after)
         VALUES ('o-1', 'debit', 'done', 'alice', 30, 70);
         INSERT INTO wallet_entries (op_id, kind, state, user_id, amount, balance_after)
         VALUES ('o-1', 'rocket_reward', 'done', 'alice', 5, 75);
         INSERT INTO wallet_entries (op_id, kind, state, user_id, amount, balance_after)
         VALUES ('o-2', 'lucky_reward', 'done', 'bob', 8, 8);
         INSERT INTO wallet_entries (op_id, kind, state, user_id, amount, balance_after)
         VALUES ('o-3', 'refund', 'done', 'bob', 2, 10);
         INSERT INTO wallet_entries (op_id, kind, state) VALUES ('o-void', 'debit', 'void');",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    // The kind did not exist: the previous release's ledger refuses it.
    let refused = sqlx::query(
        "INSERT INTO wallet_entries (op_id, kind, state, user_id, amount, balance_after)
         VALUES ('early', 'board_reward', 'done', 'alice', 1, 76)",
    )
    .execute(&mut conn)
    .await;
    assert!(refused.is_err(), "{refused:?}");
    conn.close().await.unwrap();

    let store = open(&path).await;
    let (alice, bob) = (user("alice"), user("bob"));
    assert_eq!(Wallet::balance(&store, &alice).await.unwrap(), Coins(75));
    assert_eq!(Wallet::balance(&store, &bob).await.unwrap(), Coins(10));
    // Every old entry answers its repeat with its first answer and moves nothing.
    assert_eq!(
        store
            .credit("top-up", CreditKind::Admin, &alice, Coins(100))
            .await
            .unwrap(),
        Coins(100)
    );
    assert_eq!(
        store.debit("o-1", &alice, Coins(30)).await.unwrap(),
        Coins(70)
    );
    assert_eq!(
        store
            .credit("o-1", CreditKind::RocketReward, &alice, Coins(5))
            .await
            .unwrap(),
        Coins(75)
    );
    assert_eq!(
        store
            .credit("o-2", CreditKind::LuckyReward, &bob, Coins(8))
            .await
            .unwrap(),
        Coins(8)
    );
    assert_eq!(
        store
            .credit("o-3", CreditKind::Refund, &bob, Coins(2))
            .await
            .unwrap(),
        Coins(10)
    );
    assert!(matches!(
        store
            .credit("o-3", CreditKind::Refund, &bob, Coins(3))
            .await,
        Err(Error::Conflict(_))
    ));
    assert_eq!(
        store.settle_debit("o-1").await.unwrap(),
        DebitStatus::Debited
    );
    assert_eq!(
        store.settle_debit("o-void").await.unwrap(),
        DebitStatus::Void
    );
    assert!(matches!(
        store.debit("o-void", &alice, Coins(1)).await,
        Err(Error::Conflict(_))
    ));
    assert_eq!(Wallet::balance(&store, &alice).await.unwrap(), Coins(75));
    assert_eq!(Wallet::balance(&store, &bob).await.unwrap(), Coins(10));

    // A board reward credits, once, beside the old entries (one of them of the same id).
    for _ in 0..2 {
        assert_eq!(
            store
                .credit("o-1", CreditKind::BoardReward, &alice, Coins(4))
                .await
                .unwrap(),
            Coins(79)
        );
    }
    assert_eq!(Wallet::balance(&store, &alice).await.unwrap(), Coins(79));
    // New debits and credits of the other kinds go on as before.
    assert_eq!(store.debit("o-4", &bob, Coins(10)).await.unwrap(), Coins(0));
    assert!(matches!(
        store.debit("o-5", &bob, Coins(1)).await,
        Err(Error::InsufficientFunds { balance }) if balance == Coins(0)
    ));
    store.close().await;

    // The ledger kept its rows, and its CHECK still refuses a kind it does not know.
    let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(&path)
        .connect()
        .await
        .unwrap();
    let entries: i64 = sqlx::query_scalar("SELECT count(*) FROM wallet_entries")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(
        entries, 8,
        "six old entries, the board reward and the debit"
    );
    let unknown = sqlx::query(
        "INSERT INTO wallet_entries (op_id, kind, state, user_id, amount, balance_after)
         VALUES ('late', 'bonus', 'done', 'alice', 1, 80)",
    )
    .execute(&mut conn)
    .await;
    assert!(unknown.is_err(), "{unknown:?}");
    conn.close().await.unwrap();
}
