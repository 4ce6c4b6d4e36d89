//! [`VipGrants`] of the [`InMemoryStore`]: grants by user id, and the level table compared
//! and set under the store's one lock.

use async_trait::async_trait;
use room_domain::{Timestamp, UserId, VipPrivileges};

use super::InMemoryStore;
use crate::error::{Error, Result};
use crate::ports::{VipGrant, VipGrants, VipLevels, check_grant_level, check_level_count};

#[async_trait]
impl VipGrants for InMemoryStore {
    async fn grant_vip(&self, user: &UserId, level: u8, expires_at: Timestamp) -> Result<()> {
        check_grant_level(level)?;
        self.lock()
            .vip_grants
            .insert(user.clone(), VipGrant { level, expires_at });
        Ok(())
    }

    async fn revoke_vip(&self, user: &UserId) -> Result<bool> {
        Ok(self.lock().vip_grants.remove(user).is_some())
    }

    async fn get_vip_grant(&self, user: &UserId) -> Result<Option<VipGrant>> {
        Ok(self.lock().vip_grants.get(user).copied())
    }

    async fn vip_levels(&self) -> Result<VipLevels> {
        Ok(self.lock().vip_levels.clone())
    }

    async fn put_vip_levels(&self, expected_version: u64, levels: &[VipPrivileges]) -> Result<u64> {
        check_level_count(levels)?;
        let mut t = self.lock();
        if t.vip_levels.version != expected_version {
            return Err(Error::Conflict(format!(
                "the VIP level table is at version {}, not {expected_version}",
                t.vip_levels.version
            )));
        }
        let version = expected_version + 1;
        t.vip_levels = VipLevels {
            version,
            levels: levels.to_vec(),
        };
        Ok(version)
    }
}
