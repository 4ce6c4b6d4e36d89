//! The real binary as a process on a real SQLite file: an orderly restart finds every
//! committed state and balance again, and a `kill -9` in the middle of a gift storm loses no
//! coin: after the restart (whose start-up recovery settles unfinished orders) every debited
//! order is applied or refunded, so the ledger and the rooms agree.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use room_api::Authenticator;
use room_domain::UserId;
use secrecy::SecretString;
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::process::{Child, Command};

const SECRET: &str = "process-test-secret";
const START: i64 = 1_000_000;

/// The shipped catalog with rockets that never move, so no reward coins enter the books of a
/// conservation check.
fn catalog_without_rocket_fuel(dir: &Path) -> PathBuf {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../configs/gifts.toml");
    let text = std::fs::read_to_string(shipped).expect("shipped catalog");
    let text = text.replace("fuel = 10 ", "fuel = 0 ");
    assert!(text.contains("fuel = 0 "), "the rose's fuel line moved");
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
    async fn start(dir: &Path) -> Server {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let child = Command::new(env!("CARGO_BIN_EXE_room-api"))
            .current_dir(dir)
            .env("ROOM__HTTP__ADDR", format!("127.0.0.1:{port}"))
            .env(
                "ROOM__STORAGE__URL",
                format!("sqlite://{}", dir.join("room.db").display()),
            )
            .env("ROOM__AUTH__JWT_SECRET", SECRET)
            .env("ROOM__CATALOG__PATH", catalog_without_rocket_fuel(dir))
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
        let pid = self.child.id().expect("running");
        let sent = std::process::Command::new("kill")
            .arg("-TERM")
            .arg(pid.to_string())
            .status()
            .expect("kill -TERM");
        assert!(sent.success());
        tokio::time::timeout(Duration::from_secs(60), self.child.wait())
            .await
            .expect("shut down in time")
            .expect("exit status")
    }

    /// SIGKILL, while requests are in flight: no drain, no snapshot, nothing but what storage
    /// already holds.
    fn kill_9(&self) {
        let pid = self.child.id().expect("running");
        let sent = std::process::Command::new("kill")
            .arg("-KILL")
            .arg(pid.to_string())
            .status()
            .expect("kill -KILL");
        assert!(sent.success());
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
    let server = Server::start(dir.path()).await;
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
    let rank_before = server
        .get(
            &format!("/v1/rooms/{room_id}/contribution-rank?period=day"),
            &alice,
        )
        .await;

    let status = server.terminate().await;
    assert!(status.success(), "orderly shutdown exits 0, got {status}");

    let server = Server::start(dir.path()).await;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_in_a_gift_storm_loses_no_coin() {
    const SENDERS: usize = 8;
    let dir = TempDir::new().unwrap();
    let token = tokens();
    let admin = token("admin", true);
    let owner = token("owner", false);
    let recipient = token("recipient", false);
    let server = Arc::new(Server::start(dir.path()).await);
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

    // The storm: every sender sends back to back, several orders in flight at once.
    let completed = Arc::new(AtomicU64::new(0));
    let mut storm = Vec::new();
    for (s, (_, sender)) in senders.iter().enumerate() {
        for lane in 0..3 {
            let (server, sender, room_id, completed) = (
                server.clone(),
                sender.clone(),
                room_id.clone(),
                completed.clone(),
            );
            storm.push(tokio::spawn(async move {
                for n in 0.. {
                    let body = json!({
                        "order_id": format!("storm-{s}-{lane}-{n}"),
                        "gift_id": "rose",
                        "count": 1 + n % 5,
                        "recipients": ["recipient"],
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
                    }
                }
            }));
        }
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while completed.load(Ordering::Relaxed) < 300 {
        assert!(Instant::now() < deadline, "the storm did not get going");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    server.kill_9();
    for lane in storm {
        lane.await.unwrap();
    }
    Arc::into_inner(server)
        .expect("the storm lanes ended")
        .reap()
        .await;

    // Restart: start-up recovery settles every order the kill left unfinished.
    let server = Server::start(dir.path()).await;
    let mut spent = 0;
    for (_, sender) in &senders {
        let balance = server.balance(sender).await;
        assert!((0..=START).contains(&balance), "balance {balance}");
        spent += START - balance;
    }
    let rank = server
        .get(
            &format!("/v1/rooms/{room_id}/contribution-rank?period=week&limit=100"),
            &owner,
        )
        .await;
    let entries = rank["entries"].as_array().expect("rank entries");
    let applied: i64 = entries
        .iter()
        .map(|e| e["coins"].as_i64().expect("coins"))
        .sum();
    assert!(applied > 0);
    assert_eq!(
        spent, applied,
        "coins that left the senders' wallets must equal the gifts the room applied"
    );
    for (user, sender) in &senders {
        let given = entries
            .iter()
            .find(|e| e["user_id"] == user.as_str())
            .map_or(0, |e| e["coins"].as_i64().unwrap());
        assert_eq!(START - server.balance(sender).await, given, "{user}");
    }
    assert_eq!(server.balance(&recipient).await, 0);
    server.terminate().await;
}
