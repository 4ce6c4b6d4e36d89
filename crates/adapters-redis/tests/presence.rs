//! [`RedisPresence`] against the real Redis of `ROOM_TEST_REDIS_URL`: the presence
//! conformance suite, then what only a shared server shows: two nodes on one key prefix see
//! each other's heartbeats, and what Redis holds goes away with the users (removed, evicted,
//! or past the entry TTL). Each test uses its own key prefix, so tests run in parallel.

use std::sync::Arc;
use std::time::Duration;

use adapters_redis::{RedisPresence, RedisPresenceSettings};
use room_app::ports::{Presence, StaleMember};
use room_app::testkit;
use room_domain::{RoomId, Timestamp, UserId};
use room_testkit::redis::{keys, prefix, pttl, raw};

const T0: Timestamp = Timestamp(1_764_460_800_000);

fn room(id: &str) -> RoomId {
    RoomId::new(id).unwrap()
}

fn user(id: &str) -> UserId {
    UserId::new(id).unwrap()
}

/// A presence under `prefix` whose entries live `entry_ttl` past their last write, or `None`
/// when the test skips.
async fn presence_with(prefix: &str, entry_ttl: Duration) -> Option<RedisPresence> {
    let url = room_testkit::redis::url()?;
    let mut settings = RedisPresenceSettings::new(&url);
    settings.key_prefix = prefix.to_owned();
    settings.entry_ttl = entry_ttl;
    // Generous for a busy machine.
    settings.op_timeout = Duration::from_secs(5);
    match RedisPresence::connect(&settings).await {
        Ok(presence) => Some(presence),
        Err(error) => {
            testkit::service_unreachable(&url, error);
            None
        }
    }
}

async fn presence(prefix: &str) -> Option<RedisPresence> {
    presence_with(prefix, Duration::from_secs(600)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_presence_passes_the_presence_suite() {
    if presence(&prefix()).await.is_none() {
        return;
    }
    testkit::presence_suite(|| async {
        Arc::new(
            presence(&prefix())
                .await
                .expect("Redis answered a moment ago"),
        )
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_nodes_on_one_prefix_see_each_others_heartbeats() {
    let prefix = prefix();
    let Some(a) = presence(&prefix).await else {
        return;
    };
    let b = presence(&prefix).await.unwrap();
    let (bob, r1, r2) = (user("bob"), room("r1"), room("r2"));

    assert_eq!(a.move_to(&r1, &bob, T0).await.unwrap(), None);
    assert_eq!(b.get_current_room(&bob).await.unwrap(), Some(r1.clone()));
    // bob's join of r2 lands on node b: it learns the room he was in on node a.
    let moved = Timestamp(T0.0 + 10);
    assert_eq!(b.move_to(&r2, &bob, moved).await.unwrap(), Some(r1.clone()));
    assert_eq!(a.get_current_room(&bob).await.unwrap(), Some(r2.clone()));
    // Node a's eviction pass sees node b's heartbeat, and cannot evict bob with the one it saw
    // before it.
    let stale = a.list_stale(Timestamp(T0.0 + 100), None, 10).await.unwrap();
    assert_eq!(
        stale,
        vec![StaleMember {
            room_id: r2.clone(),
            user: bob.clone(),
            seen: moved,
        }]
    );
    assert!(!a.remove_if_seen(&r1, &bob, T0).await.unwrap());
    b.restore(&r1, &bob, T0).await.unwrap();
    assert_eq!(a.get_current_room(&bob).await.unwrap(), Some(r2.clone()));
    assert!(a.remove_if_seen(&r2, &bob, moved).await.unwrap());
    assert_eq!(b.get_current_room(&bob).await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn entries_are_deleted_with_their_users() {
    let prefix = prefix();
    let Some(p) = presence(&prefix).await else {
        return;
    };
    let mut conn = raw(&room_testkit::redis::url().unwrap()).await;
    let r1 = room("r1");
    for (i, name) in ["ann", "bob", "cid"].into_iter().enumerate() {
        p.move_to(&r1, &user(name), Timestamp(T0.0 + i as i64))
            .await
            .unwrap();
    }
    let user_key = |name: &str| format!("{prefix}room:presence:user:{name}");
    let seen_key = format!("{prefix}room:presence:seen");
    assert_eq!(
        keys(&mut conn, &prefix).await,
        vec![
            seen_key.clone(),
            user_key("ann"),
            user_key("bob"),
            user_key("cid")
        ],
        "one hash per user and one set"
    );
    for key in [user_key("ann"), seen_key.clone()] {
        let left = pttl(&mut conn, &key).await;
        assert!(
            left > 590_000 && left <= 600_000,
            "{key} lives the entry TTL: {left} ms"
        );
    }

    // A user who left, one evicted, one who moved away and was removed from the room left.
    p.remove(&r1, &user("ann")).await.unwrap();
    let stale = p.list_stale(Timestamp(T0.0 + 2), None, 10).await.unwrap();
    assert_eq!(stale.len(), 1, "{stale:?}");
    assert!(
        p.remove_if_seen(&stale[0].room_id, &stale[0].user, stale[0].seen)
            .await
            .unwrap()
    );
    assert_eq!(
        keys(&mut conn, &prefix).await,
        vec![seen_key.clone(), user_key("cid")]
    );
    p.move_to(&room("r2"), &user("cid"), Timestamp(T0.0 + 5))
        .await
        .unwrap();
    p.remove(&room("r2"), &user("cid")).await.unwrap();
    assert_eq!(
        keys(&mut conn, &prefix).await,
        Vec::<String>::new(),
        "nothing is left once everyone is gone"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn entries_past_their_ttl_expire_and_leave_the_stale_listing() {
    let prefix = prefix();
    let Some(short) = presence_with(&prefix, Duration::from_millis(300)).await else {
        return;
    };
    let long = presence(&prefix).await.unwrap();
    let mut conn = raw(&room_testkit::redis::url().unwrap()).await;
    short.move_to(&room("r1"), &user("bob"), T0).await.unwrap();
    long.move_to(&room("r1"), &user("cid"), T0).await.unwrap();
    // A shorter TTL written later does not cut the set's.
    short.move_to(&room("r1"), &user("bob"), T0).await.unwrap();
    let seen_key = format!("{prefix}room:presence:seen");
    assert!(pttl(&mut conn, &seen_key).await > 590_000);

    let bob_key = format!("{prefix}room:presence:user:bob");
    let conn2 = conn.clone();
    testkit::eventually("bob's entry expires", move || {
        let (mut conn, key) = (conn2.clone(), bob_key.clone());
        async move { pttl(&mut conn, &key).await == -2 }
    })
    .await;
    assert_eq!(long.get_current_room(&user("bob")).await.unwrap(), None);
    let stale = long
        .list_stale(Timestamp(T0.0 + 1), None, 10)
        .await
        .unwrap();
    assert_eq!(
        stale.iter().map(|s| s.user.as_str()).collect::<Vec<_>>(),
        vec!["cid"],
        "an expired entry is not listed"
    );
    let members: Vec<String> = redis::cmd("ZRANGE")
        .arg(&seen_key)
        .arg(0)
        .arg(-1)
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(members, vec!["cid"], "the listing dropped bob's member");
}

#[tokio::test]
async fn an_entry_ttl_below_the_minimum_is_refused() {
    let mut settings = RedisPresenceSettings::new("redis://127.0.0.1:1/0");
    settings.entry_ttl = Duration::from_millis(10);
    let error = RedisPresence::connect(&settings).await.unwrap_err();
    assert!(matches!(error, room_app::Error::Invalid(_)), "{error:?}");
}
