//! [`KeyedRequests`]: one row per idempotency key, claimed by one upsert that takes the row
//! only when it is absent or an unanswered claim gone stale, then read back; the answer joins
//! the row.

use async_trait::async_trait;
use room_app::ports::{KeyClaim, KeyedAnswer, KeyedRecord, KeyedRequests};
use room_domain::Timestamp;

use crate::codec::TxError;
use crate::{MySqlStore, Result};

type Row = (String, String, i64, Option<i16>, Option<String>);

#[async_trait]
impl KeyedRequests for MySqlStore {
    async fn claim(
        &self,
        key: &str,
        fingerprint: &str,
        token: &str,
        now: Timestamp,
        stale_before: Timestamp,
    ) -> Result<KeyClaim> {
        let row: Option<Row> = self
            .retrying("claim_keyed_request", || async move {
                // One statement, as for work claims: the token changes first when the row is
                // free to take, and the rest follows only if the row is this claim's now
                // (every claim's token is its own).
                sqlx::query(
                    "INSERT INTO keyed_requests (record_key, fingerprint, token, claimed_at)
                     VALUES (?, ?, ?, ?)
                     ON DUPLICATE KEY UPDATE
                         token = IF(status IS NULL AND claimed_at < ?, VALUES(token), token),
                         fingerprint = IF(token = VALUES(token), VALUES(fingerprint), fingerprint),
                         claimed_at = IF(token = VALUES(token), VALUES(claimed_at), claimed_at)",
                )
                .bind(key)
                .bind(fingerprint)
                .bind(token)
                .bind(now.as_millis())
                .bind(stale_before.as_millis())
                .execute(&self.pool)
                .await?;
                Ok(sqlx::query_as(
                    "SELECT fingerprint, token, claimed_at, status, body FROM keyed_requests
                     WHERE record_key = ?",
                )
                .bind(key)
                .fetch_optional(&self.pool)
                .await?)
            })
            .await?;
        Ok(match row {
            Some((_, held, ..)) if held == token => KeyClaim::Claimed,
            Some((fingerprint, token, claimed_at, status, body)) => KeyClaim::Held(KeyedRecord {
                fingerprint,
                token,
                claimed_at: Timestamp(claimed_at),
                answer: status.zip(body).map(|(status, body)| KeyedAnswer {
                    status: u16::try_from(status).unwrap_or(500),
                    body,
                }),
            }),
            // Claimed and then released or pruned at once by others: as if still running.
            None => KeyClaim::Held(KeyedRecord {
                fingerprint: fingerprint.to_owned(),
                token: String::new(),
                claimed_at: now,
                answer: None,
            }),
        })
    }

    async fn finish(&self, key: &str, token: &str, answer: &KeyedAnswer) -> Result<()> {
        let status = i16::try_from(answer.status).unwrap_or(i16::MAX);
        let body = answer.body.as_str();
        self.retrying("finish_keyed_request", || async move {
            sqlx::query(
                "UPDATE keyed_requests SET status = ?, body = ? WHERE record_key = ? AND token = ?",
            )
            .bind(status)
            .bind(body)
            .bind(key)
            .bind(token)
            .execute(&self.pool)
            .await?;
            Ok::<_, TxError>(())
        })
        .await
    }

    async fn release(&self, key: &str, token: &str) -> Result<()> {
        self.retrying("release_keyed_request", || async move {
            sqlx::query(
                "DELETE FROM keyed_requests WHERE record_key = ? AND token = ? AND status IS NULL",
            )
            .bind(key)
            .bind(token)
            .execute(&self.pool)
            .await?;
            Ok::<_, TxError>(())
        })
        .await
    }

    async fn prune(&self, before: Timestamp, limit: u32) -> Result<u64> {
        self.retrying("prune_keyed_requests", || async move {
            let deleted = sqlx::query("DELETE FROM keyed_requests WHERE claimed_at < ? LIMIT ?")
                .bind(before.as_millis())
                .bind(i64::from(limit))
                .execute(&self.pool)
                .await?;
            Ok::<_, TxError>(deleted.rows_affected())
        })
        .await
    }
}
