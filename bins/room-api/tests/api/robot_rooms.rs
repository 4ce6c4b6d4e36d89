//! The robot room admin routes: the round trip, who may call them, every rule of a
//! configuration refused with its code and nothing stored, a retry landing on the same room,
//! and `running_on`.

use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::support::{TestApp, error_code, eventually};

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
    let t = TestApp::with(|s| s.cell.idle_secs = 1).await;
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
