//! [`VipGrants`], with the semantics of the SQLite store's: one row per user in `vip_grants`
//! (written by `INSERT ... ON DUPLICATE KEY UPDATE`, so the last grant wins), and the level
//! table as the one row of `vip_levels`, changed by an `UPDATE` that names the expected
//! version. InnoDB runs two such updates of the row one after the other; the second finds the
//! version moved and changes nothing, so of two changes of one version, one wins.

use async_trait::async_trait;
use room_app::Error;
use room_app::ports::{VipGrant, VipGrants, VipLevels, check_grant_level, check_level_count};
use room_domain::{Timestamp, UserId, VipPrivileges};

use crate::codec::{col, from_json, to_i64, to_json, u64_col};
use crate::{MySqlStore, Result};

#[async_trait]
impl VipGrants for MySqlStore {
    async fn grant_vip(&self, user: &UserId, level: u8, expires_at: Timestamp) -> Result<()> {
        check_grant_level(level)?;
        self.retrying("grant_vip", || async move {
            sqlx::query(
                "INSERT INTO vip_grants (user_id, level, expires_at) VALUES (?, ?, ?)
                 ON DUPLICATE KEY UPDATE level = VALUES(level), expires_at = VALUES(expires_at)",
            )
            .bind(user.as_str())
            .bind(level)
            .bind(expires_at.as_millis())
            .execute(&self.pool)
            .await?;
            Ok(())
        })
        .await
    }

    async fn revoke_vip(&self, user: &UserId) -> Result<bool> {
        self.retrying("revoke_vip", || async move {
            let deleted = sqlx::query("DELETE FROM vip_grants WHERE user_id = ?")
                .bind(user.as_str())
                .execute(&self.pool)
                .await?;
            Ok(deleted.rows_affected() > 0)
        })
        .await
    }

    async fn get_vip_grant(&self, user: &UserId) -> Result<Option<VipGrant>> {
        let row = self
            .retrying("get_vip_grant", || async move {
                Ok(
                    sqlx::query("SELECT level, expires_at FROM vip_grants WHERE user_id = ?")
                        .bind(user.as_str())
                        .fetch_optional(&self.pool)
                        .await?,
                )
            })
            .await?;
        row.map(|row| {
            Ok(VipGrant {
                level: col(&row, "level")?,
                expires_at: Timestamp(col(&row, "expires_at")?),
            })
        })
        .transpose()
    }

    async fn vip_levels(&self) -> Result<VipLevels> {
        let row = self
            .retrying("vip_levels", || async move {
                Ok(
                    sqlx::query("SELECT version, body FROM vip_levels WHERE id = 1")
                        .fetch_optional(&self.pool)
                        .await?,
                )
            })
            .await?
            .ok_or_else(|| Error::corrupt("the vip_levels row is missing"))?;
        Ok(VipLevels {
            version: u64_col(&row, "version")?,
            levels: from_json(&col::<String>(&row, "body")?, "VIP levels")?,
        })
    }

    async fn put_vip_levels(&self, expected_version: u64, levels: &[VipPrivileges]) -> Result<u64> {
        check_level_count(levels)?;
        let expected = to_i64(expected_version, "VIP levels version")?;
        let body = to_json(levels)?;
        let body = body.as_str();
        let updated = self
            .retrying("put_vip_levels", || async move {
                let done = sqlx::query(
                    "UPDATE vip_levels SET version = version + 1, body = ?
                     WHERE id = 1 AND version = ?",
                )
                .bind(body)
                .bind(expected)
                .execute(&self.pool)
                .await?;
                Ok(done.rows_affected())
            })
            .await?;
        if updated == 0 {
            return Err(Error::Conflict(format!(
                "the VIP level table is no longer at version {expected_version}"
            )));
        }
        Ok(expected_version + 1)
    }
}
