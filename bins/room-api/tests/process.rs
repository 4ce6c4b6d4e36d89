//! The real binary as a process on a real SQLite file: an orderly restart finds every
//! committed state and balance again, and a `kill -9` in the middle of a gift storm (ordinary
//! and lucky gifts, a rocket that launches and pays rewards) loses and makes no coin: after the
//! restart (whose start-up recovery settles unfinished orders, and whose workers launch and
//! pay what is due) every debited order is applied or refunded, every reward the room drew is
//! credited once, and the ledger and the room's log agree. Income too: once the income
//! consumer has caught up after the restart, the income credited equals, over the applied
//! gifts of the room's log, the parts that are not the platform's under each order's billing
//! policy version.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use room_domain::{BillingPolicy, GiftSent, Timestamp, UserId, WeekKey};
use room_node::Authenticator;
use room_testkit::process;
use secrecy::SecretString;
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::process::{Child, Command};

const SECRET: &str = "process-test-secret-of-at-least-32-bytes";
const START: i64 = 1_000_000;

use room_testkit::process::{catalog_without_rocket_fuel, shipped_catalog};

/// The shipped catalog (the rose and the lucky clover fuel the rocket) with rocket levels low
/// enough, and countdowns short enough, for a storm of a few seconds to launch the rocket,
/// more than once. Level 2 has an odd pool (shares differ by a coin); level 3 more winners
/// than the room has members.
fn catalog_with_quick_rockets(dir: &Path) -> PathBuf {
    let text = shipped_catalog();
    // The tables' headers at the start of a line (comments name them too).
    let levels_at = text
        .find("\n[[rules.rocket_levels]]")
        .expect("rocket levels")
        + 1;
    let lucky_at = text.find("\n[rules.lucky]").expect("lucky table") + 1;
    assert!(levels_at < lucky_at, "the rules' layout changed");
    let levels = "\
[[rules.rocket_levels]]
fuel = 1000
countdown_secs = 1
reward_pool = 1000
winners = 5

[[rules.rocket_levels]]
fuel = 3000
countdown_secs = 1
reward_pool = 3001
winners = 4

[[rules.rocket_levels]]
fuel = 6000
countdown_secs = 1
reward_pool = 7000
winners = 50

";
    let text = format!("{}{levels}{}", &text[..levels_at], &text[lucky_at..]);
    let path = dir.join("gifts.toml");
    std::fs::write(&path, text).expect("write catalog");
    path
}

/// A `room-api` process on the database in `dir`.
struct Server {
    child: Child,
    base: String,
    http: reqwest::Client,
}

impl Server {
    /// A process with the catalog `catalog` and the extra environment `env`.
    async fn start(dir: &Path, catalog: &Path, env: &[(&str, &str)]) -> Server {
        let port = process::free_port();
        let child = Command::new(env!("CARGO_BIN_EXE_room-api"))
            .current_dir(dir)
            .env("ROOM__HTTP__ADDR", format!("127.0.0.1:{port}"))
            .env(
                "ROOM__STORAGE__URL",
                format!("sqlite://{}", dir.join("room.db").display()),
            )
            .env("ROOM__AUTH__JWT_SECRET", SECRET)
            .env("ROOM__CATALOG__PATH", catalog)
            // No day closes and settles a turnover within a run (the database is fresh):
            // the income checked is the gifts' parts alone.
            .env("ROOM__BILLING__SETTLE_DELAY_SECS", "86400")
            .envs(env.iter().copied())
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("start room-api");
        let server = Server {
            child,
            base: format!("http://127.0.0.1:{port}"),
            http: reqwest::Client::new(),
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let ready = server
                .http
                .get(format!("{}/readyz", server.base))
                .send()
                .await;
            if ready.is_ok_and(|r| r.status().is_success()) {
                return server;
            }
            assert!(Instant::now() < deadline, "room-api did not become ready");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// SIGTERM, and the exit status of the orderly shutdown.
    async fn terminate(mut self) -> std::process::ExitStatus {
        self.signal("-TERM");
        tokio::time::timeout(Duration::from_secs(60), self.child.wait())
            .await
            .expect("shut down in time")
            .expect("exit status")
    }

    /// SIGKILL, while requests are in flight: no drain, no snapshot, nothing but what storage
    /// already holds.
    fn kill_9(&self) {
        self.signal("-KILL");
    }

    /// Sends the process a signal (`-TERM`, `-KILL`) with kill(1).
    fn signal(&self, signal: &str) {
        process::signal(self.child.id().expect("running"), signal);
    }

    /// Reaps a killed process.
    async fn reap(mut self) {
        let status = self.child.wait().await.expect("exit status");
        assert!(!status.success(), "the process was killed, not shut down");
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        token: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        match request.send().await {
            Ok(response) => {
                let status = response.status().as_u16();
                (status, response.json().await.unwrap_or(Value::Null))
            }
            Err(_) => (0, Value::Null),
        }
    }

    async fn post(&self, path: &str, token: &str, body: Value) -> Value {
        let (status, value) = self
            .call(reqwest::Method::POST, path, token, Some(body))
            .await;
        assert!(
            (200..300).contains(&status),
            "POST {path}: {status} {value}"
        );
        value
    }

    async fn get(&self, path: &str, token: &str) -> Value {
        let (status, value) = self.call(reqwest::Method::GET, path, token, None).await;
        assert_eq!(status, 200, "GET {path}: {value}");
        value
    }

    async fn balance(&self, token: &str) -> i64 {
        self.get("/v1/me/wallet", token).await["balance"]
            .as_i64()
            .expect("balance")
    }
}

fn tokens() -> impl Fn(&str, bool) -> String {
    let auth = Authenticator::new(&SecretString::from(SECRET)).expect("authenticator");
    move |user: &str, admin: bool| {
        auth.mint(
            &UserId::new(user).unwrap(),
            admin,
            Duration::from_secs(3600),
        )
        .expect("token")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_orderly_restart_finds_every_committed_state_and_balance() {
    let dir = TempDir::new().unwrap();
    let token = tokens();
    let (admin, owner, alice, bob) = (
        token("admin", true),
        token("owner", false),
        token("alice", false),
        token("bob", false),
    );
    let catalog = catalog_without_rocket_fuel(dir.path());
    let server = Server::start(dir.path(), &catalog, &[]).await;
    server
        .post(
            "/v1/admin/wallets/alice/credit",
            &admin,
            json!({"op_id": "top-up-1", "amount": 5000}),
        )
        .await;
    let room = server
        .post("/v1/rooms", &owner, json!({"name": "restart"}))
        .await;
    let room_id = room["room_id"].as_str().unwrap().to_owned();
    for user in [&owner, &alice, &bob] {
        server
            .post(&format!("/v1/rooms/{room_id}/join"), user, json!({}))
            .await;
    }
    server
        .post(
            &format!("/v1/rooms/{room_id}/seats/2/take"),
            &bob,
            json!({}),
        )
        .await;
    let gift =
        json!({"order_id": "restart-1", "gift_id": "rose", "count": 3, "recipients": ["bob"]});
    let first = server
        .post(&format!("/v1/rooms/{room_id}/gifts"), &alice, gift.clone())
        .await;
    assert_eq!(first["status"], "COMPLETED");
    assert_eq!(first["coin_balance_after"], 5000 - 30);
    let before = server.get(&format!("/v1/rooms/{room_id}"), &alice).await;
    // The rank is the room's board of senders: it shows the gift once the board consumer
    // counted it.
    let deadline = Instant::now() + Duration::from_secs(30);
    let rank_before = loop {
        let rank = server
            .get(
                &format!("/v1/rooms/{room_id}/contribution-rank?period=day"),
                &alice,
            )
            .await;
        if rank["entries"][0]["coins"] == 30 {
            break rank;
        }
        assert!(Instant::now() < deadline, "the gift is not ranked: {rank}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };

    let status = server.terminate().await;
    assert!(status.success(), "orderly shutdown exits 0, got {status}");

    // The room's board of senders, rebuilt from the facts by the command, equals the live
    // one; the open day's board is not replaced.
    let rebuild = |extra: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_room-api"))
            .current_dir(dir.path())
            .env(
                "ROOM__STORAGE__URL",
                format!("sqlite://{}", dir.path().join("room.db").display()),
            )
            .env("ROOM__AUTH__JWT_SECRET", SECRET)
            .env("ROOM__CATALOG__PATH", &catalog)
            .args(["boards", "rebuild", "--board", "senders", "--period", "day"])
            .args(["--room", room_id.as_str()])
            .args(extra)
            .output()
            .expect("room-api boards rebuild")
    };
    let equal = rebuild(&[]);
    let report = String::from_utf8_lossy(&equal.stderr);
    assert!(equal.status.success(), "{report}");
    assert!(report.contains("equals the rebuilt one"), "{report}");
    let open = rebuild(&["--apply"]);
    let report = String::from_utf8_lossy(&open.stderr);
    assert!(!open.status.success(), "{report}");
    assert!(report.contains("has not closed"), "{report}");

    let server = Server::start(dir.path(), &catalog, &[]).await;
    let after = server.get(&format!("/v1/rooms/{room_id}"), &alice).await;
    assert_eq!(after, before, "the room after the restart");
    assert_eq!(
        server
            .get(
                &format!("/v1/rooms/{room_id}/contribution-rank?period=day"),
                &alice
            )
            .await,
        rank_before
    );
    assert_eq!(server.balance(&alice).await, 5000 - 30);
    // The same order after the restart: the same answer, no second debit.
    let again = server
        .post(&format!("/v1/rooms/{room_id}/gifts"), &alice, gift)
        .await;
    assert_eq!(again, first);
    assert_eq!(server.balance(&alice).await, 5000 - 30);
    // The same admin credit after the restart credits nothing more.
    server
        .post(
            "/v1/admin/wallets/alice/credit",
            &admin,
            json!({"op_id": "top-up-1", "amount": 5000}),
        )
        .await;
    assert_eq!(server.balance(&alice).await, 5000 - 30);
    server.terminate().await;
}

/// What the database says once the process is down, read with SQL of its own (not through
/// the service's code): the room's log, the gift orders, the wallet's ledger and balances.
struct Books {
    /// Per user, from the room's log: coins of the gifts the room applied, lucky rewards the
    /// room drew for them, rocket rewards the room gave them.
    given: HashMap<String, i64>,
    /// `given` split by the week (in the rules' zone) the room applied the gift in.
    given_by_week: HashMap<WeekKey, HashMap<String, i64>>,
    lucky: HashMap<String, i64>,
    rocket: HashMap<String, i64>,
    /// The orders the room applied (by wallet operation id: sender and order id), with the
    /// lucky reward it drew and the value it gave.
    applied: HashMap<String, (i64, i64)>,
    /// Every rocket reward: (payout op id, coins).
    rocket_rewards: Vec<(String, i64)>,
    /// Wallet operation id of the order (sender and order id) -> its row in `gift_orders`.
    orders: HashMap<String, StoredOrder>,
    /// (op id, kind) -> (state, amount) from `wallet_entries`; a void entry has no amount.
    entries: HashMap<(String, String), (String, Option<i64>)>,
    /// Per user, the balance of `wallet_accounts`.
    balances: HashMap<String, i64>,
    /// Rows left in `room_payouts`.
    payouts_left: i64,
}

/// A row of `gift_orders`, as the books need it.
struct StoredOrder {
    status: String,
    sender: String,
    /// What the sender was debited.
    total: i64,
    lucky_reward: i64,
    /// What a batch gift that reached fewer than it paid for is owed back (0 otherwise).
    partial_refund: i64,
    /// Whether it was credited.
    partial_refunded: bool,
}

/// Now, in milliseconds since the epoch, as the service's clock reads it.
fn now_ms() -> i64 {
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("a clock after 1970");
    i64::try_from(since_epoch.as_millis()).expect("milliseconds fit in i64")
}

fn total(map: &HashMap<String, i64>) -> i64 {
    map.values().sum()
}

impl Books {
    /// Reads the books of `room_id`; `utc_offset_secs` is the rules' zone, where weeks begin.
    fn read(db: &Path, room_id: &str, utc_offset_secs: i32) -> Books {
        let conn = rusqlite::Connection::open(db).expect("open the database");
        let mut books = Books {
            given: HashMap::new(),
            given_by_week: HashMap::new(),
            lucky: HashMap::new(),
            rocket: HashMap::new(),
            applied: HashMap::new(),
            rocket_rewards: Vec::new(),
            orders: HashMap::new(),
            entries: HashMap::new(),
            balances: HashMap::new(),
            payouts_left: 0,
        };
        let mut events = conn
            .prepare("SELECT occurred_at, event FROM room_events WHERE room_id = ?1 ORDER BY seq")
            .unwrap();
        let events = events
            .query_map([room_id], |row| {
                Ok((row.get::<_, i64>(0)?, row.get::<_, Vec<u8>>(1)?))
            })
            .unwrap();
        for row in events {
            let (occurred_at, event) = row.unwrap();
            let event: Value = room_app::stored::decode(&event, "event").expect("stored event");
            let payload = &event["payload"];
            match event["type"].as_str().expect("event type") {
                "RoomGiftSent" => {
                    let sender = payload["sender"].as_str().unwrap().to_owned();
                    let value = payload["total_value"].as_i64().unwrap();
                    let reward = payload["lucky"]["reward"].as_i64().unwrap_or(0);
                    *books.given.entry(sender.clone()).or_default() += value;
                    // The room counts a gift in the week of the instant it applied it.
                    let week = Timestamp(occurred_at).day_key(utc_offset_secs).week();
                    *books
                        .given_by_week
                        .entry(week)
                        .or_default()
                        .entry(sender.clone())
                        .or_default() += value;
                    let order_id = payload["order_id"].as_str().unwrap();
                    let op_id = format!("{order_id} {sender}");
                    *books.lucky.entry(sender).or_default() += reward;
                    assert!(
                        books.applied.insert(op_id, (reward, value)).is_none(),
                        "an order applied twice: {payload}"
                    );
                }
                "RoomRocketLaunched" => {
                    let rocket_id = payload["rocket_id"].as_u64().unwrap();
                    for reward in payload["rewards"].as_array().unwrap() {
                        let user = reward["user"].as_str().unwrap().to_owned();
                        let coins = reward["coins"].as_i64().unwrap();
                        *books.rocket.entry(user.clone()).or_default() += coins;
                        books
                            .rocket_rewards
                            .push((format!("{room_id}:rocket:{rocket_id}:{user}"), coins));
                    }
                }
                _ => {}
            }
        }
        let mut orders = conn
            .prepare("SELECT order_id, status, sender, body FROM gift_orders")
            .unwrap();
        let orders = orders
            .query_map([], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, String>(2)?,
                    row.get::<_, Vec<u8>>(3)?,
                ))
            })
            .unwrap();
        for order in orders {
            // The body holds what the columns do not.
            let (order_id, status, sender, body) = order.unwrap();
            let body: Value = room_app::stored::decode(&body, "order").expect("stored order");
            let stored = StoredOrder {
                status,
                total: body["total"].as_i64().unwrap(),
                lucky_reward: body["lucky_reward"].as_i64().unwrap(),
                partial_refund: body["partial_refund"].as_i64().unwrap_or(0),
                partial_refunded: body["partial_refunded"].as_bool().unwrap_or(false),
                sender: sender.clone(),
            };
            books.orders.insert(format!("{order_id} {sender}"), stored);
        }
        let mut entries = conn
            .prepare("SELECT op_id, kind, state, amount FROM wallet_entries")
            .unwrap();
        let entries = entries
            .query_map([], |row| {
                Ok((
                    (row.get::<_, String>(0)?, row.get::<_, String>(1)?),
                    (row.get::<_, String>(2)?, row.get::<_, Option<i64>>(3)?),
                ))
            })
            .unwrap();
        books.entries = entries.map(Result::unwrap).collect();
        let mut balances = conn
            .prepare("SELECT user_id, balance FROM wallet_accounts")
            .unwrap();
        let balances = balances
            .query_map([], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?))
            })
            .unwrap();
        books.balances = balances.map(Result::unwrap).collect();
        books.payouts_left = conn
            .query_row("SELECT count(*) FROM room_payouts", [], |row| row.get(0))
            .unwrap();
        books
    }

    /// The amount of a done ledger entry, `None` if there is none (or it is void).
    fn done(&self, op_id: &str, kind: &str) -> Option<i64> {
        match self.entries.get(&(op_id.to_owned(), kind.to_owned())) {
            Some((state, amount)) if state == "done" => Some(amount.expect("a done amount")),
            _ => None,
        }
    }

    fn sum_of(&self, kind: &str) -> i64 {
        self.entries
            .iter()
            .filter(|((_, k), (state, _))| k == kind && state == "done")
            .map(|(_, (_, amount))| amount.expect("a done amount"))
            .sum()
    }
}

/// The income owed for the applied gifts of `room_id`'s log: each recipient's parts that are
/// not the platform's, under the billing policy version of the gift's order (no user has an
/// agency), worked out from the log and the stored policies alone.
fn income_owed(db: &Path, room_id: &str) -> i64 {
    let conn = rusqlite::Connection::open(db).expect("open the database");
    let mut policies = conn
        .prepare("SELECT version, body FROM billing_policies")
        .unwrap();
    let policies: HashMap<u64, BillingPolicy> = policies
        .query_map([], |row| {
            Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?))
        })
        .unwrap()
        .map(|row| {
            let (version, body) = row.unwrap();
            (
                u64::try_from(version).unwrap(),
                serde_json::from_str(&body).expect("a stored policy"),
            )
        })
        .collect();
    let mut events = conn
        .prepare("SELECT event FROM room_events WHERE room_id = ?1 ORDER BY seq")
        .unwrap();
    let events = events
        .query_map([room_id], |row| row.get::<_, Vec<u8>>(0))
        .unwrap();
    let mut owed = 0;
    for event in events {
        let event: Value = room_app::stored::decode(&event.unwrap(), "event").unwrap();
        if event["type"] != "RoomGiftSent" {
            continue;
        }
        let gift: GiftSent = serde_json::from_value(event["payload"].clone()).unwrap();
        let policy = &policies[&gift.billed_under()];
        let split = policy.split_gift(&gift, false).unwrap();
        owed += split.paid().0 * i64::try_from(gift.recipients.len()).unwrap();
    }
    owed
}

/// The income credited to everyone, by the balances and by the ledger's entries.
fn income_credited(db: &Path) -> (i64, i64) {
    let conn = rusqlite::Connection::open(db).expect("open the database");
    let balances = conn
        .query_row(
            "SELECT COALESCE(SUM(balance), 0) FROM income_accounts",
            [],
            |row| row.get(0),
        )
        .unwrap();
    let entries = conn
        .query_row(
            "SELECT COALESCE(SUM(amount), 0) FROM income_credits",
            [],
            |row| row.get(0),
        )
        .unwrap();
    (balances, entries)
}

/// Whether the income consumer has handled every fact in the outbox.
/// Whether the income and board consumers have passed every row of the outbox.
fn consumers_caught_up(db: &Path) -> bool {
    let conn = rusqlite::Connection::open(db).expect("open the database");
    let last: Option<i64> = conn
        .query_row("SELECT MAX(id) FROM room_outbox", [], |row| row.get(0))
        .unwrap();
    [
        room_node::INCOME_CONSUMER_GROUP,
        room_node::BOARDS_CONSUMER_GROUP,
    ]
    .into_iter()
    .all(|name| {
        let position: Option<i64> = conn
            .query_row(
                "SELECT position FROM room_consumer_positions WHERE name = ?1",
                [name],
                |row| row.get(0),
            )
            .ok();
        position.unwrap_or(0) >= last.unwrap_or(0)
    })
}

/// Rocket fuel per unit is 10 for the rose and 20 for the lucky clover, so the storm launches
/// the rocket within seconds (see [`catalog_with_quick_rockets`]).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_in_a_gift_storm_loses_no_coin() {
    const SENDERS: usize = 8;
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("room.db");
    let catalog = catalog_with_quick_rockets(dir.path());
    // Rewards are paid every second, so the kill may find some paid and some owed.
    let env = [("ROOM__WORKERS__PAYOUTS_EVERY_SECS", "1")];
    let token = tokens();
    let admin = token("admin", true);
    let owner = token("owner", false);
    let recipient = token("recipient", false);
    let server = Arc::new(Server::start(dir.path(), &catalog, &env).await);
    let room = server
        .post("/v1/rooms", &owner, json!({"name": "storm"}))
        .await;
    let room_id = room["room_id"].as_str().unwrap().to_owned();
    server
        .post(&format!("/v1/rooms/{room_id}/join"), &recipient, json!({}))
        .await;
    let mut senders = Vec::new();
    for s in 0..SENDERS {
        let user = format!("sender-{s}");
        server
            .post(
                &format!("/v1/admin/wallets/{user}/credit"),
                &admin,
                json!({"op_id": format!("seed-{user}"), "amount": START}),
            )
            .await;
        let sender = token(&user, false);
        server
            .post(&format!("/v1/rooms/{room_id}/join"), &sender, json!({}))
            .await;
        senders.push((user, sender));
    }

    // The storm: every sender sends back to back on four lanes, several orders in flight at
    // once: two lanes of roses, one of lucky clovers (one sender's lucky gifts take turns),
    // one of roses to everyone in the room (batch gifts), while one member keeps joining and
    // leaving, so that some batch gifts reach fewer than they paid for.
    let completed = Arc::new(AtomicU64::new(0));
    let lucky_completed = Arc::new(AtomicU64::new(0));
    let batch_completed = Arc::new(AtomicU64::new(0));
    let mut storm = Vec::new();
    {
        let (server, hopper, room_id) = (server.clone(), token("hopper", false), room_id.clone());
        storm.push(tokio::spawn(async move {
            for n in 0.. {
                let path = if n % 2 == 0 { "join" } else { "leave" };
                let (status, _) = server
                    .call(
                        reqwest::Method::POST,
                        &format!("/v1/rooms/{room_id}/{path}"),
                        &hopper,
                        Some(json!({})),
                    )
                    .await;
                if status == 0 {
                    return; // the server is gone
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }));
    }
    for (s, (_, sender)) in senders.iter().enumerate() {
        for lane in 0..4 {
            let gift_id = if lane == 2 { "lucky-clover" } else { "rose" };
            let batch_completed = batch_completed.clone();
            let (server, sender, room_id, completed, lucky_completed) = (
                server.clone(),
                sender.clone(),
                room_id.clone(),
                completed.clone(),
                lucky_completed.clone(),
            );
            storm.push(tokio::spawn(async move {
                for n in 0.. {
                    let recipients = if lane == 3 {
                        json!({"scope": "all_room"})
                    } else {
                        json!(["recipient"])
                    };
                    let body = json!({
                        "order_id": format!("storm-{s}-{lane}-{n}"),
                        "gift_id": gift_id,
                        "count": 1 + n % 5,
                        "recipients": recipients,
                    });
                    let (status, value) = server
                        .call(
                            reqwest::Method::POST,
                            &format!("/v1/rooms/{room_id}/gifts"),
                            &sender,
                            Some(body),
                        )
                        .await;
                    if status == 0 {
                        return; // the server is gone
                    }
                    if value["status"] == "COMPLETED" {
                        completed.fetch_add(1, Ordering::Relaxed);
                        if value["lucky"].is_object() {
                            lucky_completed.fetch_add(1, Ordering::Relaxed);
                        }
                        if lane == 3 {
                            batch_completed.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            }));
        }
    }
    // Kill once the storm has moved coins every way: gifts, lucky draws, and two rocket
    // launches (the first one's rewards likely paid, the second's likely still owed).
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let rocket = &server.get(&format!("/v1/rooms/{room_id}"), &owner).await["rocket"];
        let launched = rocket["level"].as_u64().unwrap() > 2 || rocket["status"] == "launched";
        if launched
            && completed.load(Ordering::Relaxed) >= 300
            && lucky_completed.load(Ordering::Relaxed) >= 50
            && batch_completed.load(Ordering::Relaxed) >= 50
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the storm did not get going: {} gifts, {} lucky, {} batch, rocket {rocket}",
            completed.load(Ordering::Relaxed),
            lucky_completed.load(Ordering::Relaxed),
            batch_completed.load(Ordering::Relaxed),
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.kill_9();
    for lane in storm {
        lane.await.unwrap();
    }
    Arc::into_inner(server)
        .expect("the storm lanes ended")
        .reap()
        .await;

    // Restart: start-up recovery settles every order the kill left unfinished; the timers
    // launch a rocket that was counting down, and the payouts pass pays what is owed.
    let server = Server::start(dir.path(), &catalog, &env).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        // The launch and its owed rewards commit together: once the rocket is no longer
        // counting down, an empty payouts table means every reward was paid.
        let rocket = &server.get(&format!("/v1/rooms/{room_id}"), &owner).await["rocket"];
        let owed: i64 = rusqlite::Connection::open(&db)
            .and_then(|conn| conn.query_row("SELECT count(*) FROM room_payouts", [], |r| r.get(0)))
            .expect("count owed rewards");
        if rocket["status"] != "ignited" && owed == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "rewards still owed: {owed}, rocket {rocket}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut balances = HashMap::new();
    for (user, sender) in &senders {
        let balance = server.balance(sender).await;
        assert!(balance >= 0, "{user}: balance {balance}");
        balances.insert(user.clone(), balance);
    }
    balances.insert("recipient".to_owned(), server.balance(&recipient).await);
    let hopper = token("hopper", false);
    balances.insert("hopper".to_owned(), server.balance(&hopper).await);
    // The income and board consumers catch up with the outbox the kill left behind.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !consumers_caught_up(&db) {
        assert!(
            Instant::now() < deadline,
            "the income and board consumers did not catch up"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The week rank (the room's board of senders, in the billing time zone) counts the
    // current week only: note which week that is around the query.
    let utc_offset_secs = room_node::BillingSettings::default()
        .utc_offset_secs()
        .expect("the default billing time zone");
    let this_week = || Timestamp(now_ms()).day_key(utc_offset_secs).week();
    let week_before = this_week();
    let rank = server
        .get(
            &format!("/v1/rooms/{room_id}/contribution-rank?period=week&limit=100"),
            &owner,
        )
        .await;
    let ranked: HashMap<String, i64> = rank["entries"]
        .as_array()
        .expect("rank entries")
        .iter()
        .map(|e| {
            (
                e["user_id"].as_str().unwrap().to_owned(),
                e["coins"].as_i64().unwrap(),
            )
        })
        .collect();
    let week_after = this_week();
    let status = server.terminate().await;
    assert!(status.success(), "orderly shutdown exits 0, got {status}");

    let books = Books::read(&db, &room_id, utc_offset_secs);
    // The storm moved coins every way.
    assert!(total(&books.given) > 0, "no gift applied");
    assert!(total(&books.lucky) > 0, "no lucky reward drawn");
    assert!(total(&books.rocket) > 0, "no rocket reward given");
    // The rank agrees with the log restricted to the current week, so a run that crosses the
    // week's end still passes. A query at the very turn of the week saw one week or the other.
    let given_in = |week| books.given_by_week.get(&week).cloned().unwrap_or_default();
    assert!(
        ranked == given_in(week_before) || ranked == given_in(week_after),
        "the week rank {ranked:?} and the room's log of week {week_before:?} {:?}",
        given_in(week_before)
    );

    // Every order is settled, and its coins went where its status says.
    let mut settled: HashMap<&str, u64> = HashMap::new();
    let mut partly_refunded = 0;
    for (order_id, order) in &books.orders {
        let (status, order_total, reward) = (&order.status, &order.total, &order.lucky_reward);
        let sender = &order.sender;
        *settled.entry(status.as_str()).or_default() += 1;
        let debit = books.done(order_id, "debit");
        let refund = books.done(order_id, "refund");
        let lucky = books.done(order_id, "lucky_reward");
        match status.as_str() {
            "COMPLETED" => {
                // A batch gift that reached fewer than it paid for is refunded the rest.
                let partial = order.partial_refund;
                assert_eq!(debit, Some(*order_total), "{order_id} debit");
                assert_eq!(
                    refund,
                    (partial > 0).then_some(partial),
                    "{order_id} refund"
                );
                assert_eq!(order.partial_refunded, partial > 0, "{order_id} refunded");
                partly_refunded += u64::from(partial > 0);
                assert_eq!(
                    books.applied.get(order_id),
                    Some(&(*reward, order_total - partial)),
                    "{order_id} applied"
                );
                assert_eq!(lucky, (*reward > 0).then_some(*reward), "{order_id} lucky");
            }
            "COMPENSATED" => {
                assert_eq!(debit, Some(*order_total), "{order_id} debit");
                assert_eq!(refund, Some(*order_total), "{order_id} refund");
                assert!(!books.applied.contains_key(order_id), "{order_id} applied");
                assert_eq!(lucky, None, "{order_id} lucky");
            }
            "FAILED" => {
                assert_eq!((debit, refund, lucky), (None, None, None), "{order_id}");
                assert!(!books.applied.contains_key(order_id), "{order_id} applied");
            }
            other => panic!("{order_id} of {sender} left {other}"),
        }
    }
    assert!(settled["COMPLETED"] > 0);
    eprintln!("orders settled: {settled:?}; batch gifts partly refunded: {partly_refunded}");
    // Every debit belongs to an order that was applied or refunded, every gift the room
    // applied to a completed order.
    for ((op_id, kind), (state, _)) in &books.entries {
        if kind == "debit" && state == "done" {
            let status = books.orders.get(op_id).map(|order| order.status.as_str());
            assert!(
                matches!(status, Some("COMPLETED" | "COMPENSATED")),
                "debit {op_id} of an order {status:?}"
            );
        }
    }
    for order_id in books.applied.keys() {
        let status = books
            .orders
            .get(order_id)
            .map(|order| order.status.as_str());
        assert_eq!(status, Some("COMPLETED"), "applied {order_id}");
    }
    // Every rocket reward the room gave was paid once, and none is owed any more.
    assert_eq!(books.payouts_left, 0);
    for (op_id, coins) in &books.rocket_rewards {
        assert_eq!(books.done(op_id, "rocket_reward"), Some(*coins), "{op_id}");
    }
    assert_eq!(books.sum_of("rocket_reward"), total(&books.rocket));
    assert_eq!(books.sum_of("lucky_reward"), total(&books.lucky));

    // Conservation: the coins credited at the start are the coins held now plus the coins
    // spent on applied gifts, less the lucky and rocket rewards paid out.
    let credited = START * SENDERS as i64;
    assert_eq!(books.sum_of("credit_admin"), credited);
    let held: i64 = books.balances.values().sum();
    assert_eq!(
        credited,
        held + total(&books.given) - total(&books.lucky) - total(&books.rocket),
        "coins credited = coins held + gifts applied - lucky rewards - rocket rewards"
    );
    // Income: the non-platform parts of every applied gift, credited once.
    let owed = income_owed(&db, &room_id);
    assert!(owed > 0, "the storm paid no income");
    assert_eq!(
        income_credited(&db),
        (owed, owed),
        "income credited (balances, ledger) = the non-platform parts of the applied gifts"
    );

    // And user by user, with the balances the API answered.
    let users = senders
        .iter()
        .map(|(user, _)| user.as_str())
        .chain(["recipient", "hopper"])
        .collect::<HashSet<_>>();
    for user in &users {
        let get = |map: &HashMap<String, i64>| map.get(*user).copied().unwrap_or(0);
        let start = if matches!(*user, "recipient" | "hopper") {
            0
        } else {
            START
        };
        assert_eq!(
            balances[*user],
            start - get(&books.given) + get(&books.lucky) + get(&books.rocket),
            "{user}"
        );
        assert_eq!(
            books.balances.get(*user).copied().unwrap_or(0),
            balances[*user]
        );
    }
    let others: Vec<_> = books
        .balances
        .iter()
        .filter(|(user, balance)| !users.contains(user.as_str()) && **balance != 0)
        .collect();
    assert!(
        others.is_empty(),
        "coins of users outside the storm: {others:?}"
    );
}
