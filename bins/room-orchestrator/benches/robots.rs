//! One orchestrator node running `--rooms` robot rooms (default 5,000) on MariaDB and Redis,
//! as `room-orchestrator` runs them (the same `App` of role `Orchestrator`), at the default
//! script's pace (`ROOM__ROBOTS__STEP_EVERY_MS` 2,000, `ROOM__ROBOTS__STAY_SECS` 600) with a
//! typical configuration: a pool of 20 robots, 10 listeners at every hour, 4 of 8 seats, 6
//! robot gifts a minute from a mix of two gifts.
//!
//! It creates the rooms and configurations, starts the node, waits until every room's runtime
//! runs, lets it settle for `--warmup` seconds, then measures for `--seconds`: the robot
//! commands per second (by outcome), the lease renewals per second, and the CPU (in cores) of
//! this process, of MariaDB and of Redis, and this process's resident memory.
//!
//! Usage: `cargo bench -p room-orchestrator --bench robots -- [--mysql URL] [--redis URL]
//! [--rooms N] [--seconds N] [--warmup N]` (defaults `mysql://root@127.0.0.1:3306`,
//! `redis://127.0.0.1:6379`, 5000, 60, 20). It creates, and afterwards drops, a database and
//! a Redis key prefix of its own.

// A benchmark's report is its output.
#![allow(clippy::print_stdout)]

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use futures_util::{StreamExt, stream};
use room_app::ports::{GiftShare, RobotProfile, RobotRoomConfig};
use room_domain::{GiftId, UserActor, UserId};
use room_node::{App, Role, Settings};
use secrecy::SecretString;
use sqlx::{AssertSqlSafe, Connection, MySqlConnection};

const POOL: usize = 20;
const LISTENERS: u32 = 10;
const SEATS: u8 = 4;
const SEAT_COUNT: u8 = 8;
const GIFTS_PER_MINUTE: u32 = 6;

struct Options {
    mysql: String,
    redis: String,
    rooms: usize,
    seconds: u64,
    warmup: u64,
}

fn options() -> Result<Options> {
    let mut options = Options {
        mysql: "mysql://root@127.0.0.1:3306".into(),
        redis: "redis://127.0.0.1:6379".into(),
        rooms: 5_000,
        seconds: 60,
        warmup: 20,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().with_context(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--mysql" => options.mysql = value()?,
            "--redis" => options.redis = value()?,
            "--rooms" => options.rooms = value()?.parse()?,
            "--seconds" => options.seconds = value()?.parse()?,
            "--warmup" => options.warmup = value()?.parse()?,
            // What `cargo bench` passes to every bench target.
            "--bench" => {}
            other => bail!(
                "unknown argument {other:?}; usage: robots [--mysql URL] [--redis URL] \
                 [--rooms N] [--seconds N] [--warmup N]"
            ),
        }
    }
    Ok(options)
}

/// CPU seconds (user + system) a process has used, from `/proc/<pid>/stat`.
fn cpu_seconds(pid: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// This process's resident memory in MiB.
fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1024.0
}

/// The pid of the first process named `name`, if any.
fn pid_of(name: &str) -> Option<String> {
    let out = std::process::Command::new("pidof")
        .arg(name)
        .output()
        .ok()?;
    String::from_utf8(out.stdout)
        .ok()?
        .split_whitespace()
        .next()
        .map(str::to_owned)
}

/// The sum of every sample of `metric` in a Prometheus text whose labels contain `labels`.
fn metric(text: &str, metric: &str, labels: &str) -> f64 {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter(|line| {
            line.strip_prefix(metric)
                .is_some_and(|rest| rest.starts_with([' ', '{']))
                && line.contains(labels)
        })
        .filter_map(|line| line.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum()
}

struct Sample {
    at: Instant,
    text: String,
    cpu: Option<f64>,
    mariadb: Option<f64>,
    redis: Option<f64>,
}

fn sample(app: &App, mariadb: &Option<String>, redis: &Option<String>) -> Sample {
    Sample {
        at: Instant::now(),
        text: app.metrics_text(),
        cpu: cpu_seconds("self"),
        mariadb: mariadb.as_deref().and_then(cpu_seconds),
        redis: redis.as_deref().and_then(cpu_seconds),
    }
}

fn config(room_id: room_domain::RoomId, robots: Vec<UserId>) -> RobotRoomConfig {
    let now = room_domain::Timestamp(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0),
    );
    RobotRoomConfig {
        room_id,
        profile: RobotProfile {
            name: "Robot lounge".into(),
            notice: String::new(),
            cover_url: None,
        },
        seat_count: SEAT_COUNT,
        robots,
        audience: vec![LISTENERS; 24],
        seats: SEATS,
        gift_rate_per_minute: GIFTS_PER_MINUTE,
        gift_mix: vec![
            GiftShare {
                gift_id: GiftId::new("rose").expect("gift id"),
                weight: 3,
            },
            GiftShare {
                gift_id: GiftId::new("sports-car").expect("gift id"),
                weight: 1,
            },
        ],
        enabled: true,
        version: 1,
        created_at: now,
        updated_at: now,
    }
}

#[tokio::main(flavor = "multi_thread")]
async fn main() -> Result<()> {
    let options = options()?;
    let stamp = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis();
    let database = format!("robots_bench_{stamp}");
    let mut admin = MySqlConnection::connect(&options.mysql)
        .await
        .with_context(|| format!("cannot reach MariaDB at {}", options.mysql))?;
    sqlx::raw_sql(AssertSqlSafe(format!("CREATE DATABASE `{database}`")))
        .execute(&mut admin)
        .await?;
    let outcome = run(&options, &database).await;
    sqlx::raw_sql(AssertSqlSafe(format!("DROP DATABASE `{database}`")))
        .execute(&mut admin)
        .await?;
    outcome
}

async fn run(options: &Options, database: &str) -> Result<()> {
    let mut settings = Settings::default();
    settings.storage.url = format!("{}/{database}", options.mysql.trim_end_matches('/'));
    settings.storage.max_connections = 16;
    settings.auth.jwt_secret = SecretString::from("robots-bench-secret-of-at-least-32-bytes");
    settings.catalog.path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../configs/gifts.toml").into();
    settings.cell.node_id = "orchestrator-bench".into();
    settings.lease.redis_url = Some(SecretString::from(options.redis.clone()));
    settings.lease.key_prefix = format!("{database}:");
    settings.cluster.advertise_url = Some("http://127.0.0.1:9".into());
    settings.cluster.internal_token = Some(SecretString::from(
        "robots-bench-internal-token-of-32-bytes",
    ));
    settings.robots.reconcile_every_ms = 1_000;
    settings.robots.max_runtimes = options.rooms.max(1);
    room_node::Storage::migrate(&settings.storage).await?;
    let app = App::build_as(settings, Role::Orchestrator).await?;

    let started = Instant::now();
    let service = app.service().clone();
    let robots = app.storage().robots.clone();
    let created = stream::iter(0..options.rooms)
        .map(|i| {
            let (service, robots) = (service.clone(), robots.clone());
            async move {
                let pool: Vec<UserId> = (0..POOL)
                    .map(|k| UserId::new(format!("robot-{i}-{k}")).expect("robot id"))
                    .collect();
                let owner = UserActor {
                    user_id: pool[0].clone(),
                    vip_level: 0,
                    platform_admin: false,
                };
                let room = service
                    .create_room(
                        &owner,
                        "Robot lounge".into(),
                        Some(SEAT_COUNT),
                        String::new(),
                        None,
                    )
                    .await?;
                robots.create(&config(room.room_id, pool)).await?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(32)
        .collect::<Vec<_>>()
        .await;
    for result in created {
        result?;
    }
    println!(
        "created {} robot rooms in {:.1} s",
        options.rooms,
        started.elapsed().as_secs_f64()
    );

    app.start().await?;
    let started = Instant::now();
    loop {
        let running = metric(&app.metrics_text(), "room_robot_runtimes", "");
        if running as usize >= options.rooms {
            break;
        }
        if started.elapsed() > Duration::from_secs(600) {
            bail!(
                "only {running} of {} runtimes started in 10 minutes",
                options.rooms
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    println!(
        "{} runtimes running {:.1} s after start",
        options.rooms,
        started.elapsed().as_secs_f64()
    );
    tokio::time::sleep(Duration::from_secs(options.warmup)).await;

    let (mariadb, redis) = (pid_of("mariadbd"), pid_of("redis-server"));
    let before = sample(&app, &mariadb, &redis);
    tokio::time::sleep(Duration::from_secs(options.seconds)).await;
    let after = sample(&app, &mariadb, &redis);
    let seconds = after.at.duration_since(before.at).as_secs_f64();
    let rate = |name: &str, labels: &str| {
        (metric(&after.text, name, labels) - metric(&before.text, name, labels)) / seconds
    };
    let cores = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => format!("{:.2}", (b - a) / seconds),
        _ => "n/a".into(),
    };
    println!(
        "measured {seconds:.1} s with {} robot rooms:",
        options.rooms
    );
    println!(
        "  runtimes            {}",
        metric(&after.text, "room_robot_runtimes", "")
    );
    println!(
        "  robot commands/s    {:.0} ok, {:.1} refused, {:.1} failed",
        rate("room_robot_commands_total", "outcome=\"ok\""),
        rate("room_robot_commands_total", "outcome=\"rejected\""),
        rate("room_robot_commands_total", "outcome=\"failed\""),
    );
    for action in ["join", "leave", "take_seat", "leave_seat", "gift"] {
        println!(
            "    {action:<12} {:.1}/s",
            rate(
                "room_robot_commands_total",
                &format!("action=\"{action}\",outcome=\"ok\"")
            )
        );
    }
    println!(
        "  lease renewals/s    {:.0}",
        rate("room_lease_renewals_total", "")
    );
    println!(
        "  leases lost         {:.0}",
        metric(&after.text, "room_leases_lost_total", "")
    );
    println!(
        "  CPU (cores)         orchestrator {}, MariaDB {}, Redis {}",
        cores(before.cpu, after.cpu),
        cores(before.mariadb, after.mariadb),
        cores(before.redis, after.redis),
    );
    println!("  resident memory     {:.0} MiB", rss_mib());
    app.stop().await;
    Ok(())
}
