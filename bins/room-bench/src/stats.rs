//! Small figures the phases share: a median, quantiles of sorted times, and a sample of the
//! server's `/metrics` page.

use std::time::Duration;

/// The middle value of `values` (sorted here; the mean of the two middle ones for an even
/// count); 0 for none.
pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => 0.0,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}

/// The `q` quantile of `sorted`, zero for none.
pub fn quantile(sorted: &[Duration], q: f64) -> Duration {
    let at = ((sorted.len().saturating_sub(1)) as f64 * q) as usize;
    sorted.get(at).copied().unwrap_or_default()
}

/// The p50, p99 and max of `sorted` (the times of the requests answered) and the counts
/// answered and `failed`, as printed.
pub fn latency_summary(sorted: &[Duration], failed: u64) -> String {
    format!(
        "p50 {:.2} ms, p99 {:.2} ms, max {:.1} ms, {} ok, {failed} failed",
        millis(quantile(sorted, 0.5)),
        millis(quantile(sorted, 0.99)),
        millis(quantile(sorted, 1.0)),
        sorted.len()
    )
}

/// `duration` in milliseconds.
pub fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

/// The first sample of `name` on a `/metrics` page: `name` as written, labels included
/// (`room_lists_refreshes_total{outcome="done"}`), or, given without labels, the first sample
/// of that name whatever its labels. 0 when absent.
pub fn metric_sample(text: &str, name: &str) -> f64 {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| {
            let (key, value) = line.rsplit_once(' ')?;
            let labels = key.strip_prefix(name)?;
            (labels.is_empty() || (!name.contains('{') && labels.starts_with('{')))
                .then(|| value.parse().ok())?
        })
        .unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_is_found_by_its_whole_name_or_its_name_with_any_labels() {
        let text = "# TYPE room_lists_rooms gauge\nroom_lists_rooms_scanned 7\nroom_lists_rooms 5\n\
                    room_lists_refreshes_total{outcome=\"failed\"} 1\n\
                    room_lists_refreshes_total{outcome=\"done\"} 12\n\
                    room_facts_lag_seconds{consumer=\"income\"} 0.25\n";
        assert_eq!(metric_sample(text, "room_lists_rooms"), 5.0);
        assert_eq!(
            metric_sample(text, "room_lists_refreshes_total{outcome=\"done\"}"),
            12.0
        );
        assert_eq!(metric_sample(text, "room_facts_lag_seconds"), 0.25);
        assert_eq!(metric_sample(text, "room_lists_refresh_seconds_sum"), 0.0);
    }

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        assert_eq!(median(&mut [3.0, 1.0]), 2.0);
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut []), 0.0);
    }
}
