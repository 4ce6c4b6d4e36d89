//! Waiting for a condition without sleeping for a fixed time: poll it until a deadline.

#![allow(dead_code)]

use std::time::{Duration, Instant};

/// The longest a test waits for anything: generous for a busy machine.
pub const DEADLINE: Duration = Duration::from_secs(20);

/// Polls `done` every few milliseconds until it holds; fails the test, naming `what`, if it
/// does not hold within [`DEADLINE`].
pub async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + DEADLINE;
    while !done() {
        assert!(
            Instant::now() < deadline,
            "gave up waiting for {what} after {DEADLINE:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
