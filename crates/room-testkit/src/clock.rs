//! The one test clock: a [`Clock`] that says what a test set it to and moves only when the
//! test moves it, or that also follows tokio's clock, so that a test with paused time moves
//! the service's time with `tokio::time::advance` and with the timers it sleeps on.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use room_app::ports::Clock;
use room_domain::Timestamp;

/// A [`Clock`] a test sets and moves.
///
/// Made [`at`](ManualClock::at) a time, it stands still until [`set`](ManualClock::set) or
/// [`advance`](ManualClock::advance)d. Made [`following_tokio`](ManualClock::following_tokio),
/// it also moves as tokio's clock does (virtual time when the test pauses it); setting and
/// advancing it then shift it against tokio's clock.
#[derive(Debug)]
pub struct ManualClock {
    /// Unix milliseconds: the time it says, less how far tokio's clock has moved since
    /// `follows` when there is one.
    offset_millis: AtomicI64,
    /// Tokio's instant at which it started following tokio's clock.
    follows: Option<tokio::time::Instant>,
}

impl ManualClock {
    /// A clock standing at `time`.
    pub fn at(time: Timestamp) -> Arc<ManualClock> {
        Arc::new(ManualClock {
            offset_millis: AtomicI64::new(time.0),
            follows: None,
        })
    }

    /// A clock standing at the system's time now (for a peer that checks times against its
    /// own wall clock).
    pub fn at_system_time() -> Arc<ManualClock> {
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("the system clock is after 1970")
            .as_millis();
        ManualClock::at(Timestamp(
            i64::try_from(millis).expect("the system time fits in i64 milliseconds"),
        ))
    }

    /// A clock at `start` now that then moves as tokio's clock does. Call it inside the
    /// runtime whose (paused) clock it follows.
    pub fn following_tokio(start: Timestamp) -> Arc<ManualClock> {
        Arc::new(ManualClock {
            offset_millis: AtomicI64::new(start.0),
            follows: Some(tokio::time::Instant::now()),
        })
    }

    /// Sets it to `time`.
    pub fn set(&self, time: Timestamp) {
        self.offset_millis
            .store(time.0 - self.followed_millis(), Ordering::SeqCst);
    }

    /// Moves it on by `by`.
    pub fn advance(&self, by: Duration) {
        let millis = i64::try_from(by.as_millis()).expect("a test advances less than i64 ms");
        self.offset_millis.fetch_add(millis, Ordering::SeqCst);
    }

    /// Moves it on by `secs` seconds (back when negative).
    pub fn advance_secs(&self, secs: i64) {
        self.offset_millis.fetch_add(secs * 1000, Ordering::SeqCst);
    }

    /// Its time in whole Unix seconds.
    pub fn unix_secs(&self) -> u64 {
        u64::try_from(self.now().0 / 1000).expect("the clock is after 1970")
    }

    /// How far tokio's clock has moved since this clock started following it; 0 when it
    /// does not follow it.
    fn followed_millis(&self) -> i64 {
        self.follows.map_or(0, |start| {
            i64::try_from(start.elapsed().as_millis()).expect("a test runs less than i64 ms")
        })
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.offset_millis.load(Ordering::SeqCst) + self.followed_millis())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_told_to() {
        let clock = ManualClock::at(Timestamp(1_000_500));
        assert_eq!(clock.now(), Timestamp(1_000_500));
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(clock.now(), Timestamp(1_000_500));
        clock.advance_secs(5);
        assert_eq!(clock.now(), Timestamp(1_005_500));
        assert_eq!(clock.unix_secs(), 1_005);
        clock.advance(Duration::from_millis(250));
        assert_eq!(clock.now(), Timestamp(1_005_750));
        clock.set(Timestamp(42));
        assert_eq!(clock.now(), Timestamp(42));
    }

    #[tokio::test(start_paused = true)]
    async fn a_clock_following_tokio_moves_with_paused_time() {
        let clock = ManualClock::following_tokio(Timestamp(1_700_000_000_000));
        assert_eq!(clock.now(), Timestamp(1_700_000_000_000));
        tokio::time::advance(Duration::from_secs(3)).await;
        assert_eq!(clock.now(), Timestamp(1_700_000_003_000));
        clock.advance_secs(1);
        assert_eq!(clock.now(), Timestamp(1_700_000_004_000));
        clock.set(Timestamp(1_700_000_010_000));
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(clock.now(), Timestamp(1_700_000_010_500));
    }
}
