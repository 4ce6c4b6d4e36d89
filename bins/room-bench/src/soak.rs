//! The soak (`--soak MINUTES`): a steady open-loop load for minutes on end, every member kept
//! present by heartbeats (presence would evict them after 90 s otherwise, and every gift
//! after that would be refused), one line a minute, then a verdict.
//!
//! Each line: the gifts per second completed in that minute, their p50 and p99 (counted from
//! when each request was due), the server's resident memory, the bytes on disk, and the bytes
//! per gift since the soak began. The verdict: resident memory and p99 of the last minute
//! within 15 % of the second minute's (the first one warms up), and the bytes per gift of the
//! whole run within the targets ([`TARGET_RETAINED`], [`TARGET_KEPT`]).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Result;
use serde_json::json;

use crate::disk::{self, TARGET_KEPT, TARGET_RETAINED};
use crate::load::{closed_loop, next_order};
use crate::report::report;
use crate::server::{Server, Setup, gifts_completed, token};

/// How often every member of the setup sends a heartbeat (the presence timeout is 90 s).
const HEARTBEAT_EVERY: Duration = Duration::from_secs(20);

/// How far the last minute's memory and p99 may drift from the second minute's.
const DRIFT: f64 = 0.15;

/// What one minute of the soak saw.
#[derive(Debug, Default, Clone)]
struct Minute {
    latencies: Vec<Duration>,
    failed: u64,
}

/// One minute's figures, as printed.
#[derive(Debug, Clone, Copy)]
struct Line {
    p99_ms: f64,
    rss: u64,
}

/// Runs the soak for `minutes` at `rate` gifts per second over `setup`'s senders; prints a
/// line a minute and the verdict; answers whether it passed.
pub async fn soak(server: &Server, setup: &Setup, rate: u64, minutes: u64) -> Result<bool> {
    // Connections first, as in the open loop.
    closed_loop(server, setup, Duration::from_secs(2), false).await?;
    let heartbeats = tokio::spawn(keep_present(server.client.clone(), members(setup)?));
    let disk_before = server.database.sample().await?;
    let gifts_before = gifts_completed();
    let used_before = server.database.used().await?;

    let started = Instant::now();
    let length = Duration::from_secs(minutes * 60);
    let stats: Arc<Mutex<Vec<Minute>>> =
        Arc::new(Mutex::new(vec![Minute::default(); minutes as usize]));
    let dispatcher = {
        let stats = stats.clone();
        let client = server.client.clone();
        let senders = setup.rooms.clone();
        tokio::spawn(async move {
            let interval = Duration::from_secs_f64(1.0 / rate.max(1) as f64);
            let mut i: u64 = 0;
            loop {
                let due = started + interval.mul_f64(i as f64);
                if due >= started + length {
                    break;
                }
                tokio::time::sleep_until(due.into()).await;
                let sender = senders[i as usize % senders.len()].clone();
                let client = client.clone();
                let stats = stats.clone();
                tokio::spawn(async move {
                    let result = client.gift(&sender, next_order()).await;
                    let latency = due.elapsed();
                    let minute = (due - started).as_secs() as usize / 60;
                    let mut stats = stats.lock().unwrap_or_else(|e| e.into_inner());
                    if let Some(minute) = stats.get_mut(minute) {
                        match result {
                            Ok(()) => minute.latencies.push(latency),
                            Err(_) => minute.failed += 1,
                        }
                    }
                });
                i += 1;
            }
        })
    };

    let mut lines = Vec::new();
    for m in 0..minutes as usize {
        // A few seconds past the minute, so that its last requests have answered.
        let at = started + Duration::from_secs((m as u64 + 1) * 60 + 3);
        tokio::time::sleep_until(at.into()).await;
        let minute = {
            let mut stats = stats.lock().unwrap_or_else(|e| e.into_inner());
            std::mem::take(&mut stats[m])
        };
        let mut latencies = minute.latencies;
        latencies.sort();
        let pick = |q: f64| {
            latencies
                .get(((latencies.len() as f64 - 1.0) * q) as usize)
                .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
        };
        let rss = server.rss_bytes()?;
        let used = server.database.used().await?;
        let files = server.database.files().await?;
        let gifts = (gifts_completed() - gifts_before).max(1);
        let per_gift = used.saturating_sub(used_before) as f64 / gifts as f64;
        let line = Line {
            p99_ms: pick(0.99),
            rss,
        };
        report(
            &format!("soak minute {}", m + 1),
            &format!(
                "{:.0} gifts/s, p50 {:.1} ms, p99 {:.1} ms, {} failed, RSS {:.0} MiB, disk {:.0} MiB, {per_gift:.0} B/gift",
                latencies.len() as f64 / 60.0,
                pick(0.5),
                line.p99_ms,
                minute.failed,
                rss as f64 / (1024.0 * 1024.0),
                files as f64 / (1024.0 * 1024.0),
            ),
        );
        lines.push(line);
    }
    dispatcher.await?;
    heartbeats.abort();

    let disk_after = server.database.sample().await?;
    let (retained, kept) =
        disk::report_per_gift(&disk_before, &disk_after, gifts_completed() - gifts_before);
    Ok(verdict(&lines, retained, kept))
}

/// Prints the verdict over the minutes' lines and the bytes per gift; answers whether it
/// passed.
fn verdict(lines: &[Line], retained: f64, kept: f64) -> bool {
    let mut problems = Vec::new();
    match (lines.get(1), lines.last()) {
        (Some(second), Some(last)) if lines.len() >= 3 => {
            let drift = |now: f64, then: f64| (now - then) / then.max(f64::MIN_POSITIVE);
            let memory = drift(last.rss as f64, second.rss as f64);
            let p99 = drift(last.p99_ms, second.p99_ms);
            report(
                "soak: last minute against the second",
                &format!("memory {:+.1} %, p99 {:+.1} %", memory * 100.0, p99 * 100.0),
            );
            if memory.abs() > DRIFT {
                problems.push(format!("memory moved {:+.1} %", memory * 100.0));
            }
            if p99.abs() > DRIFT {
                problems.push(format!("p99 moved {:+.1} %", p99 * 100.0));
            }
        }
        _ => problems.push("fewer than 3 minutes: nothing to compare".to_owned()),
    }
    if retained > TARGET_RETAINED {
        problems.push(format!("{retained:.0} B a gift on disk"));
    }
    if kept > TARGET_KEPT {
        problems.push(format!("{kept:.0} B a gift kept for good"));
    }
    if problems.is_empty() {
        report("soak verdict", "PASS");
        true
    } else {
        report("soak verdict", &format!("FAIL: {}", problems.join("; ")));
        false
    }
}

/// Every (room, member token) of the setup: the senders and the recipients.
fn members(setup: &Setup) -> Result<Vec<(String, String)>> {
    let mut members = Vec::new();
    for (room_id, sender, recipient) in &setup.rooms {
        members.push((room_id.clone(), sender.clone()));
        let recipient = (room_id.clone(), token(recipient, false)?);
        if !members.contains(&recipient) {
            members.push(recipient);
        }
    }
    Ok(members)
}

/// Sends a heartbeat for every member every [`HEARTBEAT_EVERY`], until aborted.
async fn keep_present(client: crate::server::ClientView, members: Vec<(String, String)>) {
    let mut tick = tokio::time::interval(HEARTBEAT_EVERY);
    loop {
        tick.tick().await;
        for (room_id, member) in &members {
            let sent = client
                .http
                .post(format!("{}/v1/rooms/{room_id}/heartbeat", client.base))
                .bearer_auth(member)
                .json(&json!({}))
                .send()
                .await;
            if !matches!(&sent, Ok(response) if response.status().is_success()) {
                report("  heartbeat failed", room_id);
            }
        }
    }
}
