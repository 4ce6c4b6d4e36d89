//! Gift value and room turnover through the router, on SQLite with the background passes in
//! process and a test clock: gifts count for their sender, recipients and room in the billing
//! time zone's periods; once the day has closed and the delay passed, the room's owner is
//! paid the billing policy's share of the day's turnover as income, once.

use axum::http::StatusCode;
use room_app::ports::{Clock, ClockRef};
use room_testkit::ManualClock;
use serde_json::Value;

use crate::support::{TestApp, error_code, eventually};

async fn gift_value(t: &TestApp, user: &str, query: &str) -> Value {
    let (status, body) = t
        .get(
            &format!("/v1/users/{user}/gift-value{query}"),
            &t.token("carol"),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

async fn turnover(t: &TestApp, room_id: &str, query: &str) -> Value {
    let (status, body) = t
        .get(
            &format!("/v1/admin/rooms/{room_id}/turnover{query}"),
            &t.admin_token(),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gifts_count_for_people_and_rooms_and_a_closed_day_pays_its_owner_once() {
    let clock = ManualClock::at_system_time();
    let t = TestApp::with_clock(
        |s| {
            s.billing.time_zone = "+08:00".into();
            s.billing.settle_every_secs = 1;
            s.billing.settle_delay_secs = 60;
            s.outbox.consume_every_ms = 10;
        },
        clock.clone() as ClockRef,
    )
    .await;
    let room_id = t.room_with_members(10_000).await;
    // 100 roses (10 coins each) to bob, twice: 2,000 coins of turnover.
    for order in ["o-1", "o-2"] {
        let (status, body) = t
            .gift(&room_id, "alice", order, "rose", 100, &["bob"])
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    eventually("the gifts are counted", || async {
        gift_value(&t, "bob", "").await["lifetime"]["received"] == 2_000
    })
    .await;
    let alice = gift_value(&t, "alice", "").await;
    assert_eq!(alice["time_zone"], "+08:00");
    assert_eq!(alice["lifetime"]["sent"], 2_000, "{alice}");
    for period in ["day", "week", "month"] {
        assert_eq!(alice[period]["sent"], 2_000, "{period}: {alice}");
        assert_eq!(alice[period]["received"], 0, "{period}: {alice}");
    }
    let today = alice["day"]["period"].as_str().unwrap().to_owned();
    let day = turnover(&t, &room_id, "").await;
    assert_eq!(day["day"], today.as_str());
    assert_eq!(
        (day["turnover"].as_i64(), day["gifts"].as_i64()),
        (Some(2_000), Some(2))
    );
    assert_eq!(day["settlement"], Value::Null, "the day is open: {day}");
    // Another day of the past: nothing counted in it.
    let old = gift_value(&t, "bob", "?day=2001-02-03").await;
    assert_eq!(old["day"]["period"], "2001-02-03");
    assert_eq!(old["week"]["period"], "2001-01-29", "its Monday");
    assert_eq!(old["month"]["period"], "2001-02");
    assert_eq!(old["day"]["received"], 0);
    assert_eq!(old["lifetime"]["received"], 2_000);

    // The day closes (midnight in +08:00), and the settlement's delay passes.
    let offset_ms = 8 * 3_600_000;
    let day_ms = 86_400_000;
    let local = clock.now().0 + offset_ms;
    let next_midnight = local - local.rem_euclid(day_ms) + day_ms - offset_ms;
    clock.set(room_domain::Timestamp(next_midnight + 61_000));
    // Recorded, credited, then marked paid: `owed` back to 0.
    eventually("the closed day is settled and paid", || async {
        turnover(&t, &room_id, &format!("?day={today}")).await["settlement"]["owed"] == 0
    })
    .await;
    let settled = turnover(&t, &room_id, &format!("?day={today}")).await;
    // The shipped policy's owner share of a day's turnover: 100 bp.
    assert_eq!(settled["settlement"]["reward"], 20, "{settled}");
    assert_eq!(settled["settlement"]["share_bp"], 100);
    assert_eq!(settled["settlement"]["owner"], "alice");
    let (status, income) = t.get("/v1/me/income", &t.token("alice")).await;
    assert_eq!(status, StatusCode::OK, "{income}");
    let rewards: Vec<&Value> = income["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|entry| entry["part"] == "turnover")
        .collect();
    assert_eq!(rewards.len(), 1, "{income}");
    assert_eq!(rewards[0]["amount"], 20);
    assert_eq!(rewards[0]["order_id"], format!("sys-turnover-{today}"));
    assert_eq!(rewards[0]["sender"], room_id.as_str());
    assert!(rewards[0].get("gift_id").is_none(), "{income}");
    assert_eq!(settled["settlement"]["settlements"], 1);
    assert_eq!(settled["settlement"]["settled_turnover"], 2_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tally_routes_refuse_bad_days_and_strangers() {
    let t = TestApp::new().await;
    for query in [
        "?day=2026-02-30",
        "?day=26-01-01",
        "?day=2026-1-01",
        "?day=0000-01-01",
    ] {
        let (status, body) = t
            .get(
                &format!("/v1/users/bob/gift-value{query}"),
                &t.token("carol"),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {body}");
        assert_eq!(error_code(&body), "INVALID_DAY", "{query}");
        let (status, body) = t
            .get(
                &format!("/v1/admin/rooms/r1/turnover{query}"),
                &t.admin_token(),
            )
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {body}");
        assert_eq!(error_code(&body), "INVALID_DAY", "{query}");
    }
    let (status, body) = t
        .get("/v1/users/not%20an%20id/gift-value", &t.token("carol"))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(error_code(&body), "INVALID_ID");
    let (status, body) = t
        .get("/v1/admin/rooms/r1/turnover", &t.token("carol"))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, body) = t
        .get(
            "/v1/admin/rooms/r1/turnover?day=2026-12-04",
            &t.admin_token(),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        (body["turnover"].as_i64(), body["gifts"].as_i64()),
        (Some(0), Some(0))
    );
}
