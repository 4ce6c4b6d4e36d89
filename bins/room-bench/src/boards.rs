//! The leaderboards under gifts (`--only boards`, only when named).
//!
//! One server, 100 rooms with a sender each ([`Server::setup`]), and a probe: a sender in a
//! room of its own. Two measurements:
//! - reads: [`BACKGROUND_RATE`] gifts a second over the 100 rooms in the background
//!   ([`Paced`]) while, with the same HTTP client and 64 readers in a closed loop, timed
//!   windows of authenticated wallet reads (`GET /v1/me/wallet`, the ceiling of an
//!   authenticated read) take turns with first pages of each board of the whole app
//!   (`GET /v1/boards/{board}?limit=20`), in [`ROUNDS`] rounds: each board's median reads a
//!   second against the wallet's (target ≥ 80 %); then each board's pages in an open loop at
//!   the target's rate, 80 % of the wallet's ceiling, whose p99 is the one held to the target
//!   (< 10 ms): a closed loop at saturation measures its own queue (64 requests in flight);
//! - lag: the offered rate (`--rate`, [`RATE`] by default) over the 100 rooms while the probe
//!   sends, every [`PROBE_EVERY`], a gift of a known value (1 to 9 roses, in turn) and polls
//!   its standing (`GET /v1/boards/senders/me`) until its score holds that gift: the lag from
//!   the gift's answer to the first standing that shows it (target p99 < 1 s), and the gifts
//!   a second the server took.
//!
//! Each measured window is the phase's `--seconds` long: 11 of reads (each closed one after a
//! second of warm-up), then one of lag. The server keeps rooms loaded and
//! members present for the whole run (nobody heartbeats).

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::lists::{STAY, WALLET, half_rate, open_loop, read_loop, readers};
use crate::load::{Paced, next_order};
use crate::report::report;
use crate::server::{ClientView, Server};
use crate::stats::{latency_summary, median, millis, quantile};

/// The offered gifts a second of the lag measurement, unless `--rate` says otherwise.
pub const RATE: u64 = 5000;

/// The gifts a second behind the reads.
const BACKGROUND_RATE: u64 = 1000;

/// The boards of the whole app.
const BOARDS: [&str; 3] = ["senders", "receivers", "rooms"];

/// How many windows each read gets.
const ROUNDS: usize = 2;

/// How often the probe sends a gift.
const PROBE_EVERY: Duration = Duration::from_millis(100);

/// How often the probe reads its standing while it waits for its gift.
const POLL_EVERY: Duration = Duration::from_millis(5);

/// How long a gift may take to show before the probe gives up on it (and on set-up, a board
/// to fill its first page).
const SHOWN_WAIT: Duration = Duration::from_secs(10);

/// The target of a board's reads a second against the wallet's.
const TARGET_SHARE: f64 = 0.8;

/// The target of a board read's p99.
const TARGET_P99: Duration = Duration::from_millis(10);

/// The target of the lag's p99.
const TARGET_LAG: Duration = Duration::from_secs(1);

/// The first page of a board of the whole app, as a client opening it reads it.
fn page(board: &str) -> String {
    format!("/v1/boards/{board}?limit=20")
}

/// Runs the phase on a server `start` starts with extra environment, offering `rate` gifts a
/// second in the lag measurement.
pub async fn boards(
    start: impl AsyncFn(&[(&str, &str)]) -> Result<Server>,
    duration: Duration,
    rate: u64,
) -> Result<()> {
    let server = start(&STAY).await?;
    let setup = server.setup(100, 100).await?;
    let probe = server.setup_tagged(1, 1, "probe-").await?.rooms.remove(0);
    let readers = readers(&server).await?;

    let gifts = Paced::start(&server.client, &setup, BACKGROUND_RATE);
    for board in BOARDS {
        full_page(&server.client, board, &readers[0]).await?;
    }
    let mut wallet = Vec::new();
    let mut boards: [(Vec<f64>, Vec<Duration>); 3] = Default::default();
    for round in 1..=ROUNDS {
        let run = read_loop(&server, &readers, WALLET, duration).await?;
        report(
            &format!("boards: wallet reads, round {round} (reads/s)"),
            &run.summary(),
        );
        wallet.push(run.rate);
        for (board, (rates, latencies)) in BOARDS.iter().zip(&mut boards) {
            let run = read_loop(&server, &readers, &page(board), duration).await?;
            report(
                &format!("boards: {board} pages, round {round} (reads/s)"),
                &run.summary(),
            );
            rates.push(run.rate);
            latencies.extend(run.latencies);
        }
    }
    let wallet = median(&mut wallet);
    let mut missed = Vec::new();
    for (board, (rates, latencies)) in BOARDS.iter().zip(&mut boards) {
        let reads = median(rates);
        let share = reads / wallet.max(1.0);
        latencies.sort_unstable();
        report(
            &format!("boards: {board} / wallet (median reads/s)"),
            &format!(
                "{reads:.0} / {wallet:.0} ({:.0} %, target >= 80 %); 64 in flight: p50 {:.2} ms, \
                 p99 {:.2} ms",
                share * 100.0,
                millis(quantile(latencies, 0.5)),
                millis(quantile(latencies, 0.99))
            ),
        );
        if share < TARGET_SHARE {
            missed.push(format!("{board} at {:.0} % of wallet", share * 100.0));
        }
        // The target's own rate: 80 % of the wallet's ceiling, offered whatever the answers.
        let offered = half_rate(wallet * TARGET_SHARE * 2.0);
        let (open, failed) =
            open_loop(&server.client, &readers, &page(board), offered, duration).await?;
        report(
            &format!("boards: {board} pages, open loop at {offered}/s"),
            &latency_summary(&open, failed),
        );
        let p99 = quantile(&open, 0.99);
        if p99 >= TARGET_P99 || failed > 0 {
            missed.push(format!(
                "{board} p99 {:.2} ms at {offered}/s, {failed} failed",
                millis(p99)
            ));
        }
    }
    let background = gifts.stop().await?;
    report(
        &format!("boards: gifts behind the reads, {BACKGROUND_RATE}/s"),
        &format!("{:.0}/s; {}", background.rate, background.latency),
    );

    let gifts = Paced::start(&server.client, &setup, rate);
    let (mut lags, unseen) = probe_lags(&server, &probe, duration).await?;
    let load = gifts.stop().await?;
    report(
        &format!("boards: gifts during the probe, {rate}/s offered"),
        &format!("{:.0}/s; {}", load.rate, load.latency),
    );
    lags.sort_unstable();
    let lag = quantile(&lags, 0.99);
    report(
        "boards: lag from a gift's answer to its board",
        &format!(
            "p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms (target p99 < 1 s); {} gifts, {unseen} unseen",
            millis(quantile(&lags, 0.5)),
            millis(lag),
            millis(quantile(&lags, 1.0)),
            lags.len()
        ),
    );
    if lag >= TARGET_LAG || unseen > 0 {
        missed.push(format!(
            "lag p99 {:.0} ms, {unseen} gifts unseen after {SHOWN_WAIT:?}",
            millis(lag)
        ));
    }
    report(
        "boards verdict",
        &if missed.is_empty() {
            "PASS".to_owned()
        } else {
            format!("FAIL: {}", missed.join("; "))
        },
    );
    server.stop().await
}

/// Waits until the first page of `board` holds 20 entries.
async fn full_page(client: &ClientView, board: &str, reader: &str) -> Result<()> {
    let started = Instant::now();
    loop {
        let page: Value = read(client, &page(board), reader).await?;
        let items = page["items"].as_array().map_or(0, Vec::len);
        if items == 20 {
            return Ok(());
        }
        if started.elapsed() > SHOWN_WAIT {
            bail!("after {SHOWN_WAIT:?} the first page of {board} has {items} entries, not 20");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A GET of `path` as the user of `token`, answered 2xx.
async fn read(client: &ClientView, path: &str, token: &str) -> Result<Value> {
    Ok(client
        .http
        .get(format!("{}{path}", client.base))
        .bearer_auth(token)
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?)
}

/// The probe's gifts for `length`, one every [`PROBE_EVERY`] (or once the last showed): each
/// one's lag from its answer to the first standing of the probe that holds it, and how many
/// did not show within [`SHOWN_WAIT`].
async fn probe_lags(
    server: &Server,
    probe: &(String, String, String),
    length: Duration,
) -> Result<(Vec<Duration>, u64)> {
    let client = &server.client;
    let catalog = read(client, "/v1/gifts", &probe.1).await?;
    let price = catalog["gifts"]
        .as_array()
        .and_then(|gifts| gifts.iter().find(|gift| gift["gift_id"] == "rose"))
        .and_then(|rose| rose["price"].as_i64())
        .context("the catalog's rose")?;
    let score = async || -> Result<i64> {
        let standing = read(client, "/v1/boards/senders/me", &probe.1).await?;
        standing["score"].as_i64().context("score")
    };
    let mut expected = score().await?;
    let (mut lags, mut unseen) = (Vec::new(), 0);
    let end = Instant::now() + length;
    for count in (1..=9).cycle() {
        let next = Instant::now() + PROBE_EVERY;
        if next > end {
            break;
        }
        client.gifts(probe, next_order(), count).await?;
        let answered = Instant::now();
        expected += price * i64::from(count);
        loop {
            if score().await? >= expected {
                lags.push(answered.elapsed());
                break;
            }
            if answered.elapsed() > SHOWN_WAIT {
                unseen += 1;
                break;
            }
            tokio::time::sleep(POLL_EVERY).await;
        }
        tokio::time::sleep_until(next.into()).await;
    }
    Ok((lags, unseen))
}
