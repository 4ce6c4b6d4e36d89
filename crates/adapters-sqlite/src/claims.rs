//! [`WorkClaims`]: one row per job name, taken over by an upsert that succeeds only when the
//! row is free, expired or already the claimer's.

use async_trait::async_trait;
use room_app::ports::WorkClaims;
use room_domain::Timestamp;

use crate::{Result, SqliteStore};

#[async_trait]
impl WorkClaims for SqliteStore {
    async fn claim(
        &self,
        name: &str,
        owner: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> Result<bool> {
        let taken = self
            .execute(
                "INSERT INTO room_work_claims (name, owner, claimed_until) VALUES (?1, ?2, ?4)
                 ON CONFLICT (name) DO UPDATE
                 SET owner = excluded.owner, claimed_until = excluded.claimed_until
                 WHERE room_work_claims.owner = excluded.owner
                    OR room_work_claims.claimed_until < ?3",
                (
                    name.to_owned(),
                    owner.to_owned(),
                    now.as_millis(),
                    until.as_millis(),
                ),
            )
            .await?;
        Ok(taken > 0)
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
