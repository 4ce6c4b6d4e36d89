//! The conformance suite of [`RocketSettingsStore`]: versions set by compare-and-set, one
//! winner of two puts of one version, the newest current.

use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use room_domain::{Coins, RocketLevel, RocketSettings};

use super::versions::{Versioned, one_of_two_puts_of_a_version_wins, versions_follow_each_other};
use crate::Result;
use crate::ports::RocketSettingsStore;

/// Runs every check of [`RocketSettingsStore`], each against a fresh store from `fresh`.
pub async fn rocket_settings_suite<S, F, Fut>(fresh: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<S>>,
    S: RocketSettingsStore + 'static,
{
    versions_follow_each_other(Arc::new(Rocket(fresh().await))).await;
    one_of_two_puts_of_a_version_wins(Arc::new(Rocket(fresh().await))).await;
}

/// A rocket store as the checks of versions see it.
struct Rocket<S>(Arc<S>);

#[async_trait]
impl<S: RocketSettingsStore + 'static> Versioned for Rocket<S> {
    type Value = RocketSettings;

    fn value(version: u64, variant: u8) -> RocketSettings {
        settings(version, if variant == 0 { 10 } else { 20 })
    }

    fn version_of(value: &RocketSettings) -> u64 {
        value.version
    }

    async fn newest(&self) -> Result<Option<RocketSettings>> {
        self.0.current_rocket().await
    }

    async fn put(&self, value: &RocketSettings) -> Result<()> {
        self.0.put_rocket(value).await
    }
}

fn settings(version: u64, pool: i64) -> RocketSettings {
    RocketSettings {
        version,
        levels: vec![
            RocketLevel {
                fuel: 100,
                countdown_secs: 30,
                reward_pool: Coins(pool),
                winners: 3,
                reward_cap: None,
            },
            RocketLevel {
                fuel: 500,
                countdown_secs: 60,
                reward_pool: Coins(pool * 2),
                winners: 5,
                reward_cap: Some(Coins(pool)),
            },
        ],
    }
}
