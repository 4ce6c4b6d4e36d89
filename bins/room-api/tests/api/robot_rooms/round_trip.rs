//! The robot room routes end to end: create, list, get, change and delete; only platform
//! admins reach them; and what the OpenAPI document says they answer.

use axum::http::{Method, StatusCode};
use serde_json::json;

use super::fixtures::{PATH, config, create, listed, robots};
use crate::support::{TestApp, error_code};

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
