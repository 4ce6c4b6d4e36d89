//! `room-orchestrator` processes on one MariaDB database (`ROOM_TEST_MYSQL_URL`) and the real
//! Redis (`ROOM_TEST_REDIS_URL`), with 3-second leases, a 500 ms reconcile and a 500 ms script
//! step, beside a `room-api` node that creates the robot rooms (`POST /v1/admin/robot-rooms`)
//! and forwards human commands to the orchestrator holding each room:
//!
//! - two orchestrators share ten robot rooms by rendezvous hashing and hold them steadily:
//!   every room runs, on the node it prefers, the runtime gauges add up, and the logs hold no
//!   warning or error after start-up;
//! - `kill -9` of one: its rooms run on the other within a lease TTL and a reconcile;
//! - `SIGSTOP` of one past its lease: its rooms run on the other, every commit of every room
//!   is made by the node that owns the room's epoch (the paused node commits nothing after the
//!   takeover), and once resumed (`SIGCONT`) its runtime gauge comes back to what it runs
//!   (a trigger of the test's own records every change of `room_cells` with the connection
//!   that made it, and the connections are matched to the processes through `/proc`: Linux);
//! - a disabled room's robots leave and stay gone;
//! - a person's paid gift in a robot room, sent through `room-api`, is forwarded to the
//!   orchestrator running the room, debited once and shows in the room.
//!
//! # How the two binaries are reached
//!
//! Cargo gives an integration test the path of its own package's binaries only
//! (`CARGO_BIN_EXE_room-orchestrator`); `room-api` is another package, and `cargo nextest run
//! -p room-orchestrator` does not build it, so a path next to this binary could be missing or,
//! worse, stale. So the orchestrators, the processes these tests kill and pause, are real
//! processes of this package's binary, configured through `ROOM__*` like in production, their
//! logs (stdout and stderr, `RUST_LOG=info`) written to a file each in the test's temporary
//! directory; and the `room-api` node runs inside the test process: the very
//! [`App`] of [`Role::Api`] that `room-api serve` runs ([`room_node::run`] minus logging and
//! signals), served on a socket of its own, with the settings the environment would give it.
//! The schema is migrated with [`Storage::migrate`], what `room-api migrate` calls. Nothing
//! here needs another binary, and every test builds what it runs.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use room_app::robots::preferred_node;
use room_domain::{RoomId, UserId};
use room_node::{App, Authenticator, Role, Settings, Storage};
use room_testkit::{mysql, process, redis};
use secrecy::SecretString;
use serde_json::{Value, json};
use sqlx::{Connection, Executor, MySqlConnection};
use tokio::process::{Child, Command};

const SECRET: &str = "orchestrators-test-secret-of-32-bytes!";
const INTERNAL_TOKEN: &str = "orchestrators-test-internal-token-of-32-bytes";
/// The lease TTL of every node, in milliseconds.
const TTL_MS: u64 = 3_000;
/// How often an orchestrator reconciles, and how often a robot room steps, in milliseconds.
const RECONCILE_MS: u64 = 500;
const STEP_MS: u64 = 500;
/// The `room-api` node's id.
const API_NODE: &str = "api-1";
/// The robot rooms of a test.
const ROOMS: usize = 10;
/// How long the `room-api` node keeps a room with no request active (`ROOM__CELL__IDLE_SECS`):
/// the default, 300 s. Every test creates its robot rooms through `room-api`, which activates
/// them; clustered, it lets a robot room go a second after its last request, so the rooms run
/// on the orchestrators within [`DEADLINE`], long before this would let them go.
const API_IDLE_SECS: u64 = 300;
/// How long a test waits for what the cluster does by itself: start, settle, hand over. A
/// takeover takes about one TTL and one reconcile; debug builds on two cores are slow.
const DEADLINE: Duration = Duration::from_secs(60);
/// The deadline of a takeover after a node was killed or paused.
const TAKEOVER: Duration = Duration::from_secs(30);

/// The tests of this file run one at a time: each runs two debug orchestrators and a
/// `room-api` node beside MariaDB and Redis, and two at once on two cores measure the machine
/// more than the cluster. In one process (`cargo test`) by this lock; across processes
/// (nextest runs each test in a process of its own) by [`Turn`]'s file lock.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A test's turn: [`ONE_AT_A_TIME`] and an exclusive lock on a file of the machine's
/// temporary directory, both released when the test ends (the file lock also when its
/// process dies).
struct Turn {
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
struct Shared {
    mysql_url: String,
    redis_url: String,
    prefix: String,
    /// The gift catalog and rules: the shipped file with roses that fuel no rocket, so that no
    /// reward enters the books.
    catalog: PathBuf,
    dir: tempfile::TempDir,
}

fn token(user: &str) -> String {
    Authenticator::new(&SecretString::from(SECRET))
        .unwrap()
        .mint(
            &UserId::new(user).unwrap(),
            user == "admin",
            Duration::from_secs(600),
        )
        .unwrap()
}

use room_testkit::process::free_port;

/// Waits until `probe` answers `Ok`, for up to `deadline`; panics with the last `Err` (what
/// was seen instead) when it never does.
async fn wait_until<T, F, Fut>(what: &str, deadline: Duration, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let end = Instant::now() + deadline;
    loop {
        match probe().await {
            Ok(value) => return value,
            Err(seen) => assert!(
                Instant::now() < end,
                "{what}: not within {deadline:?}; last seen: {seen}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// One `room-orchestrator` process.
struct Orchestrator {
    id: String,
    child: Child,
    base: String,
    log: PathBuf,
    http: reqwest::Client,
}

impl Orchestrator {
    async fn start(shared: &Shared, id: &str) -> Orchestrator {
        let port = free_port();
        let base = format!("http://127.0.0.1:{port}");
        let log = shared.dir.path().join(format!("{id}.log"));
        let out = std::fs::File::create(&log).expect("log file");
        let err = out.try_clone().expect("log file");
        let child = Command::new(env!("CARGO_BIN_EXE_room-orchestrator"))
            // No configs/room.toml there: the defaults and the environment only.
            .current_dir(shared.dir.path())
            .env("ROOM__HTTP__ADDR", format!("127.0.0.1:{port}"))
            .env("ROOM__STORAGE__URL", &shared.mysql_url)
            .env("ROOM__STORAGE__MAX_CONNECTIONS", "4")
            .env("ROOM__AUTH__JWT_SECRET", SECRET)
            .env("ROOM__CATALOG__PATH", &shared.catalog)
            .env("ROOM__CELL__NODE_ID", id)
            .env("ROOM__LEASE__REDIS_URL", &shared.redis_url)
            .env("ROOM__LEASE__KEY_PREFIX", &shared.prefix)
            .env("ROOM__LEASE__TTL_MS", TTL_MS.to_string())
            .env("ROOM__CLUSTER__ADVERTISE_URL", &base)
            .env("ROOM__CLUSTER__INTERNAL_TOKEN", INTERNAL_TOKEN)
            .env("ROOM__ROBOTS__RECONCILE_EVERY_MS", RECONCILE_MS.to_string())
            .env("ROOM__ROBOTS__STEP_EVERY_MS", STEP_MS.to_string())
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .kill_on_drop(true)
            .spawn()
            .expect("start room-orchestrator");
        let node = Orchestrator {
            id: id.to_owned(),
            child,
            base,
            log,
            http: reqwest::Client::new(),
        };
        let end = Instant::now() + DEADLINE;
        loop {
            let ready = node
                .http
                .get(format!("{}/readyz", node.base))
                .timeout(Duration::from_secs(2))
                .send()
                .await;
            if ready.is_ok_and(|r| r.status().is_success()) {
                return node;
            }
            assert!(
                Instant::now() < end,
                "{id} did not become ready; its log:\n{}",
                node.log_text()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn signal(&self, signal: &str) {
        process::signal(self.child.id().expect("running"), signal);
    }

    /// What `/metrics` answers; `None` when the node does not answer within two seconds
    /// (paused, killed).
    async fn metrics(&self) -> Option<String> {
        let response = self
            .http
            .get(format!("{}/metrics", self.base))
            .timeout(Duration::from_secs(2))
            .send()
            .await
            .ok()?;
        if !response.status().is_success() {
            return None;
        }
        response.text().await.ok()
    }

    /// `room_robot_runtimes` as the node reports it now.
    async fn runtimes(&self) -> Option<f64> {
        Some(metric(&self.metrics().await?, "room_robot_runtimes", None))
    }

    fn log_text(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        strip_ansi(&text)
    }

    /// The log's WARN and ERROR lines after start-up (the `listening` line): the warnings of
    /// start-up (no Kafka, no TRTC key) are the configuration's, not the orchestrator's.
    fn problems_after_start(&self) -> Vec<String> {
        self.log_text()
            .lines()
            .skip_while(|line| !line.contains("listening"))
            .filter(|line| {
                let level = line.split_whitespace().nth(1);
                matches!(level, Some("WARN" | "ERROR")) || line.contains("panicked")
            })
            .map(str::to_owned)
            .collect()
    }
}

fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // ESC [ ... final byte in @..~
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) && c != '[' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The sum of the series of `name` in a Prometheus text, those with `label` (`key="value"`)
/// only when given; 0 when there is none.
fn metric(text: &str, name: &str, label: Option<&str>) -> f64 {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let rest = line.strip_prefix(name)?;
            let (labels, value) = match rest.strip_prefix('{') {
                Some(rest) => {
                    let (labels, value) = rest.split_once('}')?;
                    (labels, value)
                }
                None if rest.starts_with(' ') => ("", rest),
                None => return None,
            };
            if label.is_some_and(|label| !labels.split(',').any(|l| l == label)) {
                return None;
            }
            value.trim().parse::<f64>().ok()
        })
        .fold(0.0, |sum, value| sum + value)
}

/// The `room-api` node, in this process (see the file's header).
struct Api {
    base: String,
    http: reqwest::Client,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    serving: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl Api {
    /// A node keeping idle rooms for `idle_secs`.
    async fn start(shared: &Shared, idle_secs: u64) -> Api {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let base = format!("http://{address}");
        // What ROOM__* gives `room-api` in a cluster.
        let mut settings = Settings::default();
        settings.http.addr = address;
        settings.storage.url = shared.mysql_url.clone();
        settings.storage.max_connections = 4;
        settings.auth.jwt_secret = SecretString::from(SECRET);
        settings.catalog.path = shared.catalog.clone();
        settings.cell.node_id = API_NODE.into();
        settings.cell.idle_secs = idle_secs;
        settings.lease.redis_url = Some(SecretString::from(shared.redis_url.clone()));
        settings.lease.key_prefix = shared.prefix.clone();
        settings.lease.ttl_ms = TTL_MS;
        settings.cluster.advertise_url = Some(base.clone());
        settings.cluster.internal_token = Some(SecretString::from(INTERNAL_TOKEN));
        let app = App::build_as(settings, Role::Api)
            .await
            .expect("room-api builds");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let serving = tokio::spawn(app.serve(listener, async move {
            let _ = stopped.await;
        }));
        let api = Api {
            base,
            http: reqwest::Client::new(),
            stop: Some(stop),
            serving,
        };
        wait_until("room-api is ready", DEADLINE, || async {
            match api.http.get(format!("{}/readyz", api.base)).send().await {
                Ok(r) if r.status().is_success() => Ok(()),
                other => Err(format!("{other:?}")),
            }
        })
        .await;
        api
    }

    /// Stops the node gracefully: its cells drain and give their leases back.
    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let stopped = tokio::time::timeout(DEADLINE, &mut self.serving).await;
        assert!(
            matches!(stopped, Ok(Ok(Ok(())))),
            "room-api stopped: {stopped:?}"
        );
    }

    /// `user` calls `path`: the status (0 when no answer came) and the body.
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        user: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(token(user))
            .timeout(Duration::from_secs(20));
        if let Some(body) = body {
            request = request.json(&body);
        }
        match request.send().await {
            Ok(response) => {
                let status = response.status().as_u16();
                (status, response.json().await.unwrap_or(Value::Null))
            }
            Err(_) => (0, Value::Null),
        }
    }

    /// Calls until the answer is a success, retrying what the service says is retryable (503
    /// while a room changes owner), for up to [`DEADLINE`].
    async fn call_until_ok(
        &self,
        method: reqwest::Method,
        path: &str,
        user: &str,
        body: Option<Value>,
    ) -> Value {
        let end = Instant::now() + DEADLINE;
        loop {
            let (status, value) = self.call(method.clone(), path, user, body.clone()).await;
            if (200..300).contains(&status) {
                return value;
            }
            let retryable = status == 0 || value["error"]["retryable"] == json!(true);
            assert!(retryable, "{method} {path}: {status} {value}");
            assert!(
                Instant::now() < end,
                "{method} {path} never succeeded: {status} {value}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn get(&self, path: &str, user: &str) -> Value {
        self.call_until_ok(reqwest::Method::GET, path, user, None)
            .await
    }

    async fn post(&self, path: &str, user: &str, body: Value) -> Value {
        self.call_until_ok(reqwest::Method::POST, path, user, Some(body))
            .await
    }

    /// The robot room's configuration, with `running_on`.
    async fn robot_room(&self, room_id: &str) -> Value {
        self.get(&format!("/v1/admin/robot-rooms/{room_id}"), "admin")
            .await
    }

    /// Where each room runs, as `GET /v1/admin/robot-rooms/{room_id}` says.
    async fn running_on(&self, rooms: &[String]) -> Vec<Option<String>> {
        let mut placement = Vec::new();
        for room in rooms {
            let config = self.robot_room(room).await;
            placement.push(config["running_on"].as_str().map(str::to_owned));
        }
        placement
    }

    /// The room as a person sees it (a read through this node: forwarded to the node that
    /// runs the room).
    async fn room(&self, room_id: &str) -> Value {
        self.get(&format!("/v1/rooms/{room_id}"), "reader").await
    }
}

/// The configuration of the `i`-th robot room of a test: a pool of six robots of its own,
/// three listeners at every hour, two of eight seats taken by robots, 30 roses a minute.
fn robot_room(i: usize) -> Value {
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
async fn shared(test: &str) -> Option<(Shared, mysql::TestDatabase, Turn)> {
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

/// A `room-api` node, two orchestrators and ten enabled robot rooms, settled: every room
/// runs on the orchestrator it prefers.
struct Cluster {
    orchestrators: Vec<Orchestrator>,
    api: Api,
    rooms: Vec<String>,
    shared: Shared,
    _database: mysql::TestDatabase,
    _turn: Turn,
}

impl Cluster {
    async fn start(test: &str) -> Option<Cluster> {
        let (shared, database, turn) = shared(test).await?;
        let api = Api::start(&shared, API_IDLE_SECS).await;
        let mut orchestrators = Vec::new();
        for id in ["orch-a", "orch-b"] {
            orchestrators.push(Orchestrator::start(&shared, id).await);
        }
        let mut rooms = Vec::new();
        for i in 0..ROOMS {
            let created = api
                .post("/v1/admin/robot-rooms", "admin", robot_room(i))
                .await;
            rooms.push(created["room_id"].as_str().unwrap().to_owned());
        }
        let cluster = Cluster {
            orchestrators,
            api,
            rooms,
            shared,
            _database: database,
            _turn: turn,
        };
        let ids = cluster.ids();
        let preferred = cluster.preferred(&ids);
        for id in &ids {
            assert!(
                preferred.iter().any(|p| p == id),
                "no room prefers {id} (rename the rooms): {preferred:?}"
            );
        }
        wait_until("the ten rooms run", DEADLINE, || cluster.settled(&ids)).await;
        Some(cluster)
    }

    fn ids(&self) -> Vec<String> {
        self.orchestrators.iter().map(|o| o.id.clone()).collect()
    }

    fn orchestrator(&self, id: &str) -> &Orchestrator {
        self.orchestrators.iter().find(|o| o.id == id).unwrap()
    }

    /// The node each room prefers among `live` (rendezvous hashing, as the orchestrators
    /// compute it).
    fn preferred(&self, live: &[String]) -> Vec<String> {
        self.rooms
            .iter()
            .map(|room| {
                let room = RoomId::new(room.as_str()).unwrap();
                preferred_node(&room, &live[0], live[1..].iter()).to_owned()
            })
            .collect()
    }

    /// One look at the cluster: where each room runs and each live node's runtime gauge.
    async fn look(&self, live: &[String]) -> (Vec<Option<String>>, Vec<Option<f64>>) {
        let placement = self.api.running_on(&self.rooms).await;
        let mut gauges = Vec::new();
        for id in live {
            gauges.push(self.orchestrator(id).runtimes().await);
        }
        (placement, gauges)
    }

    /// Whether every room runs on the node it prefers among `live`, and each live node's
    /// gauge counts the rooms it runs: `Err` says what was seen instead.
    async fn settled(&self, live: &[String]) -> Result<(), String> {
        let preferred = self.preferred(live);
        let (placement, gauges) = self.look(live).await;
        let expected: Vec<Option<String>> = preferred.iter().cloned().map(Some).collect();
        let counts: Vec<Option<f64>> = live
            .iter()
            .map(|id| Some(preferred.iter().filter(|p| *p == id).count() as f64))
            .collect();
        if placement == expected && gauges == counts {
            Ok(())
        } else {
            Err(format!(
                "running_on {placement:?} (preferred {preferred:?}), gauges of {live:?} {gauges:?}"
            ))
        }
    }

    async fn settle(&self, what: &str, live: &[String]) {
        wait_until(what, DEADLINE, || self.settled(live)).await;
    }

    /// The rooms running on `id` now.
    async fn rooms_on(&self, id: &str) -> Vec<String> {
        let placement = self.api.running_on(&self.rooms).await;
        self.rooms
            .iter()
            .zip(placement)
            .filter(|(_, on)| on.as_deref() == Some(id))
            .map(|(room, _)| room.clone())
            .collect()
    }

    /// Waits until every room runs on `id`.
    async fn all_on(&self, what: &str, id: &str) {
        wait_until(what, TAKEOVER, || async {
            let placement = self.api.running_on(&self.rooms).await;
            if placement.iter().all(|on| on.as_deref() == Some(id)) {
                Ok(())
            } else {
                Err(format!("running_on {placement:?}"))
            }
        })
        .await;
    }

    async fn finish(self) {
        let Cluster {
            orchestrators,
            api,
            _database,
            ..
        } = self;
        for node in &orchestrators {
            let problems = node.problems_after_start();
            if !problems.is_empty() {
                eprintln!(
                    "{} logged after start-up:\n{}",
                    node.id,
                    problems.join("\n")
                );
            }
        }
        drop(orchestrators);
        api.stop().await;
    }
}

use room_testkit::process::ownership;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_orchestrators_share_ten_robot_rooms_steadily() {
    let Some(cluster) = Cluster::start("steady").await else {
        return;
    };
    let ids = cluster.ids();
    let preferred = cluster.preferred(&ids);
    let mut seen: HashMap<String, usize> = HashMap::new();
    let counters = async |node: &Orchestrator| {
        let text = node.metrics().await.expect("the orchestrator answers");
        [
            "room_robot_runtime_starts_total",
            "room_robot_runtime_stops_total",
            "room_robot_ownership_conflicts_total",
        ]
        .map(|name| metric(&text, name, None))
    };
    let mut before = Vec::new();
    for node in &cluster.orchestrators {
        before.push(counters(node).await);
    }
    // About ten seconds.
    let samples = 50;
    for sample in 0..samples {
        let (placement, gauges) = cluster.look(&ids).await;
        for (room, (on, wanted)) in cluster.rooms.iter().zip(placement.iter().zip(&preferred)) {
            assert_eq!(
                on.as_deref(),
                Some(wanted.as_str()),
                "sample {sample}: room {room} runs on {on:?}, not on {wanted} (it prefers it, \
                 and both orchestrators live): {placement:?}"
            );
        }
        let gauges: Vec<f64> = gauges
            .into_iter()
            .map(|g| g.expect("both orchestrators answer"))
            .collect();
        assert_eq!(
            gauges.iter().sum::<f64>(),
            ROOMS as f64,
            "sample {sample}: room_robot_runtimes of {ids:?}: {gauges:?}"
        );
        for (id, gauge) in ids.iter().zip(&gauges) {
            let runs = placement
                .iter()
                .filter(|on| on.as_deref() == Some(id))
                .count();
            assert_eq!(*gauge, runs as f64, "sample {sample}: {id}'s gauge");
            *seen.entry(id.clone()).or_default() += runs;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for id in &ids {
        assert!(seen.get(id).copied().unwrap_or(0) > 0, "{id} ran no room");
    }
    // Nothing moved meanwhile: no runtime started or stopped, no conflict.
    for (node, before) in cluster.orchestrators.iter().zip(before) {
        let after = counters(node).await;
        let runs = preferred.iter().filter(|p| **p == node.id).count() as f64;
        eprintln!(
            "{}: runs {runs}; starts, stops, conflicts: {after:?}",
            node.id
        );
        assert_eq!(
            after, before,
            "{}: runtime starts, stops and conflicts while settled",
            node.id
        );
        assert!(after[0] >= runs, "{}: {after:?} for {runs} rooms", node.id);
    }
    for node in &cluster.orchestrators {
        let problems = node.problems_after_start();
        assert!(
            problems.is_empty(),
            "{} logged after start-up:\n{}",
            node.id,
            problems.join("\n")
        );
    }
    cluster.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_orchestrators_rooms_run_on_the_other() {
    let Some(cluster) = Cluster::start("killed").await else {
        return;
    };
    let (victim, survivor) = ("orch-b", "orch-a");
    let moved = cluster.rooms_on(victim).await;
    assert!(!moved.is_empty());
    let mut before = HashMap::new();
    for room in &moved {
        let (epoch, owner) = ownership(&cluster.shared.mysql_url, room).await;
        assert_eq!(owner, victim, "room {room}");
        before.insert(room.clone(), epoch);
    }

    cluster.orchestrator(victim).signal("-KILL");
    cluster
        .all_on("the killed node's rooms run on the survivor", survivor)
        .await;
    let survivors = vec![survivor.to_owned()];
    cluster
        .settle("the survivor's gauge counts all ten", &survivors)
        .await;
    for room in &moved {
        let (epoch, owner) = ownership(&cluster.shared.mysql_url, room).await;
        assert_eq!(owner, survivor, "room {room}");
        assert!(
            epoch > before[room],
            "room {room}: epoch {epoch} after {}",
            before[room]
        );
    }
    let text = cluster.orchestrator(survivor).metrics().await.unwrap();
    let starts = metric(&text, "room_robot_runtime_starts_total", None);
    assert!(
        starts >= ROOMS as f64,
        "{survivor} started {starts} runtimes"
    );
    cluster.finish().await;
}

/// The commits of the rooms, as the database saw them: a trigger records every change of
/// `room_cells` (an activation moves the epoch and names the owner; a commit moves the
/// version under the epoch it was fenced with) and the connection that made it.
async fn audit_commits(mysql_url: &str) {
    let mut conn = MySqlConnection::connect(mysql_url).await.unwrap();
    for statement in [
        "CREATE TABLE test_cell_audit (
             id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
             room_id VARCHAR(64) NOT NULL,
             old_epoch BIGINT NULL,
             new_epoch BIGINT NOT NULL,
             old_version BIGINT NULL,
             new_version BIGINT NOT NULL,
             owner_node VARCHAR(255) NOT NULL,
             connection_id BIGINT NOT NULL
         ) ENGINE = InnoDB",
        "CREATE TRIGGER test_cell_audit_insert AFTER INSERT ON room_cells FOR EACH ROW
             INSERT INTO test_cell_audit
                 (room_id, old_epoch, new_epoch, old_version, new_version, owner_node, connection_id)
             VALUES (NEW.room_id, NULL, NEW.epoch, NULL, NEW.version, NEW.owner_node, CONNECTION_ID())",
        "CREATE TRIGGER test_cell_audit_update AFTER UPDATE ON room_cells FOR EACH ROW
             INSERT INTO test_cell_audit
                 (room_id, old_epoch, new_epoch, old_version, new_version, owner_node, connection_id)
             VALUES (NEW.room_id, OLD.epoch, NEW.epoch, OLD.version, NEW.version, NEW.owner_node, CONNECTION_ID())",
    ] {
        // The text protocol: MariaDB prepares no CREATE TRIGGER.
        conn.execute(statement).await.unwrap();
    }
    let _ = conn.close().await;
}

/// A row of `test_cell_audit`: id, room, old and new epoch, old and new version, owner,
/// connection.
type AuditRow = (i64, String, Option<i64>, i64, Option<i64>, i64, String, i64);

/// The local ports of `pid`'s TCP connections to `server_port` (the MySQL server's). Only
/// those: the kernel gives two sockets one local port when their peers differ, so a port of a
/// connection to Redis could name another process's MySQL connection.
fn tcp_ports_of(pid: u32, server_port: u16) -> HashSet<u16> {
    let inodes: HashSet<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|dir| {
            dir.filter_map(|fd| {
                let target = std::fs::read_link(fd.ok()?.path()).ok()?;
                let target = target.to_string_lossy();
                Some(
                    target
                        .strip_prefix("socket:[")?
                        .strip_suffix(']')?
                        .to_owned(),
                )
            })
            .collect()
        })
        .unwrap_or_default();
    // The port of an `address:port` field of the socket tables (hexadecimal).
    let port = |field: &str| u16::from_str_radix(field.rsplit(':').next()?, 16).ok();
    let mut ports = HashSet::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() > 9
                && inodes.contains(fields[9])
                && port(fields[2]) == Some(server_port)
            {
                ports.extend(port(fields[1]));
            }
        }
    }
    ports
}

/// The database connections of each process, by MariaDB's connection id: the orchestrators'
/// under their node ids, this process's (the `room-api` node's and the test's own) under
/// [`API_NODE`].
async fn connections_of(mysql_url: &str, processes: &[(String, u32)]) -> HashMap<i64, String> {
    let mut conn = MySqlConnection::connect(mysql_url).await.unwrap();
    let rows: Vec<(i64, String)> =
        sqlx::query_as("SELECT ID, HOST FROM information_schema.PROCESSLIST")
            .fetch_all(&mut conn)
            .await
            .unwrap();
    let (server_port,): (i64,) = sqlx::query_as("SELECT CAST(@@port AS SIGNED)")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    let server_port = u16::try_from(server_port).unwrap();
    let _ = conn.close().await;
    let by_port: HashMap<u16, i64> = rows
        .into_iter()
        .filter_map(|(id, host)| Some((host.rsplit(':').next()?.parse().ok()?, id)))
        .collect();
    let mut nodes = HashMap::new();
    for (node, pid) in processes {
        for port in tcp_ports_of(*pid, server_port) {
            if let Some(id) = by_port.get(&port)
                && let Some(other) = nodes.insert(*id, node.clone())
            {
                assert_eq!(&other, node, "connection {id} seen in two processes");
            }
        }
    }
    nodes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_orchestrator_commits_nothing_after_its_rooms_are_taken_over() {
    let Some(cluster) = Cluster::start("paused").await else {
        return;
    };
    let url = cluster.shared.mysql_url.clone();
    audit_commits(&url).await;
    let (paused, other) = ("orch-b", "orch-a");
    let processes: Vec<(String, u32)> = cluster
        .orchestrators
        .iter()
        .map(|o| (o.id.clone(), o.child.id().unwrap()))
        .chain([(API_NODE.to_owned(), std::process::id())])
        .collect();
    let mut connections = connections_of(&url, &processes).await;
    let taken = cluster.rooms_on(paused).await;
    assert!(!taken.is_empty());
    let node = cluster.orchestrator(paused);
    let before = node.metrics().await.unwrap();
    let mut epochs = HashMap::new();
    for room in &taken {
        let (epoch, owner) = ownership(&url, room).await;
        assert_eq!(owner, paused, "room {room}");
        epochs.insert(room.clone(), epoch);
    }

    // Paused past its lease (and for at least six seconds), the node loses its rooms.
    node.signal("-STOP");
    let paused_at = Instant::now();
    cluster
        .all_on("the paused node's rooms run on the other", other)
        .await;
    tokio::time::sleep(Duration::from_secs(6).saturating_sub(paused_at.elapsed())).await;
    let mut takeover = HashMap::new();
    for room in &taken {
        // The lease moves first; the new owner's activation writes the cell's epoch after it.
        let epoch = wait_until(
            &format!("room {room} activated on {other}"),
            TAKEOVER,
            || async {
                let (epoch, owner) = ownership(&url, room).await;
                if owner == other && epoch > epochs[room] {
                    Ok(epoch)
                } else {
                    Err(format!("epoch {epoch} on {owner}, {} before", epochs[room]))
                }
            },
        )
        .await;
        takeover.insert(room.clone(), epoch);
    }

    // Resumed, its runtimes find their cells fenced and stop; it runs again only what it
    // takes back through the lease (the rooms prefer it), under new epochs.
    node.signal("-CONT");
    let ids = cluster.ids();
    cluster
        .settle(
            "the resumed node runs what it prefers, its gauge says so",
            &ids,
        )
        .await;
    let after = node.metrics().await.unwrap();
    let lost = metric(
        &after,
        "room_robot_runtime_stops_total",
        Some("reason=\"lease_lost\""),
    ) - metric(
        &before,
        "room_robot_runtime_stops_total",
        Some("reason=\"lease_lost\""),
    );
    assert_eq!(
        lost,
        taken.len() as f64,
        "the paused node's runtimes stopped as their lease was lost"
    );
    for room in &taken {
        let (epoch, owner) = ownership(&url, room).await;
        assert!(
            epoch > takeover[room],
            "room {room} is back under a new epoch"
        );
        assert_eq!(owner, paused, "room {room}");
    }

    // Every change of every room's cell row, since the audit began, was made by the node
    // that owned the epoch it was made under.
    connections.extend(connections_of(&url, &processes).await);
    let mut conn = MySqlConnection::connect(&url).await.unwrap();
    let rows: Vec<AuditRow> = sqlx::query_as(
        "SELECT id, room_id, old_epoch, new_epoch, old_version, new_version, owner_node, \
             connection_id FROM test_cell_audit ORDER BY id",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    let _ = conn.close().await;
    let mut commits_after_takeover = 0;
    let mut written_by: HashMap<&str, (usize, usize)> = HashMap::new();
    for (id, room, old_epoch, new_epoch, old_version, new_version, owner, connection) in &rows {
        let by = connections.get(connection).map(String::as_str);
        let counts = written_by.entry(by.unwrap_or("nobody known")).or_default();
        if old_epoch == &Some(*new_epoch) {
            counts.1 += 1;
        } else {
            counts.0 += 1;
        }
        assert_eq!(
            by,
            Some(owner.as_str()),
            "audit row {id}: room {room} epoch {old_epoch:?} -> {new_epoch}, version \
             {old_version:?} -> {new_version}, owned by {owner}, written by connection \
             {connection} of {by:?}"
        );
        if takeover.get(room) == Some(new_epoch) && old_epoch == &Some(*new_epoch) {
            commits_after_takeover += 1;
        }
    }
    eprintln!("cell row changes (activations, commits) by node: {written_by:?}");
    assert!(
        commits_after_takeover > 0,
        "{other} committed in the rooms it took over"
    );
    assert!(
        written_by
            .get(paused)
            .is_some_and(|(activations, _)| *activations >= taken.len()),
        "{paused} took its rooms back: {written_by:?}"
    );
    let resumed = node.metrics().await.unwrap();
    eprintln!(
        "{paused} after the pause: cells fenced {}, leases lost {}, robot commands refused as \
         not owner {}; its warnings:\n{}",
        metric(&resumed, "room_cell_fenced_total", None),
        metric(&resumed, "room_leases_lost_total", None),
        metric(
            &resumed,
            "room_robot_commands_total",
            Some("outcome=\"not_owner\"")
        ),
        node.problems_after_start().join("\n")
    );
    cluster.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disabled_robot_rooms_robots_leave_and_stay_gone() {
    let Some(cluster) = Cluster::start("disabled").await else {
        return;
    };
    let room_id = cluster.rooms[0].clone();
    wait_until("the room's robots are in", DEADLINE, || async {
        let room = cluster.api.room(&room_id).await;
        if room["online_count"] == 3 {
            Ok(())
        } else {
            Err(room.to_string())
        }
    })
    .await;
    let config = cluster.api.robot_room(&room_id).await;
    let patched = cluster
        .api
        .call_until_ok(
            reqwest::Method::PATCH,
            &format!("/v1/admin/robot-rooms/{room_id}"),
            "admin",
            Some(json!({"enabled": false, "version": config["version"]})),
        )
        .await;
    assert_eq!(patched["enabled"], false, "{patched}");

    wait_until("the disabled room's robots left", DEADLINE, || async {
        let room = cluster.api.room(&room_id).await;
        if room["online_count"] == 0 {
            Ok(())
        } else {
            Err(room.to_string())
        }
    })
    .await;
    // Six reconciles and steps later, still nobody, and no runtime of the room anywhere.
    let ids = cluster.ids();
    for _ in 0..15 {
        let room = cluster.api.room(&room_id).await;
        assert_eq!(room["online_count"], 0, "{room}");
        let seated = room["seats"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|seat| !seat["user_id"].is_null())
            .count();
        assert_eq!(seated, 0, "{room}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let mut runtimes = 0.0;
    let mut disabled = 0.0;
    for id in &ids {
        let text = cluster.orchestrator(id).metrics().await.unwrap();
        runtimes += metric(&text, "room_robot_runtimes", None);
        disabled += metric(
            &text,
            "room_robot_runtime_stops_total",
            Some("reason=\"disabled\""),
        );
    }
    assert_eq!(
        runtimes,
        (ROOMS - 1) as f64,
        "runtimes of the enabled rooms"
    );
    assert_eq!(disabled, 1.0, "one runtime stopped as disabled");
    // The room itself may still be active somewhere, an ordinary room now: the reads above,
    // forwarded by room-api to the node it last knew to run the room, activate it there.
    cluster.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persons_paid_gift_in_a_robot_room_is_forwarded_and_debited_once() {
    let Some(cluster) = Cluster::start("gift").await else {
        return;
    };
    let ids = cluster.ids();
    let room_id = cluster.rooms[0].clone();
    let api = &cluster.api;
    // Two robots sit down; the one on the lowest seat gets the gift.
    let robot = wait_until("robots sit on seats", DEADLINE, || async {
        let room = api.room(&room_id).await;
        let seated: Vec<String> = room["seats"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|seat| seat["user_id"].as_str())
            .filter(|user| user.starts_with("robot-"))
            .map(str::to_owned)
            .collect();
        if seated.len() == 2 {
            Ok(seated[0].clone())
        } else {
            Err(room.to_string())
        }
    })
    .await;
    api.post(&format!("/v1/rooms/{room_id}/join"), "alice", json!({}))
        .await;
    let credited = api
        .post(
            "/v1/admin/wallets/alice/credit",
            "admin",
            json!({"op_id": "gift-test-credit", "amount": 1000}),
        )
        .await;
    assert_eq!(credited["balance"], 1000, "{credited}");
    let running_on = api.robot_room(&room_id).await["running_on"].clone();
    assert!(
        ids.iter().any(|id| running_on == json!(id)),
        "the room runs on an orchestrator: {running_on}"
    );
    let heat_before = api.room(&room_id).await["heat"].as_i64().unwrap();

    let gift = json!({"order_id": "alice-1", "gift_id": "rose", "count": 3, "recipients": [robot]});
    let path = format!("/v1/rooms/{room_id}/gifts");
    let first = api.post(&path, "alice", gift.clone()).await;
    let expected = json!({"order_id": "alice-1", "status": "COMPLETED", "coin_balance_after": 970});
    assert_eq!(first, expected);
    // A repeat of the order is answered the same and debits nothing more.
    let again = api.post(&path, "alice", gift).await;
    assert_eq!(again, expected);
    let wallet = api.get("/v1/me/wallet", "alice").await;
    assert_eq!(wallet["balance"], 970, "{wallet}");

    let room = api.room(&room_id).await;
    let heat = room["heat"].as_i64().unwrap();
    assert!(heat >= heat_before + 30, "heat {heat} after {heat_before}");
    let rank = api
        .get(&format!("/v1/rooms/{room_id}/contribution-rank"), "alice")
        .await;
    let alice: Vec<&Value> = rank["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|entry| entry["user_id"] == "alice")
        .collect();
    assert_eq!(alice.len(), 1, "{rank}");
    assert_eq!(alice[0]["coins"], 30, "{rank}");
    let still = api.robot_room(&room_id).await["running_on"].clone();
    assert_eq!(still, running_on, "the room stayed where it ran");
    // The room ran on the orchestrator all along: room-api forwarded, and holds no cell of it.
    let metrics = reqwest::get(format!("{}/metrics", api.base))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let forwarded = metric(
        &metrics,
        "room_forwarded_requests_total",
        Some("outcome=\"ok\""),
    );
    assert!(forwarded >= 3.0, "room-api forwarded {forwarded} requests");

    let mut conn = MySqlConnection::connect(&cluster.shared.mysql_url)
        .await
        .unwrap();
    let orders: Vec<(String, String)> =
        sqlx::query_as("SELECT order_id, status FROM gift_orders WHERE sender = 'alice'")
            .fetch_all(&mut conn)
            .await
            .unwrap();
    assert_eq!(orders, vec![("alice-1".to_owned(), "COMPLETED".to_owned())]);
    let _ = conn.close().await;
    cluster.finish().await;
}
