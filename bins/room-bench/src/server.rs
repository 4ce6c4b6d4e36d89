//! A `room-api` child process the bench starts, its HTTP client, and the users and rooms it
//! sets up through the public API.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use tokio::process::{Child, Command};

use crate::disk::Database;

/// Profiles per `PUT /v1/admin/users` call (the most a call takes is 500; 250 of the bench's
/// stay well inside the 64 KiB body limit).
pub const PROFILE_BATCH: usize = 250;

/// Gifts completed so far by every client of this process.
static GIFTS_COMPLETED: AtomicU64 = AtomicU64::new(0);

/// How many gifts every client of this process completed so far.
pub fn gifts_completed() -> u64 {
    GIFTS_COMPLETED.load(Ordering::Relaxed)
}

/// The servers' token secret.
const SECRET: &str = "room-bench-secret-with-enough-length-for-hs256";

/// A running `room-api` child process on its own port and database.
pub struct Server {
    child: Child,
    /// Its HTTP side.
    pub client: ClientView,
    /// The environment it was started with (beyond the bench's own), to start another
    /// node like it.
    pub env: Vec<(String, String)>,
    /// Where it keeps its data.
    pub database: Database,
    _dir: TempDir,
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Users, rooms and who sends where.
pub struct Setup {
    /// (room id, sender token, recipient user id), one per room.
    pub rooms: Vec<(String, String, String)>,
}

impl Server {
    pub async fn start(binary: &PathBuf, env: &[(&str, &str)]) -> Result<Server> {
        let port = free_port()?;
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH)?.as_nanos();
        let dir = std::env::temp_dir().join(format!("room-bench-{port}-{nanos}"));
        std::fs::create_dir_all(&dir)?;
        let mut command = Command::new(binary);
        command
            .env("ROOM__HTTP__ADDR", format!("127.0.0.1:{port}"))
            .env(
                "ROOM__STORAGE__URL",
                format!("sqlite://{}", dir.join("room.db").display()),
            )
            .env("ROOM__AUTH__JWT_SECRET", SECRET)
            // A few users drive the whole load (one owner creates every room, each sender
            // sends about a hundred gifts a second): the per-user limits would measure
            // themselves, not the service.
            .env("ROOM__LIMITS__ENABLED", "false")
            // The service logs to stdout; its warnings (a slow write transaction, a slow WAL
            // restart) show where a stall comes from, so they stay visible.
            .env("RUST_LOG", "warn")
            .stdout(Stdio::inherit())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        for (key, value) in env {
            command.env(key, value);
        }
        let child = command.spawn().context("starting room-api")?;
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let server = Server {
            child,
            client: ClientView {
                base: format!("http://127.0.0.1:{port}"),
                http: reqwest::Client::builder()
                    .pool_max_idle_per_host(256)
                    .build()?,
            },
            database: Database::of(&env, &dir),
            env,
            _dir: TempDir(dir),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ready = format!("{}/readyz", server.client.base);
            if let Ok(response) = server.client.http.get(ready).send().await
                && response.status().is_success()
            {
                return Ok(server);
            }
            if Instant::now() > deadline {
                bail!("room-api did not become ready");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// SIGKILL: no drain, no lease release.
    pub fn kill_9(&self) -> Result<()> {
        let pid = self.child.id().context("server exited")?;
        std::process::Command::new("kill")
            .arg("-KILL")
            .arg(pid.to_string())
            .status()?;
        Ok(())
    }

    pub async fn stop(mut self) -> Result<()> {
        if let Some(pid) = self.child.id() {
            // SIGTERM: the orderly shutdown path.
            let _ = std::process::Command::new("kill")
                .arg(pid.to_string())
                .status();
        }
        let _ = tokio::time::timeout(Duration::from_secs(30), self.child.wait()).await;
        Ok(())
    }

    /// The server's `/metrics` page.
    pub async fn metrics(&self) -> Result<String> {
        Ok(self
            .client
            .http
            .get(format!("{}/metrics", self.client.base))
            .send()
            .await?
            .text()
            .await?)
    }

    /// The median and p99 of the server's timing and batching summaries (`/metrics`), to
    /// show where a request's time goes.
    pub async fn metric_quantiles(&self) -> Result<Vec<String>> {
        let text = self.metrics().await?;
        Ok(text
            .lines()
            .filter(|line| line.contains("quantile=\"0.5\"") || line.contains("quantile=\"0.99\""))
            .filter(|line| line.starts_with("room_") || line.contains("/gifts"))
            .map(str::to_owned)
            .collect())
    }

    /// The sum and count of the commands the server's room commits carried so far
    /// (`room_cell_batch_commands`).
    pub async fn batch_totals(&self) -> Result<BatchTotals> {
        let text = self.metrics().await?;
        let value = |name: &str| {
            text.lines()
                .find_map(|line| line.strip_prefix(name)?.trim().parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        Ok(BatchTotals {
            commands: value("room_cell_batch_commands_sum"),
            commits: value("room_cell_batch_commands_count"),
        })
    }

    /// The process id of the server.
    pub fn pid(&self) -> Result<u32> {
        self.child.id().context("server exited")
    }

    pub fn rss_bytes(&self) -> Result<u64> {
        let pid = self.child.id().context("server exited")?;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
        let kb: u64 = status
            .lines()
            .find(|l| l.starts_with("VmRSS:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .context("no VmRSS")?
            .parse()?;
        Ok(kb * 1024)
    }

    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        token: &str,
        body: Value,
    ) -> Result<Value> {
        let response = self
            .client
            .http
            .request(method, format!("{}{path}", self.client.base))
            .bearer_auth(token)
            .json(&body)
            .send()
            .await?;
        let status = response.status();
        let value: Value = response.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            bail!("{path}: {status} {value}");
        }
        Ok(value)
    }

    /// Writes `profiles` (each `{"user_id", ...}`) to the user directory as a platform admin,
    /// [`PROFILE_BATCH`] to a `PUT /v1/admin/users` call.
    pub async fn put_profiles(&self, profiles: &[Value]) -> Result<()> {
        let admin = token("bench-admin", true)?;
        for batch in profiles.chunks(PROFILE_BATCH) {
            self.call(
                reqwest::Method::PUT,
                "/v1/admin/users",
                &admin,
                json!({ "users": batch }),
            )
            .await?;
        }
        Ok(())
    }

    /// `rooms` rooms, each with its own sender (rich) and recipient, both members.
    pub async fn setup(&self, rooms: usize, senders: usize) -> Result<Setup> {
        self.setup_tagged(rooms, senders, "").await
    }

    /// Like [`Server::setup`], with every user and room name prefixed by `tag`, so that
    /// setups on several nodes of one cluster do not share users.
    pub async fn setup_tagged(&self, rooms: usize, senders: usize, tag: &str) -> Result<Setup> {
        let admin = token("bench-admin", true)?;
        let mut out = Vec::new();
        for r in 0..rooms {
            let owner = token(&format!("{tag}owner-{r}"), false)?;
            let room = self
                .call(
                    reqwest::Method::POST,
                    "/v1/rooms",
                    &owner,
                    json!({"name": format!("bench {r}")}),
                )
                .await?;
            let room_id = room["room_id"].as_str().context("room_id")?.to_owned();
            let recipient = format!("{tag}recipient-{r}");
            let recipient_token = token(&recipient, false)?;
            self.call(
                reqwest::Method::POST,
                &format!("/v1/rooms/{room_id}/join"),
                &recipient_token,
                json!({}),
            )
            .await?;
            out.push((room_id, String::new(), recipient));
        }
        // Senders: one per room in the spread case, all in room 0 in the hot case.
        let mut rooms_out = Vec::new();
        for s in 0..senders {
            let (room_id, _, recipient) = out[s % out.len()].clone();
            let user = format!("{tag}sender-{s}");
            let sender = token(&user, false)?;
            self.call(
                reqwest::Method::POST,
                &format!("/v1/admin/wallets/{user}/credit"),
                &admin,
                json!({"op_id": format!("bench-{user}"), "amount": 1_000_000_000_000i64}),
            )
            .await?;
            self.call(
                reqwest::Method::POST,
                &format!("/v1/rooms/{room_id}/join"),
                &sender,
                json!({}),
            )
            .await?;
            rooms_out.push((room_id, sender, recipient));
        }
        Ok(Setup { rooms: rooms_out })
    }
}

pub fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

pub fn token(user: &str, admin: bool) -> Result<String> {
    let exp = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs() + 3600;
    let mut claims = json!({"sub": user, "exp": exp});
    if admin {
        claims["roles"] = json!(["admin"]);
    }
    Ok(jsonwebtoken::encode(
        &jsonwebtoken::Header::default(),
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(SECRET.as_bytes())?,
    )?)
}

/// Commands and commits of a server's rooms so far.
#[derive(Debug, Clone, Copy)]
pub struct BatchTotals {
    commands: f64,
    commits: f64,
}

impl BatchTotals {
    /// The mean commands per commit between `before` and now.
    pub fn mean_since(self, before: BatchTotals) -> f64 {
        (self.commands - before.commands) / (self.commits - before.commits).max(1.0)
    }
}

/// The HTTP side of a server: cheap to clone into worker tasks (one shared connection pool).
#[derive(Clone)]
pub struct ClientView {
    /// The shared connection pool.
    pub http: reqwest::Client,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
}

impl ClientView {
    /// Sends a rose from `sender` to its recipient; fails unless `COMPLETED`.
    pub async fn gift(&self, sender: &(String, String, String), order: u64) -> Result<()> {
        self.gifts(sender, order, 1).await
    }

    /// [`ClientView::gift`] of `count` roses.
    pub async fn gifts(
        &self,
        sender: &(String, String, String),
        order: u64,
        count: u32,
    ) -> Result<()> {
        let (room_id, token, recipient) = sender;
        let response = self
            .http
            .post(format!("{}/v1/rooms/{room_id}/gifts", self.base))
            .bearer_auth(token)
            .json(&json!({
                "order_id": format!("o-{order}"),
                "gift_id": "rose",
                "count": count,
                "recipients": [recipient],
            }))
            .send()
            .await?;
        let status = response.status();
        let value: Value = response.json().await.unwrap_or(Value::Null);
        if !status.is_success() || value["status"] != "COMPLETED" {
            bail!("gift failed: {status} {value}");
        }
        GIFTS_COMPLETED.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}
