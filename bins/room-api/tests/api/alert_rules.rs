//! The alerting rules and the dashboard in `deploy/` name only metrics the service exports,
//! and Prometheus's own checker accepts the rules.
//!
//! "Exports" is read off the sources: a metric exists when some crate spells its name as a
//! string literal (every `counter!`, `gauge!` and `histogram!` does, directly or through a
//! constant). Histograms are served as summaries, so `_sum` and `_count` are their names too.
//! `promtool check rules` runs when `promtool` is installed (Debian's `prometheus` package),
//! and is required when `ROOM_TEST_REQUIRE_SERVICES=1`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use room_app::testkit::services_required;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `"room_…"` / `"http_…"` string literal in the crates' and binaries' sources.
fn exported() -> BTreeSet<String> {
    let literal = regex::Regex::new(r#""((?:room|http)_[a-z0-9_]+)""#).expect("a valid regex");
    let mut names = BTreeSet::new();
    let mut dirs = vec![workspace().join("crates"), workspace().join("bins")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("a readable source directory") {
            let path = entry.expect("a directory entry").path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if path.is_dir() {
                // Sources only: a test may spell any name.
                if name != "tests" && name != "target" {
                    dirs.push(path);
                }
            } else if name.ends_with(".rs") {
                let text = std::fs::read_to_string(&path).expect("a readable source file");
                names.extend(literal.captures_iter(&text).map(|c| c[1].to_owned()));
            }
        }
    }
    names
}

/// The metric names a PromQL expression reads: identifiers outside label matchers and
/// strings that start with `room_` or `http_`.
fn metrics_in(expr: &str) -> BTreeSet<String> {
    let quoted = regex::Regex::new(r#""[^"]*""#).expect("a valid regex");
    let name = regex::Regex::new(r"\b((?:room|http)_[a-z0-9_]+)").expect("a valid regex");
    let bare = quoted.replace_all(expr, "\"\"");
    name.captures_iter(&bare).map(|c| c[1].to_owned()).collect()
}

fn known(metric: &str, exported: &BTreeSet<String>) -> bool {
    exported.contains(metric)
        || ["_sum", "_count"].iter().any(|suffix| {
            metric
                .strip_suffix(suffix)
                .is_some_and(|base| exported.contains(base))
        })
}

/// The `expr:` of every rule (a one-line value or a `|` block).
fn rule_exprs(rules: &str) -> Vec<String> {
    let mut exprs = Vec::new();
    let mut lines = rules.lines().peekable();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        let Some(value) = trimmed.strip_prefix("expr:") else {
            continue;
        };
        let value = value.trim();
        if value != "|" {
            exprs.push(value.to_owned());
            continue;
        }
        let indent = line.len() - trimmed.len();
        let mut block = String::new();
        while let Some(next) = lines.peek() {
            let next_indent = next.len() - next.trim_start().len();
            if !next.trim().is_empty() && next_indent <= indent {
                break;
            }
            block.push_str(next.trim());
            block.push(' ');
            lines.next();
        }
        exprs.push(block);
    }
    exprs
}

#[test]
fn alerting_rules_name_only_exported_metrics() {
    let exported = exported();
    let rules = std::fs::read_to_string(workspace().join("deploy/prometheus/alerts.yml"))
        .expect("deploy/prometheus/alerts.yml");
    let exprs = rule_exprs(&rules);
    assert!(
        exprs.len() >= 20,
        "the rules file has {} rules",
        exprs.len()
    );
    for expr in &exprs {
        let names = metrics_in(expr);
        assert!(
            !names.is_empty(),
            "a rule reads no metric of the service: {expr}"
        );
        for metric in names {
            assert!(
                known(&metric, &exported),
                "a rule reads {metric}, which the service does not export: {expr}"
            );
        }
    }
}

#[test]
fn dashboard_names_only_exported_metrics() {
    let exported = exported();
    let text = std::fs::read_to_string(workspace().join("deploy/grafana/room-service.json"))
        .expect("deploy/grafana/room-service.json");
    let dashboard: serde_json::Value = serde_json::from_str(&text).expect("the dashboard is JSON");
    let mut exprs = 0;
    for panel in dashboard["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"].as_str().expect("a target's expr");
            exprs += 1;
            for metric in metrics_in(expr) {
                assert!(
                    known(&metric, &exported),
                    "panel {} reads {metric}, which the service does not export",
                    panel["title"]
                );
            }
        }
    }
    assert!(exprs >= 30, "the dashboard has {exprs} queries");
}

#[test]
fn the_checker_sees_an_unknown_metric() {
    let exported = exported();
    assert!(exported.contains("room_outbox_lag_seconds"));
    assert!(known("room_cell_commit_seconds_count", &exported));
    assert!(!known("room_outbox_lag_secs", &exported));
    let names =
        metrics_in(r#"sum by (worker) (rate(room_worker_errors_total{worker="room_x"}[5m])) > 0"#);
    assert_eq!(
        names.into_iter().collect::<Vec<_>>(),
        ["room_worker_errors_total"]
    );
}

#[test]
fn promtool_accepts_the_rules() {
    let rules = workspace().join("deploy/prometheus/alerts.yml");
    match std::process::Command::new("promtool")
        .arg("check")
        .arg("rules")
        .arg(&rules)
        .output()
    {
        Ok(output) => assert!(
            output.status.success(),
            "promtool check rules failed:\n{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
        Err(error) => {
            assert!(
                !services_required(),
                "promtool is not runnable ({error}), and ROOM_TEST_REQUIRE_SERVICES=1 requires it"
            );
            #[allow(clippy::print_stderr)]
            {
                eprintln!("skipped: promtool is not runnable ({error})");
            }
        }
    }
}
