//! `[sse]`: the room event stream.

use serde::Deserialize;

/// `[sse]`: the room event stream.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SseSettings {
    /// Events buffered per watcher; a watcher that falls further behind skips ahead and gets
    /// a `lagged` event.
    pub buffer: usize,
    /// Seconds between keep-alive comments on an idle stream.
    pub keep_alive_secs: u64,
    /// Streams one user may have open at once; one more is answered 429 `TOO_MANY_STREAMS`
    /// (`ROOM__SSE__MAX_STREAMS_PER_USER`).
    pub max_streams_per_user: usize,
    /// The most events a watcher reconnecting with `Last-Event-ID` is sent from the log; one
    /// that missed more gets a `resync` event (`ROOM__SSE__REPLAY_MAX`).
    pub replay_max: u64,
}

impl Default for SseSettings {
    fn default() -> Self {
        SseSettings {
            buffer: 256,
            keep_alive_secs: 15,
            max_streams_per_user: 8,
            replay_max: 1000,
        }
    }
}
