//! `[http]`: the listener, its connection bounds, and the request limits ([`MAX_BODY_BYTES`]).

use std::net::SocketAddr;

use serde::Deserialize;

/// The largest request body: 64 KiB. It bounds a request's frame on an internal link too.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// `[http]`: the listener and request limits.
#[derive(Debug, Clone, Deserialize)]
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
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            addr: SocketAddr::from(([127, 0, 0, 1], 8080)),
            request_timeout_secs: 10,
            header_timeout_secs: 10,
            idle_timeout_secs: 60,
            max_connections: 10_000,
        }
    }
}
