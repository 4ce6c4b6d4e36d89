//! Watching the cluster: waiting for a condition with a deadline, and reading a metric of a
//! Prometheus text.

use std::future::Future;
use std::time::{Duration, Instant};

/// Waits until `probe` answers `Ok`, for up to `deadline`; panics with the last `Err` (what
/// was seen instead) when it never does.
pub(crate) async fn wait_until<T, F, Fut>(what: &str, deadline: Duration, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let end = Instant::now() + deadline;
    loop {
        match probe().await {
            Ok(value) => return value,
            Err(seen) => assert!(
                Instant::now() < end,
                "{what}: not within {deadline:?}; last seen: {seen}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The sum of the series of `name` in a Prometheus text, those with `label` (`key="value"`)
/// only when given; 0 when there is none.
pub(crate) fn metric(text: &str, name: &str, label: Option<&str>) -> f64 {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let rest = line.strip_prefix(name)?;
            let (labels, value) = match rest.strip_prefix('{') {
                Some(rest) => {
                    let (labels, value) = rest.split_once('}')?;
                    (labels, value)
                }
                None if rest.starts_with(' ') => ("", rest),
                None => return None,
            };
            if label.is_some_and(|label| !labels.split(',').any(|l| l == label)) {
                return None;
            }
            value.trim().parse::<f64>().ok()
        })
        .fold(0.0, |sum, value| sum + value)
}
