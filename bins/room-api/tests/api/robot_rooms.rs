//! The robot room admin routes: the round trip, who may call them, every rule of a
//! configuration refused with its code and nothing stored, a retry landing on the same room
//! (and only on a room this admin's request asks for), a change stored before the room shows
//! it, what the OpenAPI document says of them, and `running_on`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use room_app::ports::{RobotRoomConfig, RobotRooms, RobotRoomsRef};
use room_domain::{RoomId, UserId};
use room_node::{App, Storage};
use serde_json::{Value, json};
use tempfile::TempDir;
use tower::ServiceExt;

use crate::support::{TestApp, error_code, eventually, parse, settings};

const PATH: &str = "/v1/admin/robot-rooms";

fn robots(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("robot-{i}")).collect()
}

fn config() -> Value {
    json!({
        "profile": {"name": "Night owls", "notice": "Music all night", "cover_url": "https://img.example/owl.png"},
        "seat_count": 8,
        "robots": robots(5),
        "audience": (0..24).map(|h| h % 6).collect::<Vec<_>>(),
        "seats": 3,
        "gift_rate_per_minute": 30,
        "gift_mix": [{"gift_id": "rose", "weight": 5}],
        "enabled": true
    })
}

async fn create(t: &TestApp, body: Value) -> (StatusCode, Value) {
    t.post(PATH, &t.admin_token(), body).await
}

/// A token of another platform admin than [`TestApp::admin_token`]'s.
fn other_admin_token(t: &TestApp) -> String {
    t.app
        .authenticator()
        .mint(
            &UserId::new("other-admin").unwrap(),
            true,
            Duration::from_secs(600),
        )
        .unwrap()
}

/// A creation by the admin of `token`, with `key` as its `Idempotency-Key`.
async fn create_keyed(t: &TestApp, token: &str, key: &str, body: Value) -> (StatusCode, Value) {
    let request = Request::builder()
        .method(Method::POST)
        .uri(PATH)
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .header(header::CONTENT_TYPE, "application/json")
        .header("idempotency-key", key)
        .body(Body::from(body.to_string()))
        .unwrap();
    let (status, _, body) = t.send(request).await;
    (status, parse(&body))
}

async fn patch(t: &TestApp, room_id: &str, body: Value) -> (StatusCode, Value) {
    t.call(
        Method::PATCH,
        &format!("{PATH}/{room_id}"),
        Some(&t.admin_token()),
        Some(body),
    )
    .await
}

async fn listed(t: &TestApp) -> Vec<Value> {
    let (status, body) = t.get(PATH, &t.admin_token()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["robot_rooms"].as_array().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_list_get_patch_and_delete() {
    let t = TestApp::new().await;
    let admin = t.admin_token();
    let (status, created) = create(&t, config()).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let room_id = created["room_id"].as_str().unwrap().to_owned();
    assert_eq!(created["robots"], json!(robots(5)));
    assert_eq!(created["seat_count"], 8);
    assert_eq!(created["seats"], 3);
    assert_eq!(created["version"], 1);
    assert_eq!(created["profile"]["notice"], "Music all night");

    // The room is an ordinary room, owned by the first robot, with the profile.
    let room = t.room(&room_id).await;
    assert_eq!(room["owner"], "robot-0");
    assert_eq!(room["name"], "Night owls");
    assert_eq!(room["notice"], "Music all night");
    assert_eq!(room["cover_url"], "https://img.example/owl.png");
    assert_eq!(room["seats"].as_array().unwrap().len(), 8);

    let (status, got) = t.get(&format!("{PATH}/{room_id}"), &admin).await;
    assert_eq!(status, StatusCode::OK, "{got}");
    assert_eq!(got["audience"], created["audience"]);
    assert_eq!(got["gift_mix"], json!([{"gift_id": "rose", "weight": 5}]));
    let list = listed(&t).await;
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["room_id"], room_id.as_str());

    let (status, patched) = t
        .call(
            Method::PATCH,
            &format!("{PATH}/{room_id}"),
            Some(&admin),
            Some(json!({"enabled": false, "seats": 0, "profile": {"name": "Early birds"}, "version": 1})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{patched}");
    assert_eq!(patched["enabled"], false);
    assert_eq!(patched["seats"], 0);
    assert_eq!(patched["version"], 2);
    assert_eq!(patched["profile"]["name"], "Early birds");
    assert_eq!(
        patched["profile"]["notice"], "Music all night",
        "untouched fields stay"
    );
    assert_eq!(patched["robots"], json!(robots(5)));
    assert_eq!(
        t.room(&room_id).await["name"],
        "Early birds",
        "the room shows the new name"
    );
    let (_, got) = t.get(&format!("{PATH}/{room_id}"), &admin).await;
    assert_eq!(got["version"], 2, "the change is stored");

    let (status, body) = t
        .call(
            Method::PATCH,
            &format!("{PATH}/{room_id}"),
            Some(&admin),
            Some(json!({"enabled": true, "version": 1})),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(error_code(&body), "ROBOT_ROOM_CHANGED");

    let (status, body) = t
        .call(
            Method::DELETE,
            &format!("{PATH}/{room_id}"),
            Some(&admin),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    assert!(listed(&t).await.is_empty());
    for (method, body) in [
        (Method::GET, None),
        (Method::PATCH, Some(json!({"enabled": true}))),
        (Method::DELETE, None),
    ] {
        let (status, answer) = t
            .call(
                method.clone(),
                &format!("{PATH}/{room_id}"),
                Some(&admin),
                body,
            )
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {answer}");
        assert_eq!(error_code(&answer), "ROBOT_ROOM_NOT_FOUND");
    }
    assert_eq!(
        t.room(&room_id).await["status"],
        "open",
        "the room itself stays"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_platform_admins_reach_the_routes() {
    let t = TestApp::new().await;
    let (status, created) = create(&t, config()).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let room_id = created["room_id"].as_str().unwrap();
    let user = t.token("alice");
    let item = format!("{PATH}/{room_id}");
    for (method, path, body) in [
        (Method::POST, PATH, Some(config())),
        (Method::GET, PATH, None),
        (Method::GET, item.as_str(), None),
        (
            Method::PATCH,
            item.as_str(),
            Some(json!({"enabled": false})),
        ),
        (Method::DELETE, item.as_str(), None),
    ] {
        let (status, body) = t.call(method.clone(), path, Some(&user), body).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{method} {path}: {body}");
        assert_eq!(error_code(&body), "FORBIDDEN");
        let (status, _) = t.call(method.clone(), path, None, None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{method} {path}");
    }
    let (_, got) = t.get(&item, &t.admin_token()).await;
    assert_eq!(got["enabled"], true, "nothing changed");
    assert_eq!(listed(&t).await.len(), 1, "nothing was created");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_rule_is_refused_with_its_code_and_nothing_is_stored() {
    let t = TestApp::new().await;
    let with = |pointer: &str, value: Value| {
        let mut body = config();
        *body.pointer_mut(pointer).unwrap() = value;
        body
    };
    let with_unknown = {
        let mut body = config();
        body["unknown"] = json!(1);
        body
    };
    let without = |key: &str| {
        let mut body = config();
        body.as_object_mut().unwrap().remove(key);
        body
    };
    let mut duplicate = robots(5);
    duplicate[3] = "robot-1".into();
    let cases: Vec<(Value, &str, &str)> = vec![
        (
            with("/profile/name", json!("")),
            "INVALID_ROBOT_ROOM",
            "profile.name",
        ),
        (
            with("/profile/name", json!("   ")),
            "INVALID_ROBOT_ROOM",
            "profile.name",
        ),
        (
            with("/profile/name", json!("x".repeat(31))),
            "INVALID_ROBOT_ROOM",
            "profile.name",
        ),
        (
            with("/profile/name", json!("a\u{202E}b")),
            "INVALID_ROBOT_ROOM",
            "profile.name",
        ),
        (
            with("/profile/notice", json!("n".repeat(501))),
            "INVALID_ROBOT_ROOM",
            "profile.notice",
        ),
        (
            with("/profile/cover_url", json!("u".repeat(513))),
            "INVALID_ROBOT_ROOM",
            "profile.cover_url",
        ),
        (
            with("/seat_count", json!(0)),
            "INVALID_ROBOT_ROOM",
            "seat_count",
        ),
        (
            with("/seat_count", json!(21)),
            "INVALID_ROBOT_ROOM",
            "seat_count",
        ),
        (with("/robots", json!([])), "INVALID_ROBOT_ROOM", "robots"),
        (
            with("/robots", json!(robots(201))),
            "INVALID_ROBOT_ROOM",
            "robots",
        ),
        (
            with("/robots", json!(duplicate)),
            "INVALID_ROBOT_ROOM",
            "robots[3]",
        ),
        (
            with("/robots/2", json!("alice")),
            "INVALID_ROBOT_ROOM",
            "robots[2]",
        ),
        (
            with("/robots/2", json!("robot x")),
            "INVALID_ID",
            "robots[2]",
        ),
        (
            with("/audience", json!(vec![0; 23])),
            "INVALID_ROBOT_ROOM",
            "audience",
        ),
        (
            with("/audience", json!(vec![0; 25])),
            "INVALID_ROBOT_ROOM",
            "audience",
        ),
        (
            with("/audience/7", json!(6)),
            "INVALID_ROBOT_ROOM",
            "audience[7]",
        ),
        (with("/audience/7", json!(-1)), "INVALID_BODY", "audience"),
        (with("/seats", json!(8)), "INVALID_ROBOT_ROOM", "seats"),
        (with("/seats", json!(-1)), "INVALID_ROBOT_ROOM", "seats"),
        (with("/seats", json!(300)), "INVALID_ROBOT_ROOM", "seats"),
        (
            with("/robots", json!(robots(2))),
            "INVALID_ROBOT_ROOM",
            "audience[3]",
        ),
        (
            with("/gift_rate_per_minute", json!(601)),
            "INVALID_ROBOT_ROOM",
            "gift_rate_per_minute",
        ),
        (
            with("/gift_rate_per_minute", json!(-1)),
            "INVALID_BODY",
            "gift_rate_per_minute",
        ),
        (
            with("/gift_mix", json!([])),
            "INVALID_ROBOT_ROOM",
            "gift_mix",
        ),
        (
            with(
                "/gift_mix",
                json!(
                    (0..21)
                        .map(|i| json!({"gift_id": format!("g{i}"), "weight": 1}))
                        .collect::<Vec<_>>()
                ),
            ),
            "INVALID_ROBOT_ROOM",
            "gift_mix",
        ),
        (
            with(
                "/gift_mix",
                json!([{"gift_id": "rose", "weight": 1}, {"gift_id": "rose", "weight": 2}]),
            ),
            "INVALID_ROBOT_ROOM",
            "gift_mix[1].gift_id",
        ),
        (
            with("/gift_mix/0/weight", json!(0)),
            "INVALID_ROBOT_ROOM",
            "gift_mix[0].weight",
        ),
        (
            with("/gift_mix/0/weight", json!(10_001)),
            "INVALID_ROBOT_ROOM",
            "gift_mix[0].weight",
        ),
        (
            with("/gift_mix/0/gift_id", json!("no-such-gift")),
            "INVALID_ROBOT_ROOM",
            "gift_mix[0].gift_id",
        ),
        (with("/enabled", json!("yes")), "INVALID_BODY", "enabled"),
        (with_unknown, "INVALID_BODY", "unknown"),
        (without("robots"), "INVALID_BODY", "robots"),
        (without("audience"), "INVALID_BODY", "audience"),
    ];
    for (body, code, field) in cases {
        let (status, answer) = create(&t, body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {answer}");
        assert_eq!(error_code(&answer), code, "{body}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains(field), "{field} is named in {message:?}");
    }
    let (status, answer) = t
        .call(Method::POST, PATH, Some(&t.admin_token()), None)
        .await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{answer}");
    assert!(listed(&t).await.is_empty(), "no configuration was stored");
    let (status, rooms) = t.get("/v1/rooms", &t.token("alice")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(rooms["rooms"], json!([]), "no room was created");

    // The same rules hold for a change, checked as a whole.
    let (_, created) = create(&t, config()).await;
    let item = format!("{PATH}/{}", created["room_id"].as_str().unwrap());
    for (patch, code) in [
        (json!({"robots": robots(2)}), "INVALID_ROBOT_ROOM"),
        (json!({"seats": 8}), "INVALID_ROBOT_ROOM"),
        (json!({"audience": vec![0; 3]}), "INVALID_ROBOT_ROOM"),
        (json!({"gift_mix": []}), "INVALID_ROBOT_ROOM"),
        (json!({"profile": {"name": ""}}), "INVALID_ROBOT_ROOM"),
        (json!({"room_id": "other"}), "INVALID_BODY"),
        (json!({"seat_count": 4}), "INVALID_BODY"),
    ] {
        let (status, answer) = t
            .call(
                Method::PATCH,
                &item,
                Some(&t.admin_token()),
                Some(patch.clone()),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{patch}: {answer}");
        assert_eq!(error_code(&answer), code, "{patch}: {answer}");
    }
    let (_, got) = t.get(&item, &t.admin_token()).await;
    assert_eq!(got["version"], 1, "no refused change was stored");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_creation_lands_on_the_same_room() {
    let t = TestApp::new().await;
    let (status, first) = create(&t, config()).await;
    assert_eq!(status, StatusCode::CREATED, "{first}");
    let (status, again) = create(&t, config()).await;
    assert_eq!(status, StatusCode::CREATED, "{again}");
    assert_eq!(
        again["room_id"], first["room_id"],
        "a plain retry converges"
    );
    assert_eq!(again["created_at"], first["created_at"]);
    assert_eq!(listed(&t).await.len(), 1);

    // Another configuration gets another room.
    let mut other = config();
    other["robots"] = json!(["robot-a", "robot-b"]);
    other["audience"] = json!(vec![1; 24]);
    other["seats"] = json!(1);
    let (status, second) = create(&t, other).await;
    assert_eq!(status, StatusCode::CREATED, "{second}");
    assert_ne!(second["room_id"], first["room_id"]);
    let ids: Vec<Value> = listed(&t)
        .await
        .iter()
        .map(|r| r["room_id"].clone())
        .collect();
    assert_eq!(ids.len(), 2);
    assert!(ids[0].as_str() < ids[1].as_str(), "listed by room id");

    // Paging.
    let (status, page) = t.get(&format!("{PATH}?limit=1"), &t.admin_token()).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(page["robot_rooms"].as_array().unwrap().len(), 1);
    let cursor = page["next_cursor"].as_str().unwrap();
    let (_, rest) = t
        .get(&format!("{PATH}?limit=1&cursor={cursor}"), &t.admin_token())
        .await;
    assert_eq!(rest["robot_rooms"][0]["room_id"], ids[1]);
    for query in ["limit=0", "limit=101", "limit=x"] {
        let (status, body) = t.get(&format!("{PATH}?{query}"), &t.admin_token()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {body}");
    }
}

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_is_scoped_to_the_admin_who_sent_it() {
    let t = TestApp::new().await;
    let (status, first) = create_keyed(&t, &t.admin_token(), "night-1", config()).await;
    assert_eq!(status, StatusCode::CREATED, "{first}");
    let room_id = first["room_id"].as_str().unwrap().to_owned();

    // Another admin, the same key and the same pool: another request, refused since the pool's
    // robots are in the first room's (nothing lands on the first admin's room).
    let other = other_admin_token(&t);
    let (status, refused) = create_keyed(&t, &other, "night-1", config()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
    assert_eq!(error_code(&refused), "INVALID_ROBOT_ROOM");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains(&room_id),
        "{refused}"
    );
    // The same key with a pool of its own, another notice: another room.
    let mut theirs = config();
    theirs["profile"]["notice"] = json!("Their notice");
    theirs["robots"] = json!((10..15).map(|i| format!("robot-{i}")).collect::<Vec<_>>());
    let (status, second) = create_keyed(&t, &other, "night-1", theirs.clone()).await;
    assert_eq!(status, StatusCode::CREATED, "{second}");
    assert_ne!(second["room_id"], room_id.as_str(), "another admin's room");
    assert_eq!(
        t.room(&room_id).await["notice"],
        "Music all night",
        "the first admin's room is untouched"
    );
    let (status, again) = create_keyed(&t, &other, "night-1", theirs).await;
    assert_eq!(status, StatusCode::CREATED, "{again}");
    assert_eq!(again["room_id"], second["room_id"], "their retry converges");

    // A keyed and an unkeyed creation of the same content are two requests.
    let mut same = config();
    same["robots"] = json!((20..25).map(|i| format!("robot-{i}")).collect::<Vec<_>>());
    let (status, keyed) = create_keyed(&t, &t.admin_token(), "night-3", same.clone()).await;
    assert_eq!(status, StatusCode::CREATED, "{keyed}");
    let (status, unkeyed) = create(&t, same).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "the same pool: {unkeyed}");
    let mut apart = config();
    apart["robots"] = json!((30..35).map(|i| format!("robot-{i}")).collect::<Vec<_>>());
    let (status, unkeyed) = create(&t, apart).await;
    assert_eq!(status, StatusCode::CREATED, "{unkeyed}");
    assert_ne!(unkeyed["room_id"], room_id.as_str());
    assert_eq!(listed(&t).await.len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_robot_is_in_one_pool_and_no_pool_holds_a_visitor() {
    let t = TestApp::new().await;
    let (status, first) = create(&t, config()).await;
    assert_eq!(status, StatusCode::CREATED, "{first}");
    let first_room = first["room_id"].as_str().unwrap().to_owned();
    let mut other = config();
    other["robots"] = json!(["robot-7", "robot-8", "robot-3", "robot-9", "robot-10"]);
    let (status, body) = create(&t, other.clone()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("robots[2]") && message.contains(&first_room),
        "{body}"
    );
    let mut visitor = config();
    visitor["robots"] = json!(["robot-40", "robot-visitor-1"]);
    visitor["audience"] = json!(vec![1; 24]);
    visitor["seats"] = json!(1);
    let (status, body) = create(&t, visitor).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("robots[1]")
    );

    // A room of its own, then a change that would take a robot of the first: refused, and
    // nothing changes; a change that keeps its own robots passes.
    other["robots"] = json!(["robot-50", "robot-51", "robot-52", "robot-53", "robot-54"]);
    let (status, second) = create(&t, other).await;
    assert_eq!(status, StatusCode::CREATED, "{second}");
    let second_room = second["room_id"].as_str().unwrap().to_owned();
    let (status, body) = patch(
        &t,
        &second_room,
        json!({"robots": ["robot-50", "robot-51", "robot-52", "robot-53", "robot-0"]}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (_, got) = t
        .get(&format!("{PATH}/{second_room}"), &t.admin_token())
        .await;
    assert_eq!(got["robots"][4], "robot-54");
    let (status, body) = patch(&t, &second_room, json!({"seats": 1})).await;
    assert_eq!(status, StatusCode::OK, "its own pool again: {body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_reused_for_another_room_writes_nothing() {
    let t = TestApp::new().await;
    let admin = t.admin_token();
    let (status, first) = create_keyed(&t, &admin, "night-2", config()).await;
    assert_eq!(status, StatusCode::CREATED, "{first}");
    let room_id = first["room_id"].as_str().unwrap().to_owned();
    let room_before = t.room(&room_id).await;

    for (pointer, value) in [
        ("/profile/notice", json!("Another notice")),
        ("/profile/cover_url", json!("https://img.example/other.png")),
        ("/profile/name", json!("Other name")),
        ("/seat_count", json!(10)),
        ("/seats", json!(2)),
        ("/enabled", json!(false)),
        ("/region", json!("eu")),
    ] {
        let mut body = config();
        match body.pointer_mut(pointer) {
            Some(field) => *field = value,
            None => body["region"] = value,
        }
        let (status, answer) = create_keyed(&t, &admin, "night-2", body).await;
        assert_eq!(status, StatusCode::CONFLICT, "{pointer}: {answer}");
        assert_eq!(error_code(&answer), "ROBOT_ROOM_EXISTS", "{pointer}");
        assert_eq!(
            t.room(&room_id).await,
            room_before,
            "{pointer}: nothing was written to the room"
        );
    }
    let (_, got) = t.get(&format!("{PATH}/{room_id}"), &admin).await;
    assert_eq!(got, first, "nothing was written to the configuration");
    assert_eq!(listed(&t).await.len(), 1);

    let (status, again) = create_keyed(&t, &admin, "night-2", config()).await;
    assert_eq!(status, StatusCode::CREATED, "{again}");
    assert_eq!(again["room_id"], room_id.as_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeat_lands_on_its_room_only_while_that_is_open() {
    let t = TestApp::new().await;
    let admin = t.admin_token();
    let mut plain = config();
    // No notice or cover: the creation has no profile step to fail on a closed room.
    plain["profile"] = json!({"name": "Night owls"});
    for (key, body) in [(Some("night-3"), config()), (None, plain)] {
        let send = || async {
            match key {
                Some(key) => create_keyed(&t, &admin, key, body.clone()).await,
                None => create(&t, body.clone()).await,
            }
        };
        let (status, first) = send().await;
        assert_eq!(status, StatusCode::CREATED, "{first}");
        let room_id = first["room_id"].as_str().unwrap().to_owned();
        let item = format!("{PATH}/{room_id}");

        // After a delete, the room is open still: the same request configures it again.
        let (status, _) = t.call(Method::DELETE, &item, Some(&admin), None).await;
        assert_eq!(status, StatusCode::NO_CONTENT);
        let (status, again) = send().await;
        assert_eq!(status, StatusCode::CREATED, "{again}");
        assert_eq!(again["room_id"], room_id.as_str());

        let (status, _) = t.call(Method::DELETE, &item, Some(&admin), None).await;
        assert_eq!(status, StatusCode::NO_CONTENT);
        let (status, body) = t
            .post(&format!("/v1/rooms/{room_id}/close"), &admin, json!({}))
            .await;
        assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
        let (status, answer) = send().await;
        assert_eq!(status, StatusCode::CONFLICT, "{key:?}: {answer}");
        assert_eq!(error_code(&answer), "ROBOT_ROOM_EXISTS", "{answer}");
        let (status, _) = t.get(&item, &admin).await;
        assert_eq!(
            status,
            StatusCode::NOT_FOUND,
            "no configuration of a closed room"
        );
    }
}

/// Robot room storage where another change lands between a change's read and its write,
/// once armed.
struct Racing {
    inner: RobotRoomsRef,
    armed: AtomicBool,
}

type Answer<'a, T> = Pin<Box<dyn Future<Output = room_app::Result<T>> + Send + 'a>>;

// By hand rather than with `async_trait`, which this crate does not depend on: the same
// signatures the macro gives the trait.
impl RobotRooms for Racing {
    fn create<'s, 'c, 'a>(&'s self, config: &'c RobotRoomConfig) -> Answer<'a, ()>
    where
        's: 'a,
        'c: 'a,
        Self: 'a,
    {
        self.inner.create(config)
    }

    fn get<'s, 'r, 'a>(&'s self, room_id: &'r RoomId) -> Answer<'a, Option<RobotRoomConfig>>
    where
        's: 'a,
        'r: 'a,
        Self: 'a,
    {
        self.inner.get(room_id)
    }

    fn list<'s, 'a>(&'s self, after: Option<RoomId>, limit: u32) -> Answer<'a, Vec<RobotRoomConfig>>
    where
        's: 'a,
        Self: 'a,
    {
        self.inner.list(after, limit)
    }

    fn update<'s, 'c, 'a>(&'s self, config: &'c RobotRoomConfig, expected: u64) -> Answer<'a, ()>
    where
        's: 'a,
        'c: 'a,
        Self: 'a,
    {
        Box::pin(async move {
            if self.armed.swap(false, Ordering::SeqCst) {
                let mut other = self.inner.get(&config.room_id).await?.unwrap();
                other.gift_rate_per_minute += 1;
                other.version += 1;
                self.inner.update(&other, other.version - 1).await?;
            }
            self.inner.update(config, expected).await
        })
    }

    fn delete<'s, 'r, 'a>(&'s self, room_id: &'r RoomId) -> Answer<'a, bool>
    where
        's: 'a,
        'r: 'a,
        Self: 'a,
    {
        self.inner.delete(room_id)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_that_loses_a_race_changes_no_room() {
    let dir = TempDir::new().unwrap();
    let settings = settings(&dir);
    let mut storage = Storage::open(&settings.storage).await.unwrap();
    let racing = Arc::new(Racing {
        inner: storage.robots.clone(),
        armed: AtomicBool::new(false),
    });
    storage.robots = racing.clone();
    let app = App::build_with_storage(settings, storage).await.unwrap();
    app.start().await.unwrap();
    let admin = app
        .authenticator()
        .mint(
            &UserId::new("platform-admin").unwrap(),
            true,
            Duration::from_secs(600),
        )
        .unwrap();
    let call = |method: Method, path: String, body: Option<Value>| {
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header(header::AUTHORIZATION, format!("Bearer {admin}"));
        if body.is_some() {
            request = request.header(header::CONTENT_TYPE, "application/json");
        }
        let request = request
            .body(body.map_or_else(Body::empty, |body| Body::from(body.to_string())))
            .unwrap();
        let router = app.router();
        async move {
            let response = router.oneshot(request).await.unwrap();
            let status = response.status();
            let body = axum::body::to_bytes(response.into_body(), 1 << 20)
                .await
                .unwrap();
            (status, parse(&body))
        }
    };
    let (status, created) = call(Method::POST, PATH.into(), Some(config())).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let room_id = created["room_id"].as_str().unwrap().to_owned();

    racing.armed.store(true, Ordering::SeqCst);
    let (status, answer) = call(
        Method::PATCH,
        format!("{PATH}/{room_id}"),
        Some(json!({"profile": {"name": "Early birds", "notice": "Mornings"}})),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{answer}");
    assert_eq!(error_code(&answer), "ROBOT_ROOM_CHANGED");
    let (status, room) = call(Method::GET, format!("/v1/rooms/{room_id}"), None).await;
    assert_eq!(status, StatusCode::OK, "{room}");
    assert_eq!(room["name"], "Night owls", "the room keeps its profile");
    assert_eq!(room["notice"], "Music all night");
    let (_, got) = call(Method::GET, format!("{PATH}/{room_id}"), None).await;
    assert_eq!(got["version"], 2, "only the other change is stored");
    assert_eq!(got["profile"]["name"], "Night owls");

    // Unraced, the change is stored and shown, and its repeat (on a stale version) converges.
    for _ in 0..2 {
        let (status, patched) = call(
            Method::PATCH,
            format!("{PATH}/{room_id}"),
            Some(json!({"profile": {"name": "Early birds"}, "version": 2})),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{patched}");
        assert_eq!(patched["version"], 3);
    }
    let (_, room) = call(Method::GET, format!("/v1/rooms/{room_id}"), None).await;
    assert_eq!(room["name"], "Early birds");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_room_takes_no_profile_and_version_starts_at_1() {
    let t = TestApp::new().await;
    let admin = t.admin_token();
    let (_, created) = create(&t, config()).await;
    let room_id = created["room_id"].as_str().unwrap().to_owned();

    let (status, answer) = patch(&t, &room_id, json!({"enabled": false, "version": 0})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert_eq!(error_code(&answer), "INVALID_ROBOT_ROOM");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("version")
    );

    let (status, body) = t
        .post(&format!("/v1/rooms/{room_id}/close"), &admin, json!({}))
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    let (status, answer) = patch(&t, &room_id, json!({"profile": {"name": "Early birds"}})).await;
    assert_eq!(
        status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "the status the room gives: {answer}"
    );
    assert_eq!(error_code(&answer), "ROOM_CLOSED");
    let (_, got) = t.get(&format!("{PATH}/{room_id}"), &admin).await;
    assert_eq!(got["version"], 1, "nothing was stored");
    assert_eq!(got["profile"]["name"], "Night owls");
    // What the room does not show can still change.
    let (status, patched) = patch(&t, &room_id, json!({"enabled": false})).await;
    assert_eq!(status, StatusCode::OK, "{patched}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disabled_gift_is_refused_in_a_gift_mix() {
    let t = TestApp::new().await;
    let admin = t.admin_token();
    let (status, body) = t
        .call(
            Method::PUT,
            "/v1/admin/gifts/wilted-rose",
            Some(&admin),
            Some(json!({"name": "Wilted rose", "price": 1, "enabled": false})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let mut body = config();
    body["gift_mix"] =
        json!([{"gift_id": "rose", "weight": 1}, {"gift_id": "wilted-rose", "weight": 1}]);
    let (status, answer) = create(&t, body).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert_eq!(error_code(&answer), "INVALID_ROBOT_ROOM");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("gift_mix[1].gift_id"), "{message}");
    assert!(message.contains("disabled"), "{message}");
    assert!(listed(&t).await.is_empty());

    let (_, created) = create(&t, config()).await;
    let room_id = created["room_id"].as_str().unwrap();
    let (status, answer) = patch(
        &t,
        room_id,
        json!({"gift_mix": [{"gift_id": "wilted-rose", "weight": 1}]}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("gift_mix[0].gift_id")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_document_says_what_the_routes_answer() {
    let t = TestApp::new().await;
    let (status, document) = t.call(Method::GET, "/openapi.json", None, None).await;
    assert_eq!(status, StatusCode::OK);
    let key_text = |path: &str, method: &str| {
        document["paths"][path][method]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "Idempotency-Key")
            .unwrap_or_else(|| panic!("{method} {path} documents Idempotency-Key"))["description"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let item = "/v1/admin/robot-rooms/{room_id}";
    let post = key_text(PATH, "post");
    assert!(
        !post.contains("whatever its path values and body"),
        "{post}"
    );
    assert!(
        post.contains("ROBOT_ROOM_EXISTS") && post.contains("admin"),
        "{post}"
    );
    for method in ["patch", "delete"] {
        let text = key_text(item, method);
        assert!(text.contains("Checked only"), "{method}: {text}");
    }
    let statuses = |path: &str, method: &str| -> Vec<String> {
        document["paths"][path][method]["responses"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect()
    };
    for (path, method, wanted) in [
        (
            PATH,
            "post",
            &["201", "400", "401", "403", "409", "429", "503"][..],
        ),
        (PATH, "get", &["200", "400", "401", "403", "429", "503"][..]),
        (
            item,
            "get",
            &["200", "400", "401", "403", "404", "429", "503"][..],
        ),
        (
            item,
            "patch",
            &[
                "200", "400", "401", "403", "404", "409", "422", "429", "503",
            ][..],
        ),
        (
            item,
            "delete",
            &["204", "400", "401", "403", "404", "429", "503"][..],
        ),
    ] {
        let documented = statuses(path, method);
        for status in wanted {
            assert!(
                documented.iter().any(|s| s == status),
                "{method} {path}: {status} in {documented:?}"
            );
        }
    }
    let patch = &document["paths"][item]["patch"]["responses"];
    assert!(
        patch["422"]["description"]
            .as_str()
            .unwrap()
            .contains("ROOM_CLOSED")
    );
    let version =
        &document["components"]["schemas"]["PatchRobotRoomRequest"]["properties"]["version"];
    assert_eq!(version["minimum"], 1, "{version}");
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
