//! Robot rooms at run time: `running_on` names the node running the room, and embedded,
//! room-api runs the enabled robot rooms and stops the disabled ones.

use std::time::Duration;

use axum::http::StatusCode;
use serde_json::json;

use super::fixtures::{PATH, config, create, listed, patch};
use crate::support::{TestApp, eventually};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn running_on_names_the_node_running_the_room() {
    // Nobody runs the robot room's script here: only its use keeps it active.
    let t = TestApp::with(|s| {
        s.cell.idle_secs = 1;
        s.robots.in_process = false;
    })
    .await;
    let (status, created) = create(&t, config()).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let room_id = created["room_id"].as_str().unwrap().to_owned();
    assert_eq!(created["running_on"], "local", "the room was just used");
    let item = format!("{PATH}/{room_id}");
    eventually("the idle room is no node's", || async {
        t.get(&item, &t.admin_token()).await.1["running_on"].is_null()
    })
    .await;
    assert!(listed(&t).await[0]["running_on"].is_null());
    t.room(&room_id).await;
    let (_, got) = t.get(&item, &t.admin_token()).await;
    assert_eq!(got["running_on"], "local", "the room runs again once used");
}

/// Embedded, room-api runs the robot rooms itself: robots join toward the hour's audience, sit
/// on seats (never the last free one) and send free gifts the room shows as heat; disabled,
/// the room's robots leave and do not come back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_room_api_runs_enabled_robot_rooms_and_stops_disabled_ones() {
    let t = TestApp::with(|s| {
        s.robots.reconcile_every_ms = 100;
        s.robots.step_every_ms = 100;
    })
    .await;
    let mut body = config();
    body["audience"] = json!(vec![4; 24]);
    body["seat_count"] = json!(4);
    body["seats"] = json!(3);
    body["gift_rate_per_minute"] = json!(600);
    let (status, created) = create(&t, body).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let room_id = created["room_id"].as_str().unwrap().to_owned();

    eventually(
        "four robots are in the room, three on seats, gifts heat it",
        || async {
            let room = t.room(&room_id).await;
            let seated = room["seats"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|seat| !seat["user_id"].is_null())
                .count();
            room["online_count"] == 4 && seated == 3 && room["heat"].as_i64().unwrap() > 0
        },
    )
    .await;
    for _ in 0..10 {
        let room = t.room(&room_id).await;
        let free = room["seats"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|seat| seat["user_id"].is_null() && seat["locked"] == false)
            .count();
        assert!(free >= 1, "robots took the last free seat: {room}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let (status, patched) = patch(&t, &room_id, json!({"enabled": false, "version": 1})).await;
    assert_eq!(status, StatusCode::OK, "{patched}");
    eventually("the disabled room's robots left", || async {
        t.room(&room_id).await["online_count"] == 0
    })
    .await;
    // Over the next five reconciles and steps, still nobody: the runtime is gone.
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let room = t.room(&room_id).await;
        assert_eq!(room["online_count"], 0, "{room}");
    }
}
