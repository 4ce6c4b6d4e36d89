//! A database of the release before VIP grants (every migration before 0090) upgraded by
//! `migrate`: the VIP tables appear (the level table at version 0, empty), the profiles
//! written before stay, and grants and tables go in and read back.

use std::path::Path;

use adapters_mysql::{MySqlSettings, MySqlStore};
use room_app::ports::{UserDirectory, VipGrant, VipGrants, VipLevels};
use room_domain::VipPrivileges;
use room_testkit::mysql::MySqlServer;

use crate::fixtures::{T0, user};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_before_vip_grants_gets_them_on_migrating() {
    let Some(server) = MySqlServer::from_env("mysql::vip_upgrade").await else {
        return;
    };
    let database = server.database().await;
    let dir = tempfile::TempDir::new().unwrap();
    let migrations = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations/mysql");
    for entry in std::fs::read_dir(&migrations).unwrap() {
        let name = entry.unwrap().file_name();
        let version: u32 = name.to_str().unwrap()[..4].parse().unwrap();
        if version < 90 {
            std::fs::copy(migrations.join(&name), dir.path().join(&name)).unwrap();
        }
    }
    let mut conn = database.connect().await;
    sqlx::migrate::Migrator::new(dir.path())
        .await
        .unwrap()
        .run(&mut conn)
        .await
        .unwrap();
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
