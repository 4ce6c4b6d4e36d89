//! What a robot room configuration may hold: every rule refused with its code and nothing
//! stored, on a creation and on a change; a robot in one pool only, never a visitor; no
//! disabled gift in the mix.

use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

use super::fixtures::{PATH, config, create, listed, patch, robots};
use crate::support::{TestApp, error_code};

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
            with(
                "/profile/cover_url",
                json!(format!("https://img.example/{}", "u".repeat(2048))),
            ),
            "INVALID_URL",
            "profile.cover_url",
        ),
        (
            with("/profile/cover_url", json!("javascript:alert(1)")),
            "INVALID_URL",
            "profile.cover_url",
        ),
        (
            with("/robots/2", json!("robot-\u{430}lice")),
            "INVALID_ROBOT_ROOM",
            "robots[2]",
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
    other["profile"]["cover_url"] = json!("https://img.example/owl-2.png");
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
async fn a_cover_another_open_room_shows_is_refused_and_nothing_is_stored() {
    let t = TestApp::new().await;
    let (status, first) = create(&t, config()).await;
    assert_eq!(status, StatusCode::CREATED, "{first}");
    let mut other = config();
    other["robots"] = json!(["robot-60", "robot-61", "robot-62", "robot-63", "robot-64"]);
    let (status, body) = create(&t, other.clone()).await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::CONFLICT, "COVER_IN_USE"),
        "{body}"
    );
    assert_eq!(listed(&t).await.len(), 1, "nothing stored");
    other["profile"]["cover_url"] = json!("https://img.example/lark.png");
    let (status, second) = create(&t, other).await;
    assert_eq!(status, StatusCode::CREATED, "{second}");
    // A change to the first room's cover is refused, the configuration unchanged.
    let room_id = second["room_id"].as_str().unwrap();
    let (status, body) = patch(
        &t,
        room_id,
        json!({ "profile": { "cover_url": "https://img.example/owl.png" } }),
    )
    .await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::CONFLICT, "COVER_IN_USE"),
        "{body}"
    );
    let (status, stored) = t
        .call(
            Method::GET,
            &format!("{PATH}/{room_id}"),
            Some(&t.admin_token()),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(stored["version"], second["version"], "{stored}");
    assert_eq!(
        stored["profile"]["cover_url"],
        "https://img.example/lark.png"
    );
}
