//! [`LocalRateBudgets`] and [`LocalOpenStreams`]: per-user budgets in memory, those of one
//! process (the reference the shared ones are checked against).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;

use crate::error::Result;
use room_domain::{Timestamp, UserId};

use crate::ports::{ClockRef, OpenStreams, RateBudgets, gcra};

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

/// Open streams in memory, by user: the [`OpenStreams`] of one process (the reference the
/// shared ones are checked against). Users without an unexpired entry are dropped.
#[derive(Default)]
pub struct LocalOpenStreams {
    users: Mutex<HashMap<UserId, HashMap<String, i64>>>,
}

impl LocalOpenStreams {
    /// No stream open.
    pub fn new() -> Self {
        Self::default()
    }
}

fn until(now: Timestamp, ttl: Duration) -> i64 {
    now.0
        .saturating_add(i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX))
}

#[async_trait]
impl OpenStreams for LocalOpenStreams {
    async fn open(
        &self,
        user: &UserId,
        stream: &str,
        max: u32,
        now: Timestamp,
        ttl: Duration,
    ) -> Result<bool> {
        let mut users = self.users.lock().unwrap_or_else(|e| e.into_inner());
        let streams = users.entry(user.clone()).or_default();
        streams.retain(|_, expiry| *expiry > now.0);
        if streams.len() >= max as usize && !streams.contains_key(stream) {
            if streams.is_empty() {
                users.remove(user);
            }
            return Ok(false);
        }
        streams.insert(stream.to_owned(), until(now, ttl));
        Ok(true)
    }

    async fn renew(
        &self,
        user: &UserId,
        stream: &str,
        now: Timestamp,
        ttl: Duration,
    ) -> Result<()> {
        let mut users = self.users.lock().unwrap_or_else(|e| e.into_inner());
        users
            .entry(user.clone())
            .or_default()
            .insert(stream.to_owned(), until(now, ttl));
        Ok(())
    }

    async fn close(&self, user: &UserId, stream: &str) -> Result<()> {
        let mut users = self.users.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(streams) = users.get_mut(user) {
            streams.remove(stream);
            if streams.is_empty() {
                users.remove(user);
            }
        }
        Ok(())
    }
}
