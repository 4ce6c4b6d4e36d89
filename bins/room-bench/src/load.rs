//! The loads the bench offers: closed loops of 64 senders sending back to back, open loops at
//! a fixed rate whatever the answers, and the rooms and members of the memory phase.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::json;

use crate::cpu::{self, CpuSample};
use crate::report::report;
use crate::server::{ClientView, Server, Setup, token};
use crate::stats::latency_summary;

/// The senders of a closed loop.
pub const SENDERS: usize = 64;

static ORDERS: AtomicU64 = AtomicU64::new(0);

/// A gift order number no other gift of this run has.
pub fn next_order() -> u64 {
    ORDERS.fetch_add(1, Ordering::Relaxed)
}

/// What a closed loop measured.
#[derive(Debug, Clone, Copy)]
pub struct ClosedRun {
    /// Completed gifts per second.
    pub rate: f64,
    /// The servers' CPU time per completed gift, in microseconds (0 for a warm-up).
    pub cpu_per_gift: f64,
    /// The gifts that failed.
    pub failed: u64,
}

/// Runs 64 senders, each sending back to back for `duration`; returns completed gifts per
/// second, and reports the CPU figures of the run if it is `measured` (not a warm-up).
pub async fn closed_loop(
    server: &Server,
    setup: &Setup,
    duration: Duration,
    measured: bool,
) -> Result<f64> {
    let run = closed_loop_on(
        std::slice::from_ref(&server.client),
        &[server],
        setup,
        duration,
        measured,
    )
    .await?;
    Ok(run.rate)
}

/// [`closed_loop`] through several nodes: sender `w` sends through `clients[w % n]`, and the
/// CPU reported is that of all of `servers`; answers all the loop measured.
pub async fn closed_loop_on(
    clients: &[ClientView],
    servers: &[&Server],
    setup: &Setup,
    duration: Duration,
    measured: bool,
) -> Result<ClosedRun> {
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
    let failed = errors.load(Ordering::Relaxed);
    if failed > 0 {
        report("  errors during the run", &failed.to_string());
    }
    let gifts = done.load(Ordering::Relaxed);
    let cpu_per_gift = if measured { cpu.report(gifts) } else { 0.0 };
    Ok(ClosedRun {
        rate: gifts as f64 / elapsed,
        cpu_per_gift,
        failed,
    })
}

/// The CPU counters of `servers`, one entry per server in their order.
fn cpu_of(servers: &[&Server]) -> Result<CpuSample> {
    let pids = servers
        .iter()
        .map(|server| server.pid())
        .collect::<Result<Vec<_>>>()?;
    cpu::sample(&pids)
}

/// Offers `rate` gifts per second regardless of answers; returns the latency distribution.
/// The client's connections are opened first (a short closed loop of 64 senders), as a real
/// client or load balancer keeps its connections alive: the figure is the service's latency,
/// not TCP and HTTP connection set-up.
pub async fn open_loop(
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
pub async fn open_loop_on(
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
    Ok((latency_summary(&latencies, failed), cpu_per_gift))
}

/// The most gifts a [`Paced`] load has in flight.
pub const PACED_IN_FLIGHT: usize = 256;

/// Gifts offered at a rate in the background, over a setup's senders in turn, until stopped:
/// an open loop (each gift timed from when it was due) while fewer than [`PACED_IN_FLIGHT`]
/// are in flight, a closed loop of that many (the most the server takes) beyond.
pub struct Paced {
    stop: Arc<AtomicBool>,
    started: Instant,
    workers: Vec<tokio::task::JoinHandle<(Vec<Duration>, u64)>>,
}

/// What a [`Paced`] load did.
pub struct PacedRun {
    /// Completed gifts per second.
    pub rate: f64,
    /// The latency summary ([`latency_summary`]).
    pub latency: String,
}

impl Paced {
    /// Starts offering `rate` gifts a second through `client`.
    pub fn start(client: &ClientView, setup: &Setup, rate: u64) -> Paced {
        let stop = Arc::new(AtomicBool::new(false));
        let tickets = Arc::new(AtomicU64::new(0));
        let started = Instant::now();
        let interval = Duration::from_secs_f64(1.0 / rate.max(1) as f64);
        let workers = (0..PACED_IN_FLIGHT)
            .map(|_| {
                let (client, senders) = (client.clone(), setup.rooms.clone());
                let (stop, tickets) = (stop.clone(), tickets.clone());
                tokio::spawn(async move {
                    let (mut latencies, mut failed) = (Vec::new(), 0);
                    loop {
                        let i = tickets.fetch_add(1, Ordering::Relaxed);
                        let due = started + interval.mul_f64(i as f64);
                        tokio::time::sleep_until(due.into()).await;
                        if stop.load(Ordering::Relaxed) {
                            return (latencies, failed);
                        }
                        let sender = &senders[i as usize % senders.len()];
                        match client.gift(sender, next_order()).await {
                            Ok(()) => latencies.push(due.elapsed()),
                            Err(_) => failed += 1,
                        }
                    }
                })
            })
            .collect();
        Paced {
            stop,
            started,
            workers,
        }
    }

    /// Stops offering, waits for the gifts in flight; answers what the load did.
    pub async fn stop(self) -> Result<PacedRun> {
        self.stop.store(true, Ordering::Relaxed);
        let elapsed = self.started.elapsed().as_secs_f64();
        let (mut latencies, mut failed) = (Vec::new(), 0);
        for worker in self.workers {
            let (times, failures) = worker.await?;
            latencies.extend(times);
            failed += failures;
        }
        latencies.sort_unstable();
        Ok(PacedRun {
            rate: latencies.len() as f64 / elapsed,
            latency: latency_summary(&latencies, failed),
        })
    }
}

/// Resident memory per idle active room (1,000 rooms) and per member (10 rooms × 1,000).
pub async fn memory(server: &Server) -> Result<(f64, f64)> {
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
