//! Gift answers: idempotency under concurrency, FAILED and COMPENSATED orders, lucky gifts.

use std::sync::Arc;

use axum::http::{Method, StatusCode};
use serde_json::json;

use crate::support::{TestApp, error_code};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_requests_with_one_order_id_debit_once_and_agree() {
    // The requests retry while the order is in progress, as often as the machine lets them:
    // the per-user gift bucket (its own tests are in `limits`) would answer some of them
    // `RATE_LIMITED` on a slow machine, which is not what this test is about.
    let t = Arc::new(TestApp::with(|settings| settings.limits.gift_burst = u32::MAX).await);
    let room_id = t.room_with_members(1000).await;
    let version_before = t.room(&room_id).await["version"].as_u64().unwrap();

    let mut requests = Vec::new();
    for _ in 0..50 {
        let (t, room_id) = (t.clone(), room_id.clone());
        requests.push(tokio::spawn(async move {
            let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
            loop {
                let (status, body) = t
                    .gift(&room_id, "alice", "same-order", "rose", 2, &["bob"])
                    .await;
                // Beyond the requests one order may queue: retried, as a client does.
                if status == StatusCode::TOO_MANY_REQUESTS
                    && error_code(&body) == "ORDER_IN_PROGRESS"
                {
                    assert_eq!(body["error"]["retryable"], true);
                    assert!(
                        tokio::time::Instant::now() < deadline,
                        "the order stayed in progress for 30 s"
                    );
                    tokio::task::yield_now().await;
                    continue;
                }
                break (status, body);
            }
        }));
    }
    let mut answers = Vec::new();
    for request in requests {
        answers.push(request.await.unwrap());
    }
    let expected = (
        StatusCode::OK,
        json!({"order_id": "same-order", "status": "COMPLETED", "coin_balance_after": 980,
               "recipients": ["bob"]}),
    );
    for answer in &answers {
        assert_eq!(answer, &expected);
    }
    assert_eq!(t.balance("alice").await, 980);
    let room = t.room(&room_id).await;
    assert_eq!(room["heat"], 20);
    // One gift is one command: the version moved by the events of one gift only.
    let rank = t
        .rank_when(&room_id, "", "bob", |rank| {
            rank["entries"][0]["coins"].as_i64().is_some()
        })
        .await;
    assert_eq!(rank["entries"][0]["coins"], 20);
    assert!(room["version"].as_u64().unwrap() > version_before);

    // A later repeat still gets the same answer and moves nothing.
    let again = t
        .gift(&room_id, "alice", "same-order", "rose", 2, &["bob"])
        .await;
    assert_eq!(again, expected);
    assert_eq!(t.room(&room_id).await["version"], room["version"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insufficient_coins_fail_the_order_and_change_nothing() {
    let t = TestApp::new().await;
    let room_id = t.room_with_members(100).await;
    let before = t.room(&room_id).await;

    for _ in 0..2 {
        let (status, body) = t
            .gift(&room_id, "alice", "too-dear", "sports-car", 1, &["bob"])
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(error_code(&body), "INSUFFICIENT_COINS");
        assert_eq!(body["error"]["retryable"], false);
        assert_eq!(
            body["order"],
            json!({"order_id": "too-dear", "status": "FAILED", "coin_balance_after": 100})
        );
    }
    assert_eq!(t.balance("alice").await, 100);
    assert_eq!(t.balance("bob").await, 0);
    assert_eq!(t.room(&room_id).await, before);
    let (_, rank) = t
        .get(
            &format!("/v1/rooms/{room_id}/contribution-rank"),
            &t.token("bob"),
        )
        .await;
    assert_eq!(rank["entries"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recipient_who_left_compensates_the_order_and_restores_the_balance() {
    let t = TestApp::new().await;
    let room_id = t.room_with_members(500).await;
    let (status, _) = t
        .call(
            Method::POST,
            &format!("/v1/rooms/{room_id}/leave"),
            Some(&t.token("bob")),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let heat_before = t.room(&room_id).await["heat"].clone();

    for _ in 0..2 {
        let (status, body) = t
            .gift(&room_id, "alice", "to-absent", "rose", 5, &["bob"])
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(error_code(&body), "NOT_A_MEMBER");
        assert_eq!(
            body["order"],
            json!({"order_id": "to-absent", "status": "COMPENSATED", "coin_balance_after": 500})
        );
    }
    assert_eq!(t.balance("alice").await, 500);
    assert_eq!(t.room(&room_id).await["heat"], heat_before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_order_id_names_one_gift() {
    let t = TestApp::new().await;
    let room_id = t.room_with_members(500).await;
    let (status, _) = t
        .gift(&room_id, "alice", "order-x", "rose", 1, &["bob"])
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = t
        .gift(&room_id, "alice", "order-x", "rose", 2, &["bob"])
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(error_code(&body), "ORDER_ID_REUSED");
    assert_eq!(t.balance("alice").await, 490);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_order_id_is_the_senders_own() {
    let t = TestApp::new().await;
    let room_id = t.room_with_members(500).await;
    t.join(&room_id, "mallory").await;
    t.credit("bob", 100).await;

    // Mallory has no coins and takes the id first: her order fails, and only hers.
    let (status, body) = t
        .gift(&room_id, "mallory", "shared", "rose", 1, &["bob"])
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(error_code(&body), "INSUFFICIENT_COINS");

    let (status, body) = t
        .gift(&room_id, "alice", "shared", "rose", 1, &["bob"])
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["coin_balance_after"], 490);
    let (status, body) = t
        .gift(&room_id, "bob", "shared", "rose", 2, &["alice"])
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["coin_balance_after"], 80);
    assert_eq!(t.balance("alice").await, 490);
    assert_eq!(t.balance("bob").await, 80);
    let rank = t
        .rank_when(&room_id, "", "bob", |rank| {
            rank["entries"].as_array().is_some_and(|e| e.len() == 2)
        })
        .await;
    let ranked: Vec<(String, i64)> = rank["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["user_id"].as_str().unwrap().to_owned(),
                e["coins"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(ranked, [("bob".to_owned(), 20), ("alice".to_owned(), 10)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gift_to_oneself_is_refused_before_any_debit() {
    let t = TestApp::new().await;
    let room_id = t.room_with_members(500).await;
    for recipients in [&["alice"][..], &["bob", "alice"][..]] {
        let (status, body) = t
            .gift(&room_id, "alice", "o-self", "rose", 1, recipients)
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        assert_eq!(error_code(&body), "SELF_GIFT");
        assert_eq!(body["error"]["retryable"], false);
    }
    assert_eq!(t.balance("alice").await, 500);
    // Nothing was stored: the order id is free for a good request.
    let (status, body) = t
        .gift(&room_id, "alice", "o-self", "rose", 1, &["bob"])
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_before_any_debit_leave_no_order() {
    let t = TestApp::new().await;
    let room_id = t.room_with_members(500).await;

    let (status, body) = t
        .gift(&room_id, "alice", "o-unknown", "no-such-gift", 1, &["bob"])
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert_eq!(error_code(&body), "GIFT_NOT_FOUND");

    // A missing room is named as such, even when the gift is missing too.
    for gift_id in ["rose", "no-such-gift"] {
        let (status, body) = t
            .gift("no-such-room", "alice", "o-nowhere", gift_id, 1, &["bob"])
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
        assert_eq!(error_code(&body), "ROOM_NOT_FOUND", "{gift_id}");
    }

    let (status, body) = t
        .gift(&room_id, "alice", "o-dup", "rose", 1, &["bob", "bob"])
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(error_code(&body), "DUPLICATE_RECIPIENT");

    // A closed room refuses gifts.
    let (status, _) = t
        .call(
            Method::POST,
            &format!("/v1/rooms/{room_id}/close"),
            Some(&t.token("alice")),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, body) = t
        .gift(&room_id, "alice", "o-closed", "rose", 1, &["bob"])
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(error_code(&body), "ROOM_CLOSED");
    assert_eq!(t.balance("alice").await, 500);

    // The same order id is free for a good request later (nothing was stored).
    let room_id = t.room_with_members(0).await;
    let (status, body) = t
        .gift(&room_id, "alice", "o-dup", "rose", 1, &["bob"])
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lucky_gifts_report_their_draw_in_the_balance() {
    let t = TestApp::new().await;
    let room_id = t.room_with_members(10_000).await;
    let mut balance = 10_000;
    for i in 0..20 {
        let (status, body) = t
            .gift(
                &room_id,
                "alice",
                &format!("lucky-{i}"),
                "lucky-clover",
                1,
                &["bob"],
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["status"], "COMPLETED");
        let lucky = &body["lucky"];
        let reward = lucky["reward"].as_i64().unwrap();
        assert_eq!(reward, 20 * lucky["multiplier"].as_i64().unwrap());
        balance = balance - 20 + reward;
        assert_eq!(body["coin_balance_after"], balance);
    }
    assert_eq!(t.balance("alice").await, balance);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_gifts_debit_price_times_count_times_recipients() {
    let t = TestApp::new().await;
    let room_id = t.room_with_members(1000).await;
    t.join(&room_id, "carol").await;
    let (status, body) = t
        .gift(&room_id, "alice", "batch", "rose", 4, &["bob", "carol"])
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["coin_balance_after"], 1000 - 10 * 4 * 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_gifts_by_scope_answer_whom_they_reached() {
    let t = TestApp::new().await;
    let room_id = t.room_with_members(1000).await;
    t.join(&room_id, "carol").await;
    t.join(&room_id, "dave").await;
    t.seat(&room_id, "dave", 0, "take").await;
    t.seat(&room_id, "bob", 3, "take").await;
    let send = |order: &'static str, recipients: serde_json::Value| {
        let (t, room_id) = (&t, room_id.clone());
        async move {
            t.post(
                &format!("/v1/rooms/{room_id}/gifts"),
                &t.token("alice"),
                json!({"order_id": order, "gift_id": "rose", "count": 2, "recipients": recipients}),
            )
            .await
        }
    };

    let (status, body) = send("mic", json!({"scope": "all_mic"})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body,
        json!({"order_id": "mic", "status": "COMPLETED", "coin_balance_after": 960,
               "recipients": ["dave", "bob"]})
    );
    // Every member but the sender: the seat holders by seat, then carol.
    let (status, body) = send("room", json!({"scope": "all_room"})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["recipients"], json!(["dave", "bob", "carol"]));
    assert_eq!(body["coin_balance_after"], 900);
    // A repeat is answered the same; a list under the same order id is another gift.
    assert_eq!(send("room", json!({"scope": "all_room"})).await.1, body);
    let (status, reused) = send("room", json!(["dave", "bob", "carol"])).await;
    assert_eq!(status, StatusCode::CONFLICT, "{reused}");
    assert_eq!(error_code(&reused), "ORDER_ID_REUSED");

    // Bad scopes are bad input, and nothing moves.
    for bad in [
        json!({"scope": "everyone"}),
        json!({"scope": "all_mic", "extra": 1}),
        json!({}),
        json!("all_mic"),
    ] {
        let (status, body) = send("bad", bad.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
        assert_eq!(error_code(&body), "INVALID_BODY", "{bad}: {body}");
    }
    assert_eq!(t.balance("alice").await, 900);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_gift_to_nobody_is_refused_before_any_debit() {
    let t = TestApp::new().await;
    let room_id = t.room_with_members(1000).await;
    let (status, body) = t
        .post(
            &format!("/v1/rooms/{room_id}/gifts"),
            &t.token("alice"),
            json!({"order_id": "lonely", "gift_id": "rose", "count": 1,
                   "recipients": {"scope": "all_mic"}}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(error_code(&body), "NO_RECIPIENTS");
    assert!(body.get("order").is_none(), "{body}");
    assert_eq!(t.balance("alice").await, 1000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_big_gift_is_shown_in_the_other_rooms_of_the_senders_region() {
    let t = TestApp::with(|settings| settings.broadcast.min_value = 100).await;
    let mut rooms = Vec::new();
    for (owner, region) in [("alice", "sg"), ("olga", "sg"), ("uma", "us")] {
        let (status, body) = t
            .post(
                "/v1/rooms",
                &t.token(owner),
                json!({ "name": "Night talk", "region": region }),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        rooms.push(body["room_id"].as_str().unwrap().to_owned());
    }
    t.join(&rooms[0], "alice").await;
    t.join(&rooms[0], "bob").await;
    // A broadcast goes to rooms someone is in.
    t.join(&rooms[1], "olga").await;
    t.join(&rooms[2], "uma").await;
    t.credit("alice", 1_000).await;
    // A small gift stays in its room; a big one reaches the other sg room only.
    let (status, body) = t
        .gift(&rooms[0], "alice", "small", "rose", 1, &["bob"])
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = t
        .gift(&rooms[0], "alice", "big", "rose", 10, &["bob"])
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let cells = t.app.storage().cells.clone();
    let broadcasts = |room: &str| {
        let (cells, room) = (cells.clone(), room_domain::RoomId::new(room).unwrap());
        async move {
            cells
                .list_events(&room, 0, 1_000)
                .await
                .unwrap()
                .into_iter()
                .filter_map(|stored| match stored.event {
                    room_domain::Event::RoomGiftBroadcast(shown) => Some(shown),
                    _ => None,
                })
                .collect::<Vec<_>>()
        }
    };
    crate::support::eventually("the big gift is shown in the other sg room", || {
        let shown = broadcasts(&rooms[1]);
        async move { !shown.await.is_empty() }
    })
    .await;
    let shown = broadcasts(&rooms[1]).await;
    assert_eq!(shown.len(), 1, "{shown:?}");
    assert_eq!(shown[0].total_value, room_domain::Coins(100));
    assert_eq!(shown[0].from_room.as_str(), rooms[0]);
    assert!(broadcasts(&rooms[0]).await.is_empty());
    assert!(broadcasts(&rooms[2]).await.is_empty());
}
