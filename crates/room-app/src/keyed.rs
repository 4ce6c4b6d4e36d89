//! The rule of a request sent with an `Idempotency-Key` ([`KeyedGate`]): the key is the
//! user's, on one route; the first request with it claims it in the shared store, with the
//! fingerprint of what it asked (the route, the path and the canonical body), and its answer
//! is kept. The same key with the same request gets that answer again; with another request
//! it is refused as reused; while the first still runs, a repeat is told to retry shortly.
//! Claims are atomic across nodes (the store's unique key), so two nodes at once run one
//! request.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use room_domain::{Timestamp, UserId};

use crate::IdempotencyKey;
use crate::error::Result;
use crate::ports::{ClockRef, KeyClaim, KeyedAnswer, KeyedRequestsRef};

/// What to do with a keyed request ([`KeyedGate::admit`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// The key is this request's: run it, then hand the ticket back with its answer
    /// ([`KeyedGate::answered`]).
    Run(KeyedTicket),
    /// The same request was answered before: answer this again.
    Replay(KeyedAnswer),
    /// The key was used for another request (another path or body): refuse it.
    Reused,
    /// The same request is running now (on this node or another): retry shortly.
    InUse,
}

/// A claimed key, to give back with the request's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyedTicket {
    key: String,
    token: String,
}

/// The keyed-request rule over the shared [`KeyedRequests`](crate::ports::KeyedRequests)
/// store.
pub struct KeyedGate {
    records: KeyedRequestsRef,
    clock: ClockRef,
    /// The store whose clock dates claims, when the records are shared by several nodes.
    store_clock: Option<crate::ports::WorkClaimsRef>,
    node: String,
    claims: AtomicU64,
    stale_after: Duration,
}

impl KeyedGate {
    /// The rule over `records`, claiming as node `node`; a claim not answered within
    /// `stale_after` (longer than any request may run) is taken over by a repeat, as the claim
    /// of a node that died running it.
    pub fn new(
        records: KeyedRequestsRef,
        clock: ClockRef,
        node: impl Into<String>,
        stale_after: Duration,
    ) -> Arc<Self> {
        Arc::new(KeyedGate {
            records,
            clock,
            store_clock: None,
            node: node.into(),
            claims: AtomicU64::new(0),
            stale_after,
        })
    }

    /// As [`KeyedGate::new`], but claims are dated, and found stale, by the clock of the
    /// store `store_clock` ([`WorkClaims::now`](crate::ports::WorkClaims::now)), as work
    /// claims are: nodes whose clocks disagree still agree on when a claim went stale.
    pub fn on_store_clock(
        records: KeyedRequestsRef,
        clock: ClockRef,
        store_clock: crate::ports::WorkClaimsRef,
        node: impl Into<String>,
        stale_after: Duration,
    ) -> Arc<Self> {
        Arc::new(KeyedGate {
            records,
            clock,
            store_clock: Some(store_clock),
            node: node.into(),
            claims: AtomicU64::new(0),
            stale_after,
        })
    }

    /// Claims `key` of `user` for the request of `fingerprint` ([`fingerprint`]), or says how
    /// to answer it.
    pub async fn admit(
        &self,
        key: &IdempotencyKey,
        user: &UserId,
        fingerprint: &str,
    ) -> Result<Admission> {
        let record_key = key.record_key(user);
        let now = match &self.store_clock {
            Some(store) => store.now().await?,
            None => self.clock.now(),
        };
        let token = format!(
            "{}:{}:{}",
            self.node,
            now.0,
            self.claims.fetch_add(1, Ordering::Relaxed)
        );
        let stale = i64::try_from(self.stale_after.as_millis()).unwrap_or(i64::MAX);
        let claim = self
            .records
            .claim(
                &record_key,
                fingerprint,
                &token,
                now,
                Timestamp(now.0.saturating_sub(stale)),
            )
            .await?;
        Ok(match claim {
            KeyClaim::Claimed => Admission::Run(KeyedTicket {
                key: record_key,
                token,
            }),
            KeyClaim::Held(record) if record.fingerprint != fingerprint => Admission::Reused,
            KeyClaim::Held(record) => match record.answer {
                Some(answer) => Admission::Replay(answer),
                None => Admission::InUse,
            },
        })
    }

    /// Gives back a claimed key: with the request's answer, kept for its repeats; without
    /// (the request failed in a way a retry can mend, or its answer is too long to keep),
    /// the claim is dropped and a repeat runs again.
    pub async fn answered(&self, ticket: KeyedTicket, answer: Option<KeyedAnswer>) -> Result<()> {
        match answer {
            Some(answer) => {
                self.records
                    .finish(&ticket.key, &ticket.token, &answer)
                    .await
            }
            None => self.records.release(&ticket.key, &ticket.token).await,
        }
    }
}

/// The fingerprint of a request: SHA-256 over its method, its path (with the values in it)
/// and its body, a JSON body in canonical form (object keys in order, no spaces), so that the
/// same request written otherwise is the same request. 64 hex digits.
pub fn fingerprint(method: &str, path: &str, body: &[u8]) -> String {
    let canonical = match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(value) => {
            let mut out = String::new();
            canonical_json(&value, &mut out);
            out.into_bytes()
        }
        // Not JSON (or empty): the bytes as they are; the route refuses or ignores them.
        Err(_) => body.to_vec(),
    };
    crate::digest::hex(&crate::digest::length_prefixed_sha256([
        method.as_bytes(),
        path.as_bytes(),
        canonical.as_slice(),
    ]))
}

/// `value` as JSON with object keys in byte order and no whitespace.
fn canonical_json(value: &serde_json::Value, out: &mut String) {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, value)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                canonical_json(value, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical_json(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fingerprint_is_of_the_route_path_and_canonical_body() {
        let base = fingerprint("POST", "/v1/rooms", br#"{"name":"a","seat_count":8}"#);
        assert_eq!(
            base,
            fingerprint(
                "POST",
                "/v1/rooms",
                b" { \"seat_count\": 8, \"name\": \"a\" } "
            ),
            "the same JSON written otherwise"
        );
        assert_ne!(
            base,
            fingerprint("POST", "/v1/rooms", br#"{"name":"b","seat_count":8}"#)
        );
        assert_ne!(
            base,
            fingerprint("PATCH", "/v1/rooms", br#"{"name":"a","seat_count":8}"#)
        );
        assert_ne!(
            base,
            fingerprint("POST", "/v1/roomz", br#"{"name":"a","seat_count":8}"#)
        );
        assert_ne!(
            fingerprint("POST", "/p", br#"{"a":{"b":1,"c":[1,2]}}"#),
            fingerprint("POST", "/p", br#"{"a":{"b":1,"c":[2,1]}}"#),
            "arrays keep their order"
        );
        assert_eq!(
            fingerprint("POST", "/p", br#"{"a":{"c":[1,2],"b":1}}"#),
            fingerprint("POST", "/p", br#"{"a":{"b":1,"c":[1,2]}}"#),
        );
        assert_ne!(
            fingerprint("POST", "/p", b""),
            fingerprint("POST", "/p", b"{}")
        );
        assert_eq!(base.len(), 64);
    }
}
