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
//! - joins: 1 room, 64 clients in a closed loop joining and leaving as 2,000 users with
//!   profiles, joins per second, their p50/p99 and the profile cache's hit rate (see
//!   [`joins`]);
//! - billing (`--only billing`, only when named): the hot room with income paid against
//!   without, in turns (see [`billing`]);
//! - display (`--only display`, only when named): the hot room with its senders' nicknames and
//!   avatars in every gift (and its joiners' in every join) against without, in turns (see
//!   [`display`]);
//! - lists (`--only lists`, only when named): the room lists at 10,000 open rooms, first
//!   pages of `hot` against authenticated wallet reads, and the CPU a refresh costs (see
//!   [`lists`]);
//! - boards (`--only boards`, only when named): first pages of the leaderboards against
//!   authenticated wallet reads while 1,000 gifts a second update them, then how long a gift
//!   takes to show on a board at `--rate` gifts a second (5,000 unless given), with a verdict
//!   against the targets (see [`boards`]);
//! - soak (`--soak MINUTES`, alone): a steady open loop with every member kept present, a
//!   line a minute and a verdict on memory, p99 and bytes per gift (see [`soak`]);
//! - disk: after the spread and latency phases, the bytes on disk per gift they wrote, per
//!   table (SQLite's page statistics, or MySQL's data and index lengths);
//! - with `--storage mysql`, beside the hot room and the spread: the raw capacity of the same
//!   MySQL server for the rows those gifts wrote, in the same transactions and batch sizes
//!   (`raw`), and the MySQL round trips per gift from the server's own counters
//!   (`round_trips`).
//!
//! Each measured loop (closed or open) also reports the server's CPU time per gift and the
//! share of the machine's CPU the hypervisor stole meanwhile: on a shared host the rates move
//! with the neighbours, the CPU per gift much less.
//!
//! Usage: `cargo build --release -p room-api -p room-bench && target/release/room-bench
//! [--server target/release/room-api] [--seconds 10] [--rate 1500] [--latency-only] [--help]
//! [--only hot,single,spread,latency,memory,joins]` (or `--only billing`, `display`, `lists`,
//! `boards`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};

use load::{SENDERS, closed_loop, memory, open_loop};
use report::{machine, report};
use round_trips::RoundTrips;
use server::{Server, Setup, gifts_completed};

/// What `--help` prints.
const USAGE: &str = "\
usage: room-bench [--server PATH] [--seconds N] [--rate N] [--only PHASES] [--latency-only]
                  [--storage sqlite|mysql] [--mysql URL] [--nodes 1|2] [--redis URL]
                  [--soak MINUTES]

Starts a release room-api on a fresh SQLite file and measures it over loopback HTTP.
  --server PATH    the room-api binary (default target/release/room-api)
  --seconds N      length of each measured phase (default 10)
  --rate N         offered load of the open-loop phase, gifts per second (default 1500; of
                   boards' lag measurement, 5000)
  --only PHASES    comma-separated, of: hot, single, spread, latency, memory, joins
                   (default: all),
                   billing (only when named: the hot room paying income against not, in turns),
                   display (only when named: the hot room with senders' profiles against
                   without, in turns),
                   lists (only when named: hot pages and refreshes at 10,000 rooms),
                   boards (only when named: board pages against wallet reads under 1,000
                   gifts/s, and a gift's lag to its board at --rate);
                   with --nodes 2, of: forwarding, spread, failover, renewals
  --latency-only   the same as --only latency
  --storage S      sqlite (default: a fresh file per server) or mysql (a fresh database per
                   server on --mysql, default mysql://root@127.0.0.1:3306, migrated first)
  --nodes N        2: two nodes on one MySQL database and the Redis of --redis (default
                   redis://127.0.0.1:6379): forwarding cost, spread, failover, renewals
  --forward-rate N with --nodes 2, the gifts per second offered through each node in the
                   forwarding rounds (default: 25 % of the forwarded closed loop's rate)
  --soak MINUTES   only a soak: --rate gifts per second over 100 rooms for MINUTES, members
                   kept present by heartbeats; a line a minute (gifts/s, p50/p99, resident
                   memory, bytes on disk and per gift), then a verdict (memory and p99 of the
                   last minute within 15 % of the second's; bytes per gift within target)
Environment variables reach the server (e.g. ROOM__STORAGE__CHECKPOINT_EVERY_MS).";

mod billing;
mod boards;
mod cpu;
mod disk;
mod display;
mod joins;
mod lists;
mod load;
mod nodes;
mod raw;
mod report;
mod round_trips;
mod server;
mod soak;
mod stats;
mod turns;

struct Options {
    server: PathBuf,
    seconds: u64,
    /// `--rate`, when given.
    rate: Option<u64>,
    /// Where the servers keep their data.
    storage: nodes::Storage,
    /// The Redis of `--nodes 2`.
    redis: String,
    /// 1, or 2 for the two-node phases.
    nodes: usize,
    /// The offered rate of the two-node forwarding rounds, when not derived from the closed
    /// loop.
    forward_rate: Option<u64>,
    /// The phases to run (all when empty): hot, single, spread, latency, memory, joins.
    only: Vec<String>,
    /// With `--soak MINUTES`: only the soak, this long.
    soak: Option<u64>,
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
        rate: None,
        storage: nodes::Storage::Sqlite,
        redis: "redis://127.0.0.1:6379".into(),
        nodes: 1,
        forward_rate: None,
        only: Vec::new(),
        soak: None,
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
            "--soak",
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
            "--rate" => options.rate = Some(value.parse()?),
            "--forward-rate" => options.forward_rate = Some(value.parse()?),
            "--soak" => options.soak = Some(value.parse()?),
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
                        "billing",
                        "display",
                        "lists",
                        "boards",
                        "spread",
                        "latency",
                        "memory",
                        "joins",
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
    let rate = options.rate.unwrap_or(1500);
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
    if let Some(minutes) = options.soak {
        let server = storage(&[]).await?;
        let setup = server.setup(100, 100).await?;
        let passed = soak::soak(&server, &setup, rate, minutes).await?;
        server.stop().await?;
        // The verdict is printed: a failed one is the exit status, not an error.
        std::process::exit(if passed { 0 } else { 1 });
    }
    if options.only.iter().any(|p| p == "billing") {
        let on_mysql = matches!(options.storage, nodes::Storage::MySql(_));
        billing::billing(&storage, duration, on_mysql).await?;
    }
    if options.only.iter().any(|p| p == "display") {
        display::display(&storage, duration).await?;
    }
    if options.only.iter().any(|p| p == "lists") {
        lists::lists(&storage, duration).await?;
    }
    if options.only.iter().any(|p| p == "boards") {
        let rate = options.rate.unwrap_or(boards::RATE);
        boards::boards(&storage, duration, rate).await?;
    }
    let mut hot = None;
    if options.runs("hot") {
        let server = storage(&[]).await?;
        let setup = server.setup(1, SENDERS).await?;
        let before = server.batch_totals().await?;
        let trips = RoundTrips::start(&options.storage).await?;
        let rate = closed_loop(&server, &setup, duration, true).await?;
        report("hot room, group commit on (gifts/s)", &format!("{rate:.0}"));
        if let Some(trips) = trips {
            trips
                .report("hot room", rate * duration.as_secs_f64())
                .await?;
        }
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
        let disk_before = server.database.sample().await?;
        let gifts_before = gifts_completed();
        if options.runs("spread") {
            let before = server.batch_totals().await?;
            let trips = RoundTrips::start(&options.storage).await?;
            let rate = closed_loop(&server, &setup, duration, true).await?;
            report("spread, 100 rooms (gifts/s)", &format!("{rate:.0}"));
            if let Some(trips) = trips {
                trips
                    .report("spread", rate * duration.as_secs_f64())
                    .await?;
            }
            let batch = server.batch_totals().await?.mean_since(before);
            compare_raw(
                &options, &server, &setup, "spread", 100, batch, rate, duration,
            )
            .await?;
        }
        if options.runs("latency") {
            let trips = RoundTrips::start(&options.storage).await?;
            let latency = open_loop(&server, &setup, rate, duration).await?;
            report(&format!("open loop at {rate} gifts/s"), &latency);
            if let Some(trips) = trips {
                let offered = rate as f64 * duration.as_secs_f64();
                trips.report("open loop", offered).await?;
            }
        }
        for line in server.metric_quantiles().await? {
            report("  server", &line);
        }
        let disk_after = server.database.sample().await?;
        disk::report_per_gift(&disk_before, &disk_after, gifts_completed() - gifts_before);
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
    if options.runs("joins") {
        joins::joins(&storage, duration).await?;
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
