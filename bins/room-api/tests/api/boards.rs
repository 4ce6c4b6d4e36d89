//! Leaderboards through the router, on SQLite with the consumers in process: gifts show on
//! the app's and the room's boards with ranks, display fields and pages; the caller's
//! standing; bad names, days and cursors refused with their codes.

use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::support::{TestApp, error_code, eventually};

async fn board(t: &TestApp, path: &str) -> Value {
    let (status, body) = t.get(path, &t.token("carol")).await;
    assert_eq!(status, StatusCode::OK, "{path}: {body}");
    body
}

fn ranks(body: &Value, field: &str) -> Vec<(i64, String, i64)> {
    body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            (
                item["rank"].as_i64().unwrap(),
                item[field].as_str().unwrap().to_owned(),
                item["score"].as_i64().unwrap(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gifts_show_on_the_boards_of_the_app_and_the_room() {
    let t = TestApp::with(|s| {
        s.billing.time_zone = "+08:00".into();
        s.outbox.consume_every_ms = 10;
    })
    .await;
    let room_id = t.room_with_members(100_000).await;
    t.join(&room_id, "carol").await;
    t.credit("bob", 10_000).await;
    let (status, body) = t
        .call(
            Method::PUT,
            "/v1/admin/users/bob",
            Some(&t.admin_token()),
            Some(json!({ "nickname": "Bob", "avatar_url": "https://img.example/bob.png" })),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // Roses are 10 coins: alice sends 1,000 to bob and 300 to carol, bob 500 to carol.
    for (sender, order, count, to) in [
        ("alice", "o-1", 100, "bob"),
        ("alice", "o-2", 30, "carol"),
        ("bob", "o-1", 50, "carol"),
    ] {
        let (status, body) = t.gift(&room_id, sender, order, "rose", count, &[to]).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    eventually("the gifts are on the boards", || async {
        board(&t, "/v1/boards/rooms").await["items"][0]["score"] == 1_800
    })
    .await;
    let senders = board(&t, "/v1/boards/senders?period=week").await;
    assert_eq!(senders["board"], "senders");
    assert_eq!(senders["period"], "week");
    assert_eq!(senders["time_zone"], "+08:00");
    assert!(senders.get("room_id").is_none(), "{senders}");
    assert_eq!(
        ranks(&senders, "user_id"),
        [(1, "alice".into(), 1_300), (2, "bob".into(), 500)]
    );
    assert_eq!(senders["items"][1]["nickname"], "Bob");
    assert_eq!(
        senders["items"][1]["avatar_url"],
        "https://img.example/bob.png"
    );
    let receivers = board(&t, "/v1/boards/receivers?period=month").await;
    assert_eq!(
        ranks(&receivers, "user_id"),
        [(1, "bob".into(), 1_000), (2, "carol".into(), 800)]
    );
    let rooms = board(&t, "/v1/boards/rooms?period=day").await;
    assert_eq!(ranks(&rooms, "room_id"), [(1, room_id.clone(), 1_800)]);
    assert!(rooms["items"][0]["name"].is_string(), "{rooms}");
    // The room's boards: its contribution (senders) and charm (receivers).
    let room_receivers = board(&t, &format!("/v1/rooms/{room_id}/boards/receivers")).await;
    assert_eq!(room_receivers["room_id"], room_id.as_str());
    assert_eq!(
        ranks(&room_receivers, "user_id"),
        [(1, "bob".into(), 1_000), (2, "carol".into(), 800)]
    );
    // Pages of one follow the ranks; the last has no cursor.
    let first = board(&t, "/v1/boards/receivers?limit=1").await;
    assert_eq!(ranks(&first, "user_id"), [(1, "bob".into(), 1_000)]);
    let cursor = first["next_cursor"].as_str().unwrap().to_owned();
    let second = board(&t, &format!("/v1/boards/receivers?limit=1&cursor={cursor}")).await;
    assert_eq!(ranks(&second, "user_id"), [(2, "carol".into(), 800)]);
    let cursor = second["next_cursor"].as_str().unwrap().to_owned();
    let end = board(&t, &format!("/v1/boards/receivers?limit=1&cursor={cursor}")).await;
    assert_eq!(end["items"], json!([]));
    assert!(end.get("next_cursor").is_none(), "{end}");
    // Standings, also without a score.
    let (status, me) = t.get("/v1/boards/receivers/me", &t.token("carol")).await;
    assert_eq!(status, StatusCode::OK, "{me}");
    assert_eq!(
        (me["rank"].as_i64(), me["score"].as_i64()),
        (Some(2), Some(800))
    );
    assert_eq!(me["user_id"], "carol");
    let (status, me) = t
        .get(
            &format!("/v1/rooms/{room_id}/boards/senders/me?period=month"),
            &t.token("dave"),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{me}");
    assert!(me.get("rank").is_none(), "{me}");
    assert_eq!(me["score"], 0);
    // Another day: nothing.
    let old = board(&t, "/v1/boards/senders?at=2001-02-03&period=week").await;
    assert_eq!(old["period_start"], "2001-01-29", "its Monday");
    assert_eq!(old["items"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_board_routes_refuse_bad_names_days_and_cursors() {
    let t = TestApp::new().await;
    let room_id = t.room_with_members(0).await;
    let token = t.token("carol");
    for (path, status, code) in [
        ("/v1/boards/gifts".to_owned(), 404, "BOARD_NOT_FOUND"),
        ("/v1/boards/rooms/me".to_owned(), 404, "BOARD_NOT_FOUND"),
        (
            format!("/v1/rooms/{room_id}/boards/rooms"),
            404,
            "BOARD_NOT_FOUND",
        ),
        (
            "/v1/rooms/nowhere/boards/senders".to_owned(),
            404,
            "ROOM_NOT_FOUND",
        ),
        (
            "/v1/boards/senders?period=year".to_owned(),
            400,
            "INVALID_QUERY",
        ),
        (
            "/v1/boards/senders?at=2026-02-30".to_owned(),
            400,
            "INVALID_DAY",
        ),
        (
            "/v1/boards/senders?limit=0".to_owned(),
            400,
            "INVALID_LIMIT",
        ),
        (
            "/v1/boards/senders?limit=101".to_owned(),
            400,
            "INVALID_LIMIT",
        ),
        (
            "/v1/boards/senders?cursor=x".to_owned(),
            400,
            "INVALID_CURSOR",
        ),
        (
            "/v1/boards/senders?cursor=0.1.2.alice".to_owned(),
            400,
            "INVALID_CURSOR",
        ),
        (
            "/v1/boards/senders?cursor=1.1.2.616c696".to_owned(),
            400,
            "INVALID_CURSOR",
        ),
        (
            "/v1/boards/senders?cursor=1.1.2.2f".to_owned(),
            400,
            "INVALID_CURSOR",
        ),
    ] {
        let (got, body) = t.get(&path, &token).await;
        assert_eq!(got.as_u16(), status, "{path}: {body}");
        assert_eq!(error_code(&body), code, "{path}");
    }
    // A cursor at the largest rank pages on without overflowing.
    let (status, body) = t
        .get(
            &format!("/v1/boards/senders?cursor={}.0.0.7a6564", u64::MAX),
            &token,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_period_pays_its_ranks_once_by_the_reward_tables() {
    use room_app::ports::{Clock, ClockRef};
    use room_testkit::ManualClock;

    let clock = ManualClock::at_system_time();
    let t = TestApp::with_clock(
        |s| {
            s.billing.time_zone = "+08:00".into();
            s.outbox.consume_every_ms = 10;
            s.boards.reward_every_secs = 1;
            s.boards.reward_delay_secs = 60;
        },
        clock.clone() as ClockRef,
    )
    .await;
    let admin = t.admin_token();
    // The shipped tables pay weekly boards; version 2 pays the day's senders and rooms.
    let (status, current) = t.get("/v1/admin/board-rewards", &admin).await;
    assert_eq!(status, StatusCode::OK, "{current}");
    assert_eq!(current["version"], 1);
    let tables = json!([
        {"board": "senders", "period": "day", "ranks": [100, 50]},
        {"board": "rooms", "period": "day", "ranks": [30]},
    ]);
    for (body, status, code) in [
        (
            json!({"expected_version": 7, "tables": tables}),
            409,
            "BOARD_REWARDS_STALE",
        ),
        (
            json!({"expected_version": 1, "tables": [
                {"board": "senders", "period": "day", "ranks": [1]},
                {"board": "senders", "period": "day", "ranks": [2]},
            ]}),
            422,
            "INVALID_BOARD_REWARDS",
        ),
        (
            json!({"expected_version": 1, "tables": [{"board": "senders", "period": "day", "ranks": []}]}),
            422,
            "INVALID_BOARD_REWARDS",
        ),
        (
            json!({"expected_version": 1, "tables": [{"board": "gifts", "period": "day", "ranks": [1]}]}),
            400,
            "INVALID_BODY",
        ),
    ] {
        let (got, answer) = t
            .call(
                Method::PUT,
                "/v1/admin/board-rewards",
                Some(&admin),
                Some(body),
            )
            .await;
        assert_eq!(got.as_u16(), status, "{answer}");
        assert_eq!(error_code(&answer), code);
    }
    let (status, stored) = t
        .call(
            Method::PUT,
            "/v1/admin/board-rewards",
            Some(&admin),
            Some(json!({"expected_version": 1, "tables": tables})),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{stored}");
    assert_eq!(stored["version"], 2);
    let (status, _) = t.get("/v1/admin/board-rewards", &t.token("bob")).await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    let room_id = t.room_with_members(100_000).await;
    t.credit("bob", 10_000).await;
    for (sender, order, count, to) in [("alice", "o-1", 30, "bob"), ("bob", "o-1", 20, "alice")] {
        let (status, body) = t.gift(&room_id, sender, order, "rose", count, &[to]).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    eventually("the gifts are on the boards", || async {
        board(&t, "/v1/boards/senders").await["items"]
            .as_array()
            .is_some_and(|items| items.len() == 2)
    })
    .await;
    let day = board(&t, "/v1/boards/senders").await["period_start"]
        .as_str()
        .unwrap()
        .to_owned();
    let payouts = |board: &'static str| {
        let (t, path) = (&t, format!("/v1/admin/boards/{board}/payouts?at={day}"));
        async move {
            let (status, body) = t.get(&path, &t.admin_token()).await;
            assert_eq!(status, StatusCode::OK, "{body}");
            body
        }
    };
    assert_eq!(payouts("senders").await["recorded"], false);
    let (alice, bob) = (t.balance("alice").await, t.balance("bob").await);
    // The day closes (midnight in +08:00) and the delay passes.
    let offset_ms = 8 * 3_600_000;
    let day_ms = 86_400_000;
    let local = clock.now().0 + offset_ms;
    let next_midnight = local - local.rem_euclid(day_ms) + day_ms - offset_ms;
    clock.set(room_domain::Timestamp(next_midnight + 61_000));
    eventually("the day's rewards are paid", || async {
        let body = payouts("senders").await;
        body["payouts"]
            .as_array()
            .is_some_and(|p| p.len() == 2 && p.iter().all(|p| p["paid_at_ms"].is_i64()))
    })
    .await;
    let senders = payouts("senders").await;
    let paid: Vec<(i64, String, i64)> = senders["payouts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["rank"].as_i64().unwrap(),
                p["user_id"].as_str().unwrap().to_owned(),
                p["coins"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(paid, [(1, "alice".into(), 100), (2, "bob".into(), 50)]);
    assert_eq!(senders["payouts"][0]["rewards_version"], 2);
    eventually("the room's owner is paid", || async {
        payouts("rooms").await["payouts"][0]["paid_at_ms"].is_i64()
    })
    .await;
    // Each payout marked paid was credited once (passes that run again pay nothing more:
    // the wallet keys each credit by board, period and rank).
    assert_eq!(t.balance("alice").await, alice + 100 + 30);
    assert_eq!(t.balance("bob").await, bob + 50);
    assert_eq!(payouts("receivers").await["recorded"], false, "no table");
}
