//! The versions of the rocket's levels ([`RocketSettingsStore`]), as operators change them at
//! run time.

use std::sync::Arc;

use async_trait::async_trait;
use room_domain::RocketSettings;

use crate::error::Result;

/// The rocket's levels by version: the newest is current. A version, once stored, never
/// changes.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait RocketSettingsStore: Send + Sync {
    /// The newest version, or `None` before any was stored.
    async fn current_rocket(&self) -> Result<Option<RocketSettings>>;
    /// Stores `settings` as the next version, by compare-and-set: only if the newest stored
    /// version is `settings.version - 1` (none stored, for version 1); otherwise
    /// [`Error::Conflict`](crate::Error::Conflict) and nothing is written. Of two puts of one
    /// version at once, one wins. Version 0 is [`Error::Invalid`](crate::Error::Invalid). The
    /// settings are stored as given: the caller validates them.
    async fn put_rocket(&self, settings: &RocketSettings) -> Result<()>;
}

/// Shared handle to [`RocketSettingsStore`].
pub type RocketSettingsStoreRef = Arc<dyn RocketSettingsStore>;
