//! The cost of billing (`--only billing`): the hot room on a server that pays income (the
//! catalog's `[billing]`: the income consumer credits every gift's parts) against one whose
//! catalog has no billing section (the platform keeps every gift: the consumer reads the
//! facts and credits nothing), in turns, in one run: on, off, off, on, on, off ([`crate::turns`]). Each side
//! also reports the consumers' lags, read every 100 ms during the loop: how far income (on the
//! paying side) and gift value (on both) trail the gifts.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::cpu;
use crate::load::{SENDERS, closed_loop};
use crate::report::report;
use crate::server::{ClientView, Server, gifts_completed};
use crate::stats::metric_sample;
use crate::turns::{in_turns, report_medians};

/// How long the income consumer may take to catch up after a loop.
const TRAIL_WAIT: Duration = Duration::from_secs(30);

/// `catalog` (the text of a gift catalog file) without its `[billing]` sections.
fn without_billing(catalog: &str) -> String {
    let mut out = String::with_capacity(catalog.len());
    let mut in_billing = false;
    for line in catalog.lines() {
        let header = line.trim_start();
        if header.starts_with('[') {
            in_billing = header.starts_with("[billing]") || header.starts_with("[billing.");
        }
        if !in_billing {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Writes the shipped catalog (`configs/gifts.toml`, from the working directory) without
/// billing to a temporary file; answers its path.
fn catalog_without_billing() -> Result<PathBuf> {
    let shipped = std::fs::read_to_string("configs/gifts.toml")
        .context("configs/gifts.toml (run room-bench from the repository's root)")?;
    let text = without_billing(&shipped);
    if text.contains("recipient_bp") {
        bail!("configs/gifts.toml: a billing key outside a [billing] section");
    }
    let path =
        std::env::temp_dir().join(format!("room-bench-no-billing-{}.toml", std::process::id()));
    std::fs::write(&path, text)?;
    Ok(path)
}

/// A value of the server's `/metrics` page: the first sample of `name` (0 when absent).
async fn metric(server: &Server, name: &str) -> Result<f64> {
    Ok(metric_sample(&server.metrics().await?, name))
}

/// How often the consumers' lags are read during a loop.
const LAG_EVERY: Duration = Duration::from_millis(100);

/// The consumers whose lag is read: what they make of the gifts, and their lag's sample
/// (`room_facts_lag_seconds`: how old the fact in hand is, 0 once caught up).
const CONSUMERS: [(&str, &str); 2] = [
    (
        "income",
        "room_facts_lag_seconds{consumer=\"room-service-income\"}",
    ),
    (
        "gift value",
        "room_facts_lag_seconds{consumer=\"room-service-gift-tallies\"}",
    ),
];

/// Reads each of [`CONSUMERS`]' lag every [`LAG_EVERY`] for `length`; answers the samples of
/// each, in seconds.
async fn lag_samples(client: ClientView, length: Duration) -> [Vec<f64>; 2] {
    let mut samples = [Vec::new(), Vec::new()];
    let end = tokio::time::Instant::now() + length;
    while tokio::time::Instant::now() < end {
        if let Ok(response) = client
            .http
            .get(format!("{}/metrics", client.base))
            .send()
            .await
            && let Ok(text) = response.text().await
        {
            for (kept, (_, sample)) in samples.iter_mut().zip(CONSUMERS) {
                kept.push(metric_sample(&text, sample));
            }
        }
        tokio::time::sleep(LAG_EVERY).await;
    }
    samples
}

/// The larger of [`CONSUMERS`]' lags now, in seconds.
async fn largest_lag(server: &Server) -> Result<f64> {
    let text = server.metrics().await?;
    Ok(CONSUMERS
        .iter()
        .map(|(_, sample)| metric_sample(&text, sample))
        .fold(0.0, f64::max))
}

/// The `q` quantile of `values` (sorted here), 0 for none.
fn quantile(values: &mut [f64], q: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    if values.is_empty() {
        return 0.0;
    }
    let at = ((values.len() as f64 - 1.0) * q).round() as usize;
    values[at.min(values.len() - 1)]
}

/// The process id of a local MariaDB or MySQL server, if one runs on this machine.
fn database_pid() -> Option<u32> {
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let comm = std::fs::read_to_string(entry.path().join("comm")).ok()?;
            matches!(comm.trim(), "mariadbd" | "mysqld").then_some(pid)
        })
}

/// Runs the comparison; `start` starts a server on fresh storage with extra environment, on a
/// local MySQL server when `on_mysql` (whose own CPU is then reported too).
pub async fn billing(
    start: impl AsyncFn(&[(&str, &str)]) -> Result<Server>,
    duration: Duration,
    on_mysql: bool,
) -> Result<()> {
    let catalog = catalog_without_billing()?;
    let catalog = catalog.to_string_lossy().into_owned();
    let (on, off) = in_turns(async |billed, round| {
        let env: Vec<(&str, &str)> = if billed {
            Vec::new()
        } else {
            vec![("ROOM__CATALOG__PATH", catalog.as_str())]
        };
        let server = start(&env).await?;
        let setup = server.setup(1, SENDERS).await?;
        let database = if on_mysql { database_pid() } else { None };
        let before = database.map(|pid| cpu::sample(&[pid])).transpose()?;
        let gifts_before = gifts_completed();
        let (rate, lags) = tokio::join!(
            closed_loop(&server, &setup, duration, true),
            lag_samples(server.client.clone(), duration)
        );
        let rate = rate?;
        let side = if billed { "on" } else { "off" };
        // Read on both sides alike (reading `/metrics` costs the server a little).
        for ((what, _), mut lags) in CONSUMERS.into_iter().zip(lags) {
            report(
                &format!("  {what} consumer lag, billing {side} (p50 / p99 / max)"),
                &format!(
                    "{:.0} / {:.0} / {:.0} ms",
                    quantile(&mut lags, 0.5) * 1e3,
                    quantile(&mut lags, 0.99) * 1e3,
                    quantile(&mut lags, 1.0) * 1e3
                ),
            );
        }
        if let (Some(pid), Some(before)) = (database, before) {
            let used = cpu::sample(&[pid])?.since(&before);
            let gifts = gifts_completed().saturating_sub(gifts_before).max(1);
            report(
                "  database server CPU per gift (all its work)",
                &format!("{:.0} us", used.node_secs[0] * 1e6 / gifts as f64),
            );
        }
        report(
            &format!("billing {side}, round {} (gifts/s)", round + 1),
            &format!("{rate:.0}"),
        );
        // Income trails the gifts: wait for it, and check what each side credited.
        let deadline = tokio::time::Instant::now() + TRAIL_WAIT;
        let mut lag = largest_lag(&server).await?;
        while lag > 0.0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(200)).await;
            lag = largest_lag(&server).await?;
        }
        let counted = metric(&server, "room_gift_tallies_total").await?;
        report(
            &format!("  gifts counted for gift value (billing {side})"),
            &format!("{counted:.0}"),
        );
        if counted == 0.0 {
            bail!("billing {side}: no gift counted for gift value");
        }
        let entries = metric(&server, "room_income_entries_total").await?;
        report(
            &format!("  income entries credited (billing {side})"),
            &format!("{entries:.0}"),
        );
        if billed == (entries == 0.0) {
            bail!("billing {side}: {entries} income entries credited");
        }
        server.stop().await?;
        Ok(rate)
    })
    .await?;
    let _ = std::fs::remove_file(&catalog);
    report_medians("hot room, billing on against off (median gifts/s)", on, off);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_billing_sections_and_only_they_are_left_out() {
        let catalog = "[[gifts]]\ngift_id = \"rose\"\n\n[billing]\nrecipient_bp = 5000\n\n\
                       [billing.overrides.lucky]\nowner_bp = 1\n\n[rules]\nmax = 3\n";
        assert_eq!(
            without_billing(catalog),
            "[[gifts]]\ngift_id = \"rose\"\n\n[rules]\nmax = 3\n"
        );
    }
}
