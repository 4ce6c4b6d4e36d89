//! `[limits]`: the per-user token buckets of the API.

use serde::{Deserialize, Serialize};

use super::reference::Section;

/// `[limits]`: token buckets per user and route class. A request over its class's budget is
/// answered 429 `RATE_LIMITED` with `Retry-After`. Rates and bursts below 1 count as 1.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitSettings {
    /// Whether the limits apply at all (`ROOM__LIMITS__ENABLED`).
    pub enabled: bool,
    /// Users tracked per class. While a class tracks this many, its requests pass unlimited
    /// until the next prune forgets the quiet ones: its memory stays bounded whatever the
    /// number of users, and no crowd of users can lock the others out.
    pub max_users: usize,
    /// How often users whose bucket is full again are forgotten, in seconds.
    pub prune_every_secs: u64,
    /// `POST /v1/rooms`: room creations per minute per user, sustained.
    pub create_room_per_minute: u32,
    /// `POST /v1/rooms`: room creations at once after a quiet period.
    pub create_room_burst: u32,
    /// `POST /v1/rooms/{room_id}/join`: joins per minute per user.
    pub join_per_minute: u32,
    /// `POST /v1/rooms/{room_id}/join`: joins at once.
    pub join_burst: u32,
    /// `POST /v1/rooms/{room_id}/gifts`: gifts per minute per user.
    pub gift_per_minute: u32,
    /// `POST /v1/rooms/{room_id}/gifts`: gifts at once.
    pub gift_burst: u32,
    /// `GET /v1/rooms/{room_id}/events`: streams opened per minute per user.
    pub stream_per_minute: u32,
    /// `GET /v1/rooms/{room_id}/events`: streams opened at once.
    pub stream_burst: u32,
    /// Every other `POST`, `PUT`, `PATCH` and `DELETE` (heartbeats are not limited): requests
    /// per minute per user.
    pub write_per_minute: u32,
    /// Every other `POST`, `PUT`, `PATCH` and `DELETE`: requests at once.
    pub write_burst: u32,
}

impl Default for LimitSettings {
    fn default() -> Self {
        LimitSettings {
            enabled: true,
            max_users: 100_000,
            prune_every_secs: 60,
            create_room_per_minute: 60,
            create_room_burst: 20,
            join_per_minute: 600,
            join_burst: 60,
            gift_per_minute: 6_000,
            gift_burst: 300,
            stream_per_minute: 120,
            stream_burst: 30,
            write_per_minute: 3_000,
            write_burst: 200,
        }
    }
}

/// What `[limits]` and each of its keys are for, in the reference (`docs/configuration.md`).
pub(super) const SECTION: Section = Section {
    name: "limits",
    about: "Token buckets per user and class of request: `*_per_minute` sustained, `*_burst` at \
        once after a quiet period (values below 1 count as 1). A request over its budget is \
        answered 429 `RATE_LIMITED` (retryable) with `Retry-After` in seconds. Requests without a \
        valid token are not counted (they are refused anyway); heartbeats, TRTC callbacks and \
        reads are not limited.",
    keys: &[
        ("enabled", "Whether the limits apply at all."),
        (
            "max_users",
            "Users tracked per class. While a class tracks this many, users it does not track pass \
             unlimited until the next prune forgets the quiet ones: its memory stays bounded, and \
             no crowd of users can lock the others out.",
        ),
        (
            "prune_every_secs",
            "How often users whose bucket is full again are forgotten, in seconds.",
        ),
        (
            "create_room_per_minute",
            "`POST /v1/rooms`: room creations per minute per user, sustained.",
        ),
        (
            "create_room_burst",
            "`POST /v1/rooms`: room creations at once.",
        ),
        (
            "join_per_minute",
            "`POST /v1/rooms/{room_id}/join`: joins per minute per user.",
        ),
        (
            "join_burst",
            "`POST /v1/rooms/{room_id}/join`: joins at once.",
        ),
        (
            "gift_per_minute",
            "`POST /v1/rooms/{room_id}/gifts`: gifts per minute per user.",
        ),
        (
            "gift_burst",
            "`POST /v1/rooms/{room_id}/gifts`: gifts at once.",
        ),
        (
            "stream_per_minute",
            "`GET /v1/rooms/{room_id}/events`: streams opened per minute per user.",
        ),
        (
            "stream_burst",
            "`GET /v1/rooms/{room_id}/events`: streams opened at once.",
        ),
        (
            "write_per_minute",
            "Every other `POST`, `PUT`, `PATCH` and `DELETE`: requests per minute per user.",
        ),
        (
            "write_burst",
            "Every other `POST`, `PUT`, `PATCH` and `DELETE`: requests at once.",
        ),
    ],
};
