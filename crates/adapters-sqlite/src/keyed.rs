//! [`KeyedRequests`]: one row per idempotency key, claimed by an upsert that succeeds only
//! when the row is absent or an unanswered claim gone stale; the answer joins the row.

use async_trait::async_trait;
use room_app::ports::{KeyClaim, KeyedAnswer, KeyedRecord, KeyedRequests};
use room_domain::Timestamp;
use rusqlite::{OptionalExtension, params};

use crate::codec::sql;
use crate::{Result, SqliteStore};

#[async_trait]
impl KeyedRequests for SqliteStore {
    async fn claim(
        &self,
        key: &str,
        fingerprint: &str,
        token: &str,
        now: Timestamp,
        stale_before: Timestamp,
    ) -> Result<KeyClaim> {
        let (key, fingerprint, token) = (key.to_owned(), fingerprint.to_owned(), token.to_owned());
        self.write(move |conn| {
            let claimed = conn
                .prepare_cached(
                    "INSERT INTO keyed_requests (record_key, fingerprint, token, claimed_at)
                     VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (record_key) DO UPDATE
                     SET fingerprint = excluded.fingerprint, token = excluded.token,
                         claimed_at = excluded.claimed_at
                     WHERE keyed_requests.status IS NULL AND keyed_requests.claimed_at < ?5",
                )
                .and_then(|mut upsert| {
                    upsert.execute(params![
                        key,
                        fingerprint,
                        token,
                        now.as_millis(),
                        stale_before.as_millis()
                    ])
                })
                .map_err(sql)?;
            if claimed > 0 {
                return Ok(KeyClaim::Claimed);
            }
            let record = conn
                .prepare_cached(
                    "SELECT fingerprint, token, claimed_at, status, body FROM keyed_requests
                     WHERE record_key = ?1",
                )
                .and_then(|mut select| {
                    select
                        .query_row([&key], |row| {
                            let status: Option<i64> = row.get(3)?;
                            let body: Option<String> = row.get(4)?;
                            Ok(KeyedRecord {
                                fingerprint: row.get(0)?,
                                token: row.get(1)?,
                                claimed_at: Timestamp(row.get(2)?),
                                answer: status.zip(body).map(|(status, body)| KeyedAnswer {
                                    status: u16::try_from(status).unwrap_or(500),
                                    body,
                                }),
                            })
                        })
                        .optional()
                })
                .map_err(sql)?;
            record.map(KeyClaim::Held).ok_or_else(|| {
                room_app::Error::internal(format!("keyed request {key} neither claimed nor held"))
            })
        })
        .await
    }

    async fn finish(&self, key: &str, token: &str, answer: &KeyedAnswer) -> Result<()> {
        self.execute(
            "UPDATE keyed_requests SET status = ?3, body = ?4 WHERE record_key = ?1 AND token = ?2",
            (
                key.to_owned(),
                token.to_owned(),
                i64::from(answer.status),
                answer.body.clone(),
            ),
        )
        .await?;
        Ok(())
    }

    async fn release(&self, key: &str, token: &str) -> Result<()> {
        self.execute(
            "DELETE FROM keyed_requests WHERE record_key = ?1 AND token = ?2 AND status IS NULL",
            (key.to_owned(), token.to_owned()),
        )
        .await?;
        Ok(())
    }

    async fn prune(&self, before: Timestamp, limit: u32) -> Result<u64> {
        let deleted = self
            .execute(
                "DELETE FROM keyed_requests WHERE record_key IN (
                     SELECT record_key FROM keyed_requests WHERE claimed_at < ?1 LIMIT ?2)",
                (before.as_millis(), i64::from(limit)),
            )
            .await?;
        Ok(deleted as u64)
    }
}
