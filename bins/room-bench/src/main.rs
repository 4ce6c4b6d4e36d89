//! Load benchmark of `room-api` over loopback HTTP.
//!
//! Starts a release `room-api` as a child process on a fresh SQLite database (durable:
//! WAL with `synchronous=FULL`), prepares users, coins and rooms through the public API, then
//! measures:
//! - hot room: 1 room, 64 concurrent senders in a closed loop, gifts per second, with group
//!   commit on and off (a second server where every room commit and every storage write is a
//!   transaction of its own: `ROOM__CELL__MAX_BATCH=1`,
//!   `ROOM__STORAGE__MAX_JOBS_PER_TRANSACTION=1`);
//! - spread: 100 rooms, 64 concurrent senders, gifts per second;
//! - latency: an open-loop offered load (default 1,500 gifts/s) and its p50/p99/max;
//! - memory: the server's resident memory per idle active room and per member;
//! - with `--storage mysql`, beside the hot room and the spread: the raw capacity of the same
//!   MySQL server for the rows those gifts wrote, in the same transactions and batch sizes
//!   (`raw`).
//!
//! Each measured loop (closed or open) also reports the server's CPU time per gift and the
//! share of the machine's CPU the hypervisor stole meanwhile: on a shared host the rates move
//! with the neighbours, the CPU per gift much less.
//!
//! Usage: `cargo build --release -p room-api -p room-bench && target/release/room-bench
//! [--server target/release/room-api] [--seconds 10] [--rate 1500] [--latency-only] [--help]
//! [--only hot,single,spread,latency,memory]`.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use tokio::process::{Child, Command};

const SECRET: &str = "room-bench-secret-with-enough-length-for-hs256";
const SENDERS: usize = 64;

/// What `--help` prints.
const USAGE: &str = "\
usage: room-bench [--server PATH] [--seconds N] [--rate N] [--only PHASES] [--latency-only]
                  [--storage sqlite|mysql] [--mysql URL] [--nodes 1|2] [--redis URL]

Starts a release room-api on a fresh SQLite file and measures it over loopback HTTP.
  --server PATH    the room-api binary (default target/release/room-api)
  --seconds N      length of each measured phase (default 10)
  --rate N         offered load of the open-loop phase, gifts per second (default 1500)
  --only PHASES    comma-separated, of: hot, single, spread, latency, memory (default: all);
                   with --nodes 2, of: forwarding, spread, failover, renewals
  --latency-only   the same as --only latency
  --storage S      sqlite (default: a fresh file per server) or mysql (a fresh database per
                   server on --mysql, default mysql://root@127.0.0.1:3306, migrated first)
  --nodes N        2: two nodes on one MySQL database and the Redis of --redis (default
                   redis://127.0.0.1:6379): forwarding cost, spread, failover, renewals
  --forward-rate N with --nodes 2, the gifts per second offered through each node in the
                   forwarding rounds (default: 25 % of the forwarded closed loop's rate)
Environment variables reach the server (e.g. ROOM__STORAGE__CHECKPOINT_EVERY_MS).";

mod nodes;
mod raw;

struct Options {
    server: PathBuf,
    seconds: u64,
    rate: u64,
    /// Where the servers keep their data.
    storage: nodes::Storage,
    /// The Redis of `--nodes 2`.
    redis: String,
    /// 1, or 2 for the two-node phases.
    nodes: usize,
    /// The offered rate of the two-node forwarding rounds, when not derived from the closed
    /// loop.
    forward_rate: Option<u64>,
    /// The phases to run (all when empty): hot, single, spread, latency, memory.
    only: Vec<String>,
}

impl Options {
    fn runs(&self, phase: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|p| p == phase)
    }
}

fn options() -> Result<Options> {
    let mut options = Options {
        server: PathBuf::from("target/release/room-api"),
        seconds: 10,
        rate: 1500,
        storage: nodes::Storage::Sqlite,
        redis: "redis://127.0.0.1:6379".into(),
        nodes: 1,
        forward_rate: None,
        only: Vec::new(),
    };
    let mut mysql = "mysql://root@127.0.0.1:3306".to_owned();
    let mut on_mysql = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--help" || arg == "-h" {
            eprintln!("{USAGE}");
            std::process::exit(0);
        }
        if arg == "--latency-only" {
            // Kept for the commands people already type: the same as `--only latency`.
            options.only = vec!["latency".to_owned()];
            continue;
        }
        if ![
            "--server",
            "--seconds",
            "--rate",
            "--only",
            "--storage",
            "--mysql",
            "--redis",
            "--nodes",
            "--forward-rate",
        ]
        .contains(&arg.as_str())
        {
            bail!("unknown option {arg} (--help lists them)");
        }
        let value = args
            .next()
            .with_context(|| format!("{arg} needs a value"))?;
        match arg.as_str() {
            "--server" => options.server = value.into(),
            "--seconds" => options.seconds = value.parse()?,
            "--rate" => options.rate = value.parse()?,
            "--forward-rate" => options.forward_rate = Some(value.parse()?),
            "--storage" => match value.as_str() {
                "sqlite" => on_mysql = false,
                "mysql" => on_mysql = true,
                other => bail!("unknown storage {other}: sqlite or mysql"),
            },
            "--mysql" => mysql = value,
            "--redis" => options.redis = value,
            "--nodes" => {
                options.nodes = value.parse()?;
                if !(1..=2).contains(&options.nodes) {
                    bail!("--nodes is 1 or 2");
                }
            }
            "--only" => {
                options.only = value.split(',').map(str::to_owned).collect();
                if let Some(unknown) = options.only.iter().find(|p| {
                    ![
                        "hot",
                        "single",
                        "spread",
                        "latency",
                        "memory",
                        "forwarding",
                        "failover",
                        "renewals",
                    ]
                    .contains(&p.as_str())
                }) {
                    bail!("unknown phase {unknown}");
                }
            }
            other => unreachable!("{other} was checked above"),
        }
    }
    if on_mysql {
        options.storage = nodes::Storage::MySql(mysql);
    }
    Ok(options)
}

#[tokio::main]
async fn main() -> Result<()> {
    let options = options()?;
    if !options.server.exists() {
        bail!(
            "{} not found: build it with `cargo build --release -p room-api`",
            options.server.display()
        );
    }
    let duration = Duration::from_secs(options.seconds);
    report("machine", &machine());
    if options.nodes == 2 {
        let runs = |phase: &str| options.runs(phase);
        return nodes::two_nodes(
            &options.server,
            &options.storage,
            &options.redis,
            duration,
            options.forward_rate,
            &runs,
        )
        .await;
    }
    let storage = async |extra: &[(&str, &str)]| -> Result<Server> {
        let mut env = nodes::fresh_storage(&options.storage, &options.server).await?;
        env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        Server::start(&options.server, &env).await
    };
    let mut hot = None;
    if options.runs("hot") {
        let server = storage(&[]).await?;
        let setup = server.setup(1, SENDERS).await?;
        let before = server.batch_totals().await?;
        let rate = closed_loop(&server, &setup, duration, true).await?;
        report("hot room, group commit on (gifts/s)", &format!("{rate:.0}"));
        let batch = server.batch_totals().await?.mean_since(before);
        compare_raw(
            &options, &server, &setup, "hot room", 1, batch, rate, duration,
        )
        .await?;
        server.stop().await?;
        hot = Some(rate);
    }
    if options.runs("single") {
        let single = [
            ("ROOM__CELL__MAX_BATCH", "1"),
            ("ROOM__STORAGE__MAX_JOBS_PER_TRANSACTION", "1"),
        ];
        let server = storage(&single).await?;
        let setup = server.setup(1, SENDERS).await?;
        let rate = closed_loop(&server, &setup, duration, true).await?;
        report(
            "hot room, group commit off (gifts/s)",
            &format!("{rate:.0}"),
        );
        server.stop().await?;
        if let Some(hot) = hot {
            report(
                "group commit speed-up",
                &format!("{:.1}x", hot / rate.max(1.0)),
            );
        }
    }
    if options.runs("spread") || options.runs("latency") {
        let server = storage(&[]).await?;
        let setup = server.setup(100, 100).await?;
        if options.runs("spread") {
            let before = server.batch_totals().await?;
            let rate = closed_loop(&server, &setup, duration, true).await?;
            report("spread, 100 rooms (gifts/s)", &format!("{rate:.0}"));
            let batch = server.batch_totals().await?.mean_since(before);
            compare_raw(
                &options, &server, &setup, "spread", 100, batch, rate, duration,
            )
            .await?;
        }
        if options.runs("latency") {
            let latency = open_loop(&server, &setup, options.rate, duration).await?;
            report(&format!("open loop at {} gifts/s", options.rate), &latency);
        }
        for line in server.metric_quantiles().await? {
            report("  server", &line);
        }
        server.stop().await?;
    }
    if options.runs("memory") {
        let server = storage(&[]).await?;
        let (per_room, per_member) = memory(&server).await?;
        report(
            "memory per idle active room",
            &format!("{per_room:.0} bytes"),
        );
        report("memory per member", &format!("{per_member:.0} bytes"));
        server.stop().await?;
    }
    Ok(())
}

/// With MySQL storage: the raw capacity of the server for the rows the phase's gifts wrote
/// ([`raw`]), beside the service's `rate`.
#[allow(clippy::too_many_arguments)]
async fn compare_raw(
    options: &Options,
    server: &Server,
    setup: &Setup,
    phase: &str,
    rooms: usize,
    batch: f64,
    rate: f64,
    duration: Duration,
) -> Result<()> {
    if !matches!(options.storage, nodes::Storage::MySql(_)) {
        return Ok(());
    }
    let url = server
        .env
        .iter()
        .find_map(|(key, value)| (key == "ROOM__STORAGE__URL").then_some(value))
        .context("the server's database")?;
    let rows = Arc::new(raw::GiftRows::sample(url, &setup.rooms[0].0).await?);
    let fresh = nodes::fresh_storage(&options.storage, &options.server).await?;
    let fresh_url = fresh
        .iter()
        .find_map(|(key, value)| (key == "ROOM__STORAGE__URL").then_some(value))
        .context("the fresh database")?;
    report(
        &format!("{phase}: the service's commands per room commit"),
        &format!("{batch:.1}"),
    );
    raw::compare(phase, fresh_url, rows, rooms, batch, rate, duration).await
}

fn report(what: &str, value: &str) {
    eprintln!("{what:<45} {value}");
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{cpu}, {cores} cores")
}

/// A running `room-api` child process on its own port and database.
struct Server {
    child: Child,
    client: ClientView,
    /// The environment it was started with (beyond the bench's own), to start another
    /// node like it.
    env: Vec<(String, String)>,
    _dir: TempDir,
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Users, rooms and who sends where.
struct Setup {
    /// (room id, sender token, recipient user id), one per room.
    rooms: Vec<(String, String, String)>,
}

impl Server {
    async fn start(binary: &PathBuf, env: &[(&str, &str)]) -> Result<Server> {
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
        let server = Server {
            child,
            client: ClientView {
                base: format!("http://127.0.0.1:{port}"),
                http: reqwest::Client::builder()
                    .pool_max_idle_per_host(256)
                    .build()?,
            },
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
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
    fn kill_9(&self) -> Result<()> {
        let pid = self.child.id().context("server exited")?;
        std::process::Command::new("kill")
            .arg("-KILL")
            .arg(pid.to_string())
            .status()?;
        Ok(())
    }

    async fn stop(mut self) -> Result<()> {
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
    async fn metrics(&self) -> Result<String> {
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
    async fn metric_quantiles(&self) -> Result<Vec<String>> {
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
    async fn batch_totals(&self) -> Result<BatchTotals> {
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

    /// The server's and the machine's CPU counters now.
    fn cpu(&self) -> Result<CpuSample> {
        let pid = self.child.id().context("server exited")?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
        // The fields after the command name, which is in parentheses and may hold spaces:
        // state is the first of them, utime the 12th and stime the 13th.
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .context("no command name in /proc/<pid>/stat")?
            .1
            .split_whitespace()
            .collect();
        let ticks = |i: usize| -> Result<u64> {
            Ok(fields.get(i).context("short /proc/<pid>/stat")?.parse()?)
        };
        let (steal_ticks, total_ticks) = machine_ticks()?;
        let node = NodeCpu {
            ticks: ticks(11)? + ticks(12)?,
            switches: context_switches(pid)?,
        };
        Ok(CpuSample {
            nodes: vec![node],
            steal_ticks,
            total_ticks,
        })
    }

    fn rss_bytes(&self) -> Result<u64> {
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

    async fn call(
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

    /// `rooms` rooms, each with its own sender (rich) and recipient, both members.
    async fn setup(&self, rooms: usize, senders: usize) -> Result<Setup> {
        self.setup_tagged(rooms, senders, "").await
    }

    /// Like [`Server::setup`], with every user and room name prefixed by `tag`, so that
    /// setups on several nodes of one cluster do not share users.
    async fn setup_tagged(&self, rooms: usize, senders: usize, tag: &str) -> Result<Setup> {
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

fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

fn token(user: &str, admin: bool) -> Result<String> {
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

static ORDERS: AtomicU64 = AtomicU64::new(0);

fn next_order() -> u64 {
    ORDERS.fetch_add(1, Ordering::Relaxed)
}

/// Runs 64 senders, each sending back to back for `duration`; returns completed gifts per
/// second, and reports the CPU figures of the run if it is `measured` (not a warm-up).
async fn closed_loop(
    server: &Server,
    setup: &Setup,
    duration: Duration,
    measured: bool,
) -> Result<f64> {
    closed_loop_on(
        std::slice::from_ref(&server.client),
        &[server],
        setup,
        duration,
        measured,
    )
    .await
}

/// [`closed_loop`] through several nodes: sender `w` sends through `clients[w % n]`, and the
/// CPU reported is that of all of `servers`.
async fn closed_loop_on(
    clients: &[ClientView],
    servers: &[&Server],
    setup: &Setup,
    duration: Duration,
    measured: bool,
) -> Result<f64> {
    // Warm up: activate every room and open connections.
    for (i, sender) in setup.rooms.iter().enumerate() {
        clients[i % clients.len()]
            .gift(sender, next_order())
            .await?;
    }
    let done = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let cpu_before = cpu_of(servers)?;
    let started = Instant::now();
    let deadline = started + duration;
    let mut workers = Vec::new();
    for w in 0..SENDERS {
        let sender = setup.rooms[w % setup.rooms.len()].clone();
        let done = done.clone();
        let errors = errors.clone();
        let client = clients[w % clients.len()].clone();
        workers.push(tokio::spawn(async move {
            while Instant::now() < deadline {
                match client.gift(&sender, next_order()).await {
                    Ok(()) => done.fetch_add(1, Ordering::Relaxed),
                    Err(_) => errors.fetch_add(1, Ordering::Relaxed),
                };
            }
        }));
    }
    for worker in workers {
        worker.await?;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let cpu = cpu_of(servers)?.since(&cpu_before);
    let errors = errors.load(Ordering::Relaxed);
    if errors > 0 {
        report("  errors during the run", &errors.to_string());
    }
    let gifts = done.load(Ordering::Relaxed);
    if measured {
        cpu.report(gifts);
    }
    Ok(gifts as f64 / elapsed)
}

/// Commands and commits of a server's rooms so far.
#[derive(Debug, Clone, Copy)]
struct BatchTotals {
    commands: f64,
    commits: f64,
}

impl BatchTotals {
    /// The mean commands per commit between `before` and now.
    fn mean_since(self, before: BatchTotals) -> f64 {
        (self.commands - before.commands) / (self.commits - before.commits).max(1.0)
    }
}

/// The CPU counters of `servers`, one entry per server in their order.
fn cpu_of(servers: &[&Server]) -> Result<CpuSample> {
    let mut sum = servers.first().context("no server")?.cpu()?;
    for server in &servers[1..] {
        sum.nodes.extend(server.cpu()?.nodes);
    }
    Ok(sum)
}

/// The context switches of every thread of process `pid` so far (voluntary: the thread
/// waited; involuntary: it was preempted), from `/proc/<pid>/task/*/status`. Threads that
/// ended are not counted, and the server's threads live as long as it does.
fn context_switches(pid: u32) -> Result<u64> {
    let mut switches = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        // A thread may end between the listing and the read.
        let Ok(status) = std::fs::read_to_string(task?.path().join("status")) else {
            continue;
        };
        for line in status.lines() {
            if let Some(count) = line
                .strip_prefix("voluntary_ctxt_switches:")
                .or_else(|| line.strip_prefix("nonvoluntary_ctxt_switches:"))
            {
                switches += count.trim().parse::<u64>()?;
            }
        }
    }
    Ok(switches)
}

/// One server's counters at one moment.
#[derive(Debug, Clone, Copy)]
struct NodeCpu {
    /// User and system time, in clock ticks.
    ticks: u64,
    /// Context switches of its threads.
    switches: u64,
}

/// CPU time of the servers and of the whole machine at one moment, from `/proc`.
struct CpuSample {
    /// Each server's counters.
    nodes: Vec<NodeCpu>,
    /// The machine's time stolen by the hypervisor, and all its accounted time, in ticks.
    steal_ticks: u64,
    total_ticks: u64,
}

/// What happened between two [`CpuSample`]s.
struct CpuUse {
    /// Seconds of CPU each server used.
    node_secs: Vec<f64>,
    /// Context switches of each server's threads.
    node_switches: Vec<u64>,
    /// The share of the machine's CPU time the hypervisor gave to other guests: when it is
    /// high, the figures of the run say more about the host than about the service.
    steal_share: f64,
}

/// `/proc` counts in USER_HZ ticks, 100 per second on Linux.
const TICKS_PER_SEC: f64 = 100.0;

impl CpuUse {
    /// Reports the servers' CPU time per gift and the host's steal (with several servers,
    /// also each one's CPU time and context switches per gift); answers the servers' CPU time
    /// per gift, in microseconds.
    fn report(&self, gifts: u64) -> f64 {
        let gifts = gifts.max(1) as f64;
        let per_gift = self.node_secs.iter().sum::<f64>() * 1e6 / gifts;
        report(
            "  server CPU per gift, host steal",
            &format!("{per_gift:.0} us, {:.0} %", self.steal_share * 100.0),
        );
        if self.node_secs.len() < 2 {
            return per_gift;
        }
        let by_node: Vec<String> = self
            .node_secs
            .iter()
            .zip(&self.node_switches)
            .map(|(secs, switches)| {
                format!(
                    "{:.0} us, {:.1}",
                    secs * 1e6 / gifts,
                    *switches as f64 / gifts
                )
            })
            .collect();
        report(
            "  by server: CPU, context switches per gift",
            &by_node.join(" | "),
        );
        per_gift
    }
}

impl CpuSample {
    fn since(&self, before: &CpuSample) -> CpuUse {
        let total = self.total_ticks.saturating_sub(before.total_ticks).max(1);
        let pairs = || self.nodes.iter().zip(&before.nodes);
        CpuUse {
            node_secs: pairs()
                .map(|(now, then)| now.ticks.saturating_sub(then.ticks) as f64 / TICKS_PER_SEC)
                .collect(),
            node_switches: pairs()
                .map(|(now, then)| now.switches.saturating_sub(then.switches))
                .collect(),
            steal_share: self.steal_ticks.saturating_sub(before.steal_ticks) as f64 / total as f64,
        }
    }
}

/// Reads the `cpu` line of `/proc/stat`: (steal, the sum of user to steal).
fn machine_ticks() -> Result<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat")?;
    let fields: Vec<u64> = stat
        .lines()
        .next()
        .and_then(|line| line.strip_prefix("cpu "))
        .context("no cpu line in /proc/stat")?
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()?;
    // user nice system idle iowait irq softirq steal (guest time is inside user already).
    let accounted = fields.get(..8).context("short cpu line in /proc/stat")?;
    Ok((accounted[7], accounted.iter().sum()))
}

/// Offers `rate` gifts per second regardless of answers; returns the latency distribution.
/// The client's connections are opened first (a short closed loop of 64 senders), as a real
/// client or load balancer keeps its connections alive: the figure is the service's latency,
/// not TCP and HTTP connection set-up.
async fn open_loop(
    server: &Server,
    setup: &Setup,
    rate: u64,
    duration: Duration,
) -> Result<String> {
    let (latency, _) = open_loop_on(&server.client, &[server], setup, rate, duration).await?;
    Ok(latency)
}

/// [`open_loop`] through `client`, the CPU reported being that of all of `servers`; answers
/// the latency summary and the servers' CPU time per gift in microseconds.
async fn open_loop_on(
    client: &ClientView,
    servers: &[&Server],
    setup: &Setup,
    rate: u64,
    duration: Duration,
) -> Result<(String, f64)> {
    closed_loop_on(
        std::slice::from_ref(client),
        servers,
        setup,
        Duration::from_secs(2),
        false,
    )
    .await?;
    let cpu_before = cpu_of(servers)?;
    let interval = Duration::from_secs_f64(1.0 / rate as f64);
    let total = rate * duration.as_secs();
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(total as usize);
    for i in 0..total {
        let due = started + interval.mul_f64(i as f64);
        tokio::time::sleep_until(due.into()).await;
        let sender = setup.rooms[i as usize % setup.rooms.len()].clone();
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            // Latency counts from when the request was due, so a stalled sender shows up.
            let result = client.gift(&sender, next_order()).await;
            (due.elapsed(), result.is_ok())
        }));
    }
    let mut latencies = Vec::with_capacity(tasks.len());
    let mut failed = 0;
    for task in tasks {
        let (latency, ok) = task.await?;
        if ok {
            latencies.push(latency);
        } else {
            failed += 1;
        }
    }
    let cpu_per_gift = cpu_of(servers)?.since(&cpu_before).report(total);
    latencies.sort();
    let pick = |q: f64| {
        latencies
            .get(((latencies.len() as f64 - 1.0) * q) as usize)
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    let latency = format!(
        "p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms, {} ok, {failed} failed",
        pick(0.5),
        pick(0.99),
        pick(1.0),
        latencies.len()
    );
    Ok((latency, cpu_per_gift))
}

/// Resident memory per idle active room (1,000 rooms) and per member (10 rooms × 1,000).
async fn memory(server: &Server) -> Result<(f64, f64)> {
    const ROOMS: usize = 1000;
    const MEMBERS: usize = 10_000;
    let before = server.rss_bytes()?;
    let mut room_ids = Vec::new();
    for r in 0..ROOMS {
        let owner = token(&format!("mem-owner-{r}"), false)?;
        let room = server
            .call(
                reqwest::Method::POST,
                "/v1/rooms",
                &owner,
                json!({"name": format!("m{r}")}),
            )
            .await?;
        room_ids.push(room["room_id"].as_str().context("room_id")?.to_owned());
    }
    let after_rooms = server.rss_bytes()?;
    for m in 0..MEMBERS {
        let room_id = &room_ids[m % 10];
        let user = token(&format!("mem-user-{m}"), false)?;
        server
            .call(
                reqwest::Method::POST,
                &format!("/v1/rooms/{room_id}/join"),
                &user,
                json!({}),
            )
            .await?;
    }
    let after_members = server.rss_bytes()?;
    Ok((
        after_rooms.saturating_sub(before) as f64 / ROOMS as f64,
        after_members.saturating_sub(after_rooms) as f64 / MEMBERS as f64,
    ))
}

/// The HTTP side of a server: cheap to clone into worker tasks (one shared connection pool).
#[derive(Clone)]
struct ClientView {
    http: reqwest::Client,
    base: String,
}

impl ClientView {
    async fn gift(&self, sender: &(String, String, String), order: u64) -> Result<()> {
        let (room_id, token, recipient) = sender;
        let response = self
            .http
            .post(format!("{}/v1/rooms/{room_id}/gifts", self.base))
            .bearer_auth(token)
            .json(&json!({
                "order_id": format!("o-{order}"),
                "gift_id": "rose",
                "count": 1,
                "recipients": [recipient],
            }))
            .send()
            .await?;
        let status = response.status();
        let value: Value = response.json().await.unwrap_or(Value::Null);
        if !status.is_success() || value["status"] != "COMPLETED" {
            bail!("gift failed: {status} {value}");
        }
        Ok(())
    }
}
