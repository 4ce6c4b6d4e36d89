//! [`UserDirectory`] of the [`InMemoryStore`]: profiles by user id, a batch applied under the
//! store's one lock (so all of it or, refused before any write, none).

use async_trait::async_trait;
use room_domain::UserId;

use super::InMemoryStore;
use crate::error::Result;
use crate::ports::{MAX_PROFILE_BATCH, ProfilePatch, UserDirectory, UserProfile, batch_too_large};

#[async_trait]
impl UserDirectory for InMemoryStore {
    async fn get_profile(&self, user_id: &UserId) -> Result<Option<UserProfile>> {
        Ok(self.lock().profiles.get(user_id).cloned())
    }

    async fn get_profiles(&self, user_ids: &[UserId]) -> Result<Vec<UserProfile>> {
        if user_ids.len() > MAX_PROFILE_BATCH {
            return Err(batch_too_large(user_ids.len()));
        }
        let t = self.lock();
        let mut found: Vec<UserProfile> = user_ids
            .iter()
            .filter_map(|id| t.profiles.get(id).cloned())
            .collect();
        found.sort_by(|a, b| a.user_id.cmp(&b.user_id));
        found.dedup_by(|a, b| a.user_id == b.user_id);
        Ok(found)
    }

    async fn upsert_profile(&self, user_id: &UserId, patch: &ProfilePatch) -> Result<UserProfile> {
        let mut t = self.lock();
        let current = t
            .profiles
            .remove(user_id)
            .unwrap_or_else(|| UserProfile::empty(user_id.clone()));
        let written = patch.apply(current);
        t.profiles.insert(user_id.clone(), written.clone());
        Ok(written)
    }

    async fn upsert_profiles(&self, patches: &[(UserId, ProfilePatch)]) -> Result<()> {
        if patches.len() > MAX_PROFILE_BATCH {
            return Err(batch_too_large(patches.len()));
        }
        let mut t = self.lock();
        for (user_id, patch) in patches {
            let current = t
                .profiles
                .remove(user_id)
                .unwrap_or_else(|| UserProfile::empty(user_id.clone()));
            t.profiles.insert(user_id.clone(), patch.apply(current));
        }
        Ok(())
    }
}
