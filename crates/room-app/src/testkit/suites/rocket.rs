//! The conformance suite of [`RocketSettingsStore`]: versions set by compare-and-set, one
//! winner of two puts of one version, the newest current.

use std::future::Future;
use std::sync::Arc;

use room_domain::{Coins, RocketLevel, RocketSettings};

use super::fixtures::{expect_err, ok, same};
use crate::Error;
use crate::ports::RocketSettingsStore;

/// Runs every check of [`RocketSettingsStore`], each against a fresh store from `fresh`.
pub async fn rocket_settings_suite<S, F, Fut>(fresh: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<S>>,
    S: RocketSettingsStore + 'static,
{
    versions_follow_each_other(fresh().await).await;
    one_of_two_puts_of_a_version_wins(fresh().await).await;
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

async fn versions_follow_each_other<S: RocketSettingsStore>(store: Arc<S>) {
    same(
        ok(store.current_rocket().await, "current_rocket"),
        None,
        "no settings before the first",
    );
    expect_err!(
        store.put_rocket(&settings(2, 10)).await,
        Error::Conflict(_),
        "version 2 cannot come first"
    );
    expect_err!(
        store.put_rocket(&settings(0, 10)).await,
        Error::Invalid(_),
        "version 0 is no version"
    );
    ok(store.put_rocket(&settings(1, 10)).await, "put version 1");
    same(
        ok(store.current_rocket().await, "current_rocket"),
        Some(settings(1, 10)),
        "version 1 is current, caps and all",
    );
    expect_err!(
        store.put_rocket(&settings(1, 20)).await,
        Error::Conflict(_),
        "version 1 again: the stored one stays"
    );
    expect_err!(
        store.put_rocket(&settings(3, 20)).await,
        Error::Conflict(_),
        "a version may not skip one"
    );
    ok(store.put_rocket(&settings(2, 20)).await, "put version 2");
    same(
        ok(store.current_rocket().await, "current_rocket"),
        Some(settings(2, 20)),
        "the newest is current",
    );
}

async fn one_of_two_puts_of_a_version_wins<S: RocketSettingsStore + 'static>(store: Arc<S>) {
    for version in 1..=10 {
        let racers: Vec<_> = [10, 20]
            .into_iter()
            .map(|pool| {
                let store = store.clone();
                tokio::spawn(async move { store.put_rocket(&settings(version, pool)).await })
            })
            .collect();
        let mut won = 0;
        for racer in racers {
            match racer.await.expect("the racer ran") {
                Ok(()) => won += 1,
                Err(Error::Conflict(_)) => {}
                Err(other) => panic!("a put of version {version}: {other:?}"),
            }
        }
        same(won, 1, "exactly one of two puts of one version wins");
        same(
            ok(store.current_rocket().await, "current_rocket").map(|s| s.version),
            Some(version),
            "the winner's version is current",
        );
    }
}
