//! The send budget: a token bucket paces the messages of each room (below Tencent's 40
//! messages/s per group) and the `send_group_msg` calls of the node (within the app's 200
//! calls/s, shared by every node).

use std::time::Duration;

use tokio::time::Instant;

/// A token bucket: `rate` tokens a second, at most `burst` saved up. Time is tokio's, so
/// tests drive it with `tokio::time::pause()`.
#[derive(Debug, Clone)]
pub(super) struct Bucket {
    pub(super) tokens: f64,
    pub(super) refilled: Instant,
    pub(super) rate: f64,
    pub(super) burst: f64,
}

impl Bucket {
    /// A full bucket.
    pub(super) fn full(rate: f64, burst: f64, now: Instant) -> Self {
        Bucket {
            tokens: burst,
            refilled: now,
            rate,
            burst,
        }
    }

    pub(super) fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.refilled).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.rate).min(self.burst);
        self.refilled = now;
    }

    /// `None` when a token is there; else how long until one is.
    pub(super) fn wait(&mut self, now: Instant) -> Option<Duration> {
        self.refill(now);
        if self.tokens >= 1.0 {
            None
        } else {
            // At least a millisecond: a wait that rounds to nothing would spin.
            let wait = Duration::from_secs_f64((1.0 - self.tokens) / self.rate);
            Some(wait.max(Duration::from_millis(1)))
        }
    }

    /// Takes a token; call after [`Bucket::wait`] said one is there.
    pub(super) fn take(&mut self) {
        self.tokens -= 1.0;
    }

    pub(super) fn is_full(&mut self, now: Instant) -> bool {
        self.refill(now);
        self.tokens >= self.burst
    }
}

/// A positive finite rate, or `fallback`.
pub(super) fn rate_or(rate: f64, fallback: f64) -> f64 {
    if rate.is_finite() && rate > 0.0 {
        rate
    } else {
        fallback
    }
}

/// A burst of at least one token.
pub(super) fn burst_of(burst: f64) -> f64 {
    if burst.is_finite() {
        burst.max(1.0)
    } else {
        1.0
    }
}
