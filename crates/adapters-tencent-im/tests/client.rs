//! [`ImClient`] against the fake Tencent IM: success, every class of failure (retried,
//! re-signed, permanent), HTTP errors, timeouts, malformed answers, duplicate sends and
//! dropped messages, and the group operations.

use std::collections::HashSet;
use std::time::Duration;

use adapters_tencent_im::{
    FakeIm, FakeImConfig, Fault, GroupMessage, ImClient, ImError, ImSettings, SendOutcome,
    decode_user_sig,
};
use room_domain::ImPriority;
use room_testkit::ManualClock;

fn client(fake: &FakeIm) -> ImClient {
    ImClient::new(&fake.settings()).unwrap()
}

fn client_with(fake: &FakeIm, adjust: impl FnOnce(&mut ImSettings)) -> ImClient {
    let mut settings = fake.settings();
    adjust(&mut settings);
    ImClient::new(&settings).unwrap()
}

fn message(text: &str) -> GroupMessage {
    GroupMessage::new(format!(r#"{{"text":"{text}"}}"#)).with_priority(ImPriority::High)
}

#[tokio::test]
async fn a_message_reaches_its_group_with_its_priority_and_data() {
    let fake = FakeIm::start().await;
    let client = client(&fake);
    client.create_group("room-1", "Room one").await.unwrap();
    let first = client
        .send_group_msg("room-1", &message("a"))
        .await
        .unwrap();
    let second = client
        .send_group_msg("room-1", &message("b"))
        .await
        .unwrap();
    assert!(
        matches!(first, SendOutcome::Sent { msg_seq: 1, .. }),
        "{first:?}"
    );
    assert!(
        matches!(second, SendOutcome::Sent { msg_seq: 2, .. }),
        "{second:?}"
    );
    let messages = fake.messages("room-1");
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0].priority.as_deref(), Some("High"));
    assert_eq!(messages[0].data["text"], "a");
    assert_eq!(messages[1].data["text"], "b");
    assert_ne!(messages[0].random, messages[1].random);

    // One cached admin sig for every call, and a fresh `random` per request.
    let requests = fake.requests();
    assert_eq!(requests.len(), 3);
    let sigs: HashSet<_> = requests.iter().map(|r| r.usersig.clone()).collect();
    assert_eq!(sigs.len(), 1);
    let randoms: HashSet<_> = requests.iter().map(|r| r.random.clone()).collect();
    assert_eq!(randoms.len(), 3);
    assert!(requests.iter().all(|r| r.error_code == Some(0)));
}

#[tokio::test]
async fn retryable_codes_are_retried_until_success() {
    let fake = FakeIm::start().await;
    fake.add_group("g");
    let client = client(&fake);
    fake.fail_next(1, Fault::Code(10002));
    fake.fail_next(1, Fault::Code(90994));
    let outcome = client.send_group_msg("g", &message("x")).await.unwrap();
    assert!(outcome.is_sent());
    assert_eq!(fake.request_count("send_group_msg"), 3);
    assert_eq!(fake.message_count("g"), 1);
}

#[tokio::test]
async fn retries_stop_at_the_attempt_limit() {
    let fake = FakeIm::start().await;
    fake.add_group("g");
    let client = client_with(&fake, |s| s.max_attempts = 3);
    fake.fail_next(5, Fault::Code(70500));
    let error = client.send_group_msg("g", &message("x")).await.unwrap_err();
    assert!(
        matches!(error, ImError::Busy { code: 70500, .. }),
        "{error:?}"
    );
    assert!(error.is_retryable());
    assert_eq!(fake.request_count("send_group_msg"), 3);
    assert_eq!(fake.message_count("g"), 0);
}

/// The `usersig` of each `send_group_msg` request so far.
fn send_sigs(fake: &FakeIm) -> Vec<String> {
    fake.requests()
        .iter()
        .filter(|r| r.command == "send_group_msg")
        .map(|r| r.usersig.clone().unwrap())
        .collect()
}

#[tokio::test]
async fn an_expired_sig_is_signed_anew_and_retried_once() {
    let fake = FakeIm::start().await;
    fake.add_group("g");
    let clock = ManualClock::at_system_time();
    let client = ImClient::with_clock(&fake.settings(), clock.clone()).unwrap();
    assert!(
        client
            .send_group_msg("g", &message("w"))
            .await
            .unwrap()
            .is_sent()
    );
    // The cached sig is still young: only the refusal makes the client sign again, at the
    // clock's new time.
    clock.advance_secs(5);
    fake.fail_next(1, Fault::Code(70001));
    assert!(
        client
            .send_group_msg("g", &message("x"))
            .await
            .unwrap()
            .is_sent()
    );
    let sigs = send_sigs(&fake);
    assert_eq!(sigs.len(), 3);
    assert_eq!(sigs[0], sigs[1], "one cached sig until it is refused");
    assert_ne!(sigs[1], sigs[2], "the retry carries a new sig");
    assert_eq!(decode_user_sig(&sigs[2]).unwrap().time, clock.unix_secs());

    // Refused again after the new sig: no third try.
    clock.advance_secs(5);
    fake.fail_next(2, Fault::Code(70001));
    let error = client.send_group_msg("g", &message("y")).await.unwrap_err();
    assert!(
        matches!(error, ImError::SigRefused { code: 70001, .. }),
        "{error:?}"
    );
    let sigs = send_sigs(&fake);
    assert_eq!(sigs.len(), 5);
    assert_ne!(sigs[3], sigs[4]);
}

#[tokio::test]
async fn too_many_bad_sigs_waits_then_retries_once_with_a_new_sig() {
    let fake = FakeIm::start().await;
    fake.add_group("g");
    let clock = ManualClock::at_system_time();
    let wait = Duration::from_millis(300);
    let mut settings = fake.settings();
    settings.bad_sig_wait_ms = wait.as_millis() as u64;
    let client = ImClient::with_clock(&settings, clock.clone()).unwrap();
    assert!(
        client
            .send_group_msg("g", &message("w"))
            .await
            .unwrap()
            .is_sent()
    );
    // The cached sig is still young when it is refused; the new one is signed later.
    clock.advance_secs(5);
    fake.fail_next(1, Fault::Code(70050));
    assert!(
        client
            .send_group_msg("g", &message("x"))
            .await
            .unwrap()
            .is_sent()
    );
    let requests: Vec<_> = fake
        .requests()
        .into_iter()
        .filter(|r| r.command == "send_group_msg")
        .collect();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].usersig, requests[1].usersig);
    assert_ne!(requests[1].usersig, requests[2].usersig);
    let resigned = decode_user_sig(requests[2].usersig.as_deref().unwrap()).unwrap();
    assert_eq!(resigned.time, clock.unix_secs());
    // The retry came no sooner than the configured wait (a sleep never ends early).
    let gap = requests[2].at.duration_since(requests[1].at);
    assert!(gap >= wait, "retried after {gap:?}");
}

#[tokio::test]
async fn permanent_codes_stop_at_once() {
    let fake = FakeIm::start().await;
    fake.add_group("g");
    let client = client(&fake);
    for (code, expected) in [
        (80001, "rejected"),
        (10007, "not_permitted"),
        (12345, "rejected"),
    ] {
        let before = fake.request_count("send_group_msg");
        fake.fail_next(1, Fault::Code(code));
        let error = client.send_group_msg("g", &message("x")).await.unwrap_err();
        assert!(!error.is_retryable(), "{code}: {error:?}");
        assert_eq!(error.code(), Some(code));
        let variant = match error {
            ImError::Rejected { .. } => "rejected",
            ImError::NotPermitted { .. } => "not_permitted",
            other => panic!("{code}: {other:?}"),
        };
        assert_eq!(variant, expected);
        assert_eq!(fake.request_count("send_group_msg"), before + 1, "{code}");
    }
    assert_eq!(fake.message_count("g"), 0);
}

#[tokio::test]
async fn a_bad_gateway_is_retried() {
    let fake = FakeIm::start().await;
    fake.add_group("g");
    let client = client(&fake);
    fake.fail_next(1, Fault::Http(502));
    assert!(
        client
            .send_group_msg("g", &message("x"))
            .await
            .unwrap()
            .is_sent()
    );
    assert_eq!(fake.request_count("send_group_msg"), 2);

    fake.fail_next(3, Fault::Http(502));
    let error = client.send_group_msg("g", &message("y")).await.unwrap_err();
    assert_eq!(error, ImError::Http { status: 502 });
    assert!(error.is_retryable());
}

#[tokio::test]
async fn a_malformed_answer_is_retried() {
    let fake = FakeIm::start().await;
    fake.add_group("g");
    let client = client(&fake);
    fake.fail_next(1, Fault::Malformed);
    assert!(
        client
            .send_group_msg("g", &message("x"))
            .await
            .unwrap()
            .is_sent()
    );
    assert_eq!(fake.request_count("send_group_msg"), 2);

    fake.fail_next(3, Fault::Malformed);
    let error = client.send_group_msg("g", &message("y")).await.unwrap_err();
    assert!(matches!(error, ImError::Malformed(_)), "{error:?}");
}

#[tokio::test]
async fn a_send_retried_after_a_timeout_is_stored_once() {
    let fake = FakeIm::start().await;
    fake.add_group("g");
    let client = client_with(&fake, |s| s.request_timeout_ms = 800);
    // The first attempt is stored, but answered after the client gave up on it.
    fake.fail_next(1, Fault::Delay(Duration::from_millis(3_000)));
    let outcome = client.send_group_msg("g", &message("x")).await.unwrap();
    assert_eq!(fake.request_count("send_group_msg"), 2);
    assert_eq!(fake.message_count("g"), 1);
    assert_eq!(fake.duplicates(), 1);
    // The repeat is answered as the first was.
    assert!(
        matches!(outcome, SendOutcome::Sent { msg_seq: 1, .. }),
        "{outcome:?}"
    );
    let requests = fake.requests();
    assert_eq!(
        requests[0].body, requests[1].body,
        "the retry reuses its Random"
    );
}

#[tokio::test]
async fn a_slow_answer_past_every_attempt_is_a_timeout() {
    let fake = FakeIm::start().await;
    fake.add_group("g");
    let client = client_with(&fake, |s| {
        s.request_timeout_ms = 200;
        s.max_attempts = 2;
    });
    fake.fail_next(2, Fault::Delay(Duration::from_millis(1_000)));
    let error = client.create_group("room-2", "two").await.unwrap_err();
    assert!(matches!(error, ImError::Timeout(_)), "{error:?}");
    assert!(error.is_retryable());
}

#[tokio::test]
async fn an_unreachable_server_is_an_io_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let fake = FakeIm::start().await;
    let mut settings = fake.settings();
    settings.base_url = format!("http://{addr}");
    let client = ImClient::new(&settings).unwrap();
    let error = client.destroy_group("g").await.unwrap_err();
    assert!(matches!(error, ImError::Io(_)), "{error:?}");
    assert!(error.is_retryable());
}

#[tokio::test]
async fn a_message_dropped_for_frequency_is_a_drop_not_a_success() {
    // A minute-long cap window: all 120 land in one window however slow the machine is.
    let fake = FakeIm::start_with(FakeImConfig {
        cap_window: Duration::from_secs(60),
        ..FakeImConfig::default()
    })
    .await;
    fake.add_group("g");
    let client = client_with(&fake, |s| s.max_attempts = 1);
    // Far more than 40 in the window: exactly 40 are taken, the rest dropped.
    let sends = (0..120).map(|i| {
        let client = client.clone();
        async move { client.send_group_msg("g", &message(&i.to_string())).await }
    });
    let outcomes: Vec<_> = futures_join_all(sends).await;
    let dropped = outcomes
        .iter()
        .filter(|o| matches!(o, Ok(SendOutcome::Dropped { reason }) if reason == "MsgFreqCtrl"))
        .count();
    let sent = outcomes
        .iter()
        .filter(|o| matches!(o, Ok(SendOutcome::Sent { .. })))
        .count();
    assert_eq!((sent, dropped), (40, 80));
    assert_eq!(dropped, fake.dropped_count("g"));
    assert_eq!(sent, fake.message_count("g"));
}

/// Runs every future at once and collects their outputs in order.
async fn futures_join_all<F: Future + Send + 'static>(
    futures: impl Iterator<Item = F>,
) -> Vec<F::Output>
where
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futures.map(tokio::spawn).collect();
    let mut outputs = Vec::with_capacity(handles.len());
    for handle in handles {
        outputs.push(handle.await.unwrap());
    }
    outputs
}

#[tokio::test]
async fn groups_are_created_once_and_destroyed_idempotently() {
    let fake = FakeIm::start().await;
    let client = client(&fake);
    // 33 bytes of name: cut to 30 at a character boundary, or the fake would refuse it.
    client
        .create_group("room-9", &"语".repeat(11))
        .await
        .unwrap();
    client.create_group("room-9", "again").await.unwrap();
    assert!(fake.group_exists("room-9"));
    let created = fake.requests();
    let body: serde_json::Value = serde_json::from_slice(&created[0].body).unwrap();
    assert_eq!(body["Type"], "AVChatRoom");
    assert_eq!(body["Name"], "语".repeat(10));
    assert_eq!(created[1].error_code, Some(10025));

    client.destroy_group("room-9").await.unwrap();
    assert!(!fake.group_exists("room-9"));
    client.destroy_group("room-9").await.unwrap();
    assert_eq!(fake.requests().last().unwrap().error_code, Some(10010));
    let error = client
        .send_group_msg("room-9", &message("x"))
        .await
        .unwrap_err();
    assert!(
        matches!(error, ImError::NoSuchGroup { code: 10010, .. }),
        "{error:?}"
    );
}

#[tokio::test]
async fn mutes_and_bans_are_sent_in_chunks() {
    let fake = FakeIm::start().await;
    fake.add_group("g");
    let client = client(&fake);
    let members: Vec<String> = (0..1_200).map(|i| format!("u-{i}")).collect();
    client.forbid_send_msg("g", &members, 600).await.unwrap();
    assert_eq!(fake.request_count("forbid_send_msg"), 3);
    assert_eq!(fake.muted("g", "u-0"), Some(600));
    assert_eq!(fake.muted("g", "u-1199"), Some(600));
    client.forbid_send_msg("g", &members[..1], 0).await.unwrap();
    assert_eq!(fake.muted("g", "u-0"), None);

    client
        .ban_group_member("g", &members[..45], 3_600, "spam")
        .await
        .unwrap();
    assert_eq!(fake.request_count("ban_group_member"), 3);
    assert_eq!(fake.banned("g", "u-44"), Some((3_600, "spam".to_owned())));
    assert_eq!(fake.banned("g", "u-45"), None);
    client
        .unban_group_member("g", &members[..45])
        .await
        .unwrap();
    assert_eq!(fake.request_count("unban_group_member"), 3);
    assert_eq!(fake.banned("g", "u-44"), None);
}

#[tokio::test]
async fn a_plan_without_bans_answers_not_permitted() {
    let fake = FakeIm::start_with(FakeImConfig {
        ban_permitted: false,
        ..FakeImConfig::default()
    })
    .await;
    fake.add_group("g");
    let client = client(&fake);
    let error = client
        .ban_group_member("g", &["u-1"], 60, "spam")
        .await
        .unwrap_err();
    assert!(matches!(error, ImError::NotPermitted { .. }), "{error:?}");
    assert_eq!(fake.request_count("ban_group_member"), 1);
}

#[test]
fn a_client_needs_an_app_and_a_key() {
    let error = ImClient::new(&ImSettings::default()).unwrap_err();
    assert!(matches!(error, ImError::Config(_)), "{error:?}");
    let mut settings = ImSettings::new(1_400_000_000, "key");
    settings.base_url = "ftp://example".to_owned();
    assert!(matches!(
        ImClient::new(&settings).unwrap_err(),
        ImError::Config(_)
    ));
}
