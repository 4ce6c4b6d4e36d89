//! [`WorkClaims`]: one row per job name, taken over by one upsert when it is free, expired or
//! already the claimer's, then read back.

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
            // One statement, so that two claimers never hold locks on the row in turn (an
            // `INSERT IGNORE` and a `SELECT ... FOR UPDATE` in one transaction deadlock when
            // two run at once). Assignments apply left to right: the owner changes first when
            // the row is free, expired or ours, and the expiry follows only if it is ours now.
            sqlx::query(
                "INSERT INTO room_work_claims (name, owner, claimed_until) VALUES (?, ?, ?)
                 ON DUPLICATE KEY UPDATE
                     owner = IF(owner = VALUES(owner) OR claimed_until < ?, VALUES(owner), owner),
                     claimed_until = IF(owner = VALUES(owner), VALUES(claimed_until), claimed_until)",
            )
            .bind(name)
            .bind(owner)
            .bind(until.as_millis())
            .bind(now.as_millis())
            .execute(&self.pool)
            .await?;
            let (holder,): (String,) =
                sqlx::query_as("SELECT owner FROM room_work_claims WHERE name = ?")
                    .bind(name)
                    .fetch_one(&self.pool)
                    .await?;
            Ok::<_, TxError>(holder == owner)
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
