//! Inside a robot room run by an orchestrator: disabled, its robots leave and stay gone; a
//! person's paid gift, sent through `room-api`, is forwarded to the orchestrator running the
//! room, debited once and shown in the room.

use std::time::Duration;

use serde_json::{Value, json};
use sqlx::{Connection, MySqlConnection};

use crate::support::{Cluster, DEADLINE, ROOMS, metric, wait_until};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disabled_robot_rooms_robots_leave_and_stay_gone() {
    let Some(cluster) = Cluster::start("disabled").await else {
        return;
    };
    let room_id = cluster.rooms[0].clone();
    wait_until("the room's robots are in", DEADLINE, || async {
        let room = cluster.api.room(&room_id).await;
        if room["online_count"] == 3 {
            Ok(())
        } else {
            Err(room.to_string())
        }
    })
    .await;
    let config = cluster.api.robot_room(&room_id).await;
    let patched = cluster
        .api
        .call_until_ok(
            reqwest::Method::PATCH,
            &format!("/v1/admin/robot-rooms/{room_id}"),
            "admin",
            Some(json!({"enabled": false, "version": config["version"]})),
        )
        .await;
    assert_eq!(patched["enabled"], false, "{patched}");

    wait_until("the disabled room's robots left", DEADLINE, || async {
        let room = cluster.api.room(&room_id).await;
        if room["online_count"] == 0 {
            Ok(())
        } else {
            Err(room.to_string())
        }
    })
    .await;
    // Six reconciles and steps later, still nobody, and no runtime of the room anywhere.
    let ids = cluster.ids();
    for _ in 0..15 {
        let room = cluster.api.room(&room_id).await;
        assert_eq!(room["online_count"], 0, "{room}");
        let seated = room["seats"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|seat| !seat["user_id"].is_null())
            .count();
        assert_eq!(seated, 0, "{room}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let mut runtimes = 0.0;
    let mut disabled = 0.0;
    for id in &ids {
        let text = cluster.orchestrator(id).metrics().await.unwrap();
        runtimes += metric(&text, "room_robot_runtimes", None);
        disabled += metric(
            &text,
            "room_robot_runtime_stops_total",
            Some("reason=\"disabled\""),
        );
    }
    assert_eq!(
        runtimes,
        (ROOMS - 1) as f64,
        "runtimes of the enabled rooms"
    );
    assert_eq!(disabled, 1.0, "one runtime stopped as disabled");
    // The room itself may still be active somewhere, an ordinary room now: the reads above,
    // forwarded by room-api to the node it last knew to run the room, activate it there.
    cluster.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persons_paid_gift_in_a_robot_room_is_forwarded_and_debited_once() {
    let Some(cluster) = Cluster::start("gift").await else {
        return;
    };
    let ids = cluster.ids();
    let room_id = cluster.rooms[0].clone();
    let api = &cluster.api;
    // Two robots sit down; the one on the lowest seat gets the gift.
    let robot = wait_until("robots sit on seats", DEADLINE, || async {
        let room = api.room(&room_id).await;
        let seated: Vec<String> = room["seats"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|seat| seat["user_id"].as_str())
            .filter(|user| user.starts_with("robot-"))
            .map(str::to_owned)
            .collect();
        if seated.len() == 2 {
            Ok(seated[0].clone())
        } else {
            Err(room.to_string())
        }
    })
    .await;
    api.post(&format!("/v1/rooms/{room_id}/join"), "alice", json!({}))
        .await;
    let credited = api
        .post(
            "/v1/admin/wallets/alice/credit",
            "admin",
            json!({"op_id": "gift-test-credit", "amount": 1000}),
        )
        .await;
    assert_eq!(credited["balance"], 1000, "{credited}");
    let running_on = api.robot_room(&room_id).await["running_on"].clone();
    assert!(
        ids.iter().any(|id| running_on == json!(id)),
        "the room runs on an orchestrator: {running_on}"
    );
    let heat_before = api.room(&room_id).await["heat"].as_i64().unwrap();

    let gift = json!({"order_id": "alice-1", "gift_id": "rose", "count": 3, "recipients": [robot]});
    let path = format!("/v1/rooms/{room_id}/gifts");
    let first = api.post(&path, "alice", gift.clone()).await;
    let expected = json!({"order_id": "alice-1", "status": "COMPLETED", "coin_balance_after": 970,
                          "recipients": [robot]});
    assert_eq!(first, expected);
    // A repeat of the order is answered the same and debits nothing more.
    let again = api.post(&path, "alice", gift).await;
    assert_eq!(again, expected);
    let wallet = api.get("/v1/me/wallet", "alice").await;
    assert_eq!(wallet["balance"], 970, "{wallet}");

    let room = api.room(&room_id).await;
    let heat = room["heat"].as_i64().unwrap();
    assert!(heat >= heat_before + 30, "heat {heat} after {heat_before}");
    // The rank is the room's board of senders: it trails the gift by the consumer's lag.
    let rank = wait_until("the gift is on the room's board", DEADLINE, || async {
        let rank = api
            .get(&format!("/v1/rooms/{room_id}/contribution-rank"), "alice")
            .await;
        let ranked = rank["entries"]
            .as_array()
            .is_some_and(|entries| entries.iter().any(|entry| entry["user_id"] == "alice"));
        if ranked {
            Ok(rank)
        } else {
            Err(rank.to_string())
        }
    })
    .await;
    let alice: Vec<&Value> = rank["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|entry| entry["user_id"] == "alice")
        .collect();
    assert_eq!(alice.len(), 1, "{rank}");
    assert_eq!(alice[0]["coins"], 30, "{rank}");
    let still = api.robot_room(&room_id).await["running_on"].clone();
    assert_eq!(still, running_on, "the room stayed where it ran");
    // The room ran on the orchestrator all along: room-api forwarded, and holds no cell of it.
    let metrics = reqwest::get(format!("{}/metrics", api.base))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let forwarded = metric(
        &metrics,
        "room_forwarded_requests_total",
        Some("outcome=\"ok\""),
    );
    assert!(forwarded >= 3.0, "room-api forwarded {forwarded} requests");

    let mut conn = MySqlConnection::connect(&cluster.shared.mysql_url)
        .await
        .unwrap();
    let orders: Vec<(String, String)> =
        sqlx::query_as("SELECT order_id, status FROM gift_orders WHERE sender = 'alice'")
            .fetch_all(&mut conn)
            .await
            .unwrap();
    assert_eq!(orders, vec![("alice-1".to_owned(), "COMPLETED".to_owned())]);
    let _ = conn.close().await;
    cluster.finish().await;
}
