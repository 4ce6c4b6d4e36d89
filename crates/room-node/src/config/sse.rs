//! `[sse]`: the room event stream.

use serde::{Deserialize, Serialize};

use super::reference::Section;

/// `[sse]`: the room event stream.
#[derive(Debug, Clone, Deserialize, Serialize)]
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

/// What `[sse]` and each of its keys are for, in the reference (`docs/configuration.md`).
pub(super) const SECTION: Section = Section {
    name: "sse",
    about: "The room event stream, `GET /v1/rooms/{room_id}/events`.",
    keys: &[
        (
            "buffer",
            "Events buffered per watcher; a watcher further behind skips ahead and gets a `lagged` \
             event.",
        ),
        (
            "keep_alive_secs",
            "Seconds between keep-alive comments on a quiet stream.",
        ),
        (
            "max_streams_per_user",
            "The streams one user may have open at once, over every node when Redis is \
             configured (else, and while Redis does not answer, on each node); one more is \
             answered 429 `TOO_MANY_STREAMS`.",
        ),
        (
            "replay_max",
            "The most missed events a watcher reconnecting with `Last-Event-ID` is sent from the \
             room's log; one that missed more gets a `resync` event (read the room again).",
        ),
    ],
};
