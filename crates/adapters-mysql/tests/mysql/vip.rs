//! A database of the release before VIP grants (every migration before 0090) upgraded by
//! `migrate`: the VIP tables appear (the level table at version 0, empty), the profiles
//! written before stay, and grants and tables go in and read back.

use adapters_mysql::{MySqlSettings, MySqlStore};
use room_app::ports::{UserDirectory, VipGrant, VipGrants, VipLevels};
use room_domain::VipPrivileges;
use room_testkit::mysql::MySqlServer;

use crate::fixtures::{T0, schema_before, user};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_before_vip_grants_gets_them_on_migrating() {
    let Some(server) = MySqlServer::from_env("mysql::vip_upgrade").await else {
        return;
    };
    let database = server.database().await;
    let mut conn = database.connect().await;
    schema_before(&mut conn, 90).await;
    sqlx::query("INSERT INTO user_profiles (user_id, nickname) VALUES ('alice', 'Alice')")
        .execute(&mut conn)
        .await
        .unwrap();

    let settings = MySqlSettings::new(database.url.clone());
    MySqlStore::migrate(&settings).await.unwrap();
    let store = MySqlStore::open(&settings).await.unwrap();
    assert_eq!(
        store
            .get_profile(&user("alice"))
            .await
            .unwrap()
            .and_then(|p| p.nickname)
            .as_deref(),
        Some("Alice"),
        "the profile written before the upgrade stays"
    );
    assert_eq!(store.vip_levels().await.unwrap(), VipLevels::default());
    let levels = vec![VipPrivileges {
        mute_shield: true,
        vehicle_id: Some("car-1".into()),
        ..VipPrivileges::default()
    }];
    assert_eq!(store.put_vip_levels(0, &levels).await.unwrap(), 1);
    assert!(store.put_vip_levels(0, &levels).await.is_err());
    store
        .grant_vip(&user("alice"), 1, T0.plus_secs(60))
        .await
        .unwrap();
    assert_eq!(
        store.get_vip_grant(&user("alice")).await.unwrap(),
        Some(VipGrant {
            level: 1,
            expires_at: T0.plus_secs(60)
        })
    );
    assert_eq!(store.vip_levels().await.unwrap().levels, levels);
}
