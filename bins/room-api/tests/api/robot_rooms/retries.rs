//! A repeated robot room creation: a plain retry lands on the same room, a key is scoped to
//! the admin who sent it, a key reused for another room writes nothing, and a repeat lands on
//! its room only while that room is open.

use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

use super::fixtures::{PATH, config, create, create_keyed, listed, other_admin_token};
use crate::support::{TestApp, error_code};

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

    // Another configuration gets another room (with a cover of its own: one open room
    // shows a cover).
    let mut other = config();
    other["profile"]["cover_url"] = json!("https://img.example/owl-2.png");
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
    theirs["profile"]["cover_url"] = json!("https://img.example/their-owl.png");
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
    same["profile"]["cover_url"] = json!("https://img.example/owl-3.png");
    let (status, keyed) = create_keyed(&t, &t.admin_token(), "night-3", same.clone()).await;
    assert_eq!(status, StatusCode::CREATED, "{keyed}");
    let (status, unkeyed) = create(&t, same).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "the same pool: {unkeyed}");
    let mut apart = config();
    apart["robots"] = json!((30..35).map(|i| format!("robot-{i}")).collect::<Vec<_>>());
    apart["profile"]["cover_url"] = json!("https://img.example/owl-4.png");
    let (status, unkeyed) = create(&t, apart).await;
    assert_eq!(status, StatusCode::CREATED, "{unkeyed}");
    assert_ne!(unkeyed["room_id"], room_id.as_str());
    assert_eq!(listed(&t).await.len(), 4);
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
    // Keyed, a repeat gets the first answer, whatever happened since: the configuration
    // deleted stays deleted.
    let (status, first) = create_keyed(&t, &admin, "night-3", config()).await;
    assert_eq!(status, StatusCode::CREATED, "{first}");
    let item = format!("{PATH}/{}", first["room_id"].as_str().unwrap());
    let (status, _) = t.call(Method::DELETE, &item, Some(&admin), None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, again) = create_keyed(&t, &admin, "night-3", config()).await;
    assert_eq!((status, &again), (StatusCode::CREATED, &first));
    let (status, _) = t.get(&item, &admin).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "the repeat wrote nothing");

    // Unkeyed, the content names the room.
    for (key, body) in [(None::<&str>, plain)] {
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
