//! [`Profiles`]: who people are, as the rooms show them. The use cases of the user directory
//! ([`UserDirectory`](crate::ports::UserDirectory)): the upstream user service writes
//! profiles (one, or a batch in one transaction), a user writes their own nickname and
//! avatar, and the rooms read display fields through the node's [`ProfileCache`].
//!
//! Every write checks each value it sets against its field's rule
//! ([`ProfilePatch::problem`]) before anything is written: a batch with one bad entry writes
//! nothing.

mod cache;

use std::collections::HashMap;

use room_domain::{UserDisplay, UserId};

pub use cache::{CacheStats, ProfileCache, ProfileCacheConfig};

use crate::error::{Error, Result};
use crate::ports::{
    Change, ClockRef, MAX_PROFILE_BATCH, ProfilePatch, UserDirectoryRef, UserProfile,
};

/// The display fields of a profile: what rooms show beside the user's id.
pub fn display_of(profile: &UserProfile) -> UserDisplay {
    UserDisplay {
        nickname: profile.nickname.clone(),
        avatar_url: profile.avatar_url.clone(),
    }
}

/// The profile use cases. See the [module](self).
pub struct Profiles {
    directory: UserDirectoryRef,
    cache: ProfileCache,
}

impl Profiles {
    /// The use cases over `directory`, read for display through a cache bounded by `config`
    /// whose entries age by `clock`.
    pub fn new(directory: UserDirectoryRef, clock: ClockRef, config: ProfileCacheConfig) -> Self {
        Profiles {
            cache: ProfileCache::new(directory.clone(), clock, config),
            directory,
        }
    }

    /// The node's cache (its bound and its hit and miss counts).
    pub fn cache(&self) -> &ProfileCache {
        &self.cache
    }

    /// The stored profile of `user` (not cached: what an admin reads is what is written).
    pub async fn get(&self, user: &UserId) -> Result<Option<UserProfile>> {
        self.directory.get_profile(user).await
    }

    /// Applies `patch` to `user`'s profile (creating it) and returns it as written. A value
    /// that breaks its field's rule: [`Error::InvalidProfile`], nothing written.
    pub async fn put(&self, user: &UserId, patch: &ProfilePatch) -> Result<UserProfile> {
        if let Some((field, problem)) = patch.problem() {
            return Err(Error::InvalidProfile(format!("{field}: {problem}")));
        }
        let written = self.directory.upsert_profile(user, patch).await?;
        self.cache.forget(user);
        Ok(written)
    }

    /// Applies every patch in one transaction. More than [`MAX_PROFILE_BATCH`] patches, or
    /// any value that breaks its field's rule: [`Error::InvalidProfile`] naming the first
    /// bad entry by its index, nothing written.
    pub async fn put_many(&self, patches: &[(UserId, ProfilePatch)]) -> Result<()> {
        if patches.len() > MAX_PROFILE_BATCH {
            return Err(Error::InvalidProfile(format!(
                "{} users in one batch; at most {MAX_PROFILE_BATCH}",
                patches.len()
            )));
        }
        for (index, (_, patch)) in patches.iter().enumerate() {
            if let Some((field, problem)) = patch.problem() {
                return Err(Error::InvalidProfile(format!(
                    "users[{index}].{field}: {problem}"
                )));
            }
        }
        self.directory.upsert_profiles(patches).await?;
        for (user, _) in patches {
            self.cache.forget(user);
        }
        Ok(())
    }

    /// A user's change of their own nickname and avatar (the other fields are the upstream
    /// user service's): like [`Profiles::put`] with only those two.
    pub async fn put_own(
        &self,
        user: &UserId,
        nickname: Change<String>,
        avatar_url: Change<String>,
    ) -> Result<UserProfile> {
        let patch = ProfilePatch {
            nickname,
            avatar_url,
            ..ProfilePatch::default()
        };
        self.put(user, &patch).await
    }

    /// The display fields of `user`, through the cache; `None` when the directory has none
    /// or cannot be read now (a view or an event goes on without them: they are display
    /// only).
    pub async fn display(&self, user: &UserId) -> Option<UserDisplay> {
        match self.cache.get(user).await {
            Ok(profile) => profile.as_ref().map(display_of).filter(|d| !d.is_empty()),
            Err(error) => {
                tracing::warn!(%user, %error, "profiles cannot be read; shown without them");
                None
            }
        }
    }

    /// The display fields of those of `users` that have any, through the cache (empty when
    /// the directory cannot be read now).
    pub async fn displays(&self, users: &[UserId]) -> HashMap<UserId, UserDisplay> {
        match self.cache.get_many(users).await {
            Ok(profiles) => profiles
                .into_iter()
                .map(|(user, profile)| (user, display_of(&profile)))
                .filter(|(_, display)| !display.is_empty())
                .collect(),
            Err(error) => {
                tracing::warn!(%error, "profiles cannot be read; shown without them");
                HashMap::new()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::memory::InMemoryStore;
    use crate::ports::UserDirectory;

    fn user(id: &str) -> UserId {
        UserId::new(id).unwrap()
    }

    fn profiles() -> (Arc<InMemoryStore>, Profiles) {
        let store = Arc::new(InMemoryStore::new());
        let profiles = Profiles::new(
            store.clone(),
            Arc::new(crate::SystemClock),
            ProfileCacheConfig::default(),
        );
        (store, profiles)
    }

    #[tokio::test]
    async fn a_batch_with_one_bad_entry_writes_nothing() {
        let (store, profiles) = profiles();
        let good = ProfilePatch {
            country: Change::Set("SA".into()),
            ..ProfilePatch::default()
        };
        let bad = ProfilePatch {
            country: Change::Set("Saudi".into()),
            ..ProfilePatch::default()
        };
        let error = profiles
            .put_many(&[(user("a"), good.clone()), (user("b"), bad)])
            .await
            .unwrap_err();
        assert!(
            matches!(&error, Error::InvalidProfile(m) if m.starts_with("users[1].country")),
            "{error:?}"
        );
        assert_eq!(store.get_profile(&user("a")).await.unwrap(), None);
        profiles.put_many(&[(user("a"), good)]).await.unwrap();
        assert_eq!(
            store
                .get_profile(&user("a"))
                .await
                .unwrap()
                .unwrap()
                .country
                .as_deref(),
            Some("SA")
        );
    }

    #[tokio::test]
    async fn a_write_through_this_node_shows_at_once() {
        let (_store, profiles) = profiles();
        assert_eq!(profiles.display(&user("a")).await, None);
        profiles
            .put_own(&user("a"), Change::Set("Ann".into()), Change::Keep)
            .await
            .unwrap();
        assert_eq!(
            profiles
                .display(&user("a"))
                .await
                .and_then(|d| d.nickname)
                .as_deref(),
            Some("Ann")
        );
        let error = profiles
            .put_own(&user("a"), Change::Set("\u{0007}".into()), Change::Keep)
            .await
            .unwrap_err();
        assert!(matches!(error, Error::InvalidProfile(_)), "{error:?}");
    }

    #[tokio::test]
    async fn a_directory_that_does_not_answer_shows_no_display_fields() {
        let mut directory = crate::ports::MockUserDirectory::new();
        directory
            .expect_get_profile()
            .returning(|_| Err(Error::Unavailable("down".into())));
        directory
            .expect_get_profiles()
            .returning(|_| Err(Error::Unavailable("down".into())));
        let profiles = Profiles::new(
            Arc::new(directory),
            Arc::new(crate::SystemClock),
            ProfileCacheConfig::default(),
        );
        assert_eq!(profiles.display(&user("a")).await, None);
        assert!(profiles.displays(&[user("a"), user("b")]).await.is_empty());
        // The admin read reports the failure.
        assert!(matches!(
            profiles.get(&user("a")).await,
            Err(Error::Unavailable(_))
        ));
    }

    #[tokio::test]
    async fn a_profile_without_display_fields_shows_none() {
        let (_store, profiles) = profiles();
        profiles
            .put(
                &user("a"),
                &ProfilePatch {
                    agency: Change::Set("ag-1".into()),
                    ..ProfilePatch::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(profiles.display(&user("a")).await, None);
        assert!(profiles.displays(&[user("a")]).await.is_empty());
    }
}
