//! Two `room-api` processes on one MariaDB database (`ROOM_TEST_MYSQL_URL`, migrated with
//! `room-api migrate`) and the real Redis (`ROOM_TEST_REDIS_URL`), with 3-second leases: a
//! node killed with `kill -9` has its rooms run again by the other; a node paused
//! (`SIGSTOP`) past its lease finds, once resumed, that it lost the room, and commits nothing
//! for it (the room's epoch and owner in the database stay the other node's), while what it
//! is asked for the room is answered by the new owner; and `kill -9` of the owner in a gift
//! storm sent through both nodes settles every order and loses or makes no coin, and the
//! income its gifts pay is credited once: once the surviving node's income consumer has caught
//! up, the income credited equals the non-platform parts of the applied gifts. `races`: the
//! same thing sent twice at once through both nodes (a user's joins, robot pool claims, a
//! user's budgets). `lists`: both nodes answer the same room list pages, a pin included.

use std::process::Stdio;
use std::time::{Duration, Instant};

use room_domain::{BillingPolicy, GiftSent, UserId};
use room_node::Authenticator;
use room_testkit::{mysql, process, redis};
use secrecy::SecretString;
use serde_json::{Value, json};
use sqlx::{Connection, MySqlConnection};
use tokio::process::{Child, Command};

const SECRET: &str = "cluster-process-test-secret-of-32-bytes";
const INTERNAL_TOKEN: &str = "cluster-process-test-internal-token-x";
/// How long a test waits for something the cluster does by itself (a lease to expire).
const DEADLINE: Duration = Duration::from_secs(120);

/// The tests of this file run one at a time: each runs two debug servers beside MariaDB and
/// Redis, and three at once on two cores measure the machine more than the cluster.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// What the nodes of one test share.
struct Shared {
    mysql_url: String,
    redis_url: String,
    prefix: String,
    /// The gift catalog and rules: the shipped file with rockets that never fill, so that
    /// no reward enters the books.
    catalog: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

/// One `room-api` process.
struct Node {
    child: Child,
    base: String,
    http: reqwest::Client,
}

impl Node {
    async fn start(shared: &Shared, node_id: &str) -> Node {
        Node::start_with(shared, node_id, &[]).await
    }

    /// A node with `settings` (environment variables) besides the test's own.
    async fn start_with(shared: &Shared, node_id: &str, settings: &[(&str, &str)]) -> Node {
        let port = process::free_port();
        let base = format!("http://127.0.0.1:{port}");
        let mut command = Command::new(env!("CARGO_BIN_EXE_room-api"));
        command.envs(settings.iter().copied());
        let child = command
            .env("ROOM__HTTP__ADDR", format!("127.0.0.1:{port}"))
            .env("ROOM__STORAGE__URL", &shared.mysql_url)
            .env("ROOM__STORAGE__MAX_CONNECTIONS", "4")
            .env("ROOM__AUTH__JWT_SECRET", SECRET)
            .env("ROOM__CATALOG__PATH", &shared.catalog)
            // No day closes and settles a turnover within a run (the database is fresh):
            // the income checked is the gifts' parts alone.
            .env("ROOM__BILLING__SETTLE_DELAY_SECS", "86400")
            .env("ROOM__CELL__NODE_ID", node_id)
            .env("ROOM__LEASE__REDIS_URL", &shared.redis_url)
            .env("ROOM__LEASE__KEY_PREFIX", &shared.prefix)
            .env("ROOM__CLUSTER__ADVERTISE_URL", &base)
            .env("ROOM__CLUSTER__INTERNAL_TOKEN", INTERNAL_TOKEN)
            .env("ROOM__LEASE__TTL_MS", "3000")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("start room-api");
        let node = Node {
            child,
            base,
            http: reqwest::Client::new(),
        };
        let deadline = Instant::now() + DEADLINE;
        loop {
            let ready = node.http.get(format!("{}/readyz", node.base)).send().await;
            if ready.is_ok_and(|r| r.status().is_success()) {
                return node;
            }
            assert!(Instant::now() < deadline, "{node_id} did not become ready");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    fn signal(&self, signal: &str) {
        process::signal(self.child.id().expect("running"), signal);
    }

    /// `user` posts `body` to `path`: the status (0 when no answer came) and the body.
    async fn post(&self, path: &str, user: &str, body: Value) -> (u16, Value) {
        self.send(reqwest::Method::POST, path, user, body).await
    }

    /// `user` sends `body` to `path` with `method`: the status (0 when no answer came) and
    /// the body.
    async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        user: &str,
        body: Value,
    ) -> (u16, Value) {
        let token = token(user);
        match self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(token)
            .timeout(Duration::from_secs(20))
            .json(&body)
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

    /// `user` gets `path`, which must answer a success.
    async fn get_ok(&self, path: &str, user: &str) -> Value {
        let response = self
            .http
            .get(format!("{}{path}", self.base))
            .bearer_auth(token(user))
            .timeout(Duration::from_secs(20))
            .send()
            .await
            .expect("an answer");
        let status = response.status();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        assert!(status.is_success(), "GET {path}: {status} {body}");
        body
    }

    /// Posts until the answer is a success, retrying what the service says is retryable
    /// (503 while a lease expires), for up to [`DEADLINE`].
    async fn post_until_ok(&self, path: &str, user: &str, body: Value) -> Value {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let (status, value) = self.post(path, user, body.clone()).await;
            if (200..300).contains(&status) {
                return value;
            }
            let retryable = status == 0 || value["error"]["retryable"] == json!(true);
            assert!(retryable, "POST {path}: {status} {value}");
            assert!(
                Instant::now() < deadline,
                "POST {path} never succeeded: {status} {value}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

use room_testkit::process::ownership;

/// Waits until the consumer `name` has passed every row of the outbox, for up to
/// [`DEADLINE`].
async fn caught_up(conn: &mut MySqlConnection, name: &str) {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let last: Option<i64> = sqlx::query_scalar("SELECT MAX(id) FROM room_outbox")
            .fetch_one(&mut *conn)
            .await
            .unwrap();
        let position: Option<i64> =
            sqlx::query_scalar("SELECT position FROM room_consumer_positions WHERE name = ?")
                .bind(name)
                .fetch_optional(&mut *conn)
                .await
                .unwrap();
        if position.unwrap_or(0) >= last.unwrap_or(0) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the consumer {name} did not catch up: {position:?} of {last:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A bearer token of `user` (a platform admin if named `admin`).
fn token(user: &str) -> String {
    Authenticator::new(&SecretString::from(SECRET))
        .unwrap()
        .mint(
            &UserId::new(user).unwrap(),
            user == "admin",
            Duration::from_secs(600),
        )
        .unwrap()
}

#[path = "cluster_process/lists.rs"]
mod lists;
#[path = "cluster_process/profiles.rs"]
mod profiles;
#[path = "cluster_process/races.rs"]
mod races;

/// A fresh database, migrated by the binary, and a Redis key prefix; `None` (the test
/// skips) without the services.
async fn shared(
    test: &str,
) -> Option<(
    Shared,
    mysql::TestDatabase,
    tokio::sync::MutexGuard<'static, ()>,
)> {
    let turn = ONE_AT_A_TIME.lock().await;
    let redis_url = redis::url()?;
    let server = mysql::MySqlServer::from_env(test).await?;
    let database = server.database().await;
    let migrated = Command::new(env!("CARGO_BIN_EXE_room-api"))
        .arg("migrate")
        .env("ROOM__STORAGE__URL", &database.url)
        .env("ROOM__CLUSTER__SINGLE_NODE", "true")
        .env("ROOM__AUTH__JWT_SECRET", SECRET)
        .status()
        .await
        .expect("room-api migrate");
    assert!(migrated.success(), "room-api migrate failed");
    let dir = tempfile::TempDir::new().unwrap();
    let catalog = process::catalog_without_rocket_fuel(dir.path());
    let shared = Shared {
        mysql_url: database.url.clone(),
        redis_url,
        prefix: format!("{}{test}:", redis::prefix()),
        catalog,
        _dir: dir,
    };
    Some((shared, database, turn))
}

/// A room created through `node` (so run by it), with alice and bob in it.
async fn room_on(node: &Node) -> String {
    let room = node
        .post_until_ok("/v1/rooms", "alice", json!({ "name": "Night talk" }))
        .await;
    let room_id = room["room_id"].as_str().unwrap().to_owned();
    for user in ["alice", "bob"] {
        node.post_until_ok(&format!("/v1/rooms/{room_id}/join"), user, json!({}))
            .await;
    }
    room_id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_nodes_rooms_run_again_on_the_other() {
    let Some((shared, _database, _turn)) = shared("killed_node").await else {
        return;
    };
    let a = Node::start(&shared, "node-a").await;
    let b = Node::start(&shared, "node-b").await;
    let room_id = room_on(&a).await;
    let (epoch_a, owner) = ownership(&shared.mysql_url, &room_id).await;
    assert_eq!(owner, "node-a");

    a.signal("-KILL");
    // Node b answers 503 NOT_OWNER until node a's lease expires, then takes the room.
    let room = b
        .post_until_ok(
            &format!("/v1/rooms/{room_id}/seats/0/take"),
            "bob",
            json!({}),
        )
        .await;
    assert_eq!(room["seats"][0]["user_id"], "bob", "{room}");
    let (epoch_b, owner) = ownership(&shared.mysql_url, &room_id).await;
    assert_eq!(owner, "node-b");
    assert!(epoch_b > epoch_a, "{epoch_b} after {epoch_a}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_node_commits_nothing_for_the_room_it_lost() {
    let Some((shared, _database, _turn)) = shared("paused_node").await else {
        return;
    };
    let a = Node::start(&shared, "node-a").await;
    let b = Node::start(&shared, "node-b").await;
    let room_id = room_on(&a).await;

    // Paused past its lease, node a loses the room to node b.
    a.signal("-STOP");
    b.post_until_ok(
        &format!("/v1/rooms/{room_id}/seats/0/take"),
        "bob",
        json!({}),
    )
    .await;
    let taken = ownership(&shared.mysql_url, &room_id).await;
    assert_eq!(taken.1, "node-b");

    // Resumed, node a still has its cell for a moment; whatever it is asked for the room is
    // done by node b, and node a's epoch never commits again.
    a.signal("-CONT");
    let room = a
        .post_until_ok(
            &format!("/v1/rooms/{room_id}/seats/1/take"),
            "alice",
            json!({}),
        )
        .await;
    assert_eq!(room["seats"][0]["user_id"], "bob", "{room}");
    assert_eq!(room["seats"][1]["user_id"], "alice", "{room}");
    assert_eq!(ownership(&shared.mysql_url, &room_id).await, taken);
}

/// Sends `sender`'s order `order_id` (a rose to `recipients`: alice, or a batch gift's scope)
/// until it has an end: through `first` while it answers, then through `second`, repeating
/// the same order id on every retryable answer. Returns the order's end as the service
/// answered it.
async fn send_until_settled(
    first: &Node,
    second: &Node,
    room_id: &str,
    sender: &str,
    order_id: &str,
    recipients: Value,
) -> String {
    let body = json!({
        "order_id": order_id, "gift_id": "rose", "count": 1, "recipients": recipients,
    });
    let path = format!("/v1/rooms/{room_id}/gifts");
    let deadline = Instant::now() + DEADLINE;
    let mut node = first;
    loop {
        let (status, answer) = node.post(&path, sender, body.clone()).await;
        if status == 200 {
            return answer["status"].as_str().unwrap().to_owned();
        }
        if let Some(end) = answer["order"]["status"].as_str() {
            return end.to_owned();
        }
        if status == 0 {
            // The node is gone: the other one takes over.
            node = second;
        } else {
            assert_eq!(
                answer["error"]["retryable"],
                json!(true),
                "{status} {answer}"
            );
        }
        assert!(
            Instant::now() < deadline,
            "order {order_id} of {sender} never settled"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_9_of_the_owner_in_a_gift_storm_settles_every_order_and_conserves_coins() {
    let Some((shared, _database, _turn)) = shared("gift_storm").await else {
        return;
    };
    let a = std::sync::Arc::new(Node::start(&shared, "node-a").await);
    let b = std::sync::Arc::new(Node::start(&shared, "node-b").await);
    let room_id = room_on(&a).await;
    const SENDERS: [&str; 4] = ["s1", "s2", "s3", "s4"];
    const CREDIT: i64 = 10_000;
    for sender in SENDERS {
        b.post_until_ok(&format!("/v1/rooms/{room_id}/join"), sender, json!({}))
            .await;
        b.post_until_ok(
            &format!("/v1/admin/wallets/{sender}/credit"),
            "admin",
            json!({ "op_id": format!("storm-{sender}"), "amount": CREDIT }),
        )
        .await;
    }

    // Each sender sends 30 roses (every third one a batch gift to the whole room), half of the
    // senders through node a (the owner), half through node b; node a is killed once 20
    // orders have ended.
    let ended = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut storm = tokio::task::JoinSet::new();
    for (i, sender) in SENDERS.iter().enumerate() {
        let (first, second) = if i % 2 == 0 {
            (a.clone(), b.clone())
        } else {
            (b.clone(), a.clone())
        };
        let (room_id, ended) = (room_id.clone(), ended.clone());
        storm.spawn(async move {
            let mut ends = Vec::new();
            for n in 0..30 {
                let order_id = format!("{sender}-{n}");
                let recipients = if n % 3 == 2 {
                    json!({"scope": "all_room"})
                } else {
                    json!(["alice"])
                };
                let end =
                    send_until_settled(&first, &second, &room_id, sender, &order_id, recipients)
                        .await;
                ended.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                ends.push((sender.to_string(), order_id, end));
            }
            ends
        });
    }
    let deadline = Instant::now() + DEADLINE;
    while ended.load(std::sync::atomic::Ordering::SeqCst) < 20 {
        assert!(Instant::now() < deadline, "the storm did not start");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    a.signal("-KILL");
    let mut ends = Vec::new();
    while let Some(sent) = storm.join_next().await {
        ends.extend(sent.unwrap());
    }
    assert_eq!(ends.len(), SENDERS.len() * 30);

    // The books, from the database.
    let mut conn = MySqlConnection::connect(&shared.mysql_url).await.unwrap();
    let unfinished: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM gift_orders WHERE status NOT IN ('COMPLETED', 'FAILED', 'COMPENSATED')",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!(unfinished, 0, "every order settled");
    let events: Vec<(Vec<u8>, i64)> =
        sqlx::query_as("SELECT event, occurred_at FROM room_events WHERE room_id = ? ORDER BY seq")
            .bind(&room_id)
            .fetch_all(&mut conn)
            .await
            .unwrap();
    let policies: Vec<(i64, String)> = sqlx::query_as("SELECT version, body FROM billing_policies")
        .fetch_all(&mut conn)
        .await
        .unwrap();
    let policies: std::collections::HashMap<u64, BillingPolicy> = policies
        .into_iter()
        .map(|(version, body)| {
            (
                u64::try_from(version).unwrap(),
                serde_json::from_str(&body).unwrap(),
            )
        })
        .collect();
    let mut applied = std::collections::HashSet::new();
    let mut batch_applied = 0;
    let mut gift_value = 0;
    let mut income_owed = 0;
    // What each sender gave, by the UTC day of the gift (the boards' default time zone).
    let mut given: std::collections::BTreeMap<(i64, String), i64> = Default::default();
    for (event, occurred_at) in events {
        let event: Value = room_app::stored::decode(&event, "event").unwrap();
        if event["type"] == "RoomGiftSent" {
            let payload = &event["payload"];
            let gift: GiftSent = serde_json::from_value(payload.clone()).unwrap();
            *given
                .entry((occurred_at.div_euclid(86_400_000), gift.sender.to_string()))
                .or_default() += gift.total_value.0;
            let split = policies[&gift.billed_under()]
                .split_gift(&gift, false)
                .unwrap();
            income_owed += split.paid().0 * i64::try_from(gift.recipients.len()).unwrap();
            gift_value += payload["total_value"].as_i64().unwrap();
            let key = format!(
                "{} {}",
                payload["sender"].as_str().unwrap(),
                payload["order_id"].as_str().unwrap()
            );
            assert!(applied.insert(key), "an order applied twice: {payload}");
            batch_applied += usize::from(gift.recipients.len() > 1);
        }
    }
    assert!(batch_applied > 0, "no batch gift applied");
    let balances: i64 =
        sqlx::query_scalar("SELECT CAST(COALESCE(SUM(balance), 0) AS SIGNED) FROM wallet_accounts")
            .fetch_one(&mut conn)
            .await
            .unwrap();
    let credited = CREDIT * SENDERS.len() as i64;
    assert_eq!(
        balances + gift_value,
        credited,
        "balances {balances} + applied gifts {gift_value} != credited {credited}"
    );
    // Income: the surviving node's income consumer takes the consumer's claim over from the
    // killed one and catches up with the outbox; every applied gift's non-platform parts are
    // then credited, once.
    assert!(income_owed > 0, "the storm paid no income");
    caught_up(&mut conn, room_node::INCOME_CONSUMER_GROUP).await;
    // The room's and the app's boards of senders, read through the surviving node once the
    // board consumer has caught up too, equal the sums of the applied gifts.
    caught_up(&mut conn, room_node::BOARDS_CONSUMER_GROUP).await;
    let days: std::collections::BTreeSet<i64> = given.keys().map(|(day, _)| *day).collect();
    for day in days {
        let date = room_domain::DayKey(day).to_string();
        let expected: std::collections::BTreeMap<String, i64> = given
            .iter()
            .filter(|((d, _), _)| *d == day)
            .map(|((_, sender), total)| (sender.clone(), *total))
            .collect();
        for path in [
            format!("/v1/rooms/{room_id}/boards/senders?at={date}&limit=100"),
            format!("/v1/boards/senders?at={date}&limit=100"),
        ] {
            let board = b.get_ok(&path, "carol").await;
            let ranked: std::collections::BTreeMap<String, i64> = board["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|item| {
                    (
                        item["user_id"].as_str().unwrap().to_owned(),
                        item["score"].as_i64().unwrap(),
                    )
                })
                .collect();
            assert_eq!(ranked, expected, "{path}: {board}");
        }
    }
    let income: (i64, i64) = sqlx::query_as(
        "SELECT CAST(COALESCE((SELECT SUM(balance) FROM income_accounts), 0) AS SIGNED),
                CAST(COALESCE((SELECT SUM(amount) FROM income_credits), 0) AS SIGNED)",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!(
        income,
        (income_owed, income_owed),
        "income credited (balances, ledger) = the non-platform parts of the applied gifts"
    );
    // What the clients were told matches the room: a COMPLETED order is applied, once.
    for (sender, order_id, end) in &ends {
        let key = format!("{sender} {order_id}");
        assert_eq!(
            end == "COMPLETED",
            applied.contains(&key),
            "{sender} {order_id}: {end}"
        );
    }
    let _ = conn.close().await;
}
