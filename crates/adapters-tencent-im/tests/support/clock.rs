//! A clock a test sets and moves: UserSig times that differ between two calls without
//! waiting for the wall clock.

#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use room_app::ports::Clock;
use room_domain::Timestamp;

/// A [`Clock`] that says what it was set to.
#[derive(Debug)]
pub struct SettableClock {
    millis: AtomicI64,
}

impl SettableClock {
    /// A clock at `millis` (Unix milliseconds).
    pub fn at(millis: i64) -> Arc<SettableClock> {
        Arc::new(SettableClock {
            millis: AtomicI64::new(millis),
        })
    }

    /// A clock at the system's time now (the fake server checks sigs against it).
    pub fn now() -> Arc<SettableClock> {
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis();
        SettableClock::at(i64::try_from(millis).unwrap())
    }

    /// Moves it on by `secs` seconds.
    pub fn advance_secs(&self, secs: i64) {
        self.millis.fetch_add(secs * 1000, Ordering::SeqCst);
    }

    /// Its time in Unix seconds.
    pub fn unix_secs(&self) -> u64 {
        u64::try_from(self.millis.load(Ordering::SeqCst) / 1000).unwrap()
    }
}

impl Clock for SettableClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.millis.load(Ordering::SeqCst))
    }
}
