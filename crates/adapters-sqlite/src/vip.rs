//! [`VipGrants`]: one row per user in `vip_grants` (written by an upsert, so the last grant
//! wins), and the level table as the one row of `vip_levels`, changed by an `UPDATE` that
//! names the expected version: of two changes of one version, the single writer runs one
//! first and the other finds no row.

use async_trait::async_trait;
use room_app::Error;
use room_app::ports::{VipGrant, VipGrants, VipLevels, check_grant_level, check_level_count};
use room_domain::{Timestamp, UserId, VipPrivileges};
use rusqlite::params;

use crate::codec::{col, db, from_json, sql, stored_u64, to_i64, to_json};
use crate::{Result, SqliteStore};

#[async_trait]
impl VipGrants for SqliteStore {
    async fn grant_vip(&self, user: &UserId, level: u8, expires_at: Timestamp) -> Result<()> {
        check_grant_level(level)?;
        let user = user.to_string();
        self.write(move |conn| {
            conn.prepare_cached(
                "INSERT INTO vip_grants (user_id, level, expires_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (user_id) DO UPDATE
                 SET level = excluded.level, expires_at = excluded.expires_at",
            )
            .and_then(|mut upsert| upsert.execute(params![user, level, expires_at.as_millis()]))
            .map_err(sql)?;
            Ok(())
        })
        .await
    }

    async fn revoke_vip(&self, user: &UserId) -> Result<bool> {
        let user = user.to_string();
        self.write(move |conn| {
            let deleted = conn
                .prepare_cached("DELETE FROM vip_grants WHERE user_id = ?1")
                .and_then(|mut delete| delete.execute([user]))
                .map_err(sql)?;
            Ok(deleted > 0)
        })
        .await
    }

    async fn get_vip_grant(&self, user: &UserId) -> Result<Option<VipGrant>> {
        let row = sqlx::query("SELECT level, expires_at FROM vip_grants WHERE user_id = ?1")
            .bind(user.as_str())
            .fetch_optional(&self.readers)
            .await
            .map_err(db)?;
        row.map(|row| {
            let level: i64 = col(&row, "level")?;
            Ok(VipGrant {
                level: u8::try_from(level)
                    .map_err(|_| Error::corrupt(format!("stored VIP level {level}")))?,
                expires_at: Timestamp(col(&row, "expires_at")?),
            })
        })
        .transpose()
    }

    async fn vip_levels(&self) -> Result<VipLevels> {
        let row = sqlx::query("SELECT version, body FROM vip_levels WHERE id = 1")
            .fetch_optional(&self.readers)
            .await
            .map_err(db)?
            .ok_or_else(|| Error::corrupt("the vip_levels row is missing"))?;
        Ok(VipLevels {
            version: stored_u64(col(&row, "version")?, "version")?,
            levels: from_json(&col::<String>(&row, "body")?, "VIP levels")?,
        })
    }

    async fn put_vip_levels(&self, expected_version: u64, levels: &[VipPrivileges]) -> Result<u64> {
        check_level_count(levels)?;
        let expected = to_i64(expected_version, "VIP levels version")?;
        let body = to_json(levels)?;
        let updated = self
            .write(move |conn| {
                conn.prepare_cached(
                    "UPDATE vip_levels SET version = version + 1, body = ?2
                     WHERE id = 1 AND version = ?1",
                )
                .and_then(|mut update| update.execute(params![expected, body]))
                .map_err(sql)
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
