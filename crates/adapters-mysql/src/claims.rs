//! [`WorkClaims`]: one row per job name, read under a row lock and taken over in the same
//! transaction when it is free, expired or already the claimer's.

use async_trait::async_trait;
use room_app::ports::WorkClaims;
use room_domain::Timestamp;

use crate::codec::TxError;
use crate::{MySqlStore, Result};

#[async_trait]
impl WorkClaims for MySqlStore {
    async fn claim(
        &self,
        name: &str,
        owner: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> Result<bool> {
        self.retrying("claim_work", || async move {
            let mut tx = self.pool.begin().await?;
            // The row exists from the first claim on, so the lock below always has a row to
            // hold and two first claimers queue on it.
            sqlx::query(
                "INSERT IGNORE INTO room_work_claims (name, owner, claimed_until) VALUES (?, '', 0)",
            )
            .bind(name)
            .execute(&mut *tx)
            .await?;
            let (holder, expiry): (String, i64) = sqlx::query_as(
                "SELECT owner, claimed_until FROM room_work_claims WHERE name = ? FOR UPDATE",
            )
            .bind(name)
            .fetch_one(&mut *tx)
            .await?;
            let free = holder.is_empty() || holder == owner || expiry < now.as_millis();
            if free {
                sqlx::query(
                    "UPDATE room_work_claims SET owner = ?, claimed_until = ? WHERE name = ?",
                )
                .bind(owner)
                .bind(until.as_millis())
                .bind(name)
                .execute(&mut *tx)
                .await?;
            }
            tx.commit().await?;
            Ok::<_, TxError>(free)
        })
        .await
    }

    async fn release(&self, name: &str, owner: &str) -> Result<()> {
        self.retrying("release_work", || async move {
            sqlx::query("DELETE FROM room_work_claims WHERE name = ? AND owner = ?")
                .bind(name)
                .bind(owner)
                .execute(&self.pool)
                .await?;
            Ok(())
        })
        .await
    }
}
