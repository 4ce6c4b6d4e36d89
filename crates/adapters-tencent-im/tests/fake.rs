//! The fake Tencent IM itself, through raw HTTP: it checks UserSigs and query parameters as
//! Tencent does, validates message bodies, numbers messages per group and answers HTTP 200
//! with the envelope. Other crates' tests rely on it refusing what Tencent would refuse.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use adapters_tencent_im::{FakeIm, FakeImConfig, MAX_MSG_BYTES, UserSigner};
use secrecy::SecretString;
use serde_json::{Value, json};

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Posts `body` to `command` with these query parameters; the HTTP status and the envelope.
async fn post(fake: &FakeIm, command: &str, query: &[(&str, &str)], body: &Value) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(format!(
            "{}/v4/group_open_http_svc/{command}",
            fake.base_url()
        ))
        .query(query)
        .json(body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

/// Posts as `identifier` with `sig`.
async fn post_as(
    fake: &FakeIm,
    identifier: &str,
    sig: &str,
    command: &str,
    body: &Value,
) -> (u16, Value) {
    let app = FakeIm::SDK_APP_ID.to_string();
    post(
        fake,
        command,
        &[
            ("sdkappid", app.as_str()),
            ("identifier", identifier),
            ("usersig", sig),
            ("random", "12345"),
            ("contenttype", "json"),
        ],
        body,
    )
    .await
}

fn admin_sig(fake: &FakeIm) -> String {
    fake.signer().sign(FakeIm::ADMIN, 3_600, now())
}

fn code(envelope: &Value) -> i64 {
    envelope["ErrorCode"].as_i64().unwrap()
}

fn custom(group: &str, random: u32, data: &str) -> Value {
    json!({
        "GroupId": group,
        "Random": random,
        "MsgPriority": "Normal",
        "MsgBody": [{"MsgType": "TIMCustomElem", "MsgContent": {"Data": data}}],
    })
}

#[tokio::test]
async fn usersigs_are_checked_as_tencent_checks_them() {
    let fake = FakeIm::start().await;
    let body = json!({"GroupId": "g"});
    let admin = FakeIm::ADMIN;
    let other_app = UserSigner::new(
        FakeIm::SDK_APP_ID + 1,
        SecretString::from(FakeIm::SECRET_KEY),
    );
    let other_key = UserSigner::new(FakeIm::SDK_APP_ID, SecretString::from("not the key"));
    let cases = [
        ("undecodable", admin, "not-a-sig".to_owned(), 70003),
        (
            "another app",
            admin,
            other_app.sign(admin, 3_600, now()),
            70014,
        ),
        (
            "bad HMAC",
            admin,
            other_key.sign(admin, 3_600, now()),
            70009,
        ),
        (
            "expired",
            admin,
            fake.signer().sign(admin, 10, now() - 100),
            70001,
        ),
        (
            "another account",
            admin,
            fake.signer().sign("bob", 3_600, now()),
            70013,
        ),
        (
            "not an admin",
            "bob",
            fake.signer().sign("bob", 3_600, now()),
            60010,
        ),
    ];
    for (case, identifier, sig, expected) in cases {
        let (status, envelope) = post_as(&fake, identifier, &sig, "destroy_group", &body).await;
        assert_eq!(status, 200, "{case}");
        assert_eq!(envelope["ActionStatus"], "FAIL", "{case}");
        assert_eq!(code(&envelope), expected, "{case}: {envelope}");
    }
    // A good sig gets past the checks (to the unknown group).
    let (_, envelope) = post_as(&fake, admin, &admin_sig(&fake), "destroy_group", &body).await;
    assert_eq!(code(&envelope), 10010);
}

#[tokio::test]
async fn every_query_parameter_is_required() {
    let fake = FakeIm::start().await;
    let sig = admin_sig(&fake);
    let app = FakeIm::SDK_APP_ID.to_string();
    let full = [
        ("sdkappid", app.as_str()),
        ("identifier", FakeIm::ADMIN),
        ("usersig", sig.as_str()),
        ("random", "7"),
        ("contenttype", "json"),
    ];
    fake.add_group("g");
    let body = json!({"GroupId": "g"});
    for missing in 0..full.len() {
        let query: Vec<_> = full
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != missing)
            .map(|(_, p)| *p)
            .collect();
        let (status, envelope) = post(&fake, "destroy_group", &query, &body).await;
        assert_eq!(status, 200);
        assert_eq!(code(&envelope), 60002, "without {}", full[missing].0);
    }
    let mut bad_random = full;
    bad_random[3] = ("random", "-1");
    assert_eq!(
        code(&post(&fake, "destroy_group", &bad_random, &body).await.1),
        60002
    );
    let mut not_json = full;
    not_json[4] = ("contenttype", "xml");
    assert_eq!(
        code(&post(&fake, "destroy_group", &not_json, &body).await.1),
        60002
    );
    assert!(fake.group_exists("g"));
    assert_eq!(code(&post(&fake, "destroy_group", &full, &body).await.1), 0);
    assert!(!fake.group_exists("g"));
}

#[tokio::test]
async fn message_bodies_are_validated() {
    let fake = FakeIm::start().await;
    fake.add_group("g");
    let sig = admin_sig(&fake);
    let send = |body: Value| {
        let sig = sig.clone();
        let fake = &fake;
        async move {
            code(
                &post_as(fake, FakeIm::ADMIN, &sig, "send_group_msg", &body)
                    .await
                    .1,
            )
        }
    };
    assert_eq!(send(json!({"GroupId": "g", "Random": 1})).await, 10004);
    assert_eq!(
        send(json!({"GroupId": "g", "Random": 1, "MsgBody": []})).await,
        10004
    );
    let no_data = json!({
        "GroupId": "g",
        "Random": 1,
        "MsgBody": [{"MsgType": "TIMCustomElem", "MsgContent": {}}],
    });
    assert_eq!(send(no_data).await, 10004);
    let mut bad_priority = custom("g", 1, "{}");
    bad_priority["MsgPriority"] = json!("Urgent");
    assert_eq!(send(bad_priority).await, 10004);
    assert_eq!(send(custom("nope", 1, "{}")).await, 10010);
    assert_eq!(send(custom("g", 1, &"x".repeat(12 * 1024))).await, 80002);
    // Tencent counts the whole request: a `MsgBody` within 12 KiB is refused when the rest
    // of the request takes it over.
    let over = |data_bytes: usize| custom("g", 1, &"x".repeat(data_bytes));
    let whole = |body: &Value| serde_json::to_vec(body).unwrap().len();
    let msg_body = |body: &Value| serde_json::to_vec(&body["MsgBody"]).unwrap().len();
    let within = over(MAX_MSG_BYTES - whole(&over(0)));
    assert_eq!(whole(&within), MAX_MSG_BYTES);
    let beyond = over(MAX_MSG_BYTES - whole(&over(0)) + 1);
    assert_eq!(whole(&beyond), MAX_MSG_BYTES + 1);
    assert!(msg_body(&beyond) < MAX_MSG_BYTES);
    assert_eq!(send(beyond).await, 80002);
    assert_eq!(fake.message_count("g"), 0);
    assert_eq!(send(within).await, 0);
    assert_eq!(fake.message_count("g"), 1);
    assert_eq!(send(custom("g", 1, r#"{"ok":true}"#)).await, 0);
    let messages = fake.messages("g");
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[1].data, json!({"ok": true}));
    assert_eq!(messages[1].priority.as_deref(), Some("Normal"));
}

#[tokio::test]
async fn messages_are_numbered_per_group_and_repeats_dropped() {
    let fake = FakeIm::start().await;
    fake.add_group("a");
    fake.add_group("b");
    let sig = admin_sig(&fake);
    let mut seqs = Vec::new();
    for (group, random) in [("a", 1), ("a", 2), ("b", 3), ("a", 4)] {
        let (_, envelope) = post_as(
            &fake,
            FakeIm::ADMIN,
            &sig,
            "send_group_msg",
            &custom(group, random, "{}"),
        )
        .await;
        seqs.push(envelope["MsgSeq"].as_u64().unwrap());
    }
    assert_eq!(seqs, [1, 2, 1, 3]);
    // Same sender, body and Random: answered as the first, stored once.
    let (_, repeat) = post_as(
        &fake,
        FakeIm::ADMIN,
        &sig,
        "send_group_msg",
        &custom("a", 2, "{}"),
    )
    .await;
    assert_eq!(code(&repeat), 0);
    assert_eq!(repeat["MsgSeq"], 2);
    assert_eq!(fake.message_count("a"), 3);
    assert_eq!(fake.duplicates(), 1);
    // Another body with the same Random is another message.
    let (_, other) = post_as(
        &fake,
        FakeIm::ADMIN,
        &sig,
        "send_group_msg",
        &custom("a", 2, "[]"),
    )
    .await;
    assert_eq!(other["MsgSeq"], 4);
}

#[tokio::test]
async fn a_group_takes_forty_messages_a_window_and_drops_the_rest() {
    // A minute-long window: all 60 land in it, so exactly 20 are dropped.
    let fake = FakeIm::start_with(FakeImConfig {
        cap_window: Duration::from_secs(60),
        ..FakeImConfig::default()
    })
    .await;
    fake.add_group("g");
    fake.add_group("other");
    let sig = admin_sig(&fake);
    let mut dropped = Vec::new();
    for random in 0..60 {
        let (_, envelope) = post_as(
            &fake,
            FakeIm::ADMIN,
            &sig,
            "send_group_msg",
            &custom("g", random, "{}"),
        )
        .await;
        assert_eq!(code(&envelope), 0, "a drop still answers success");
        if envelope.get("MsgDropReason").is_some() {
            assert_eq!(envelope["MsgDropReason"], "MsgFreqCtrl");
            assert_eq!(envelope["MsgSeq"], 0);
            dropped.push(random);
        }
    }
    assert_eq!(dropped, (40..60).collect::<Vec<_>>());
    assert_eq!(fake.dropped_count("g"), 20);
    assert_eq!(fake.message_count("g"), 40);
    // The cap is per group.
    let (_, envelope) = post_as(
        &fake,
        FakeIm::ADMIN,
        &sig,
        "send_group_msg",
        &custom("other", 1, "{}"),
    )
    .await;
    assert!(envelope.get("MsgDropReason").is_none(), "{envelope}");
}

#[tokio::test]
async fn groups_are_created_with_tencents_rules() {
    let fake = FakeIm::start().await;
    let sig = admin_sig(&fake);
    let create = |body: Value| {
        let sig = sig.clone();
        let fake = &fake;
        async move {
            code(
                &post_as(fake, FakeIm::ADMIN, &sig, "create_group", &body)
                    .await
                    .1,
            )
        }
    };
    assert_eq!(
        create(json!({"Type": "AVChatRoom", "GroupId": "r1"})).await,
        10004,
        "no Name"
    );
    assert_eq!(
        create(json!({"Type": "AVChatRoom", "GroupId": "r1", "Name": "x".repeat(31)})).await,
        10004
    );
    assert_eq!(
        create(json!({"Type": "AVChatRoom", "GroupId": "@TGS#1", "Name": "n"})).await,
        10004
    );
    assert_eq!(
        create(json!({"Type": "AVChatRoom", "GroupId": "r1", "Name": "n", "MemberList": []})).await,
        10007
    );
    assert_eq!(
        create(json!({"Type": "AVChatRoom", "GroupId": "r1", "Name": "n"})).await,
        0
    );
    assert_eq!(
        create(json!({"Type": "AVChatRoom", "GroupId": "r1", "Name": "n"})).await,
        10025
    );
    assert!(fake.group_exists("r1"));
}
