//! The README walkthrough through the router: credit, create, join, seat, gift, balance.

use axum::http::{Method, StatusCode};
use serde_json::json;

use crate::support::{TestApp, error_code, eventually};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_walkthrough_moves_coins_and_fills_the_room() {
    let t = TestApp::new().await;
    let (alice, bob, admin) = (t.token("alice"), t.token("bob"), t.admin_token());

    // An admin credits alice; a repeat with the same op_id credits nothing more.
    for _ in 0..2 {
        let (status, body) = t
            .post(
                "/v1/admin/wallets/alice/credit",
                &admin,
                json!({"op_id": "topup-1", "amount": 1000}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["balance"], 1000);
    }
    assert_eq!(t.balance("alice").await, 1000);

    // alice creates a room; she owns it and it has a short id.
    let (status, room) = t
        .post(
            "/v1/rooms",
            &alice,
            json!({"name": "Night talk", "seat_count": 8, "region": "sg"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{room}");
    let room_id = room["room_id"].as_str().unwrap().to_owned();
    assert_eq!(room["owner"], "alice");
    assert_eq!(room["status"], "open");
    assert_eq!(room["seats"].as_array().unwrap().len(), 8);
    assert!(room.get("password").is_none());
    let short_id = room["short_id"].as_u64().unwrap();
    assert!((100_000..=99_999_999).contains(&short_id));
    let (status, by_short) = t
        .get(&format!("/v1/rooms/by-short-id/{short_id}"), &bob)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(by_short["room_id"], room_id.as_str());

    // Both join; join answers the snapshot.
    for token in [&alice, &bob] {
        let (status, snapshot) = t
            .post(&format!("/v1/rooms/{room_id}/join"), token, json!({}))
            .await;
        assert_eq!(status, StatusCode::OK, "{snapshot}");
        assert_eq!(snapshot["room_id"], room_id.as_str());
    }
    assert_eq!(t.room(&room_id).await["online_count"], 2);
    let (_, current) = t.get("/v1/me/current-room", &bob).await;
    assert_eq!(current["room_id"], room_id.as_str());

    // bob takes seat 1.
    let snapshot = t.seat(&room_id, "bob", 1, "take").await;
    assert_eq!(snapshot["seats"][1]["user_id"], "bob");
    assert_eq!(snapshot["seats"][1]["publishing"], false);

    // alice sends bob three roses (10 coins each).
    let (status, receipt) = t
        .gift(&room_id, "alice", "order-1", "rose", 3, &["bob"])
        .await;
    assert_eq!(status, StatusCode::OK, "{receipt}");
    assert_eq!(
        receipt,
        json!({"order_id": "order-1", "status": "COMPLETED", "coin_balance_after": 970,
               "recipients": ["bob"]})
    );
    assert_eq!(t.balance("alice").await, 970);
    assert_eq!(t.balance("bob").await, 0);
    // Bob earns half of the gift as income (the built-in billing policy), shortly after.
    eventually("bob's income is credited", || async {
        t.get("/v1/me/income", &bob).await.1["balance"] == 15
    })
    .await;
    let (_, income) = t.get("/v1/me/income", &bob).await;
    assert_eq!(income["entries"][0]["part"], "recipient");
    assert_eq!(income["entries"][0]["amount"], 15);
    assert_eq!(income["next_cursor"], serde_json::Value::Null);

    let room = t.room(&room_id).await;
    assert_eq!(room["heat"], 30);
    assert_eq!(room["rocket"]["fuel"], 30);
    let rank = t
        .rank_when(&room_id, "?period=day&limit=10", "bob", |rank| {
            rank["entries"][0]["coins"].as_i64().is_some()
        })
        .await;
    assert_eq!(
        rank,
        json!({"period": "day", "entries": [
            {"user_id": "alice", "coins": 30, "nickname": null, "avatar_url": null}
        ]})
    );
    let week = t
        .rank_when(&room_id, "?period=week", "bob", |rank| {
            rank["entries"][0]["coins"].as_i64().is_some()
        })
        .await;
    assert_eq!(week["entries"][0]["coins"], 30);

    // The room list shows it; the online list shows both.
    t.refresh_lists().await;
    let (status, list) = t.get("/v1/rooms?limit=10", &bob).await;
    assert_eq!(status, StatusCode::OK, "{list}");
    assert_eq!(list["rooms"][0]["room_id"], room_id.as_str());
    // 30 heat points just now, plus the boosts of a new room and of someone on the mic.
    assert_eq!(list["rooms"][0]["score"], 230, "{list}");
    assert_eq!(list["rooms"][0]["seats_taken"], 1, "{list}");
    let (_, online) = t
        .get(&format!("/v1/rooms/{room_id}/online-users?limit=1"), &bob)
        .await;
    assert_eq!(online["users"].as_array().unwrap().len(), 1);
    assert_eq!(online["users"][0]["user_id"], "alice");
    assert_eq!(online["users"][0]["role"], "owner");
    let cursor = online["next_cursor"].as_str().unwrap();
    let (_, rest) = t
        .get(
            &format!("/v1/rooms/{room_id}/online-users?limit=1&cursor={cursor}"),
            &bob,
        )
        .await;
    assert_eq!(rest["users"][0]["user_id"], "bob");

    // bob leaves his seat and the room; a heartbeat then is refused.
    let (status, snapshot) = t
        .post(
            &format!("/v1/rooms/{room_id}/seats/1/leave"),
            &bob,
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{snapshot}");
    assert!(snapshot["seats"][1]["user_id"].is_null());
    let (status, _) = t
        .call(
            Method::POST,
            &format!("/v1/rooms/{room_id}/heartbeat"),
            Some(&bob),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = t
        .call(
            Method::POST,
            &format!("/v1/rooms/{room_id}/leave"),
            Some(&bob),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, body) = t
        .call(
            Method::POST,
            &format!("/v1/rooms/{room_id}/heartbeat"),
            Some(&bob),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(error_code(&body), "NOT_A_MEMBER");
    let (_, current) = t.get("/v1/me/current-room", &bob).await;
    assert!(current["room_id"].is_null());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_catalog_lists_the_built_in_gifts_and_admins_can_change_it() {
    let t = TestApp::new().await;
    let (status, catalog) = t.get("/v1/gifts", &t.token("bob")).await;
    assert_eq!(status, StatusCode::OK);
    let gifts = catalog["gifts"].as_array().unwrap();
    assert_eq!(gifts.len(), 3);
    assert!(gifts.iter().any(|g| g["lucky"] == true));

    let put = json!({"name": "Heart", "price": 1, "heat": 1, "fuel": 1});
    let (status, body) = t
        .call(
            Method::PUT,
            "/v1/admin/gifts/heart",
            Some(&t.token("bob")),
            Some(put.clone()),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(error_code(&body), "FORBIDDEN");
    let (status, body) = t
        .call(
            Method::PUT,
            "/v1/admin/gifts/heart",
            Some(&t.admin_token()),
            Some(put),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["enabled"], true);
    let (_, catalog) = t.get("/v1/gifts", &t.token("bob")).await;
    assert_eq!(catalog["gifts"].as_array().unwrap().len(), 4);

    for bad in [
        json!({"name": "Heart", "price": -1}),
        json!({"name": "Heart", "price": 1_000_000_001_i64}),
        json!({"name": "Heart", "price": 1, "heat": i64::MAX}),
        json!({"name": "Heart", "price": 1, "fuel": -1}),
        json!({"name": " ", "price": 1}),
        json!({"name": "x".repeat(65), "price": 1}),
    ] {
        let (status, body) = t
            .call(
                Method::PUT,
                "/v1/admin/gifts/heart",
                Some(&t.admin_token()),
                Some(bad.clone()),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
        assert_eq!(error_code(&body), "INVALID_GIFT", "{bad}");
    }
    let (_, catalog) = t.get("/v1/gifts", &t.token("bob")).await;
    assert_eq!(
        catalog["gifts"].as_array().unwrap().len(),
        4,
        "nothing stored"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operational_routes_answer() {
    let t = TestApp::new().await;
    let (status, body) = t.call(Method::GET, "/healthz", None, None).await;
    assert_eq!(
        (status, body["status"].as_str()),
        (StatusCode::OK, Some("ok"))
    );
    let (status, body) = t.call(Method::GET, "/readyz", None, None).await;
    assert_eq!(
        (status, body["status"].as_str()),
        (StatusCode::OK, Some("ok"))
    );

    // A request first, so the HTTP counter exists.
    t.get("/v1/gifts", &t.token("bob")).await;
    let request = axum::http::Request::get("/metrics")
        .body(axum::body::Body::empty())
        .unwrap();
    let (status, headers, body) = t.send(request).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain")
    );
    let text = String::from_utf8(body.to_vec()).unwrap();
    assert!(text.contains("http_requests_total"), "{text}");
    assert!(text.contains("route=\"/v1/gifts\""), "{text}");

    let (status, document) = t.call(Method::GET, "/openapi.json", None, None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(document["openapi"].as_str().unwrap().starts_with("3."));
    let paths = document["paths"].as_object().unwrap();
    let expected = [
        ("/v1/rooms", "post"),
        ("/v1/rooms", "get"),
        ("/v1/rooms/{room_id}", "get"),
        ("/v1/rooms/{room_id}", "patch"),
        ("/v1/rooms/by-short-id/{short_id}", "get"),
        ("/v1/rooms/{room_id}/close", "post"),
        ("/v1/rooms/{room_id}/join", "post"),
        ("/v1/rooms/{room_id}/leave", "post"),
        ("/v1/rooms/{room_id}/heartbeat", "post"),
        ("/v1/rooms/{room_id}/online-users", "get"),
        ("/v1/rooms/{room_id}/seats/{seat}/take", "post"),
        ("/v1/rooms/{room_id}/seats/{seat}/leave", "post"),
        ("/v1/rooms/{room_id}/seats/{seat}/lock", "post"),
        ("/v1/rooms/{room_id}/seats/{seat}/mute", "post"),
        ("/v1/rooms/{room_id}/seats/{seat}/remove", "post"),
        ("/v1/rooms/{room_id}/kick", "post"),
        ("/v1/rooms/{room_id}/unban", "post"),
        ("/v1/rooms/{room_id}/mute", "post"),
        ("/v1/rooms/{room_id}/banned-users", "get"),
        ("/v1/rooms/{room_id}/admins/{user_id}", "put"),
        ("/v1/rooms/{room_id}/admins/{user_id}", "delete"),
        ("/v1/rooms/{room_id}/gifts", "post"),
        ("/v1/rooms/{room_id}/contribution-rank", "get"),
        ("/v1/rooms/{room_id}/events", "get"),
        ("/v1/gifts", "get"),
        ("/v1/me/wallet", "get"),
        ("/v1/me/current-room", "get"),
        ("/v1/admin/wallets/{user_id}/credit", "post"),
        ("/v1/admin/gifts/{gift_id}", "put"),
        ("/v1/admin/users/{user_id}", "put"),
        ("/v1/admin/users/{user_id}", "get"),
        ("/v1/admin/users", "put"),
        ("/v1/me/profile", "patch"),
        ("/v1/rtc/callbacks", "post"),
        ("/healthz", "get"),
        ("/readyz", "get"),
        ("/metrics", "get"),
    ];
    for (path, method) in expected {
        assert!(
            paths.get(path).and_then(|p| p.get(method)).is_some(),
            "{method} {path} is not documented"
        );
    }
    let schemas = document["components"]["schemas"].as_object().unwrap();
    for schema in [
        "ErrorResponse",
        "SendGiftRequest",
        "GiftResponse",
        "RoomResponse",
    ] {
        assert!(schemas.contains_key(schema), "no schema {schema}");
    }
    assert!(document["components"]["securitySchemes"]["bearer"].is_object());
}
