//! Requests sent with an `Idempotency-Key` ([`KeyedRequests`]): the record of each key, with
//! the fingerprint of the request it was first sent with and, once that request is answered,
//! its answer.

use std::sync::Arc;

use async_trait::async_trait;
use room_domain::Timestamp;
use serde::{Deserialize, Serialize};

use crate::error::Result;

/// The most bytes of an answer a record keeps; a longer answer is not recorded.
pub const MAX_KEYED_ANSWER_BYTES: usize = 64 * 1024;

/// The answer a keyed request got, kept to answer its repeats.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyedAnswer {
    /// The HTTP status.
    pub status: u16,
    /// The body, as sent (JSON), at most [`MAX_KEYED_ANSWER_BYTES`].
    pub body: String,
}

/// What a store holds under one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyedRecord {
    /// The fingerprint of the request the key was claimed for.
    pub fingerprint: String,
    /// The claim's token (who claimed it, for [`KeyedRequests::finish`] and
    /// [`KeyedRequests::release`]).
    pub token: String,
    /// When it was claimed.
    pub claimed_at: Timestamp,
    /// The answer, once the request was answered; `None` while it runs.
    pub answer: Option<KeyedAnswer>,
}

/// The outcome of [`KeyedRequests::claim`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyClaim {
    /// The key is the caller's: run the request.
    Claimed,
    /// The key was claimed before: the record as it is.
    Held(KeyedRecord),
}

/// The records of idempotency keys, shared by every node: the store's unique key on the key
/// makes a claim atomic, so two nodes claiming one key at once do not both run the request.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait KeyedRequests: Send + Sync {
    /// Claims `key` for a request of `fingerprint` under `token` at `now`: [`KeyClaim::Claimed`]
    /// if nobody holds it, or if its record is an unanswered claim made before `stale_before`
    /// (a node that died running it: the claim is taken over); else the record held.
    async fn claim(
        &self,
        key: &str,
        fingerprint: &str,
        token: &str,
        now: Timestamp,
        stale_before: Timestamp,
    ) -> Result<KeyClaim>;
    /// Records the answer of the claim `token` made; nothing if the key is no longer that
    /// claim's (it was taken over).
    async fn finish(&self, key: &str, token: &str, answer: &KeyedAnswer) -> Result<()>;
    /// Drops the unanswered claim `token` made, so that the request may run again (it failed
    /// in a way a retry can mend); another claim's record is left alone.
    async fn release(&self, key: &str, token: &str) -> Result<()>;
    /// Deletes the records claimed before `before`, at most `limit`; answers how many.
    async fn prune(&self, before: Timestamp, limit: u32) -> Result<u64>;
}

/// Shared handle to [`KeyedRequests`].
pub type KeyedRequestsRef = Arc<dyn KeyedRequests>;
