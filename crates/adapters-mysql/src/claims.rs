//! [`WorkClaims`]: one row per job name, taken over by one upsert when it is free, expired or
//! already the claimer's, then read back.

use std::time::Duration;

use async_trait::async_trait;
use room_app::ports::WorkClaims;
use room_domain::Timestamp;

use crate::codec::TxError;
use crate::{MySqlStore, Result};

#[async_trait]
impl WorkClaims for MySqlStore {
    async fn claim(&self, name: &str, owner: &str, ttl: Duration) -> Result<bool> {
        let ttl = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
        self.retrying("claim_work", || async move {
            // One statement, so that two claimers never hold locks on the row in turn (an
            // `INSERT IGNORE` and a `SELECT ... FOR UPDATE` in one transaction deadlock when
            // two run at once). Assignments apply left to right: the owner changes first when
            // the row is free, expired or ours, and the expiry follows only if it is ours now.
            // The server's clock (NOW() is one instant for the whole statement), in ms.
            sqlx::query(
                "INSERT INTO room_work_claims (name, owner, claimed_until)
                 VALUES (?, ?, CAST(ROUND(UNIX_TIMESTAMP(NOW(6)) * 1000) AS SIGNED) + ?)
                 ON DUPLICATE KEY UPDATE
                     owner = IF(owner = VALUES(owner)
                                OR claimed_until < CAST(ROUND(UNIX_TIMESTAMP(NOW(6)) * 1000) AS SIGNED),
                                VALUES(owner), owner),
                     claimed_until = IF(owner = VALUES(owner), VALUES(claimed_until), claimed_until)",
            )
            .bind(name)
            .bind(owner)
            .bind(ttl)
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

    async fn now(&self) -> Result<Timestamp> {
        self.retrying("store_now", || async move {
            let now: i64 =
                sqlx::query_scalar("SELECT CAST(ROUND(UNIX_TIMESTAMP(NOW(6)) * 1000) AS SIGNED)")
                    .fetch_one(&self.pool)
                    .await?;
            Ok(Timestamp(now))
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
