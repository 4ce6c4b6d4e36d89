//! The two kinds of node a test runs: a `room-orchestrator` process, configured through
//! `ROOM__*` and logging to a file, and the `room-api` node in this process (see the target's
//! header for why).

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use room_node::{App, Role, Settings};
use room_testkit::process::{self, free_port};
use secrecy::SecretString;
use serde_json::{Value, json};
use tokio::process::{Child, Command};

use super::probes::{metric, wait_until};
use super::shared::{
    API_NODE, DEADLINE, INTERNAL_TOKEN, RECONCILE_MS, SECRET, STEP_MS, Shared, TTL_MS, token,
};

/// One `room-orchestrator` process.
pub(crate) struct Orchestrator {
    pub(crate) id: String,
    pub(crate) child: Child,
    base: String,
    log: PathBuf,
    http: reqwest::Client,
}

impl Orchestrator {
    pub(super) async fn start(shared: &Shared, id: &str) -> Orchestrator {
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

    pub(crate) fn signal(&self, signal: &str) {
        process::signal(self.child.id().expect("running"), signal);
    }

    /// What `/metrics` answers; `None` when the node does not answer within two seconds
    /// (paused, killed).
    pub(crate) async fn metrics(&self) -> Option<String> {
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
    pub(super) async fn runtimes(&self) -> Option<f64> {
        Some(metric(&self.metrics().await?, "room_robot_runtimes", None))
    }

    fn log_text(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        strip_ansi(&text)
    }

    /// The log's WARN and ERROR lines after start-up (the `listening` line): the warnings of
    /// start-up (no Kafka, no TRTC key) are the configuration's, not the orchestrator's.
    pub(crate) fn problems_after_start(&self) -> Vec<String> {
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

/// The `room-api` node, in this process (see the target's header).
pub(crate) struct Api {
    pub(crate) base: String,
    http: reqwest::Client,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    serving: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl Api {
    /// A node keeping idle rooms for `idle_secs`.
    pub(super) async fn start(shared: &Shared, idle_secs: u64) -> Api {
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
    pub(super) async fn stop(mut self) {
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
    pub(crate) async fn call_until_ok(
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

    pub(crate) async fn get(&self, path: &str, user: &str) -> Value {
        self.call_until_ok(reqwest::Method::GET, path, user, None)
            .await
    }

    pub(crate) async fn post(&self, path: &str, user: &str, body: Value) -> Value {
        self.call_until_ok(reqwest::Method::POST, path, user, Some(body))
            .await
    }

    /// The robot room's configuration, with `running_on`.
    pub(crate) async fn robot_room(&self, room_id: &str) -> Value {
        self.get(&format!("/v1/admin/robot-rooms/{room_id}"), "admin")
            .await
    }

    /// Where each room runs, as `GET /v1/admin/robot-rooms/{room_id}` says.
    pub(super) async fn running_on(&self, rooms: &[String]) -> Vec<Option<String>> {
        let mut placement = Vec::new();
        for room in rooms {
            let config = self.robot_room(room).await;
            placement.push(config["running_on"].as_str().map(str::to_owned));
        }
        placement
    }

    /// The room as a person sees it (a read through this node: forwarded to the node that
    /// runs the room).
    pub(crate) async fn room(&self, room_id: &str) -> Value {
        self.get(&format!("/v1/rooms/{room_id}"), "reader").await
    }
}
