//! The robot pools on MariaDB: two nodes (two stores, two connection pools on one database)
//! claiming one robot at once leave it in exactly one pool, for creations and for changes; a
//! database whose pools were stored before the pool key gets them brought over by `migrate`.

use std::sync::Arc;

use adapters_mysql::{Error, MySqlSettings, MySqlStore};
use room_app::ports::{GiftShare, RobotProfile, RobotRoomConfig, RobotRooms};
use room_domain::GiftId;
use room_testkit::mysql::MySqlServer;
use sqlx::Connection;

use crate::fixtures::{T0, fixture, room, schema_before, user};

/// A robot room configuration of `room_id` with `robots`, as the service stores one.
fn robot_room(room_id: &str, robots: &[String]) -> RobotRoomConfig {
    RobotRoomConfig {
        room_id: room(room_id),
        profile: RobotProfile {
            name: format!("Robots of {room_id}"),
            notice: String::new(),
            cover_url: None,
        },
        seat_count: 8,
        robots: robots.iter().map(|robot| user(robot)).collect(),
        audience: vec![0; 24],
        seats: 0,
        gift_rate_per_minute: 0,
        gift_mix: vec![GiftShare {
            gift_id: GiftId::new("rose").unwrap(),
            weight: 1,
        }],
        enabled: true,
        version: 1,
        created_at: T0,
        updated_at: T0,
    }
}

/// Whether `answer` is the key's refusal of `robot`.
fn refused(answer: &Result<(), Error>, robot: &str) -> bool {
    matches!(answer, Err(Error::RobotTaken { robot: r, .. }) if r.as_str() == robot)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_nodes_claiming_one_robot_at_once_leave_it_in_one_pool() {
    let Some(f) = fixture("mysql::robot_pools_two_nodes", |_| {}).await else {
        return;
    };
    let mut settings = MySqlSettings::new(f.database.url.clone());
    settings.max_connections = 4;
    let other = Arc::new(MySqlStore::open(&settings).await.expect("a second node"));
    let nodes = [f.store.clone(), other];

    let rounds = 20;
    let mut wins = [0; 2];
    for round in 0..rounds {
        let shared = format!("robot-shared-{round}");
        let one = robot_room(
            &format!("room-{round}-a"),
            &[format!("robot-{round}-a"), shared.clone()],
        );
        let two = robot_room(
            &format!("room-{round}-b"),
            &[shared.clone(), format!("robot-{round}-b")],
        );
        let (a, b) = tokio::join!(nodes[0].create(&one), nodes[1].create(&two));
        match (a.is_ok(), b.is_ok()) {
            (true, false) if refused(&b, &shared) => wins[0] += 1,
            (false, true) if refused(&a, &shared) => wins[1] += 1,
            _ => panic!("round {round}: two creations at once: {a:?} / {b:?}"),
        }
        let held = nodes[1].list_by_robots(&[user(&shared)]).await.unwrap();
        assert_eq!(held.len(), 1, "round {round}: {held:?}");
        let (winner, loser) = if a.is_ok() {
            (&one, &two)
        } else {
            (&two, &one)
        };
        assert_eq!(held[0].1, winner.room_id, "round {round}");
        assert_eq!(
            nodes[0].get(&loser.room_id).await.unwrap(),
            None,
            "round {round}: the refused creation wrote nothing"
        );

        // Two changes at once, each adding the same free robot to its own pool.
        let mut one_more = winner.clone();
        let other_room = robot_room(&format!("room-{round}-c"), &[format!("robot-{round}-c")]);
        nodes[1].create(&other_room).await.unwrap();
        let added = format!("robot-added-{round}");
        one_more.version = 2;
        one_more.robots.push(user(&added));
        let two_more = RobotRoomConfig {
            version: 2,
            robots: vec![user(&format!("robot-{round}-c")), user(&added)],
            ..other_room.clone()
        };
        let (a, b) = tokio::join!(nodes[0].update(&one_more, 1), nodes[1].update(&two_more, 1));
        assert!(
            (a.is_ok() && refused(&b, &added)) || (b.is_ok() && refused(&a, &added)),
            "round {round}: two changes at once: {a:?} / {b:?}"
        );
        let held = nodes[0].list_by_robots(&[user(&added)]).await.unwrap();
        let changed = if a.is_ok() { &one_more } else { &two_more };
        assert_eq!(
            held,
            vec![(user(&added), changed.room_id.clone())],
            "round {round}"
        );
        let unchanged = if a.is_ok() { &other_room } else { winner };
        assert_eq!(
            nodes[1].get(&unchanged.room_id).await.unwrap().as_ref(),
            Some(unchanged),
            "round {round}: the refused change wrote nothing"
        );
    }
    assert_eq!(wins[0] + wins[1], rounds);
}

/// A database migrated before the pool key, with two robot rooms naming one robot: `migrate`
/// brings every pool over (the robot both named stays with the first room by id), and the key
/// then refuses a second claim.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pools_stored_before_the_pool_key_are_brought_over() {
    let Some(server) = MySqlServer::from_env("mysql::robot_pools_migrated").await else {
        return;
    };
    let database = server.database().await;
    let mut conn = database.connect().await;
    schema_before(&mut conn, 10).await;
    let a = robot_room("room-a", &["robot-1".into(), "robot-2".into()]);
    let b = robot_room("room-b", &["robot-3".into(), "robot-2".into()]);
    for config in [&b, &a] {
        sqlx::query(
            "INSERT INTO robot_rooms (room_id, version, enabled, body) VALUES (?, 1, TRUE, ?)",
        )
        .bind(config.room_id.as_str())
        .bind(serde_json::to_string(config).unwrap())
        .execute(&mut conn)
        .await
        .unwrap();
    }
    conn.close().await.unwrap();

    let settings = MySqlSettings::new(database.url.clone());
    MySqlStore::migrate(&settings).await.expect("migrates");
    let store = MySqlStore::open(&settings).await.expect("opens");
    let robots = ["robot-1", "robot-2", "robot-3", "robot-4"].map(user);
    assert_eq!(
        store.list_by_robots(&robots).await.unwrap(),
        vec![
            (user("robot-1"), room("room-a")),
            (user("robot-2"), room("room-a")),
            (user("robot-3"), room("room-b")),
        ],
        "every pool came over; the robot both named is the first room's"
    );
    let answer = store
        .create(&robot_room("room-c", &["robot-4".into(), "robot-3".into()]))
        .await;
    assert!(refused(&answer, "robot-3"), "{answer:?}");
    assert_eq!(
        RobotRooms::get(&store, &room("room-c")).await.unwrap(),
        None
    );
}
