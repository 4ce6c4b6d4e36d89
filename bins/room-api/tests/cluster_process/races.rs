//! The same thing twice at once, through both nodes of a cluster on one MariaDB and one
//! Redis: a user's joins of two rooms, two claims of one robot, and a user's room creations
//! and event streams, which the cluster counts once for both nodes; and rooms setting one
//! cover at once.

use std::time::Instant;

use super::*;

impl Node {
    /// `user` gets `path`: the status (0 when no answer came) and the body.
    pub(super) async fn get(&self, path: &str, user: &str) -> (u16, Value) {
        match self
            .http
            .get(format!("{}{path}", self.base))
            .bearer_auth(token(user))
            .timeout(Duration::from_secs(20))
            .send()
            .await
        {
            Ok(response) => {
                let status = response.status().as_u16();
                (status, response.json().await.unwrap_or(Value::Null))
            }
            Err(_) => (0, Value::Null),
        }
    }

    /// The ids of the members of `room_id` listed by this node.
    async fn online(&self, room_id: &str) -> Vec<String> {
        let mut users = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let path = match &cursor {
                Some(after) => format!("/v1/rooms/{room_id}/online-users?limit=100&cursor={after}"),
                None => format!("/v1/rooms/{room_id}/online-users?limit=100"),
            };
            let (status, page) = self.get(&path, "alice").await;
            assert_eq!(status, 200, "{path}: {page}");
            for user in page["users"].as_array().unwrap() {
                users.push(user["user_id"].as_str().unwrap().to_owned());
            }
            match page["next_cursor"].as_str() {
                Some(next) => cursor = Some(next.to_owned()),
                None => return users,
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_joins_at_once_through_two_nodes_leave_each_user_in_one_room() {
    let Some((shared, _database, _turn)) = shared("joins_at_once").await else {
        return;
    };
    let a = std::sync::Arc::new(Node::start(&shared, "node-a").await);
    let b = std::sync::Arc::new(Node::start(&shared, "node-b").await);
    // Room 1 runs on node a, room 2 on node b.
    let one = a
        .post_until_ok("/v1/rooms", "alice", json!({ "name": "One" }))
        .await["room_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let two = b
        .post_until_ok("/v1/rooms", "alice", json!({ "name": "Two" }))
        .await["room_id"]
        .as_str()
        .unwrap()
        .to_owned();

    // 30 users each send three joins at once (room 1, room 2, room 1), spread over both
    // nodes.
    const USERS: usize = 30;
    let mut joins = tokio::task::JoinSet::new();
    for i in 0..USERS {
        let user = format!("joiner-{i}");
        for (n, room_id) in [&one, &two, &one].into_iter().enumerate() {
            let node = if (i + n) % 2 == 0 {
                a.clone()
            } else {
                b.clone()
            };
            let (user, path) = (user.clone(), format!("/v1/rooms/{room_id}/join"));
            joins.spawn(async move { node.post_until_ok(&path, &user, json!({})).await });
        }
    }
    while let Some(joined) = joins.join_next().await {
        joined.expect("a join");
    }

    let (in_one, in_two) = (a.online(&one).await, b.online(&two).await);
    for i in 0..USERS {
        let user = format!("joiner-{i}");
        let listed: Vec<&str> = [(&one, &in_one), (&two, &in_two)]
            .into_iter()
            .filter(|(_, members)| members.contains(&user))
            .map(|(room_id, _)| room_id.as_str())
            .collect();
        assert_eq!(listed.len(), 1, "{user} is listed in {listed:?}");
        for node in [&a, &b] {
            let (status, current) = node.get("/v1/me/current-room", &user).await;
            assert_eq!(status, 200, "{current}");
            assert_eq!(
                current["room_id"].as_str(),
                Some(listed[0]),
                "{user}'s current room is the one that lists them"
            );
        }
    }
}

/// Of two claims of `robot` at once, one won (`won`) and the other was refused 400
/// `INVALID_ROBOT_ROOM` naming the robot.
fn one_claim_won(round: usize, won: u16, left: &(u16, Value), right: &(u16, Value), robot: &str) {
    let mut statuses = [left.0, right.0];
    statuses.sort_unstable();
    assert_eq!(statuses, [won, 400], "round {round}: {left:?} {right:?}");
    let refused = if left.0 == 400 { &left.1 } else { &right.1 };
    assert_eq!(refused["error"]["code"], "INVALID_ROBOT_ROOM", "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|message| message.contains(robot)),
        "the refusal names the robot: {refused}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_claims_of_one_robot_through_two_nodes_make_one_pool() {
    let Some((shared, _database, _turn)) = shared("robot_claims").await else {
        return;
    };
    let a = std::sync::Arc::new(Node::start(&shared, "node-a").await);
    let b = std::sync::Arc::new(Node::start(&shared, "node-b").await);
    const TRIES: usize = 5;
    for round in 0..TRIES {
        let shared_robot = format!("robot-shared-{round}");
        let config = |name: &str, own: &str| {
            json!({
                "profile": { "name": name },
                "seat_count": 8,
                "robots": [own, shared_robot],
                "audience": (0..24).map(|h| h % 3).collect::<Vec<_>>(),
                "seats": 1,
                "gift_rate_per_minute": 0,
                "gift_mix": [{ "gift_id": "rose", "weight": 1 }],
                "enabled": false
            })
        };
        let first = config(&format!("Pool A{round}"), &format!("robot-a-{round}"));
        let second = config(&format!("Pool B{round}"), &format!("robot-b-{round}"));
        let (left, right) = tokio::join!(
            a.post("/v1/admin/robot-rooms", "admin", first),
            b.post("/v1/admin/robot-rooms", "admin", second),
        );
        one_claim_won(round, 201, &left, &right, &shared_robot);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_patches_claiming_one_robot_through_two_nodes_make_one_pool() {
    let Some((shared, _database, _turn)) = shared("robot_patches").await else {
        return;
    };
    let a = std::sync::Arc::new(Node::start(&shared, "node-a").await);
    let b = std::sync::Arc::new(Node::start(&shared, "node-b").await);
    const TRIES: usize = 5;
    // Pools of one robot: one listener at most, on the one seat.
    let config = |name: &str, robots: Vec<String>| {
        json!({
            "profile": { "name": name },
            "seat_count": 8,
            "robots": robots,
            "audience": (0..24).map(|h| h % 2).collect::<Vec<_>>(),
            "seats": 1,
            "gift_rate_per_minute": 0,
            "gift_mix": [{ "gift_id": "rose", "weight": 1 }],
            "enabled": false
        })
    };
    for round in 0..TRIES {
        let (own_a, own_b) = (format!("robot-pa-{round}"), format!("robot-pb-{round}"));
        let mut rooms = Vec::new();
        for (name, own) in [("Patch A", &own_a), ("Patch B", &own_b)] {
            let (status, created) = a
                .post(
                    "/v1/admin/robot-rooms",
                    "admin",
                    config(&format!("{name}{round}"), vec![own.clone()]),
                )
                .await;
            assert_eq!(status, 201, "{created}");
            rooms.push(created["room_id"].as_str().expect("a room id").to_owned());
        }
        // Both pools take the same new robot at once, each through its own node.
        let shared_robot = format!("robot-patched-{round}");
        let patch = |own: &str| json!({ "robots": [own, shared_robot] });
        let (path_a, path_b) = (
            format!("/v1/admin/robot-rooms/{}", rooms[0]),
            format!("/v1/admin/robot-rooms/{}", rooms[1]),
        );
        let (left, right) = tokio::join!(
            a.send(reqwest::Method::PATCH, &path_a, "admin", patch(&own_a)),
            b.send(reqwest::Method::PATCH, &path_b, "admin", patch(&own_b)),
        );
        one_claim_won(round, 200, &left, &right, &shared_robot);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_users_room_budget_and_stream_cap_hold_over_two_nodes() {
    let Some((shared, _database, _turn)) = shared("budgets").await else {
        return;
    };
    const BURST: usize = 3;
    const STREAMS: usize = 2;
    let settings = [
        ("ROOM__LIMITS__CREATE_ROOM_PER_MINUTE", "1"),
        ("ROOM__LIMITS__CREATE_ROOM_BURST", "3"),
        ("ROOM__SSE__MAX_STREAMS_PER_USER", "2"),
    ];
    let a = Node::start_with(&shared, "node-a", &settings).await;
    let b = Node::start_with(&shared, "node-b", &settings).await;

    // Room creations through both nodes in turn: the one-node budget (a burst of 3, then one
    // a minute) holds for both together.
    let started = Instant::now();
    let mut created = Vec::new();
    for n in 0..4 * BURST {
        let node = if n % 2 == 0 { &a } else { &b };
        let (status, body) = node
            .post(
                "/v1/rooms",
                "carol",
                json!({ "name": format!("Budget {n}") }),
            )
            .await;
        match status {
            201 | 200 => created.push(body["room_id"].as_str().unwrap().to_owned()),
            429 => assert_eq!(body["error"]["code"], "RATE_LIMITED", "{body}"),
            _ => panic!("POST /v1/rooms: {status} {body}"),
        }
    }
    let refilled = (started.elapsed().as_secs() / 60) as usize;
    assert!(
        !created.is_empty() && created.len() <= BURST + refilled,
        "{} rooms made through two nodes against a budget of {BURST} (+{refilled})",
        created.len()
    );

    // Streams through both nodes: the cap counts them together.
    let room_id = &created[0];
    a.post_until_ok(&format!("/v1/rooms/{room_id}/join"), "carol", json!({}))
        .await;
    let mut open = Vec::new();
    let mut refused = 0;
    for n in 0..2 * STREAMS {
        let node = if n % 2 == 0 { &a } else { &b };
        let response = node
            .http
            .get(format!("{}/v1/rooms/{room_id}/events", node.base))
            .bearer_auth(token("carol"))
            .send()
            .await
            .expect("an answer");
        match response.status().as_u16() {
            200 => open.push(response),
            429 => {
                let body: Value = response.json().await.unwrap();
                assert_eq!(body["error"]["code"], "TOO_MANY_STREAMS", "{body}");
                refused += 1;
            }
            status => panic!("GET events: {status}"),
        }
    }
    assert_eq!(
        open.len(),
        STREAMS,
        "{} streams open through two nodes against a cap of {STREAMS}",
        open.len()
    );
    assert_eq!(refused, STREAMS);
}

/// Ten rooms, half running on each node, all set one cover at once through both nodes: the
/// store's key on the cover leaves exactly one of them showing it, and every other change is
/// refused 409 `COVER_IN_USE` with its room unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ten_rooms_setting_one_cover_at_once_through_two_nodes_leave_one_showing_it() {
    let Some((shared, _database, _turn)) = shared("covers_at_once").await else {
        return;
    };
    let a = std::sync::Arc::new(Node::start(&shared, "node-a").await);
    let b = std::sync::Arc::new(Node::start(&shared, "node-b").await);
    const ROOMS: usize = 10;
    let mut rooms = Vec::new();
    for i in 0..ROOMS {
        let node = if i % 2 == 0 { &a } else { &b };
        let owner = format!("cover-owner-{i}");
        let room = node
            .post_until_ok("/v1/rooms", &owner, json!({ "name": format!("Cover {i}") }))
            .await["room_id"]
            .as_str()
            .unwrap()
            .to_owned();
        rooms.push((room, owner));
    }
    let cover = "https://cdn.example.com/covers/raced.png";
    let mut changes = tokio::task::JoinSet::new();
    for (i, (room, owner)) in rooms.iter().cloned().enumerate() {
        // Each change through the node that does not run its room, and through the one that
        // does, alternately.
        let node = if i % 4 < 2 { a.clone() } else { b.clone() };
        changes.spawn(async move {
            let (status, body) = node
                .send(
                    reqwest::Method::PATCH,
                    &format!("/v1/rooms/{room}"),
                    &owner,
                    json!({ "cover_url": cover }),
                )
                .await;
            (room, status, body)
        });
    }
    let mut shown_by = Vec::new();
    while let Some(change) = changes.join_next().await {
        let (room, status, body) = change.unwrap();
        match status {
            200 => {
                assert_eq!(body["cover_url"], json!(cover), "{body}");
                shown_by.push(room);
            }
            409 => assert_eq!(body["error"]["code"], json!("COVER_IN_USE"), "{body}"),
            other => panic!("room {room}: {other} {body}"),
        }
    }
    assert_eq!(shown_by.len(), 1, "one room got the cover: {shown_by:?}");
    for (room, _) in &rooms {
        let (status, body) = a.get(&format!("/v1/rooms/{room}"), "reader").await;
        assert_eq!(status, 200, "{body}");
        let expected = if *room == shown_by[0] {
            json!(cover)
        } else {
            Value::Null
        };
        assert_eq!(body["cover_url"], expected, "room {room}: {body}");
    }
}
