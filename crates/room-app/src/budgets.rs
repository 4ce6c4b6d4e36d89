//! [`LocalRateBudgets`]: GCRA buckets in memory, the [`RateBudgets`] of one process (the
//! reference the shared ones are checked against).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;

use crate::error::Result;
use crate::ports::{ClockRef, RateBudgets, gcra};

/// GCRA buckets in memory, by key. Buckets that are full again are dropped whenever the table
/// has grown by half since the last sweep, so it holds only the busy ones.
pub struct LocalRateBudgets {
    clock: ClockRef,
    buckets: Mutex<(HashMap<String, i64>, usize)>,
}

impl LocalRateBudgets {
    /// Empty buckets on `clock`'s time.
    pub fn new(clock: ClockRef) -> Self {
        LocalRateBudgets {
            clock,
            buckets: Mutex::new((HashMap::new(), 1024)),
        }
    }
}

#[async_trait]
impl RateBudgets for LocalRateBudgets {
    async fn take(&self, key: &str, interval: Duration, burst: u32) -> Result<Option<Duration>> {
        let now = self.clock.now().0;
        let interval = i64::try_from(interval.as_millis()).unwrap_or(i64::MAX);
        let mut guard = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        let (buckets, sweep_at) = &mut *guard;
        let answer = match gcra(buckets.get(key).copied(), now, interval, burst) {
            Ok(tat) => {
                buckets.insert(key.to_owned(), tat);
                None
            }
            Err(wait) => Some(Duration::from_millis(u64::try_from(wait).unwrap_or(0))),
        };
        if buckets.len() >= *sweep_at {
            buckets.retain(|_, tat| *tat > now);
            *sweep_at = (buckets.len() * 3 / 2).max(1024);
        }
        Ok(answer)
    }
}
