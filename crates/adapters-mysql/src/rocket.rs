//! [`RocketSettingsStore`]: a table of versions (migration 0121).

use async_trait::async_trait;
use room_app::ports::RocketSettingsStore;
use room_domain::RocketSettings;

use crate::versions::Versions;
use crate::{MySqlStore, Result};

#[async_trait]
impl RocketSettingsStore for MySqlStore {
    async fn current_rocket(&self) -> Result<Option<RocketSettings>> {
        self.newest_version(Versions::Rocket).await
    }

    async fn put_rocket(&self, settings: &RocketSettings) -> Result<()> {
        self.put_version(Versions::Rocket, settings.version, settings)
            .await
    }
}
