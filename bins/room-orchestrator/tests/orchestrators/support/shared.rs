//! What every node of a test shares, and what a test holds of the machine: the settings'
//! constants, the test's turn, its database and Redis key prefix, tokens, and the robot rooms'
//! configuration.

use std::path::PathBuf;
use std::time::Duration;

use room_domain::UserId;
use room_node::{Authenticator, Settings, Storage};
use room_testkit::{mysql, process, redis};
use secrecy::SecretString;
use serde_json::{Value, json};

pub(super) const SECRET: &str = "orchestrators-test-secret-of-32-bytes!";
pub(super) const INTERNAL_TOKEN: &str = "orchestrators-test-internal-token-of-32-bytes";
/// The lease TTL of every node, in milliseconds.
pub(super) const TTL_MS: u64 = 3_000;
/// How often an orchestrator reconciles, and how often a robot room steps, in milliseconds.
pub(super) const RECONCILE_MS: u64 = 500;
pub(super) const STEP_MS: u64 = 500;
/// The `room-api` node's id.
pub(crate) const API_NODE: &str = "api-1";
/// The robot rooms of a test.
pub(crate) const ROOMS: usize = 10;
/// How long the `room-api` node keeps a room with no request active (`ROOM__CELL__IDLE_SECS`):
/// the default, 300 s. Every test creates its robot rooms through `room-api`, which activates
/// them; clustered, it lets a robot room go a second after its last request, so the rooms run
/// on the orchestrators within [`DEADLINE`], long before this would let them go.
pub(super) const API_IDLE_SECS: u64 = 300;
/// How long a test waits for what the cluster does by itself: start, settle, hand over. A
/// takeover takes about one TTL and one reconcile; debug builds on two cores are slow.
pub(crate) const DEADLINE: Duration = Duration::from_secs(60);
/// The deadline of a takeover after a node was killed or paused.
pub(crate) const TAKEOVER: Duration = Duration::from_secs(30);

/// The tests of this target run one at a time: each runs two debug orchestrators and a
/// `room-api` node beside MariaDB and Redis, and two at once on two cores measure the machine
/// more than the cluster. In one process (`cargo test`) by this lock; across processes
/// (nextest runs each test in a process of its own) by [`Turn`]'s file lock.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A test's turn: [`ONE_AT_A_TIME`] and an exclusive lock on a file of the machine's
/// temporary directory, both released when the test ends (the file lock also when its
/// process dies).
pub(super) struct Turn {
    _file: std::fs::File,
    _guard: tokio::sync::MutexGuard<'static, ()>,
}

impl Turn {
    async fn take() -> Turn {
        let guard = ONE_AT_A_TIME.lock().await;
        let path = std::env::temp_dir().join("room-orchestrator-process-tests.lock");
        let file = tokio::task::spawn_blocking(move || {
            let file = std::fs::File::options()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
                .unwrap_or_else(|e| panic!("cannot open {}: {e}", path.display()));
            file.lock()
                .unwrap_or_else(|e| panic!("cannot lock {}: {e}", path.display()));
            file
        })
        .await
        .unwrap();
        Turn {
            _file: file,
            _guard: guard,
        }
    }
}

/// What the nodes of one test share.
pub(crate) struct Shared {
    pub(crate) mysql_url: String,
    pub(super) redis_url: String,
    pub(super) prefix: String,
    /// The gift catalog and rules: the shipped file with roses that fuel no rocket, so that no
    /// reward enters the books.
    pub(super) catalog: PathBuf,
    pub(super) dir: tempfile::TempDir,
}

pub(super) fn token(user: &str) -> String {
    Authenticator::new(&SecretString::from(SECRET))
        .unwrap()
        .mint(
            &UserId::new(user).unwrap(),
            user == "admin",
            Duration::from_secs(600),
        )
        .unwrap()
}

/// The configuration of the `i`-th robot room of a test: a pool of six robots of its own,
/// three listeners at every hour, two of eight seats taken by robots, 30 roses a minute.
pub(super) fn robot_room(i: usize) -> Value {
    json!({
        "profile": {"name": format!("Robots {i}"), "notice": "All night long"},
        "seat_count": 8,
        "robots": (0..6).map(|k| format!("robot-{i}-{k}")).collect::<Vec<_>>(),
        "audience": vec![3; 24],
        "seats": 2,
        "gift_rate_per_minute": 30,
        "gift_mix": [{"gift_id": "rose", "weight": 1}],
        "enabled": true
    })
}

/// A test's database, migrated, its Redis key prefix and its turn; `None` (the test skips)
/// without the services.
pub(super) async fn shared(test: &str) -> Option<(Shared, mysql::TestDatabase, Turn)> {
    let turn = Turn::take().await;
    let redis_url = redis::url()?;
    let server = mysql::MySqlServer::from_env(test).await?;
    let database = server.database().await;
    let mut storage = Settings::default().storage;
    storage.url = database.url.clone();
    Storage::migrate(&storage).await.expect("migrate");
    let dir = tempfile::TempDir::new().unwrap();
    let catalog = process::catalog_without_rocket_fuel(dir.path());
    let shared = Shared {
        mysql_url: database.url.clone(),
        redis_url,
        prefix: format!("{}{test}:", redis::prefix()),
        catalog,
        dir,
    };
    Some((shared, database, turn))
}
