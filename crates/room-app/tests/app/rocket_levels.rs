//! The rocket's levels at run time on one node: version 1 seeded from the configured rules
//! (or kept when another process stored it first), a change stored by compare-and-set, and a
//! node's rooms taking the newest stored version on their refresh, never an older one, and
//! never levels that fail validation.

use room_app::Error;
use room_app::ports::RocketSettingsStoreRef;
use room_app::rocket::{change_rocket, refresh_rocket, seed_rocket};
use room_domain::{Coins, RocketLevel, RocketSettings};

use super::support::World;

fn level(fuel: i64) -> RocketLevel {
    RocketLevel {
        fuel,
        countdown_secs: 10,
        reward_pool: Coins(50),
        winners: 2,
        reward_cap: Some(Coins(30)),
    }
}

#[tokio::test]
async fn a_node_takes_the_newest_stored_levels_on_its_refresh() {
    let world = World::new().await;
    let store: RocketSettingsStoreRef = world.store.clone();
    let configured = world.runtime().rules().rocket_levels.clone();
    let first = seed_rocket(&store, &configured).await.unwrap();
    assert_eq!((first.version, &first.levels), (1, &configured));
    // Seeding again (another node starting) keeps what is stored.
    let again = seed_rocket(&store, &[level(7)]).await.unwrap();
    assert_eq!(again, first);
    assert_eq!(refresh_rocket(&store, world.runtime()).await.unwrap(), 1);
    assert_eq!(world.runtime().rocket_version(), 1);

    // Another node changes the levels; this one takes them on its next refresh.
    let changed = change_rocket(&store, 1, vec![level(40), level(90)])
        .await
        .unwrap();
    assert_eq!(changed.version, 2);
    assert!(matches!(
        change_rocket(&store, 1, vec![level(5)]).await,
        Err(Error::Conflict(_))
    ));
    assert!(matches!(
        change_rocket(&store, 2, vec![level(90), level(40)]).await,
        Err(Error::Invalid(_))
    ));
    assert_eq!(world.runtime().rules().rocket_levels, configured);
    assert_eq!(refresh_rocket(&store, world.runtime()).await.unwrap(), 1);
    assert_eq!(world.runtime().rules().rocket_levels, changed.levels);
    assert_eq!(
        refresh_rocket(&store, world.runtime()).await.unwrap(),
        0,
        "nothing newer"
    );
    // An older version never replaces a newer one.
    assert!(!world.runtime().set_rocket(&first));
    assert_eq!(world.runtime().rocket_version(), 2);

    // Levels stored by hand that fail validation are refused; the rooms keep theirs.
    store
        .put_rocket(&RocketSettings {
            version: 3,
            levels: vec![level(50), level(10)],
        })
        .await
        .unwrap();
    assert!(matches!(
        refresh_rocket(&store, world.runtime()).await,
        Err(Error::Corrupt(_))
    ));
    assert_eq!(world.runtime().rocket_version(), 2);
}
