//! Profiles across two nodes on one MariaDB and one Redis: a profile changed through one node
//! reaches the views the other node builds once its cache's entry expires
//! (`ROOM__PROFILES__CACHE_TTL_MS`, here 1 s); until then that node serves what it cached.

use std::time::Instant;

use super::*;

/// Carol's nickname in `room_id`'s online list as `node` builds it.
async fn nickname_on(node: &Node, room_id: &str) -> Option<String> {
    let (status, page) = node
        .get(
            &format!("/v1/rooms/{room_id}/online-users?limit=100"),
            "alice",
        )
        .await;
    assert_eq!(status, 200, "{page}");
    page["users"]
        .as_array()
        .unwrap()
        .iter()
        .find(|user| user["user_id"] == "carol")
        .and_then(|user| user["nickname"].as_str().map(str::to_owned))
}

/// Waits until `node` shows carol as `expected`; answers how long that took.
async fn until_shown(node: &Node, room_id: &str, expected: &str) -> Duration {
    let start = Instant::now();
    let deadline = start + DEADLINE;
    loop {
        if nickname_on(node, room_id).await.as_deref() == Some(expected) {
            return start.elapsed();
        }
        assert!(
            Instant::now() < deadline,
            "{expected:?} never reached the other node's view"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_profile_changed_through_one_node_reaches_the_other_nodes_views() {
    let Some((shared, _database, _turn)) = shared("profiles_two_nodes").await else {
        return;
    };
    let ttl = [("ROOM__PROFILES__CACHE_TTL_MS", "1000")];
    let a = Node::start_with(&shared, "node-a", &ttl).await;
    let b = Node::start_with(&shared, "node-b", &ttl).await;
    // The room runs on node a, which builds its views with a's cache.
    let room_id = room_on(&a).await;
    let put = |nickname: &'static str| {
        let b = &b;
        async move {
            let (status, body) = b
                .send(
                    reqwest::Method::PUT,
                    "/v1/admin/users/carol",
                    "admin",
                    json!({ "nickname": nickname }),
                )
                .await;
            assert_eq!(status, 200, "{body}");
        }
    };
    put("Carol").await;
    b.post_until_ok(&format!("/v1/rooms/{room_id}/join"), "carol", json!({}))
        .await;
    let first = until_shown(&a, &room_id, "Carol").await;

    // Changed through node b; node a serves its cached "Carol" until the entry expires, then
    // the new nickname, in the views it builds and in the ones node b forwards to it.
    put("Carol ✨").await;
    let reached = until_shown(&a, &room_id, "Carol ✨").await;
    assert_eq!(
        nickname_on(&b, &room_id).await.as_deref(),
        Some("Carol ✨"),
        "node b's view of the room (forwarded to its owner) agrees"
    );
    eprintln!(
        "a profile change through node b reached node a's view after {} ms (first sight {} ms; cache TTL 1000 ms)",
        reached.as_millis(),
        first.as_millis()
    );
}
