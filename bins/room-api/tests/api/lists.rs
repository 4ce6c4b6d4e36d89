//! The room lists through the API: tabs and their scopes, items with the owner's display
//! fields, pins made, listed and deleted by admins, and the errors of each.

use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::support::TestApp;

fn ids(page: &Value) -> Vec<String> {
    page["rooms"]
        .as_array()
        .expect("rooms")
        .iter()
        .map(|room| {
            let pinned = if room["pinned"] == true { "*" } else { "" };
            format!("{}{pinned}", room["room_id"].as_str().unwrap())
        })
        .collect()
}

async fn create_in(t: &TestApp, owner: &str, region: &str) -> String {
    let (status, body) = t
        .post(
            "/v1/rooms",
            &t.token(owner),
            json!({ "name": format!("{owner}'s room"), "region": region }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["room_id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn tabs_list_rooms_with_the_owners_display_fields() {
    let t = TestApp::new().await;
    let (status, body) = t
        .call(
            Method::PUT,
            "/v1/admin/users/ann",
            Some(&t.admin_token()),
            Some(json!({"nickname": "Ann", "country": "SA", "agency": "stars"})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let anns = create_in(&t, "ann", "eu").await;
    let bobs = create_in(&t, "bob", "us").await;
    t.refresh_lists().await;
    let reader = t.token("reader");

    let (status, page) = t.get("/v1/rooms?tab=new", &reader).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(ids(&page), [bobs.clone(), anns.clone()]);
    let ann = &page["rooms"][1];
    assert_eq!(ann["owner"], "ann");
    assert_eq!(ann["owner_nickname"], "Ann");
    assert_eq!(ann["country"], "SA");
    assert_eq!(ann["region"], "eu");
    assert_eq!(ann["locked"], false);
    assert_eq!(ann["pinned"], false);
    assert_eq!(ann["open"], true);
    assert!(ann["short_id"].as_u64().is_some(), "{ann}");
    assert!(ann.get("password").is_none() && ann.get("password_hash").is_none());

    for (query, expected) in [
        ("tab=region&region=eu", vec![anns.clone()]),
        ("tab=region&region=us", vec![bobs.clone()]),
        ("tab=country&country=SA", vec![anns.clone()]),
        ("tab=agency&agency=stars", vec![anns.clone()]),
        ("tab=country&country=EG", vec![]),
    ] {
        let (status, page) = t.get(&format!("/v1/rooms?{query}"), &reader).await;
        assert_eq!(status, StatusCode::OK, "{query}: {page}");
        assert_eq!(ids(&page), expected, "{query}");
    }

    // Pages: one room each, the cursor a place in the list.
    let (_, first) = t.get("/v1/rooms?tab=new&limit=1", &reader).await;
    assert_eq!(ids(&first), [bobs.as_str()]);
    let cursor = first["next_cursor"]
        .as_str()
        .expect("a next page")
        .to_owned();
    let (_, second) = t
        .get(
            &format!("/v1/rooms?tab=new&limit=1&cursor={cursor}"),
            &reader,
        )
        .await;
    assert_eq!(ids(&second), [anns.as_str()]);
    assert!(second["next_cursor"].is_null(), "{second}");

    // Following: the rooms the caller follows.
    let (status, _) = t
        .call(
            Method::PUT,
            &format!("/v1/rooms/{bobs}/follow"),
            Some(&reader),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (_, page) = t.get("/v1/rooms?tab=following", &reader).await;
    assert_eq!(ids(&page), [bobs.as_str()]);
}

#[tokio::test]
async fn bad_list_queries_are_refused_with_their_codes() {
    let t = TestApp::new().await;
    let reader = t.token("reader");
    for (query, code) in [
        ("tab=popular", "INVALID_QUERY"),
        ("tab=", "INVALID_QUERY"),
        ("tab=region&region=", "INVALID_QUERY"),
        ("tab=country&country=", "INVALID_QUERY"),
        ("tab=agency&agency=", "INVALID_QUERY"),
        ("tab=hot&region=eu", "INVALID_QUERY"),
        ("tab=region&country=SA", "INVALID_QUERY"),
        ("tab=country&country=sa", "INVALID_QUERY"),
        ("tab=agency&agency=a%2Fb", "INVALID_QUERY"),
        ("tab=new&cursor=1.5", "INVALID_CURSOR"),
        ("tab=following&cursor=7", "INVALID_CURSOR"),
        ("tab=new&cursor=-1", "INVALID_CURSOR"),
        ("tab=new&limit=101", "INVALID_LIMIT"),
        // The caller's own region, which the caller does not have.
        ("tab=region", "INVALID_REQUEST"),
    ] {
        let (status, body) = t.get(&format!("/v1/rooms?{query}"), &reader).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {body}");
        assert_eq!(body["error"]["code"], code, "{query}: {body}");
    }
}

#[tokio::test]
async fn admins_pin_a_room_into_one_list_and_delete_the_pin() {
    let t = TestApp::new().await;
    let first = create_in(&t, "ann", "eu").await;
    let second = create_in(&t, "bob", "eu").await;
    let admin = t.admin_token();
    let far = 4_000_000_000_000_i64;
    let pin = |body: Value| {
        let admin = admin.clone();
        let t = &t;
        async move { t.post("/v1/admin/pins", &admin, body).await }
    };
    let (status, made) = pin(json!({
        "room_id": first, "tab": "region", "region": "eu", "position": 1, "ends_at_ms": far
    }))
    .await;
    assert_eq!(status, StatusCode::CREATED, "{made}");
    assert_eq!(made["tab"], "region");
    assert_eq!(made["scope"], "eu");
    let pin_id = made["pin_id"].as_str().unwrap().to_owned();
    t.refresh_lists().await;
    let reader = t.token("reader");
    let (_, region) = t.get("/v1/rooms?tab=region&region=eu", &reader).await;
    assert_eq!(ids(&region), [format!("{first}*"), second.clone()]);
    // Only there: `new` shows the newest first and no pin.
    let (_, new) = t.get("/v1/rooms?tab=new", &reader).await;
    assert_eq!(ids(&new), [second.clone(), first.clone()]);

    let (status, listed) = t.get("/v1/admin/pins", &admin).await;
    assert_eq!(status, StatusCode::OK, "{listed}");
    assert_eq!(listed["pins"][0]["pin_id"], pin_id.as_str());

    for (body, code) in [
        (
            json!({"room_id": first, "tab": "trending", "position": 1, "ends_at_ms": far}),
            "INVALID_PIN",
        ),
        (
            json!({"room_id": first, "tab": "hot", "region": "eu", "position": 1, "ends_at_ms": far}),
            "INVALID_PIN",
        ),
        (
            json!({"room_id": first, "tab": "country", "position": 1, "ends_at_ms": far}),
            "INVALID_PIN",
        ),
        (
            json!({"room_id": first, "tab": "hot", "position": 0, "ends_at_ms": far}),
            "INVALID_PIN",
        ),
        (
            json!({"room_id": first, "tab": "hot", "position": 101, "ends_at_ms": far}),
            "INVALID_PIN",
        ),
        (
            json!({"room_id": first, "tab": "hot", "position": 1, "ends_at_ms": 1}),
            "INVALID_PIN",
        ),
        (
            json!({"room_id": first, "tab": "hot", "position": 1, "starts_at_ms": far, "ends_at_ms": far}),
            "INVALID_PIN",
        ),
    ] {
        let (status, answer) = pin(body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {answer}");
        assert_eq!(answer["error"]["code"], code, "{body}: {answer}");
    }
    let (status, answer) = pin(json!({
        "room_id": "never-made", "tab": "hot", "position": 1, "ends_at_ms": far
    }))
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{answer}");
    let (status, answer) = t
        .post(
            "/v1/admin/pins",
            &t.token("ann"),
            json!({"room_id": first, "tab": "hot", "position": 1, "ends_at_ms": far}),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{answer}");

    let delete = |id: String| {
        let admin = admin.clone();
        let t = &t;
        async move {
            t.call(
                Method::DELETE,
                &format!("/v1/admin/pins/{id}"),
                Some(&admin),
                None,
            )
            .await
        }
    };
    assert_eq!(delete(pin_id.clone()).await.0, StatusCode::NO_CONTENT);
    let (status, gone) = delete(pin_id).await;
    assert_eq!(
        (status, &gone["error"]["code"]),
        (StatusCode::NOT_FOUND, &json!("PIN_NOT_FOUND"))
    );
    t.refresh_lists().await;
    let (_, region) = t.get("/v1/rooms?tab=region&region=eu", &reader).await;
    assert!(ids(&region).iter().all(|id| !id.ends_with('*')), "{region}");
}
