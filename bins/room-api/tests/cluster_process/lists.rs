//! The room lists of a cluster: one node ranks at a time (under a claim) into Redis, and both
//! nodes answer the same pages, a pin included, within a refresh or two.

use super::*;

impl Node {
    /// The room ids of the first page of `query` (`tab=new` and the like), `user` asking.
    async fn list(&self, query: &str, user: &str) -> Vec<String> {
        let path = format!("/v1/rooms?{query}&limit=100");
        let response = self
            .http
            .get(format!("{}{path}", self.base))
            .bearer_auth(token(user))
            .timeout(Duration::from_secs(20))
            .send()
            .await
            .expect("list answered");
        assert_eq!(response.status().as_u16(), 200, "{path}");
        let page: Value = response.json().await.expect("a JSON page");
        page["rooms"]
            .as_array()
            .expect("rooms")
            .iter()
            .map(|room| {
                let pinned = if room["pinned"].as_bool() == Some(true) {
                    "*"
                } else {
                    ""
                };
                format!("{}{pinned}", room["room_id"].as_str().unwrap())
            })
            .collect()
    }
}

impl Node {
    /// The refreshes of the room lists this node has done (`room_lists_refreshes_total`).
    async fn refreshes_done(&self) -> f64 {
        let text = self
            .http
            .get(format!("{}/metrics", self.base))
            .send()
            .await
            .expect("metrics answered")
            .text()
            .await
            .expect("metrics text");
        text.lines()
            .filter(|line| line.starts_with("room_lists_refreshes_total{outcome=\"done\"}"))
            .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }
}

/// Polls both nodes until each answers `expected` for `query`, or the deadline passes.
async fn both_answer(a: &Node, b: &Node, query: &str, expected: &[String]) {
    let started = Instant::now();
    loop {
        let (from_a, from_b) = (a.list(query, "reader").await, b.list(query, "reader").await);
        if from_a == expected && from_b == expected {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{query}: node a {from_a:?}, node b {from_b:?}, expected {expected:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_nodes_answer_the_same_pages_and_pins() {
    let Some((shared, _database, _turn)) = shared("lists").await else {
        return;
    };
    let fast = [("ROOM__LISTS__REFRESH_MS", "300")];
    let a = Node::start_with(&shared, "node-a", &fast).await;
    let b = Node::start_with(&shared, "node-b", &fast).await;
    // Rooms made through both nodes, in two regions; each made after the last, so `new`
    // has one order.
    let mut rooms = Vec::new();
    for i in 0..6 {
        let node = if i % 2 == 0 { &a } else { &b };
        let region = if i < 4 { "eu" } else { "us" };
        let room = node
            .post_until_ok(
                "/v1/rooms",
                &format!("owner-{i}"),
                json!({ "name": format!("Room {i}"), "region": region }),
            )
            .await["room_id"]
            .as_str()
            .unwrap()
            .to_owned();
        rooms.push(room);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let newest_first: Vec<String> = rooms.iter().rev().cloned().collect();
    both_answer(&a, &b, "tab=new", &newest_first).await;
    let eu: Vec<String> = rooms[..4].to_vec();
    let from_a = a.list("tab=region&region=eu", "reader").await;
    assert_eq!(
        {
            let mut sorted = from_a.clone();
            sorted.sort();
            sorted
        },
        {
            let mut sorted = eu.clone();
            sorted.sort();
            sorted
        },
        "the eu region holds the eu rooms"
    );
    assert_eq!(b.list("tab=region&region=eu", "reader").await, from_a);

    // A pin made through one node shows on both, in its list only.
    let (status, pin) = a
        .post(
            "/v1/admin/pins",
            "admin",
            json!({
                "room_id": rooms[0],
                "tab": "new",
                "position": 1,
                "ends_at_ms": 4_000_000_000_000_i64,
            }),
        )
        .await;
    assert_eq!(status, 201, "{pin}");
    let mut pinned = vec![format!("{}*", rooms[0])];
    pinned.extend(newest_first.iter().filter(|r| **r != rooms[0]).cloned());
    both_answer(&a, &b, "tab=new", &pinned).await;
    let hot_a = a.list("tab=hot", "reader").await;
    assert!(hot_a.iter().all(|r| !r.ends_with('*')), "{hot_a:?}");
    assert_eq!(b.list("tab=hot", "reader").await, hot_a);

    // One node ranked (under the claim); the other took its rankings from Redis.
    let (by_a, by_b) = (a.refreshes_done().await, b.refreshes_done().await);
    assert!(
        (by_a > 0.0) != (by_b > 0.0),
        "refreshes by node a {by_a}, by node b {by_b}: exactly one node ranks"
    );
}
