//! Joins into one room by users with profiles (`--only joins`).
//!
//! One server, one room, and [`USERS`] users whose profiles (a nickname and an avatar) are
//! written through `PUT /v1/admin/users` ([`Server::put_profiles`]). Then [`SENDERS`] clients
//! in a closed loop, each joining the room as one of its own users and leaving it again at
//! once: client `w` takes users `w`, `w + 64`, `w + 128`, ... in turn, so no user is in two
//! requests at once and every user joins many times. The room never holds more than the
//! clients and its owner, far below its `max_members`.
//!
//! A join looks the joiner up in the node's profile cache (the nickname and avatar of
//! `RoomUserJoined`), and the room it answers looks up its owner: two lookups a join, the
//! owner's always a hit once read. `room_profile_cache_lookups_total`, read before and after
//! the loop, gives the hit rate over it. A cached profile is served for
//! `ROOM__PROFILES__CACHE_TTL_MS` (10 s by default), then read from the directory again, so
//! each user misses about once in that time.
//!
//! [`Server::start`] turns the per-user limits off (a join budget is per user and minute):
//! the loop measures joins, not the limiter. A refused join or leave is counted by its error
//! code.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use reqwest::Method;
use serde_json::{Value, json};

use crate::cpu;
use crate::load::SENDERS;
use crate::report::report;
use crate::server::{ClientView, Server, token};
use crate::stats::{metric_sample, millis, quantile};

/// The users who join, each with a profile.
const USERS: usize = 2000;

/// The unmeasured loop before the measured one, which opens the clients' connections.
const WARM_UP: Duration = Duration::from_secs(1);

/// The cache lookups that found a fresh entry.
const HITS: &str = "room_profile_cache_lookups_total{result=\"hit\"}";

/// The cache lookups that read the directory.
const MISSES: &str = "room_profile_cache_lookups_total{result=\"miss\"}";

/// The owner of the room.
const OWNER: &str = "join-owner";

/// The `u`th user who joins.
fn joiner(u: usize) -> String {
    format!("join-user-{u}")
}

/// A profile of the directory: a nickname and an avatar.
fn profile(user: &str, n: usize) -> Value {
    json!({
        "user_id": user,
        "nickname": format!("joiner {n}"),
        "avatar_url": format!("https://img.example.com/j/{n}.png"),
    })
}

/// Runs the phase on a server `start` starts with extra environment.
pub async fn joins(
    start: impl AsyncFn(&[(&str, &str)]) -> Result<Server>,
    duration: Duration,
) -> Result<()> {
    let server = start(&[]).await?;
    let room_id = seed(&server).await?;
    let clients = clients()?;
    join_loop(&server.client, &room_id, &clients, WARM_UP).await?;

    let (hits, misses) = cache_lookups(&server).await?;
    let cpu_before = cpu::sample(&[server.pid()?])?;
    let started = Instant::now();
    let run = join_loop(&server.client, &room_id, &clients, duration).await?;
    let elapsed = started.elapsed().as_secs_f64();
    let cpu = cpu::sample(&[server.pid()?])?.since(&cpu_before);
    let (hits_after, misses_after) = cache_lookups(&server).await?;
    let hits = hits_after - hits;
    let lookups = hits + misses_after - misses;

    let joins = run.latencies.len();
    let failed: u64 = run.refused.values().sum();
    if (lookups as usize) < joins {
        bail!("{lookups} profile cache lookups counted for {joins} joins");
    }
    report(
        &format!("joins: one room, {USERS} users (joins/s)"),
        &format!(
            "{:.0}; p50 {:.2} ms, p99 {:.2} ms; {failed} failed; cache hits {:.1} % of {lookups:.0} \
             lookups ({:.1} a join, {:.0} misses); server CPU {:.0} us a join",
            joins as f64 / elapsed,
            millis(quantile(&run.latencies, 0.5)),
            millis(quantile(&run.latencies, 0.99)),
            hits / lookups.max(1.0) * 100.0,
            lookups / joins.max(1) as f64,
            lookups - hits,
            cpu.node_secs[0] / joins.max(1) as f64 * 1e6,
        ),
    );
    if failed > 0 {
        let codes: Vec<String> = run
            .refused
            .iter()
            .map(|(code, count)| format!("{code} {count}"))
            .collect();
        report("joins: refused, by error code", &codes.join(", "));
    }
    server.stop().await
}

/// The profile cache's hits and misses so far.
async fn cache_lookups(server: &Server) -> Result<(f64, f64)> {
    let text = server.metrics().await?;
    Ok((metric_sample(&text, HITS), metric_sample(&text, MISSES)))
}

/// The profiles of the owner and of every joiner, then the room; answers its id.
async fn seed(server: &Server) -> Result<String> {
    let profiles: Vec<Value> = (0..USERS)
        .map(|u| profile(&joiner(u), u))
        .chain([profile(OWNER, USERS)])
        .collect();
    server.put_profiles(&profiles).await?;
    let room = server
        .call(
            Method::POST,
            "/v1/rooms",
            &token(OWNER, false)?,
            json!({"name": "joins"}),
        )
        .await?;
    Ok(room["room_id"].as_str().context("room_id")?.to_owned())
}

/// The tokens of each client's users: client `w` has users `w`, `w + SENDERS`, ...
fn clients() -> Result<Vec<Vec<String>>> {
    (0..SENDERS)
        .map(|w| {
            (w..USERS)
                .step_by(SENDERS)
                .map(|u| token(&joiner(u), false))
                .collect()
        })
        .collect()
}

/// What a closed loop of joins measured.
#[derive(Default)]
struct JoinRun {
    /// Each successful join's time, sorted.
    latencies: Vec<Duration>,
    /// Refused joins and leaves, by what was refused and the error code.
    refused: BTreeMap<String, u64>,
}

/// Each client in a task of its own joining and leaving as its users in turn for `length`.
async fn join_loop(
    client: &ClientView,
    room_id: &str,
    clients: &[Vec<String>],
    length: Duration,
) -> Result<JoinRun> {
    let deadline = Instant::now() + length;
    let mut workers = Vec::with_capacity(clients.len());
    for users in clients {
        let (client, users) = (client.clone(), users.clone());
        let join = format!("/v1/rooms/{room_id}/join");
        let leave = format!("/v1/rooms/{room_id}/leave");
        workers.push(tokio::spawn(async move {
            let mut run = JoinRun::default();
            for user in users.iter().cycle() {
                if Instant::now() >= deadline {
                    break;
                }
                let sent = Instant::now();
                if let Err(code) = post(&client, &join, user).await {
                    *run.refused.entry(format!("join {code}")).or_default() += 1;
                    continue;
                }
                run.latencies.push(sent.elapsed());
                if let Err(code) = post(&client, &leave, user).await {
                    *run.refused.entry(format!("leave {code}")).or_default() += 1;
                }
            }
            run
        }));
    }
    let mut all = JoinRun::default();
    for worker in workers {
        let run = worker.await?;
        all.latencies.extend(run.latencies);
        for (code, count) in run.refused {
            *all.refused.entry(code).or_default() += count;
        }
    }
    all.latencies.sort_unstable();
    Ok(all)
}

/// A body-less POST of `path` as the user of `token`; a failure is the error code the service
/// answered (its status when the body has none), or `NO_ANSWER`.
async fn post(client: &ClientView, path: &str, token: &str) -> Result<(), String> {
    let response = client
        .http
        .post(format!("{}{path}", client.base))
        .bearer_auth(token)
        .send()
        .await
        .map_err(|_| "NO_ANSWER".to_owned())?;
    let status = response.status();
    let body = response.bytes().await.map_err(|_| "NO_ANSWER".to_owned())?;
    if status.is_success() {
        return Ok(());
    }
    let code = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|value| value["error"]["code"].as_str().map(str::to_owned));
    Err(code.unwrap_or_else(|| status.as_str().to_owned()))
}
