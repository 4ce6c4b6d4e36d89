//! [`Vip`]: VIP levels kept by the service. The use cases of [`VipGrants`]: platform admins
//! grant, extend, change and revoke a user's level and change the level table (what each
//! level gives); the rooms read a user's [`VipStanding`] through the node's [`VipCache`].
//!
//! A grant is written only for a level the current table has and an expiry after now; a table
//! is written only if every level's privileges keep their rules
//! ([`check_vip_levels`]). A grant that expires ends its privileges at that instant: the
//! standing is decided against the clock at every lookup, cached grant or not.

mod cache;

use room_domain::{Timestamp, UserId, VipPrivileges, VipStanding, check_vip_levels};

pub use cache::{VipCache, VipCacheConfig};

use crate::error::{Error, Result};
use crate::ports::{ClockRef, VipGrant, VipGrantsRef, VipLevels};

/// The VIP use cases. See the [module](self).
pub struct Vip {
    grants: VipGrantsRef,
    clock: ClockRef,
    cache: VipCache,
}

impl Vip {
    /// The use cases over `grants`, read by the rooms through a cache bounded by `config`
    /// whose entries age by `clock`.
    pub fn new(grants: VipGrantsRef, clock: ClockRef, config: VipCacheConfig) -> Self {
        Vip {
            cache: VipCache::new(grants.clone(), clock.clone(), config),
            grants,
            clock,
        }
    }

    /// The node's cache.
    pub fn cache(&self) -> &VipCache {
        &self.cache
    }

    /// Grants `user` `level` until `expires_at` (a grant, an extension or a change: the last
    /// one wins). A level the current table does not have, or an expiry not after now:
    /// [`Error::InvalidVipGrant`], nothing written. Returns the grant as written.
    pub async fn grant(&self, user: &UserId, level: u8, expires_at: Timestamp) -> Result<VipGrant> {
        let table = self.grants.vip_levels().await?;
        if !table.has(level) {
            return Err(Error::InvalidVipGrant(format!(
                "level {level} is not in the level table (levels 1 to {})",
                table.levels.len()
            )));
        }
        let now = self.clock.now();
        if expires_at <= now {
            return Err(Error::InvalidVipGrant(format!(
                "expires_at_ms {} is not after now ({})",
                expires_at.0, now.0
            )));
        }
        self.grants.grant_vip(user, level, expires_at).await?;
        self.cache.forget(user);
        Ok(VipGrant { level, expires_at })
    }

    /// Revokes `user`'s grant; whether there was one.
    pub async fn revoke(&self, user: &UserId) -> Result<bool> {
        let revoked = self.grants.revoke_vip(user).await?;
        self.cache.forget(user);
        Ok(revoked)
    }

    /// `user`'s grant as stored, expired or not (not cached: what an admin reads is what is
    /// written).
    pub async fn grant_of(&self, user: &UserId) -> Result<Option<VipGrant>> {
        self.grants.get_vip_grant(user).await
    }

    /// The level table as stored.
    pub async fn levels(&self) -> Result<VipLevels> {
        self.grants.vip_levels().await
    }

    /// Replaces the level table if it is still at `expected_version`
    /// ([`Error::Conflict`] otherwise). A table that breaks a rule:
    /// [`Error::InvalidVipLevels`], nothing written. Returns the table as written.
    pub async fn put_levels(
        &self,
        expected_version: u64,
        levels: Vec<VipPrivileges>,
    ) -> Result<VipLevels> {
        check_vip_levels(&levels).map_err(Error::InvalidVipLevels)?;
        let version = self
            .grants
            .put_vip_levels(expected_version, &levels)
            .await?;
        self.cache.forget_levels();
        Ok(VipLevels { version, levels })
    }

    /// `user`'s VIP standing now, through the cache: their level if a grant is in force
    /// (0 if not) and what the table gives it. An error when the store cannot be read.
    pub async fn standing(&self, user: &UserId) -> Result<VipStanding> {
        self.cache.standing(user).await
    }

    /// Whether `user` may set `url` as a room's background: a background a VIP level lists
    /// needs that level or a higher one. An error when the store cannot be read.
    pub async fn may_use_background(&self, user: &UserId, url: &str) -> Result<bool> {
        self.cache.may_use_background(user, url).await
    }

    /// Like [`Vip::standing`], but `None` when the store cannot be read now (logged): for
    /// the rooms, which go on without VIP privileges rather than fail.
    pub async fn standing_or_none(&self, user: &UserId) -> Option<VipStanding> {
        match self.cache.standing(user).await {
            Ok(standing) => Some(standing),
            Err(error) => {
                tracing::warn!(%user, %error, "VIP grants cannot be read; going on without them");
                None
            }
        }
    }
}
