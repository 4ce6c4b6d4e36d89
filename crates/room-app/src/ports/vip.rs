//! VIP levels kept by the service ([`VipGrants`]): per user at most one grant (a level and
//! when it expires), and the level table (what each level gives), versioned and changed by
//! compare-and-set.
//!
//! A grant is in force until its expiry and not after: [`VipGrant::level_at`] decides it
//! against the time it is asked about, so an expired grant gives nothing from the moment it
//! passes, with no timer and no write. A grant whose level the table does not have gives the
//! level and no privileges.

use std::sync::Arc;

use async_trait::async_trait;
use room_domain::{MAX_VIP_LEVELS, Timestamp, UserId, VipPrivileges, VipStanding};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// One user's VIP grant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct VipGrant {
    /// The level, 1 to [`MAX_VIP_LEVELS`].
    pub level: u8,
    /// The first instant the grant no longer holds.
    pub expires_at: Timestamp,
}

impl VipGrant {
    /// The level in force at `now`: `None` once `now` reaches the expiry.
    pub fn level_at(&self, now: Timestamp) -> Option<u8> {
        (now < self.expires_at).then_some(self.level)
    }
}

/// The level table: what each level gives, level 1 first. Version 0 is the empty table a
/// store starts with; each change makes the next version.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VipLevels {
    /// The version: 0 before any change, one more for each.
    pub version: u64,
    /// The privileges of levels 1, 2, ... (at most [`MAX_VIP_LEVELS`]).
    pub levels: Vec<VipPrivileges>,
}

impl VipLevels {
    /// What `level` gives: `None` for level 0 and for a level the table does not have.
    pub fn privileges(&self, level: u8) -> Option<&VipPrivileges> {
        self.levels.get(usize::from(level).checked_sub(1)?)
    }

    /// Whether the table has `level` (1 to the number of levels).
    pub fn has(&self, level: u8) -> bool {
        self.privileges(level).is_some()
    }

    /// The standing of a user at `level` (0 for none): the level and what the table gives
    /// it.
    pub fn standing(&self, level: u8) -> VipStanding {
        VipStanding {
            level,
            privileges: self.privileges(level).cloned().unwrap_or_default(),
        }
    }
}

/// Refuses a level outside 1..=[`MAX_VIP_LEVELS`] with [`Error::Invalid`]: what every store
/// checks before it writes a grant.
pub fn check_grant_level(level: u8) -> Result<()> {
    if (1..=MAX_VIP_LEVELS).contains(&usize::from(level)) {
        Ok(())
    } else {
        Err(Error::Invalid(format!(
            "VIP level {level}: 1 to {MAX_VIP_LEVELS}"
        )))
    }
}

/// Refuses a table of more than [`MAX_VIP_LEVELS`] levels with [`Error::Invalid`]: what every
/// store checks before it writes a table (the privileges' rules are the caller's,
/// [`check_vip_levels`](room_domain::check_vip_levels)).
pub fn check_level_count(levels: &[VipPrivileges]) -> Result<()> {
    if levels.len() <= MAX_VIP_LEVELS {
        Ok(())
    } else {
        Err(Error::Invalid(format!(
            "{} VIP levels; at most {MAX_VIP_LEVELS}",
            levels.len()
        )))
    }
}

/// VIP grants and the level table. See the [module](self).
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait VipGrants: Send + Sync {
    /// Grants `user` `level` until `expires_at`, replacing any grant they had (a grant, an
    /// extension and a change are the same call; the last one written wins, and a repeat
    /// changes nothing). A level outside 1..=[`MAX_VIP_LEVELS`]: [`Error::Invalid`], nothing
    /// written. Whether the table has the level is the caller's check.
    async fn grant_vip(&self, user: &UserId, level: u8, expires_at: Timestamp) -> Result<()>;
    /// Removes `user`'s grant; whether there was one (expired or not).
    async fn revoke_vip(&self, user: &UserId) -> Result<bool>;
    /// `user`'s grant as stored, expired or not; `None` when they have none.
    async fn get_vip_grant(&self, user: &UserId) -> Result<Option<VipGrant>>;
    /// The level `user` holds at `now`: `None` without a grant or once it expired.
    async fn vip_of(&self, user: &UserId, now: Timestamp) -> Result<Option<u8>> {
        Ok(self
            .get_vip_grant(user)
            .await?
            .and_then(|grant| grant.level_at(now)))
    }
    /// The current level table (version 0 and no levels before the first change).
    async fn vip_levels(&self) -> Result<VipLevels>;
    /// Replaces the level table by compare-and-set: only if the current version is
    /// `expected_version`, which makes the new version `expected_version + 1` (returned);
    /// otherwise [`Error::Conflict`] and nothing is written. Of two puts of one version at
    /// once, one wins. More than [`MAX_VIP_LEVELS`] levels: [`Error::Invalid`]. The levels'
    /// privileges are stored as given: the caller validates them.
    async fn put_vip_levels(&self, expected_version: u64, levels: &[VipPrivileges]) -> Result<u64>;
}

/// Shared handle to [`VipGrants`].
pub type VipGrantsRef = Arc<dyn VipGrants>;
