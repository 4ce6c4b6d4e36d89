//! The room lists at 10,000 open rooms (`--only lists`, only when named).
//!
//! One server gets 10,000 rooms through `POST /v1/rooms`, one owner each (the owners have
//! profiles: a nickname, a country, some an agency), spread over eight regions; a few hundred
//! of them get heat from a few gifts each, so `hot` is not all ties. Once a refresh ranked
//! them all (`room_lists_rooms`), it measures, with the same HTTP client and 64 readers in a
//! closed loop, in turns: authenticated wallet reads (`GET /v1/me/wallet`, the ceiling of an
//! authenticated read), first pages of `hot` (`GET /v1/rooms?tab=hot&limit=20`), wallet
//! again, `hot` again; then `hot` in an open loop at half its closed-loop rate (a closed loop
//! at saturation measures its own queue: 64 requests in flight); then an idle window, in
//! which the server's CPU time divided by the refreshes done is what a refresh of 10,000
//! rooms costs at most (the idle server's other work is in it too: the same window on the
//! empty server, measured first, shows how much).
//!
//! [`Server::start`] turns the per-user limits off, so creating rooms this fast is not
//! refused; the server here also keeps rooms loaded and members present for the whole run
//! (no unloads or evictions in the idle window).

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use futures_util::{StreamExt, TryStreamExt, stream};
use reqwest::Method;
use serde_json::{Value, json};

use crate::cpu;
use crate::load::{SENDERS, next_order};
use crate::report::report;
use crate::server::{ClientView, Server, token};
use crate::stats::{latency_summary, median, metric_sample, millis, quantile};

/// The open rooms the lists rank.
const ROOMS: usize = 10_000;

/// The rooms given heat by gifts, spread evenly over the others.
const HEATED: usize = 300;

/// The regions the rooms are spread over, room `r` in `REGIONS[r % 8]`.
const REGIONS: [&str; 8] = ["sa", "ae", "eg", "iq", "kw", "tr", "id", "ph"];

/// The owners' countries, owner `r` of `COUNTRIES[r % 8]`.
const COUNTRIES: [&str; 8] = ["SA", "AE", "EG", "IQ", "KW", "TR", "ID", "PH"];

/// Set-up requests in flight at once.
const IN_FLIGHT: usize = 32;

/// How many turns each read gets.
const ROUNDS: usize = 2;

/// The unmeasured loop before each measured one, which opens the readers' connections.
const WARM_UP: Duration = Duration::from_secs(1);

/// The window in which an idle server's CPU time is measured.
const IDLE_WINDOW: Duration = Duration::from_secs(20);

/// How long the first ranking of every room may take to come.
const RANKED_WAIT: Duration = Duration::from_secs(120);

/// The authenticated read the lists (and the boards) are compared with.
pub const WALLET: &str = "/v1/me/wallet";

/// The first page of `hot`, as a client opening the app reads it.
const HOT_PAGE: &str = "/v1/rooms?tab=hot&limit=20";

/// The environment of a server whose run takes minutes: rooms stay loaded, and members who
/// never heartbeat stay.
pub const STAY: [(&str, &str); 2] = [
    ("ROOM__CELL__IDLE_SECS", "3600"),
    ("ROOM__PRESENCE__TIMEOUT_SECS", "3600"),
];

/// The owner of room `r`.
fn owner(r: usize) -> String {
    format!("list-owner-{r}")
}

/// Runs the phase on a server `start` starts with extra environment.
pub async fn lists(
    start: impl AsyncFn(&[(&str, &str)]) -> Result<Server>,
    duration: Duration,
) -> Result<()> {
    let server = start(&STAY).await?;
    let empty = Idle::measure(&server).await?;
    empty.report("lists: idle, no room");

    let started = Instant::now();
    let rooms = create_rooms(&server).await?;
    let elapsed = started.elapsed().as_secs_f64();
    report(
        "lists: rooms created (s, rooms/s)",
        &format!("{elapsed:.1} s, {:.0}/s", rooms.len() as f64 / elapsed),
    );
    let gifts = heat(&server, &rooms).await?;
    report(
        "lists: gifts into heated rooms",
        &format!("{gifts} into {HEATED}"),
    );
    let readers = readers(&server).await?;
    wait_for_ranking(&server).await?;
    check_first_page(&server, &readers[0]).await?;

    let (mut wallet, mut hot) = (Vec::new(), Vec::new());
    let mut hot_latencies = Vec::new();
    for round in 1..=ROUNDS {
        for path in [WALLET, HOT_PAGE] {
            let run = read_loop(&server, &readers, path, duration).await?;
            let what = if path == WALLET { "wallet" } else { "hot" };
            report(
                &format!("lists: {what} reads, round {round} (reads/s)"),
                &run.summary(),
            );
            if path == WALLET {
                wallet.push(run.rate);
            } else {
                hot.push(run.rate);
                hot_latencies.extend(run.latencies);
            }
        }
    }
    let (wallet, hot) = (median(&mut wallet), median(&mut hot));
    report(
        "lists: hot against wallet (median reads/s)",
        &format!(
            "{hot:.0} against {wallet:.0} ({:.0} %, target >= 80 %)",
            hot / wallet.max(1.0) * 100.0
        ),
    );
    hot_latencies.sort_unstable();
    report(
        "lists: hot pages, closed loop (p50 / p99)",
        &format!(
            "{:.2} / {:.2} ms (64 in flight; target p99 < 10 ms)",
            millis(quantile(&hot_latencies, 0.5)),
            millis(quantile(&hot_latencies, 0.99))
        ),
    );
    let rate = half_rate(hot);
    let (open, failed) = open_loop(&server.client, &readers, HOT_PAGE, rate, duration).await?;
    report(
        &format!("lists: hot pages, open loop at {rate}/s"),
        &latency_summary(&open, failed),
    );

    // The readers' last answers are out; let the service settle before the idle window.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let full = Idle::measure(&server).await?;
    full.report(&format!("lists: idle, {ROOMS} rooms"));
    report(
        "lists: CPU a refresh, less the empty server's",
        &format!(
            "{:.1} ms (the refresh itself: {:.1} ms wall)",
            (full.cpu_secs - empty.cpu_secs) / full.refreshes.max(1.0) * 1e3,
            full.refresh_wall() * 1e3
        ),
    );
    server.stop().await
}

/// The owners' profiles, then the rooms, one per owner, in their order; answers the room
/// ids, room `r` owned by [`owner`]`(r)`.
async fn create_rooms(server: &Server) -> Result<Vec<String>> {
    let owners: Vec<Value> = (0..ROOMS)
        .map(|r| {
            let mut user = json!({
                "user_id": owner(r),
                "nickname": format!("host {r}"),
                "avatar_url": format!("https://img.example.com/a/{r}.png"),
                "country": COUNTRIES[r % COUNTRIES.len()],
            });
            if r.is_multiple_of(10) {
                user["agency"] = json!(format!("agency-{}", r % 7));
            }
            user
        })
        .collect();
    server.put_profiles(&owners).await?;
    stream::iter(0..ROOMS)
        .map(|r| async move {
            let owner_token = token(&owner(r), false)?;
            let room = server
                .call(
                    Method::POST,
                    "/v1/rooms",
                    &owner_token,
                    json!({"name": format!("list {r}"), "region": REGIONS[r % REGIONS.len()]}),
                )
                .await?;
            Ok::<_, anyhow::Error>(room["room_id"].as_str().context("room_id")?.to_owned())
        })
        .buffered(IN_FLIGHT)
        .try_collect()
        .await
}

/// Heat for [`HEATED`] rooms spread over the others: in each, its owner joins, a fan joins
/// and sends the owner 1 to 30 roses. Answers the gifts sent.
async fn heat(server: &Server, rooms: &[String]) -> Result<u64> {
    let admin = token("bench-admin", true)?;
    let admin = &admin;
    let senders: Vec<(String, String, String)> = stream::iter(0..HEATED)
        .map(|i| async move {
            let r = i * (ROOMS / HEATED);
            let room_id = rooms[r].clone();
            let join = format!("/v1/rooms/{room_id}/join");
            server
                .call(Method::POST, &join, &token(&owner(r), false)?, json!({}))
                .await?;
            let fan = format!("list-fan-{i}");
            server
                .call(
                    Method::POST,
                    &format!("/v1/admin/wallets/{fan}/credit"),
                    admin,
                    json!({"op_id": format!("bench-{fan}"), "amount": 1_000_000}),
                )
                .await?;
            let fan_token = token(&fan, false)?;
            server
                .call(Method::POST, &join, &fan_token, json!({}))
                .await?;
            Ok::<_, anyhow::Error>((room_id, fan_token, owner(r)))
        })
        .buffered(IN_FLIGHT)
        .try_collect()
        .await?;
    stream::iter(senders.iter().enumerate())
        .map(|(i, sender)| async move {
            let gifts = 1 + i as u64 % 30;
            for _ in 0..gifts {
                server.client.gift(sender, next_order()).await?;
            }
            Ok::<_, anyhow::Error>(gifts)
        })
        .buffer_unordered(IN_FLIGHT)
        .try_fold(0, |sum, gifts| async move { Ok(sum + gifts) })
        .await
}

/// The readers' tokens, one per concurrent client, each reader with coins (a wallet that is
/// a stored row, as a real user's).
pub async fn readers(server: &Server) -> Result<Vec<String>> {
    let admin = token("bench-admin", true)?;
    let mut readers = Vec::with_capacity(SENDERS);
    for w in 0..SENDERS {
        let user = format!("list-reader-{w}");
        server
            .call(
                Method::POST,
                &format!("/v1/admin/wallets/{user}/credit"),
                &admin,
                json!({"op_id": format!("bench-{user}"), "amount": 1000}),
            )
            .await?;
        readers.push(token(&user, false)?);
    }
    Ok(readers)
}

/// Waits for a refresh that started after the set-up to rank every room.
async fn wait_for_ranking(server: &Server) -> Result<()> {
    let started = Instant::now();
    let done = |text: &str| metric_sample(text, "room_lists_refreshes_total{outcome=\"done\"}");
    let before = done(&server.metrics().await?);
    loop {
        let text = server.metrics().await?;
        // Two more refreshes: the first may have started before the last gift.
        if metric_sample(&text, "room_lists_rooms") >= ROOMS as f64 && done(&text) >= before + 2.0 {
            report(
                "lists: ranked every room after (s)",
                &format!("{:.1}", started.elapsed().as_secs_f64()),
            );
            return Ok(());
        }
        if started.elapsed() > RANKED_WAIT {
            bail!(
                "after {RANKED_WAIT:?} the lists rank {} rooms, not {ROOMS}",
                metric_sample(&text, "room_lists_rooms")
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Checks that the first page of `hot` is full and led by heated rooms; reports its scores.
async fn check_first_page(server: &Server, reader: &str) -> Result<()> {
    let page: Value = server
        .client
        .http
        .get(format!("{}{HOT_PAGE}", server.client.base))
        .bearer_auth(reader)
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let scores: Vec<f64> = page["rooms"]
        .as_array()
        .context("rooms")?
        .iter()
        .map(|room| room["score"].as_f64().unwrap_or(0.0))
        .collect();
    let (Some(first), Some(last)) = (scores.first(), scores.last()) else {
        bail!("the first page of hot is empty");
    };
    report(
        "lists: hot first page (rooms, scores)",
        &format!("{}, {first:.0} to {last:.0}", scores.len()),
    );
    // Every room is new (a boost of 100): a heated room scores above that.
    if scores.len() != 20 || *first <= 100.0 {
        bail!("the first page of hot is not 20 heated rooms: {scores:?}");
    }
    Ok(())
}

/// What one closed loop of reads measured.
pub struct ReadRun {
    /// Reads answered per second.
    pub rate: f64,
    /// Each answered read's time, sorted.
    pub latencies: Vec<Duration>,
    /// The server's CPU seconds per answered read.
    cpu_per_read: f64,
    /// Reads that failed.
    errors: u64,
}

impl ReadRun {
    /// Its reads a second, p50, p99, the server's CPU a read and the failures, as printed.
    pub fn summary(&self) -> String {
        format!(
            "{:.0}; p50 {:.2} ms, p99 {:.2} ms; server CPU {:.0} us a read{}",
            self.rate,
            millis(quantile(&self.latencies, 0.5)),
            millis(quantile(&self.latencies, 0.99)),
            self.cpu_per_read * 1e6,
            errors(self.errors)
        )
    }
}

/// One GET of `path` as the user of `token`; fails unless answered 2xx.
async fn get(client: &ClientView, path: &str, token: &str) -> Result<()> {
    let response = client
        .http
        .get(format!("{}{path}", client.base))
        .bearer_auth(token)
        .send()
        .await?;
    let status = response.status();
    let body = response.bytes().await?;
    if !status.is_success() {
        bail!("{path}: {status} {}", String::from_utf8_lossy(&body));
    }
    Ok(())
}

/// Every reader reading `path` back to back for `length` (after an unmeasured warm-up that
/// opens their connections).
pub async fn read_loop(
    server: &Server,
    readers: &[String],
    path: &str,
    length: Duration,
) -> Result<ReadRun> {
    let client = &server.client;
    closed_loop(client, readers, path, WARM_UP).await?;
    let before = cpu::sample(&[server.pid()?])?;
    let started = Instant::now();
    let (latencies, errors) = closed_loop(client, readers, path, length).await?;
    let elapsed = started.elapsed().as_secs_f64();
    let cpu = cpu::sample(&[server.pid()?])?.since(&before);
    let reads = latencies.len();
    Ok(ReadRun {
        rate: reads as f64 / elapsed,
        latencies,
        cpu_per_read: cpu.node_secs[0] / reads.max(1) as f64,
        errors,
    })
}

/// Each reader in a task of its own reading `path` back to back for `length`; answers the
/// answered reads' times, sorted, and the failures.
async fn closed_loop(
    client: &ClientView,
    readers: &[String],
    path: &str,
    length: Duration,
) -> Result<(Vec<Duration>, u64)> {
    let deadline = Instant::now() + length;
    let mut workers = Vec::with_capacity(readers.len());
    for reader in readers {
        let (client, reader, path) = (client.clone(), reader.clone(), path.to_owned());
        workers.push(tokio::spawn(async move {
            let (mut latencies, mut errors) = (Vec::new(), 0u64);
            while Instant::now() < deadline {
                let sent = Instant::now();
                match get(&client, &path, &reader).await {
                    Ok(()) => latencies.push(sent.elapsed()),
                    Err(_) => errors += 1,
                }
            }
            (latencies, errors)
        }));
    }
    let (mut latencies, mut errors) = (Vec::new(), 0);
    for worker in workers {
        let (times, failed) = worker.await?;
        latencies.extend(times);
        errors += failed;
    }
    latencies.sort_unstable();
    Ok((latencies, errors))
}

/// Half of `rate`, in hundreds (at least 100): the offered rate of an open loop that does not
/// measure its own queue, as a closed loop at saturation does.
pub fn half_rate(rate: f64) -> u64 {
    ((rate / 2.0 / 100.0).round() as u64).max(1) * 100
}

/// Offers `rate` reads of `path` a second for `length`, whatever the answers, the readers
/// taking turns; answers the answered reads' times, each from when it was due, sorted, and
/// the failures.
pub async fn open_loop(
    client: &ClientView,
    readers: &[String],
    path: &str,
    rate: u64,
    length: Duration,
) -> Result<(Vec<Duration>, u64)> {
    let interval = Duration::from_secs_f64(1.0 / rate as f64);
    let total = rate * length.as_secs();
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(total as usize);
    for i in 0..total {
        let due = started + interval.mul_f64(i as f64);
        tokio::time::sleep_until(due.into()).await;
        let (client, path) = (client.clone(), path.to_owned());
        let reader = readers[i as usize % readers.len()].clone();
        tasks.push(tokio::spawn(async move {
            let ok = get(&client, &path, &reader).await.is_ok();
            (due.elapsed(), ok)
        }));
    }
    let (mut latencies, mut failed) = (Vec::with_capacity(tasks.len()), 0);
    for task in tasks {
        match task.await? {
            (latency, true) => latencies.push(latency),
            (_, false) => failed += 1,
        }
    }
    latencies.sort_unstable();
    Ok((latencies, failed))
}

/// What an idle server did in [`IDLE_WINDOW`]: its CPU time and its lists' refreshes.
struct Idle {
    /// The server's CPU seconds.
    cpu_secs: f64,
    /// Refreshes done.
    refreshes: f64,
    /// Refreshes that failed.
    failed: f64,
    /// The wall seconds the refreshes took, all together (`room_lists_refresh_seconds`).
    refresh_secs: f64,
    /// The refreshes timed (done or failed).
    timed: f64,
}

impl Idle {
    /// Measures the server over [`IDLE_WINDOW`], sending it nothing but two `/metrics` reads.
    async fn measure(server: &Server) -> Result<Idle> {
        let counters = |text: &str| {
            [
                "room_lists_refreshes_total{outcome=\"done\"}",
                "room_lists_refreshes_total{outcome=\"failed\"}",
                "room_lists_refresh_seconds_sum",
                "room_lists_refresh_seconds_count",
            ]
            .map(|name| metric_sample(text, name))
        };
        let before = counters(&server.metrics().await?);
        let cpu_before = cpu::sample(&[server.pid()?])?;
        tokio::time::sleep(IDLE_WINDOW).await;
        let cpu = cpu::sample(&[server.pid()?])?.since(&cpu_before);
        let after = counters(&server.metrics().await?);
        let delta = |i: usize| after[i] - before[i];
        Ok(Idle {
            cpu_secs: cpu.node_secs[0],
            refreshes: delta(0),
            failed: delta(1),
            refresh_secs: delta(2),
            timed: delta(3),
        })
    }

    /// The mean wall time of a refresh in the window, in seconds.
    fn refresh_wall(&self) -> f64 {
        self.refresh_secs / self.timed.max(1.0)
    }

    fn report(&self, what: &str) {
        report(
            &format!("{what} ({}s)", IDLE_WINDOW.as_secs()),
            &format!(
                "{:.0} refreshes ({:.0} failed), {:.0} ms wall each; server CPU {:.0} ms, \
                 {:.1} ms a refresh",
                self.refreshes,
                self.failed,
                self.refresh_wall() * 1e3,
                self.cpu_secs * 1e3,
                self.cpu_secs / self.refreshes.max(1.0) * 1e3
            ),
        );
    }
}

fn errors(errors: u64) -> String {
    if errors == 0 {
        String::new()
    } else {
        format!("; {errors} failed")
    }
}
