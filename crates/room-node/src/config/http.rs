//! `[http]`: the listener, its connection bounds, and the request limits ([`MAX_BODY_BYTES`]).

use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

use super::reference::Section;

/// The largest request body: 64 KiB. It bounds a request's frame on an internal link too.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// `[http]`: the listener and request limits.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct HttpSettings {
    /// Address to listen on (`ROOM__HTTP__ADDR`).
    pub addr: SocketAddr,
    /// A request that has not produced its response after this many seconds is answered with
    /// a retryable `TIMEOUT` error.
    pub request_timeout_secs: u64,
    /// A connection that has not sent a whole request head this many seconds after it opened
    /// (or after the first byte of a later request) is closed (`ROOM__HTTP__HEADER_TIMEOUT_SECS`).
    pub header_timeout_secs: u64,
    /// A keep-alive connection with no request for this many seconds after its last response
    /// is closed (`ROOM__HTTP__IDLE_TIMEOUT_SECS`).
    pub idle_timeout_secs: u64,
    /// Most connections open at once; further connections wait in the listen queue until one
    /// closes (`ROOM__HTTP__MAX_CONNECTIONS`).
    pub max_connections: usize,
    /// How long the answer of a request sent with an `Idempotency-Key` is kept for its repeats
    /// (`ROOM__HTTP__IDEMPOTENCY_RETENTION_SECS`).
    pub idempotency_retention_secs: u64,
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            addr: SocketAddr::from(([127, 0, 0, 1], 8080)),
            request_timeout_secs: 10,
            header_timeout_secs: 10,
            idle_timeout_secs: 60,
            max_connections: 10_000,
            idempotency_retention_secs: 86_400,
        }
    }
}

/// What `[http]` and each of its keys are for, in the reference (`docs/configuration.md`).
pub(super) const SECTION: Section = Section {
    name: "http",
    about: "The HTTP listener, the bounds of its connections, and the request timeout.",
    keys: &[
        (
            "addr",
            "Where the API listens. Any address but a loopback one needs `ROOM__AUTH__JWT_SECRET`.",
        ),
        (
            "request_timeout_secs",
            "A request without a response after this many seconds is answered 503 `TIMEOUT` \
             (retryable; a gift retried with the same `order_id` is still debited once); a body \
             that has not fully arrived after half of it, 408 `BODY_TIMEOUT`.",
        ),
        (
            "header_timeout_secs",
            "A connection that has not sent a whole request head this many seconds after it \
             opened, or after the first byte of a later request, is closed.",
        ),
        (
            "idle_timeout_secs",
            "A keep-alive connection without a new request this many seconds after its last \
             response is closed.",
        ),
        (
            "max_connections",
            "The most connections open at once; further connections wait in the listen queue until \
             one closes.",
        ),
        (
            "idempotency_retention_secs",
            "How long the record of a request sent with an `Idempotency-Key` (its fingerprint and \
             answer) is kept: a repeat within it gets the first answer, or 422 \
             `IDEMPOTENCY_KEY_REUSED` for another request. Older records are deleted by the \
             retention pass, which bounds the records a user can make the store hold to this \
             window times the user's rate limits.",
        ),
    ],
};
