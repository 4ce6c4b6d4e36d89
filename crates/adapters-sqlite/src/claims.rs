//! [`WorkClaims`]: one row per job name, taken over by an upsert that succeeds only when the
//! row is free, expired or already the claimer's.

use async_trait::async_trait;
use room_app::ports::WorkClaims;
use std::time::Duration;

use room_domain::Timestamp;

use crate::{Result, SqliteStore};

#[async_trait]
impl WorkClaims for SqliteStore {
    async fn claim(&self, name: &str, owner: &str, ttl: Duration) -> Result<bool> {
        // SQLite's clock ('now' is one instant for the whole statement), in milliseconds.
        let ttl = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
        let taken = self
            .execute(
                "INSERT INTO room_work_claims (name, owner, claimed_until)
                 VALUES (?1, ?2, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) + ?3)
                 ON CONFLICT (name) DO UPDATE
                 SET owner = excluded.owner, claimed_until = excluded.claimed_until
                 WHERE room_work_claims.owner = excluded.owner
                    OR room_work_claims.claimed_until
                       < CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)",
                (name.to_owned(), owner.to_owned(), ttl),
            )
            .await?;
        Ok(taken > 0)
    }

    async fn now(&self) -> Result<Timestamp> {
        let now: i64 =
            sqlx::query_scalar("SELECT CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)")
                .fetch_one(&self.readers)
                .await
                .map_err(crate::codec::db)?;
        Ok(Timestamp(now))
    }

    async fn release(&self, name: &str, owner: &str) -> Result<()> {
        self.execute(
            "DELETE FROM room_work_claims WHERE name = ?1 AND owner = ?2",
            (name.to_owned(), owner.to_owned()),
        )
        .await?;
        Ok(())
    }
}
