//! Billing and income through the router, on SQLite with the background passes in process:
//! gifts pay their recipients and the room's owner under the built-in policy (version 1), an
//! admin changes the policy by compare-and-set, later gifts are billed under the new version,
//! and the income routes page the ledger newest first within their limits.

use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::support::{TestApp, error_code, eventually};

/// `user`'s income as the user reads it.
async fn income(t: &TestApp, user: &str, query: &str) -> Value {
    let (status, body) = t
        .get(&format!("/v1/me/income{query}"), &t.token(user))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

/// Waits until `user`'s income balance is `balance`.
async fn income_reaches(t: &TestApp, user: &str, balance: i64) {
    eventually(&format!("{user}'s income is {balance}"), || async {
        income(t, user, "").await["balance"] == balance
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gifts_pay_their_recipient_and_the_rooms_owner_once() {
    let t = TestApp::new().await;
    let room_id = t.room_with_members(1_000).await;
    t.join(&room_id, "carol").await;
    // Three roses (10 coins each) to bob and carol: 30 each. The built-in policy pays the
    // recipient 50 % and the owner 10 %; nobody has an agency.
    let (status, receipt) = t
        .gift(&room_id, "alice", "o-1", "rose", 3, &["bob", "carol"])
        .await;
    assert_eq!(status, StatusCode::OK, "{receipt}");
    income_reaches(&t, "bob", 15).await;
    income_reaches(&t, "carol", 15).await;
    income_reaches(&t, "alice", 6).await;
    // A repeat of the order changes nothing.
    let (status, _) = t
        .gift(&room_id, "alice", "o-1", "rose", 3, &["bob", "carol"])
        .await;
    assert_eq!(status, StatusCode::OK);
    // A lucky clover pays less (its override: 20 % to the recipient, 5 % to the owner).
    let (status, receipt) = t
        .gift(&room_id, "alice", "o-2", "lucky-clover", 5, &["bob"])
        .await;
    assert_eq!(status, StatusCode::OK, "{receipt}");
    income_reaches(&t, "bob", 15 + 20).await;
    income_reaches(&t, "alice", 6 + 5).await;

    let bob = income(&t, "bob", "").await;
    assert_eq!(bob["user_id"], "bob");
    let entries = bob["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 2, "{bob}");
    assert_eq!(entries[0]["order_id"], "o-2", "newest first: {bob}");
    assert_eq!(entries[0]["part"], "recipient");
    assert_eq!(entries[0]["amount"], 20);
    assert_eq!(entries[0]["gift_id"], "lucky-clover");
    assert_eq!(entries[0]["sender"], "alice");
    assert_eq!(entries[0]["room_id"], room_id.as_str());
    assert_eq!(entries[0]["billing_version"], 1);
    assert_eq!(entries[1]["order_id"], "o-1");
    assert_eq!(bob["next_cursor"], Value::Null);
    let alice = income(&t, "alice", "").await;
    assert!(
        alice["entries"]
            .as_array()
            .unwrap()
            .iter()
            .all(|entry| entry["part"] == "owner"),
        "the owner's parts: {alice}"
    );
    // Coins are untouched by income: alice paid 60 + 100, and got the clover's lucky reward
    // (a coin reward, whatever the draw; income is apart from it).
    let reward = receipt["lucky"]["reward"]
        .as_i64()
        .expect("a lucky gift's draw");
    assert_eq!(t.balance("alice").await, 1_000 - 60 - 100 + reward);
    assert_eq!(t.balance("bob").await, 0);

    // Pages of one, by cursor.
    let first = income(&t, "alice", "?limit=1").await;
    assert_eq!(first["entries"].as_array().unwrap().len(), 1);
    let cursor = first["next_cursor"]
        .as_str()
        .expect("a next page")
        .to_owned();
    let second = income(&t, "alice", &format!("?limit=1&cursor={cursor}")).await;
    assert_eq!(second["entries"].as_array().unwrap().len(), 1);
    assert_ne!(second["entries"][0]["id"], first["entries"][0]["id"]);

    // Platform admins read anyone's income; others may not.
    let (status, body) = t.get("/v1/admin/users/bob/income", &t.admin_token()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["balance"], 35);
    assert_eq!(body["entries"], bob["entries"]);
    let (status, body) = t.get("/v1/admin/users/bob/income", &t.token("carol")).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, body) = t
        .get("/v1/admin/users/not%20an%20id/income", &t.admin_token())
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(error_code(&body), "INVALID_ID");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_income_routes_keep_their_limits() {
    let t = TestApp::new().await;
    let bob = t.token("bob");
    for (query, code) in [
        ("?limit=0", "INVALID_LIMIT"),
        ("?limit=101", "INVALID_LIMIT"),
        ("?cursor=x", "INVALID_CURSOR"),
        ("?cursor=-1", "INVALID_CURSOR"),
        ("?cursor=0", "INVALID_CURSOR"),
        ("?limit=x", "INVALID_QUERY"),
    ] {
        let (status, body) = t.get(&format!("/v1/me/income{query}"), &bob).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {body}");
        assert_eq!(error_code(&body), code, "{query}");
    }
    let body = income(&t, "bob", "?limit=100").await;
    assert_eq!(
        body,
        json!({"user_id": "bob", "balance": 0, "entries": [], "next_cursor": null})
    );
}

async fn put_billing(t: &TestApp, token: &str, body: Value) -> (StatusCode, Value) {
    t.call(Method::PUT, "/v1/admin/billing", Some(token), Some(body))
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_changes_the_billing_policy_by_its_version() {
    let t = TestApp::new().await;
    let admin = t.admin_token();
    let (status, current) = t.get("/v1/admin/billing", &admin).await;
    assert_eq!(status, StatusCode::OK, "{current}");
    assert_eq!(current["version"], 1, "the built-in policy is version 1");
    assert_eq!(current["recipient_bp"], 5_000);
    assert_eq!(current["overrides"]["lucky-clover"]["recipient_bp"], 2_000);
    let (status, body) = t.get("/v1/admin/billing", &t.token("bob")).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");

    let change = json!({
        "expected_version": 1, "recipient_bp": 7_000, "owner_bp": 0, "agency_bp": 500,
        "overrides": {"rose": {"recipient_bp": 8_000, "owner_bp": 1_000, "agency_bp": 0}}
    });
    let (status, body) = put_billing(&t, &t.token("bob"), change.clone()).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, stored) = put_billing(&t, &admin, change.clone()).await;
    assert_eq!(status, StatusCode::OK, "{stored}");
    assert_eq!(stored["version"], 2);
    assert_eq!(stored["overrides"]["rose"]["recipient_bp"], 8_000);
    // Left out, the owner's turnover share stays the catalog's.
    assert_eq!(stored["turnover_bp"], 100, "{stored}");
    let (_, current) = t.get("/v1/admin/billing", &admin).await;
    assert_eq!(current, stored);
    // The same change again: version 1 is no longer current.
    let (status, body) = put_billing(&t, &admin, change).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(error_code(&body), "BILLING_VERSION_STALE");

    for bad in [
        json!({"expected_version": 2, "recipient_bp": 10_001, "owner_bp": 0, "agency_bp": 0}),
        json!({"expected_version": 2, "recipient_bp": 6_000, "owner_bp": 3_000, "agency_bp": 1_001}),
        json!({"expected_version": 2, "recipient_bp": 0, "owner_bp": 0, "agency_bp": 0,
               "overrides": {"rose": {"recipient_bp": 0, "owner_bp": 20_000, "agency_bp": 0}}}),
        json!({"expected_version": 2, "recipient_bp": 0, "owner_bp": 0, "agency_bp": 0,
               "overrides": {"no such gift": {"recipient_bp": 0, "owner_bp": 0, "agency_bp": 0}}}),
    ] {
        let (status, body) = put_billing(&t, &admin, bad.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
        assert_eq!(error_code(&body), "INVALID_BILLING_POLICY", "{bad}");
    }
    let too_many: serde_json::Map<String, Value> = (0..=1_000)
        .map(|n| {
            (
                format!("gift-{n}"),
                json!({"recipient_bp": 0, "owner_bp": 0, "agency_bp": 0}),
            )
        })
        .collect();
    let (status, body) = put_billing(
        &t,
        &admin,
        json!({"expected_version": 2, "recipient_bp": 0, "owner_bp": 0, "agency_bp": 0,
               "overrides": too_many}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(error_code(&body), "INVALID_BILLING_POLICY");
    for malformed in [
        json!({"recipient_bp": 0, "owner_bp": 0, "agency_bp": 0}),
        json!({"expected_version": -1, "recipient_bp": 0, "owner_bp": 0, "agency_bp": 0}),
        json!({"expected_version": 2, "recipient_bp": 0.5, "owner_bp": 0, "agency_bp": 0}),
        json!({"expected_version": 2, "recipient_bp": 0, "owner_bp": 0, "agency_bp": 0, "x": 1}),
    ] {
        let (status, body) = put_billing(&t, &admin, malformed.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{malformed}: {body}");
        assert_eq!(error_code(&body), "INVALID_BODY", "{malformed}");
    }
    let (_, current) = t.get("/v1/admin/billing", &admin).await;
    assert_eq!(current["version"], 2, "no refused change was stored");

    // Gifts placed now are billed under version 2: a rose pays 80 % and 10 %.
    let room_id = t.room_with_members(100).await;
    let (status, receipt) = t.gift(&room_id, "alice", "o-1", "rose", 1, &["bob"]).await;
    assert_eq!(status, StatusCode::OK, "{receipt}");
    income_reaches(&t, "bob", 8).await;
    income_reaches(&t, "alice", 1).await;
    assert_eq!(
        income(&t, "bob", "").await["entries"][0]["billing_version"],
        2
    );
}
