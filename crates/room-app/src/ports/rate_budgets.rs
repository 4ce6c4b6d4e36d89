//! Per-user request budgets shared by every node ([`RateBudgets`]): one GCRA bucket per key,
//! so that a user spreading requests over the nodes gets no more than one node allows.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use crate::error::Result;

/// Buckets of the generic cell rate algorithm (GCRA), one per key: a bucket lets a request
/// through every `interval` on average and at most `burst` at once. A bucket that is full
/// again is forgotten (it holds nothing a new one would not).
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait RateBudgets: Send + Sync {
    /// Takes one request from the bucket `key` (refilling one every `interval`, holding at
    /// most `burst`), in one step however many nodes take at once: `None` when taken,
    /// `Some(wait)` when the bucket is empty, `wait` being how long until it has room.
    async fn take(&self, key: &str, interval: Duration, burst: u32) -> Result<Option<Duration>>;
}

/// Shared handle to [`RateBudgets`].
pub type RateBudgetsRef = Arc<dyn RateBudgets>;

/// One GCRA step: the bucket's theoretical arrival time `tat` (ms; `None` for a bucket not
/// held), at `now`: the new `tat` when the request is let through, else the wait in ms.
pub fn gcra(tat: Option<i64>, now: i64, interval: i64, burst: u32) -> Result<i64, i64> {
    let interval = interval.max(1);
    let tat = tat.unwrap_or(now).max(now);
    let next = tat.saturating_add(interval);
    let allowance = interval.saturating_mul(i64::from(burst.max(1)));
    if next - now > allowance {
        Err(next - now - allowance)
    } else {
        Ok(next)
    }
}

#[cfg(test)]
mod tests {
    use super::gcra;

    #[test]
    fn a_bucket_lets_a_burst_through_then_one_per_interval() {
        // 3 at once, then one every 100 ms.
        let mut tat = None;
        for _ in 0..3 {
            tat = Some(gcra(tat, 1_000, 100, 3).expect("within the burst"));
        }
        assert_eq!(gcra(tat, 1_000, 100, 3), Err(100));
        assert_eq!(gcra(tat, 1_050, 100, 3), Err(50));
        let later = gcra(tat, 1_100, 100, 3).expect("one more after an interval");
        assert_eq!(gcra(Some(later), 1_100, 100, 3), Err(100));
        assert!(
            gcra(Some(later), 10_000, 100, 3).is_ok(),
            "a quiet bucket is full"
        );
    }
}
