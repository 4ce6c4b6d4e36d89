//! [`RedisPasswordAttempts`] against the real Redis of `ROOM_TEST_REDIS_URL`: the password
//! attempts conformance suite, then what only a shared server shows: two nodes on one key
//! prefix share one count, and each count is one key that expires with its window. Each test
//! uses its own key prefix, so tests run in parallel.

use std::sync::Arc;
use std::time::Duration;

use adapters_redis::{RedisPasswordAttempts, RedisPasswordAttemptsSettings};
use room_app::ports::PasswordAttempts;
use room_app::{Error, MAX_WRONG_PASSWORDS, PASSWORD_WINDOW_MS, testkit};
use room_domain::{RoomId, Timestamp, UserId};
use room_testkit::redis::{keys, prefix, pttl, raw};

const T0: Timestamp = Timestamp(1_764_460_800_000);

fn room(id: &str) -> RoomId {
    RoomId::new(id).unwrap()
}

fn user(id: &str) -> UserId {
    UserId::new(id).unwrap()
}

/// The counts under `prefix`, or `None` when the test skips.
async fn attempts(prefix: &str) -> Option<RedisPasswordAttempts> {
    let url = room_testkit::redis::url()?;
    let mut settings = RedisPasswordAttemptsSettings::new(&url);
    settings.key_prefix = prefix.to_owned();
    // Generous for a busy machine.
    settings.op_timeout = Duration::from_secs(5);
    match RedisPasswordAttempts::connect(&settings).await {
        Ok(attempts) => Some(attempts),
        Err(error) => {
            testkit::service_unreachable(&url, error);
            None
        }
    }
}

fn locked_out_until<T: std::fmt::Debug>(checked: room_app::Result<T>, retry_at: Timestamp) {
    assert!(
        matches!(&checked, Err(Error::TooManyAttempts { retry_at: at }) if *at == retry_at),
        "expected a lockout until {retry_at:?}, got {checked:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_password_attempts_pass_the_password_attempts_suite() {
    if attempts(&prefix()).await.is_none() {
        return;
    }
    testkit::password_attempts_suite(|| async {
        Arc::new(
            attempts(&prefix())
                .await
                .expect("Redis answered a moment ago"),
        )
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_nodes_on_one_prefix_share_one_count() {
    let prefix = prefix();
    let Some(a) = attempts(&prefix).await else {
        return;
    };
    let b = attempts(&prefix).await.unwrap();
    let (bob, r1) = (user("bob"), room("r1"));
    let ends = Timestamp(T0.0 + PASSWORD_WINDOW_MS);

    // Guesses alternate between the nodes: the limit is one for both.
    for i in 0..MAX_WRONG_PASSWORDS {
        let node = if i % 2 == 0 { &a } else { &b };
        let counted = node.check(&bob, &r1, T0, true).await.unwrap().unwrap();
        assert_eq!(counted.since, T0, "one window for both nodes");
    }
    locked_out_until(a.check(&bob, &r1, T0, false).await, ends);
    locked_out_until(b.check(&bob, &r1, T0, false).await, ends);

    // An attempt counted on one node is taken back on the other.
    let (carol, r2) = (user("carol"), room("r2"));
    for _ in 0..MAX_WRONG_PASSWORDS - 1 {
        let _ = a.check(&carol, &r2, T0, true).await.unwrap();
    }
    let last = a.check(&carol, &r2, T0, true).await.unwrap().unwrap();
    locked_out_until(b.check(&carol, &r2, T0, false).await, ends);
    b.uncount(last).await.unwrap();
    assert_eq!(a.check(&carol, &r2, T0, false).await.unwrap(), None);

    // Guesses racing on both nodes: the limit, no more, get through.
    let dave = user("dave");
    let mut guesses = tokio::task::JoinSet::new();
    for i in 0..6 * MAX_WRONG_PASSWORDS {
        let node = if i % 2 == 0 { a.clone() } else { b.clone() };
        let (dave, r1) = (dave.clone(), r1.clone());
        guesses.spawn(async move { node.check(&dave, &r1, T0, true).await });
    }
    let mut through = 0;
    while let Some(guess) = guesses.join_next().await {
        match guess.unwrap() {
            Ok(Some(_)) => through += 1,
            other => locked_out_until(other, ends),
        }
    }
    assert_eq!(through, MAX_WRONG_PASSWORDS);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_count_is_one_key_that_expires_with_its_window() {
    let prefix = prefix();
    let Some(a) = attempts(&prefix).await else {
        return;
    };
    let mut conn = raw(&room_testkit::redis::url().unwrap()).await;
    let bob = user("bob");

    // Checks that count nothing write nothing.
    for _ in 0..3 {
        assert_eq!(a.check(&bob, &room("r1"), T0, false).await.unwrap(), None);
    }
    assert_eq!(keys(&mut conn, &prefix).await, Vec::<String>::new());

    for _ in 0..MAX_WRONG_PASSWORDS {
        let _ = a.check(&bob, &room("r1"), T0, true).await.unwrap();
    }
    let _ = a.check(&bob, &room("r2"), T0, true).await.unwrap();
    let key = |room: &str| format!("{prefix}room:attempts:bob/{room}");
    assert_eq!(
        keys(&mut conn, &prefix).await,
        vec![key("r1"), key("r2")],
        "one key per user and room"
    );
    for room in ["r1", "r2"] {
        let left = pttl(&mut conn, &key(room)).await;
        assert!(
            left > PASSWORD_WINDOW_MS - 10_000 && left <= PASSWORD_WINDOW_MS,
            "the count lives as long as its window: {left} ms"
        );
    }

    // The lockout ends with the window, by the callers' clock...
    locked_out_until(
        a.check(
            &bob,
            &room("r1"),
            Timestamp(T0.0 + PASSWORD_WINDOW_MS - 1),
            false,
        )
        .await,
        Timestamp(T0.0 + PASSWORD_WINDOW_MS),
    );
    let later = Timestamp(T0.0 + PASSWORD_WINDOW_MS);
    assert_eq!(
        a.check(&bob, &room("r1"), later, false).await.unwrap(),
        None
    );
    let renewed = a
        .check(&bob, &room("r1"), later, true)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(renewed.since, later, "a new window begins");
    assert!(pttl(&mut conn, &key("r1")).await > PASSWORD_WINDOW_MS - 10_000);

    // ... and the key with it, by the server's: what it does when the TTL runs out.
    let _: () = redis::cmd("DEL")
        .arg(key("r1"))
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(
        a.check(&bob, &room("r1"), later, false).await.unwrap(),
        None
    );
    assert_eq!(
        a.check(&bob, &room("r1"), later, true)
            .await
            .unwrap()
            .map(|c| c.since),
        Some(later)
    );
}
