//! What the MySQL tests share: ids, a commit batch that touches every table a commit writes,
//! and a migrated database with a store on it.

use std::sync::Arc;

use adapters_mysql::{MySqlSettings, MySqlStore};
use room_app::ports::{
    Activation, CommandRecord, CommitBatch, CreditKind, Payout, RoomSummary, StoredEvent, Timer,
};
use room_domain::{
    Actor, Coins, Command, CommandId, CommandKind, Event, EventEnvelope, RocketId, RoomId,
    Timestamp, UserId,
};
use room_testkit::mysql::{MySqlServer, TestDatabase};

pub(crate) const T0: Timestamp = Timestamp(1_764_460_800_000);

pub(crate) fn room(id: &str) -> RoomId {
    RoomId::new(id).expect("valid room id")
}

pub(crate) fn user(id: &str) -> UserId {
    UserId::new(id).expect("valid user id")
}

/// A batch of one command with one event at `version + 1` that also writes the outbox, a
/// timer, a payout and the summary: every table a commit touches.
pub(crate) fn batch(
    room_id: &RoomId,
    activation: Activation,
    version: u64,
    command: &str,
) -> CommitBatch {
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
            region: "eu-west".into(),
            cover_url: Some(format!("https://img.example/{command}.png")),
            seats_taken: 1,
            created_at: T0,
            recent_heat_milli: 10_000,
            recent_heat_at: T0,
        }),
    }
}

/// A migrated database and a store on it.
pub(crate) struct Fixture {
    pub(crate) database: TestDatabase,
    pub(crate) store: Arc<MySqlStore>,
}

pub(crate) async fn fixture(test: &str, tune: impl FnOnce(&mut MySqlSettings)) -> Option<Fixture> {
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

/// Applies to the empty database of `conn` the migrations numbered below `version`, as a
/// release before them left it.
pub(crate) async fn schema_before(conn: &mut sqlx::MySqlConnection, version: u32) {
    let previous = tempfile::TempDir::new().unwrap();
    let migrations =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations/mysql");
    for entry in std::fs::read_dir(&migrations).unwrap() {
        let name = entry.unwrap().file_name();
        let number: u32 = name.to_str().unwrap()[..4].parse().unwrap();
        if number < version {
            std::fs::copy(migrations.join(&name), previous.path().join(&name)).unwrap();
        }
    }
    sqlx::migrate::Migrator::new(previous.path())
        .await
        .unwrap()
        .run(conn)
        .await
        .unwrap();
}
