//! A database of the release before the room lists' fields (every migration before 0100)
//! upgraded by `migrate`: a summary written before reads back with the defaults (no region or
//! cover, no seat taken, created and heated at 0), joins the scan of open rooms with its short
//! id (a closed one does not), and the room's next commit writes the new fields.

use adapters_mysql::{MySqlSettings, MySqlStore};
use room_app::ports::{CellStore, OpenRoom, RoomDirectory, RoomSummary};
use room_app::testkit::covers_claimed_by_the_upgrade;
use room_domain::Timestamp;
use room_testkit::mysql::MySqlServer;

use crate::fixtures::{batch, room, schema_before, user};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn summaries_written_before_the_room_list_fields_read_back_after_migrating() {
    let Some(server) = MySqlServer::from_env("mysql::summaries_upgrade").await else {
        return;
    };
    let database = server.database().await;
    let mut conn = database.connect().await;
    schema_before(&mut conn, 100).await;
    for statement in [
        "INSERT INTO room_summaries (room_id, owner, name, open, heat, online, locked, version)
         VALUES ('room-old', 'owner', 'Old times', TRUE, 42, 3, TRUE, 7),
                ('room-shut', 'owner', 'Shut', FALSE, 9, 0, FALSE, 2)",
        "INSERT INTO room_short_ids (short_id, room_id) VALUES (555, 'room-old')",
    ] {
        sqlx::query(statement).execute(&mut conn).await.unwrap();
    }

    let settings = MySqlSettings::new(database.url.clone());
    MySqlStore::migrate(&settings).await.unwrap();
    let store = MySqlStore::open(&settings).await.unwrap();
    let old = room("room-old");
    let upgraded = RoomSummary {
        room_id: old.clone(),
        owner: user("owner"),
        name: "Old times".into(),
        open: true,
        heat: 42,
        online: 3,
        locked: true,
        version: 7,
        region: String::new(),
        cover_url: None,
        seats_taken: 0,
        created_at: Timestamp(0),
        recent_heat_milli: 0,
        recent_heat_at: Timestamp(0),
    };
    assert_eq!(
        store.get_summary(&old).await.unwrap(),
        Some(upgraded.clone())
    );
    assert_eq!(
        store.scan_open(None, 10).await.unwrap(),
        [OpenRoom {
            summary: upgraded,
            short_id: Some(555)
        }],
        "the open room, with its short id; the closed one left out"
    );

    let activation = store.activate(&old, "node-1").await.unwrap();
    let b = batch(&old, activation, activation.version, "c-new");
    store.commit(&b).await.unwrap();
    let written = b.summary.clone().unwrap();
    assert!(written.cover_url.is_some() && written.created_at != Timestamp(0));
    assert_eq!(
        store.get_summary(&old).await.unwrap(),
        Some(written.clone())
    );
    assert_eq!(
        store.scan_open(None, 10).await.unwrap(),
        [OpenRoom {
            summary: written,
            short_id: Some(555)
        }]
    );
}

/// A database of the release before cover claims (every migration before 0110) upgraded by
/// `migrate`: each cover an open room showed is claimed by one of the rooms showing it (the
/// first by room id); a closed room's is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn covers_shown_before_cover_claims_are_claimed_by_migrating() {
    let Some(server) = MySqlServer::from_env("mysql::covers_upgrade").await else {
        return;
    };
    let database = server.database().await;
    let mut conn = database.connect().await;
    schema_before(&mut conn, 110).await;
    sqlx::query(
        "INSERT INTO room_summaries (room_id, owner, name, open, heat, online, locked, version,
             cover_url)
         VALUES ('room-b', 'owner', 'B', TRUE, 0, 0, FALSE, 1, 'https://img.example/a.png'),
                ('room-a', 'owner', 'A', TRUE, 0, 0, FALSE, 1, 'https://img.example/a.png'),
                ('room-c', 'owner', 'C', FALSE, 0, 0, FALSE, 1, 'https://img.example/c.png')",
    )
    .execute(&mut conn)
    .await
    .unwrap();

    let settings = MySqlSettings::new(database.url.clone());
    MySqlStore::migrate(&settings).await.unwrap();
    let store = MySqlStore::open(&settings).await.unwrap();
    covers_claimed_by_the_upgrade(&store).await;
}
