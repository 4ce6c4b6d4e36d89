//! Two nodes over one store and the real Redis (`ROOM_TEST_REDIS_URL`), each on its own
//! socket: any node serves any room, each room runs on the one node holding its lease, and a
//! node that stops hands its rooms over. Plus the internal routes' token check.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use room_app::RoomService;
use room_app::ports::{CellStore, GiftOrders};
use room_app::testkit::InMemoryStore;
use room_domain::{Event, RoomId, UserId};
use room_node::{App, AuthenticatorRef, Settings, Storage};
use secrecy::SecretString;
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::support::{TestApp, error_code, eventually, parse, read_until, settings};

const INTERNAL_TOKEN: &str = "the-internal-token-of-this-test-cluster";

struct Node {
    base: String,
    service: Arc<RoomService>,
    auth: AuthenticatorRef,
    stop: CancellationToken,
    serving: JoinHandle<()>,
}

struct Cluster {
    http: reqwest::Client,
    nodes: Vec<Node>,
    store: Arc<InMemoryStore>,
    _dir: TempDir,
}

impl Cluster {
    /// `count` nodes sharing one in-memory store and the Redis at `ROOM_TEST_REDIS_URL`;
    /// `None` (the test skips) when that is unset.
    async fn start(test: &str, count: usize) -> Option<Cluster> {
        Self::start_with(test, count, |_| {}).await
    }

    /// Like [`Cluster::start`], with every node's settings adjusted by `change` first.
    async fn start_with(
        test: &str,
        count: usize,
        change: impl Fn(&mut Settings),
    ) -> Option<Cluster> {
        Self::start_on(test, count, Arc::new(InMemoryStore::new()), change).await
    }

    /// Like [`Cluster::start_with`], over `store` as it stands.
    async fn start_on(
        test: &str,
        count: usize,
        store: Arc<InMemoryStore>,
        change: impl Fn(&mut Settings),
    ) -> Option<Cluster> {
        let redis = room_testkit::redis::url()?;
        let dir = TempDir::new().unwrap();
        let storage = Storage::from_store(store.clone());
        let prefix = format!("{}{test}:", room_testkit::redis::prefix());
        let mut nodes = Vec::new();
        for i in 0..count {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let base = format!("http://{}", listener.local_addr().unwrap());
            let mut settings: Settings = settings(&dir);
            settings.cell.node_id = format!("node-{i}");
            // The nodes share the in-memory store built above.
            settings.storage.url = "memory://".into();
            settings.lease.redis_url = Some(SecretString::from(redis.clone()));
            settings.lease.key_prefix = prefix.clone();
            settings.cluster.advertise_url = Some(base.clone());
            settings.cluster.internal_token = Some(SecretString::from(INTERNAL_TOKEN));
            change(&mut settings);
            let app = App::build_with_storage(settings, storage.clone())
                .await
                .unwrap();
            let (service, auth) = (app.service().clone(), app.authenticator().clone());
            let stop = CancellationToken::new();
            let signal = stop.clone();
            let serving = tokio::spawn(async move {
                app.serve(listener, async move { signal.cancelled().await })
                    .await
                    .unwrap();
            });
            nodes.push(Node {
                base,
                service,
                auth,
                stop,
                serving,
            });
        }
        let cluster = Cluster {
            http: reqwest::Client::new(),
            nodes,
            store,
            _dir: dir,
        };
        for node in &cluster.nodes {
            let base = node.base.clone();
            let http = cluster.http.clone();
            eventually("the node is ready", || {
                let (http, base) = (http.clone(), base.clone());
                async move {
                    http.get(format!("{base}/readyz"))
                        .send()
                        .await
                        .is_ok_and(|r| r.status() == StatusCode::OK)
                }
            })
            .await;
        }
        Some(cluster)
    }

    fn token(&self, user: &str, admin: bool) -> String {
        self.nodes[0]
            .auth
            .mint(&UserId::new(user).unwrap(), admin, Duration::from_secs(600))
            .unwrap()
    }

    /// `user` calls `path` on node `node`.
    async fn call(
        &self,
        node: usize,
        method: Method,
        path: &str,
        user: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.nodes[node].base))
            .bearer_auth(self.token(user, user == "admin"));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status();
        let text = response.text().await.unwrap();
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap()
        };
        (status, body)
    }

    async fn post(&self, node: usize, path: &str, user: &str, body: Value) -> (StatusCode, Value) {
        self.call(node, Method::POST, path, user, Some(body)).await
    }

    /// An admin credits `amount` coins to `user` through node `node`.
    async fn credit(&self, node: usize, user: &str, amount: i64) {
        let (status, body) = self
            .post(
                node,
                &format!("/v1/admin/wallets/{user}/credit"),
                "admin",
                json!({ "op_id": format!("top-up-{user}-{amount}"), "amount": amount }),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }

    /// `user`'s event stream of `room` through node `node`, with `Last-Event-ID` if given.
    async fn watch(
        &self,
        node: usize,
        room: &str,
        user: &str,
        last_event_id: Option<&str>,
    ) -> reqwest::Response {
        let mut request = self
            .http
            .get(format!("{}/v1/rooms/{room}/events", self.nodes[node].base))
            .bearer_auth(self.token(user, false));
        if let Some(id) = last_event_id {
            request = request.header("Last-Event-ID", id);
        }
        request.send().await.unwrap()
    }

    /// A room created through node 0 (so run there), with `members` joined.
    async fn room_on_node_0(&self, members: &[&str]) -> String {
        let (status, room) = self
            .post(0, "/v1/rooms", "alice", json!({ "name": "Night talk" }))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{room}");
        let room_id = room["room_id"].as_str().unwrap().to_owned();
        for user in members {
            let (status, body) = self
                .post(0, &format!("/v1/rooms/{room_id}/join"), user, json!({}))
                .await;
            assert_eq!(status, StatusCode::OK, "{body}");
        }
        room_id
    }

    fn active_on(&self, room: &str) -> Vec<usize> {
        let room = RoomId::new(room).unwrap();
        (0..self.nodes.len())
            .filter(|&i| self.nodes[i].service.runtime().is_active(&room))
            .collect()
    }

    async fn stop(&mut self, node: usize) {
        let node = &mut self.nodes[node];
        node.stop.cancel();
        (&mut node.serving).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_node_serves_any_room_which_runs_on_one_node() {
    let Some(cluster) = Cluster::start("any_node_serves_any_room", 2).await else {
        return;
    };
    let (status, room) = cluster
        .post(0, "/v1/rooms", "alice", json!({ "name": "Night talk" }))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{room}");
    let room_id = room["room_id"].as_str().unwrap().to_owned();
    assert_eq!(cluster.active_on(&room_id), vec![0]);

    // Everything else goes through node 1; the room keeps running on node 0.
    for user in ["alice", "bob"] {
        let (status, body) = cluster
            .post(1, &format!("/v1/rooms/{room_id}/join"), user, json!({}))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let (status, body) = cluster
        .post(
            1,
            &format!("/v1/rooms/{room_id}/seats/0/take"),
            "bob",
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // A rule the owner's room enforces comes back through the other node as itself.
    let (status, body) = cluster
        .post(
            1,
            &format!("/v1/rooms/{room_id}/seats/0/take"),
            "alice",
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(error_code(&body), "SEAT_OCCUPIED");

    // A gift through node 1: one debit, applied by node 0.
    cluster.credit(1, "bob", 100).await;
    let gift = json!({ "order_id": "o1", "gift_id": "rose", "count": 1, "recipients": ["alice"] });
    let (status, first) = cluster
        .post(
            1,
            &format!("/v1/rooms/{room_id}/gifts"),
            "bob",
            gift.clone(),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{first}");
    let (status, repeat) = cluster
        .post(0, &format!("/v1/rooms/{room_id}/gifts"), "bob", gift)
        .await;
    assert_eq!(status, StatusCode::OK, "{repeat}");
    assert_eq!(first["coin_balance_after"], repeat["coin_balance_after"]);

    // A read through either node shows every write answered so far.
    for node in [0, 1] {
        let (status, view) = cluster
            .call(
                node,
                Method::GET,
                &format!("/v1/rooms/{room_id}"),
                "carol",
                None,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{view}");
        assert_eq!(view["seats"][0]["user_id"], "bob", "{view}");
        assert!(view["heat"].as_i64().unwrap() > 0, "{view}");
    }
    assert_eq!(cluster.active_on(&room_id), vec![0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gift_through_another_node_gets_the_owners_lucky_reward() {
    let Some(cluster) = Cluster::start("forwarded_lucky_reward", 2).await else {
        return;
    };
    let room_id = cluster.room_on_node_0(&["alice", "bob"]).await;
    cluster.credit(1, "bob", 10_000).await;
    // The apply goes to node 0 as the order alone, and comes back as the gift's event alone:
    // the reward the saga credits is the one the room drew.
    let (mut balance, mut rewards) = (10_000, 0);
    for i in 0..30 {
        let gift = json!({
            "order_id": format!("lucky-{i}"), "gift_id": "lucky-clover", "count": 1,
            "recipients": ["alice"],
        });
        let (status, body) = cluster
            .post(1, &format!("/v1/rooms/{room_id}/gifts"), "bob", gift)
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let lucky = &body["lucky"];
        let reward = lucky["reward"].as_i64().expect("a lucky outcome");
        assert_eq!(reward, 20 * lucky["multiplier"].as_i64().unwrap(), "{body}");
        balance = balance - 20 + reward;
        rewards += reward;
        assert_eq!(body["coin_balance_after"], balance, "{body}");
    }
    let room = RoomId::new(&room_id).unwrap();
    let drawn: i64 = cluster
        .store
        .list_events(&room, 0, 1_000)
        .await
        .unwrap()
        .iter()
        .filter_map(|stored| match &stored.event {
            Event::RoomGiftSent(gift) => gift.lucky.map(|lucky| lucky.reward.0),
            _ => None,
        })
        .sum();
    // Two sends in three win nothing: 30 that all do is about one run in 70,000.
    assert!(drawn > 0, "no lucky gift of 30 won anything");
    assert_eq!(rewards, drawn);
    let (status, wallet) = cluster
        .call(1, Method::GET, "/v1/me/wallet", "bob", None)
        .await;
    assert_eq!(status, StatusCode::OK, "{wallet}");
    assert_eq!(wallet["balance"], balance, "{wallet}");
    assert_eq!(cluster.active_on(&room_id), vec![0]);
}

/// A batch gift placed through a node that does not run the room: the owner answers whom the
/// scope names (over the link, not the room's whole state), and applies it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_gift_through_another_node_reaches_whom_the_owner_names() {
    let Some(cluster) = Cluster::start("forwarded_batch_gift", 2).await else {
        return;
    };
    let room_id = cluster.room_on_node_0(&["alice", "bob", "carol"]).await;
    cluster.credit(1, "bob", 1_000).await;
    for scope in ["all_mic", "all_room"] {
        let gift = json!({
            "order_id": format!("batch-{scope}"), "gift_id": "rose", "count": 1,
            "recipients": {"scope": scope},
        });
        let (status, body) = cluster
            .post(1, &format!("/v1/rooms/{room_id}/gifts"), "bob", gift)
            .await;
        if scope == "all_mic" {
            // Nobody holds a seat.
            assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
            assert_eq!(body["error"]["code"], "NO_RECIPIENTS", "{body}");
        } else {
            assert_eq!(status, StatusCode::OK, "{body}");
            assert_eq!(body["recipients"], json!(["alice", "carol"]), "{body}");
            assert_eq!(body["coin_balance_after"], 1_000 - 2 * 10, "{body}");
        }
    }
    assert_eq!(cluster.active_on(&room_id), vec![0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_that_stops_hands_its_rooms_to_the_next_request() {
    let Some(mut cluster) = Cluster::start("a_node_that_stops", 2).await else {
        return;
    };
    let (status, room) = cluster
        .post(0, "/v1/rooms", "alice", json!({ "name": "Night talk" }))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{room}");
    let room_id = room["room_id"].as_str().unwrap().to_owned();
    cluster.stop(0).await;

    // Node 0 released its lease as it stopped: node 1 takes the room.
    let (status, body) = cluster
        .post(1, &format!("/v1/rooms/{room_id}/join"), "alice", json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(cluster.active_on(&room_id), vec![1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_room_per_user_holds_across_nodes() {
    let Some(cluster) = Cluster::start("one_room_per_user", 2).await else {
        return;
    };
    let mut rooms = Vec::new();
    for node in [0, 1] {
        let (status, room) = cluster
            .post(node, "/v1/rooms", "owner", json!({ "name": "Night talk" }))
            .await;
        assert_eq!(status, StatusCode::CREATED, "{room}");
        rooms.push(room["room_id"].as_str().unwrap().to_owned());
    }
    // Each room runs where it was created.
    assert_eq!(cluster.active_on(&rooms[0]), vec![0]);
    assert_eq!(cluster.active_on(&rooms[1]), vec![1]);

    // alice joins the first room through node 0, then the second through node 1: she leaves
    // the first, whichever node asks.
    for (node, room) in [(0, &rooms[0]), (1, &rooms[1])] {
        let (status, body) = cluster
            .post(node, &format!("/v1/rooms/{room}/join"), "alice", json!({}))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    for node in [0, 1] {
        let (status, body) = cluster
            .call(node, Method::GET, "/v1/me/current-room", "alice", None)
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["room_id"], rooms[1].as_str(), "node {node}: {body}");
        let (status, online) = cluster
            .call(
                node,
                Method::GET,
                &format!("/v1/rooms/{}/online-users", rooms[0]),
                "owner",
                None,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{online}");
        assert!(
            !online.to_string().contains("alice"),
            "node {node}: {online}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_on_another_node_sees_the_rooms_events() {
    let Some(cluster) = Cluster::start("watcher_on_another_node", 2).await else {
        return;
    };
    let room_id = cluster.room_on_node_0(&["alice", "bob"]).await;
    let mut events = cluster.watch(1, &room_id, "bob", None).await;
    assert_eq!(events.status(), StatusCode::OK);
    let mut seen = String::new();
    read_until(&mut events, &mut seen, "event: subscribed").await;

    // The display relay subscribes in the background: keep writing until node 1's watcher
    // sees an event of the room, which node 0 runs.
    let mut seat = 0;
    while !seen.contains("event: RoomMicChanged") {
        let path = format!("/v1/rooms/{room_id}/seats/{}/take", seat % 2);
        let (status, body) = cluster.post(0, &path, "alice", json!({})).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        seat += 1;
        let _ = tokio::time::timeout(Duration::from_millis(200), async {
            if let Ok(Some(chunk)) = events.chunk().await {
                seen.push_str(&String::from_utf8_lossy(&chunk));
            }
        })
        .await;
        assert!(
            seat < 100,
            "node 1's watcher never saw the room's events: {seen}"
        );
    }
    assert_eq!(cluster.active_on(&room_id), vec![0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconnecting_watcher_gets_what_it_missed_or_a_resync() {
    let Some(cluster) = Cluster::start_with("reconnecting_watcher", 2, |settings| {
        settings.sse.replay_max = 2;
    })
    .await
    else {
        return;
    };
    let room_id = cluster.room_on_node_0(&["alice", "bob"]).await;
    let (_, room) = cluster
        .call(1, Method::GET, &format!("/v1/rooms/{room_id}"), "bob", None)
        .await;
    let seen_version = room["version"].as_u64().unwrap();
    // While bob is away, alice takes a seat: display events he missed.
    let (status, body) = cluster
        .post(
            0,
            &format!("/v1/rooms/{room_id}/seats/1/take"),
            "alice",
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // Through node 1, from the log: the missed seat change, after `subscribed`.
    let mut events = cluster
        .watch(1, &room_id, "bob", Some(&seen_version.to_string()))
        .await;
    assert_eq!(events.status(), StatusCode::OK);
    let mut seen = String::new();
    read_until(&mut events, &mut seen, "event: RoomMicChanged").await;
    let subscribed = seen.find("event: subscribed").unwrap();
    let replayed = seen.find("event: RoomMicChanged").unwrap();
    assert!(subscribed < replayed, "{seen}");
    let id: u64 = seen[replayed..]
        .lines()
        .find_map(|line| line.strip_prefix("id: "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(id > seen_version, "{seen}");
    assert!(!seen.contains("event: resync"), "{seen}");

    // Too far behind: a resync instead of the events.
    let mut events = cluster.watch(1, &room_id, "bob", Some("0")).await;
    let mut seen = String::new();
    read_until(&mut events, &mut seen, "event: resync").await;
    assert!(!seen.contains("event: RoomCreated"), "{seen}");

    // Not a seq in digits (a seq fits an i64): a fresh stream, as without the header: no
    // replay and no resync, only what commits after it opened.
    for (i, said) in ["yesterday", "-1", "+0", "0.0", "9223372036854775808"]
        .into_iter()
        .enumerate()
    {
        let mut events = cluster.watch(0, &room_id, "bob", Some(said)).await;
        assert_eq!(events.status(), StatusCode::OK, "{said}");
        let mut seen = String::new();
        read_until(&mut events, &mut seen, "event: subscribed").await;
        let (_, room) = cluster
            .call(0, Method::GET, &format!("/v1/rooms/{room_id}"), "bob", None)
            .await;
        let opened_at = room["version"].as_u64().unwrap();
        let (status, body) = cluster
            .post(
                0,
                &format!("/v1/rooms/{room_id}/seats/{}/take", i % 2 * 2),
                "alice",
                json!({}),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        read_until(&mut events, &mut seen, "event: RoomMicChanged").await;
        assert!(!seen.contains("event: resync"), "{said}: {seen}");
        let first: u64 = seen[seen.find("event: RoomMicChanged").unwrap()..]
            .lines()
            .find_map(|line| line.strip_prefix("id: "))
            .unwrap()
            .parse()
            .unwrap();
        assert!(first > opened_at, "{said}: a replayed event: {seen}");
    }
}

#[tokio::test]
async fn internal_routes_need_the_internal_token() {
    let token = |app: &TestApp| app.token("alice");
    // Without a configured token, nobody gets in.
    let plain = TestApp::new().await;
    let path = "/internal/v1/rooms/r1/state?kind=committed";
    let (status, body) = plain
        .call(Method::GET, path, Some(&token(&plain)), None)
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(error_code(&body), "INTERNAL_DISABLED");

    let app = TestApp::with(|settings| {
        settings.cluster.internal_token = Some(SecretString::from(INTERNAL_TOKEN));
    })
    .await;
    // A user's token is not the internal token; neither is nothing.
    for bearer in [Some(token(&app)), None] {
        let (status, body) = app.call(Method::GET, path, bearer.as_deref(), None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    }
    let (status, body) = app
        .call(Method::GET, path, Some(INTERNAL_TOKEN), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // A room that was never created is not activated for a node that asks.
    assert_eq!(body["err"]["kind"], "rejected", "{body}");
    assert_eq!(body["err"]["rejection"]["code"], "ROOM_NOT_FOUND", "{body}");
    assert_eq!(app.app.service().runtime().active_rooms(), 0);
    // A room that exists is answered with its state.
    let room_id = app.create_room("alice").await;
    let path = format!("/internal/v1/rooms/{room_id}/state?kind=newest");
    let (status, body) = app
        .call(Method::GET, &path, Some(INTERNAL_TOKEN), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["ok"]["room_id"], room_id.as_str(), "{body}");
}

#[tokio::test]
async fn internal_routes_serve_only_the_node_they_are_meant_for() {
    let app = TestApp::with(|settings| {
        settings.cluster.internal_token = Some(SecretString::from(INTERNAL_TOKEN));
        settings.cell.node_id = "node-a".into();
    })
    .await;
    let room_id = app.create_room("alice").await;
    let path = format!("/internal/v1/rooms/{room_id}/state?kind=newest");
    let ask = |node: Option<&str>| {
        let mut request = Request::builder()
            .method(Method::GET)
            .uri(path.as_str())
            .header("authorization", format!("Bearer {INTERNAL_TOKEN}"));
        if let Some(node) = node {
            request = request.header("room-node", node);
        }
        request.body(Body::empty()).unwrap()
    };
    // Meant for this node, or naming none (a sender of an earlier release): answered, and the
    // answer names the node.
    for node in [Some("node-a"), None] {
        let (status, headers, body) = app.send(ask(node)).await;
        assert_eq!(status, StatusCode::OK, "{node:?}: {}", parse(&body));
        assert_eq!(headers["room-node"], "node-a", "{node:?}");
    }
    // Meant for another node: refused before anything runs.
    let (status, headers, body) = app.send(ask(Some("node-b"))).await;
    let body = parse(&body);
    assert_eq!(status, StatusCode::MISDIRECTED_REQUEST, "{body}");
    assert_eq!(error_code(&body), "WRONG_NODE", "{body}");
    assert_eq!(headers["room-node"], "node-a");
}

/// A node that starts while another drives a young gift order (stored PENDING, its debit
/// not made yet) leaves the order to it: settling it at start-up would void the debit, and
/// the driving node's valid gift would fail.
#[tokio::test]
async fn a_starting_node_leaves_young_orders_to_the_node_driving_them() {
    let store = Arc::new(InMemoryStore::new());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    let user = |name: &str| UserId::new(name).unwrap();
    let apply = room_domain::ApplyGift {
        order_id: room_domain::OrderId::new("young-1").unwrap(),
        sender: user("alice"),
        recipients: vec![user("bob")],
        gift: room_domain::GiftSnapshot {
            gift_id: room_domain::GiftId::new("rose").unwrap(),
            price: room_domain::Coins(10),
            heat: 10,
            fuel: 0,
            lucky: false,
            billing_version: None,
        },
        count: 1,
        lucky_draw: 1,
        scope: None,
    };
    let created = room_domain::Timestamp(i64::try_from(now.as_millis()).unwrap());
    let order =
        room_domain::GiftOrder::new(RoomId::new("r-young").unwrap(), &apply, created).unwrap();
    GiftOrders::create_or_get(&*store, &order).await.unwrap();

    let Some(cluster) = Cluster::start_on("young_orders_at_start", 1, store.clone(), |_| {}).await
    else {
        return;
    };
    let stored = GiftOrders::get(&*cluster.store, &user("alice"), &apply.order_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        stored.status,
        room_domain::OrderStatus::Pending,
        "{stored:?}"
    );
}

/// A wallet whose `settle_debit` (what start-up recovery asks first) waits until `open`.
struct HeldSettlement {
    inner: Arc<InMemoryStore>,
    open: tokio::sync::Semaphore,
}

#[async_trait::async_trait]
impl room_app::ports::Wallet for HeldSettlement {
    async fn debit(
        &self,
        op_id: &str,
        user: &UserId,
        amount: room_domain::Coins,
    ) -> room_app::Result<room_domain::Coins> {
        self.inner.debit(op_id, user, amount).await
    }
    async fn credit(
        &self,
        op_id: &str,
        kind: room_app::ports::CreditKind,
        user: &UserId,
        amount: room_domain::Coins,
    ) -> room_app::Result<room_domain::Coins> {
        self.inner.credit(op_id, kind, user, amount).await
    }
    async fn settle_debit(&self, op_id: &str) -> room_app::Result<room_app::ports::DebitStatus> {
        let _open = self.open.acquire().await;
        self.inner.settle_debit(op_id).await
    }
    async fn balance(&self, user: &UserId) -> room_app::Result<room_domain::Coins> {
        room_app::ports::Wallet::balance(&*self.inner, user).await
    }
}

/// A clustered node serves while its start-up recovery runs: the internal endpoint answers
/// the other nodes (the rooms recovery activates are reachable meanwhile), and `/readyz`
/// answers 503 until recovery ends.
#[tokio::test]
async fn a_clustered_node_serves_its_internal_endpoint_while_recovery_runs() {
    let Some(redis) = room_testkit::redis::url() else {
        return;
    };
    let store = Arc::new(InMemoryStore::new());
    // An order left by a crash two hours ago: start-up recovery settles it.
    let user = |name: &str| UserId::new(name).unwrap();
    let apply = room_domain::ApplyGift {
        order_id: room_domain::OrderId::new("old-1").unwrap(),
        sender: user("alice"),
        recipients: vec![user("bob")],
        gift: room_domain::GiftSnapshot {
            gift_id: room_domain::GiftId::new("rose").unwrap(),
            price: room_domain::Coins(10),
            heat: 10,
            fuel: 0,
            lucky: false,
            billing_version: None,
        },
        count: 1,
        lucky_draw: 1,
        scope: None,
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    let created = room_domain::Timestamp(i64::try_from(now.as_millis()).unwrap() - 7_200_000);
    let order =
        room_domain::GiftOrder::new(RoomId::new("r-old").unwrap(), &apply, created).unwrap();
    GiftOrders::create_or_get(&*store, &order).await.unwrap();
    let wallet = Arc::new(HeldSettlement {
        inner: store.clone(),
        open: tokio::sync::Semaphore::new(0),
    });
    let mut storage = Storage::from_store(store.clone());
    storage.wallet = wallet.clone();

    let dir = TempDir::new().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let mut settings: Settings = settings(&dir);
    settings.cell.node_id = "node-0".into();
    settings.storage.url = "memory://".into();
    settings.lease.redis_url = Some(SecretString::from(redis));
    settings.lease.key_prefix = format!("{}recovery_serves:", room_testkit::redis::prefix());
    settings.cluster.advertise_url = Some(base.clone());
    settings.cluster.internal_token = Some(SecretString::from(INTERNAL_TOKEN));
    let app = App::build_with_storage(settings, storage).await.unwrap();
    let stop = CancellationToken::new();
    let signal = stop.clone();
    let serving = tokio::spawn(async move {
        app.serve(listener, async move { signal.cancelled().await })
            .await
            .unwrap();
    });

    // Each request bounded: a node that accepts connections but serves nothing yet must fail
    // the check, not hang it.
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    let internal = format!("{base}/internal/v1/rooms/no-such-room/state");
    eventually("the internal endpoint answers during recovery", || {
        let (http, internal) = (http.clone(), internal.clone());
        async move {
            http.get(&internal)
                .bearer_auth(INTERNAL_TOKEN)
                .send()
                .await
                // Answered, with the token accepted: a made-up room is refused as such.
                .is_ok_and(|r| {
                    r.status().is_client_error() && r.status() != StatusCode::UNAUTHORIZED
                })
        }
    })
    .await;
    let ready = http.get(format!("{base}/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), StatusCode::SERVICE_UNAVAILABLE);

    // Recovery goes on and ends: the node reports ready, the old order is settled.
    wallet.open.add_permits(1_000);
    eventually("the node is ready once recovery ended", || {
        let (http, base) = (http.clone(), base.clone());
        async move {
            http.get(format!("{base}/readyz"))
                .send()
                .await
                .is_ok_and(|r| r.status() == StatusCode::OK)
        }
    })
    .await;
    let settled = GiftOrders::get(&*store, &user("alice"), &apply.order_id)
        .await
        .unwrap()
        .unwrap();
    assert!(settled.status.is_terminal(), "{settled:?}");
    stop.cancel();
    serving.await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_profile_change_reaches_the_other_nodes_views_within_the_cache_ttl() {
    // A short TTL, and a long one would fail the wait below: the other node's cache would
    // keep serving the old nickname.
    let Some(cluster) = Cluster::start_with("profile_reaches_other_node", 2, |settings| {
        settings.profiles.cache_ttl_ms = 300;
    })
    .await
    else {
        return;
    };
    let (status, body) = cluster
        .call(
            0,
            Method::PUT,
            "/v1/admin/users/bob",
            "admin",
            Some(json!({ "nickname": "Bob" })),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let room_id = cluster.room_on_node_0(&["alice", "bob"]).await;
    let (status, body) = cluster
        .post(
            0,
            &format!("/v1/rooms/{room_id}/seats/1/take"),
            "bob",
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let nickname_on = |node: usize| {
        let (cluster, room_id) = (&cluster, room_id.clone());
        async move {
            let (status, view) = cluster
                .call(
                    node,
                    Method::GET,
                    &format!("/v1/rooms/{room_id}"),
                    "carol",
                    None,
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{view}");
            view["seats"][1]["nickname"].clone()
        }
    };
    // Node 1 reads (and caches) the nickname.
    assert_eq!(nickname_on(1).await, "Bob");

    // Bob renames himself through node 0: node 0 shows it at once, node 1 within its TTL.
    let (status, body) = cluster
        .call(
            0,
            Method::PATCH,
            "/v1/me/profile",
            "bob",
            Some(json!({ "nickname": "Bobby" })),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(nickname_on(0).await, "Bobby");
    eventually("node 1 shows the new nickname", || async {
        nickname_on(1).await == "Bobby"
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invite_through_one_node_reaches_the_invitees_stream_on_another() {
    let Some(cluster) = Cluster::start("invite_across_nodes", 2).await else {
        return;
    };
    let room_id = cluster.room_on_node_0(&["alice", "bob"]).await;
    assert_eq!(cluster.active_on(&room_id), vec![0]);
    // carol watches her own stream through node 1; the room runs on node 0.
    let mut stream = cluster
        .http
        .get(format!("{}/v1/me/events", cluster.nodes[1].base))
        .bearer_auth(cluster.token("carol", false))
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), StatusCode::OK);
    let mut seen = String::new();
    read_until(&mut stream, &mut seen, "event: subscribed").await;

    // The owner invites her to seat 2 through node 1 as well.
    let (status, invite) = cluster
        .post(
            1,
            &format!("/v1/rooms/{room_id}/invites"),
            "alice",
            json!({ "user_id": "carol", "seat": 2 }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{invite}");
    assert_eq!(invite["seat"], 2);
    read_until(&mut stream, &mut seen, "event: RoomUserInvited").await;
    let data = seen
        .split("event: RoomUserInvited")
        .nth(1)
        .and_then(|rest| rest.lines().find_map(|line| line.strip_prefix("data: ")))
        .unwrap();
    let envelope: Value = serde_json::from_str(data).unwrap();
    assert_eq!(envelope["room_id"], room_id.as_str());
    assert_eq!(envelope["payload"]["user"], "carol");
    assert_eq!(envelope["payload"]["expires_at"], invite["expires_at_ms"]);

    // The held seat is hers: bob is refused, she takes it after joining.
    let take = format!("/v1/rooms/{room_id}/seats/2/take");
    let (status, body) = cluster.post(1, &take, "bob", json!({})).await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::CONFLICT, "SEAT_HELD")
    );
    let (status, body) = cluster
        .post(0, &format!("/v1/rooms/{room_id}/join"), "carol", json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, view) = cluster.post(1, &take, "carol", json!({})).await;
    assert_eq!(status, StatusCode::OK, "{view}");
    assert_eq!(view["seats"][2]["user_id"], "carol");
    assert_eq!(view["seats"][2]["held_for"], Value::Null);

    // A seat reserved for VIP through node 1 refuses a member without seat priority.
    let (status, view) = cluster
        .post(
            1,
            &format!("/v1/rooms/{room_id}/seats/3/vip"),
            "alice",
            json!({ "vip_only": true }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{view}");
    assert_eq!(view["seats"][3]["vip_only"], true);
    let (status, body) = cluster
        .post(
            1,
            &format!("/v1/rooms/{room_id}/seats/3/take"),
            "bob",
            json!({}),
        )
        .await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::FORBIDDEN, "VIP_SEAT")
    );
    // An outsider may not invite; a banned user may not be invited.
    let (status, body) = cluster
        .post(
            1,
            &format!("/v1/rooms/{room_id}/invites"),
            "bob",
            json!({ "user_id": "dave" }),
        )
        .await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::FORBIDDEN, "FORBIDDEN")
    );
    let (status, _) = cluster
        .post(
            0,
            &format!("/v1/rooms/{room_id}/kick"),
            "alice",
            json!({ "user_id": "bob", "ban_seconds": 600 }),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, body) = cluster
        .post(
            1,
            &format!("/v1/rooms/{room_id}/invites"),
            "alice",
            json!({ "user_id": "bob", "seat": 4 }),
        )
        .await;
    assert_eq!(
        (status, error_code(&body)),
        (StatusCode::FORBIDDEN, "BANNED")
    );
}
