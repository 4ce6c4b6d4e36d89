//! Through a real socket: the walkthrough with the SSE stream, concurrent repeats of one
//! order, graceful stop, the internal links, and the binary itself (`token`, SIGTERM).

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use room_domain::UserId;
use room_node::{App, AuthenticatorRef};
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::support::{eventually, read_until, settings};

/// How long a test waits for the server: an event on a stream, a stop.
const DEADLINE: Duration = Duration::from_secs(20);

struct Server {
    base: String,
    http: reqwest::Client,
    auth: AuthenticatorRef,
    stop: CancellationToken,
    serving: JoinHandle<anyhow::Result<()>>,
    _dir: TempDir,
}

impl Server {
    async fn start() -> Server {
        Self::start_with(|_| {}).await
    }

    /// A server whose settings `change` adjusts first.
    async fn start_with(change: impl FnOnce(&mut room_node::Settings)) -> Server {
        let dir = TempDir::new().unwrap();
        let mut settings = settings(&dir);
        change(&mut settings);
        let app = App::build(settings).await.unwrap();
        let auth = app.authenticator().clone();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let stop = CancellationToken::new();
        let signal = stop.clone();
        let serving = tokio::spawn(app.serve(listener, async move { signal.cancelled().await }));
        let server = Server {
            base,
            http: reqwest::Client::new(),
            auth,
            stop,
            serving,
            _dir: dir,
        };
        wait_ready(&server.http, &server.base).await;
        server
    }

    fn token(&self, user: &str, admin: bool) -> String {
        self.auth
            .mint(&UserId::new(user).unwrap(), admin, Duration::from_secs(600))
            .unwrap()
    }

    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        user: &str,
        body: Value,
    ) -> (StatusCode, Value) {
        let response = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(self.token(user, user == "admin"))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status();
        let text = response.text().await.unwrap();
        let value = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap()
        };
        (status, value)
    }

    async fn post(&self, path: &str, user: &str, body: Value) -> (StatusCode, Value) {
        self.call(reqwest::Method::POST, path, user, body).await
    }

    async fn get(&self, path: &str, user: &str) -> (StatusCode, Value) {
        self.call(reqwest::Method::GET, path, user, Value::Null)
            .await
    }
}

async fn wait_ready(http: &reqwest::Client, base: &str) {
    eventually("the server is ready", || async {
        http.get(format!("{base}/readyz"))
            .send()
            .await
            .is_ok_and(|response| response.status().is_success())
    })
    .await;
}

/// Whether `value` holds the number `wanted` anywhere inside it.
fn holds_number(value: &Value, wanted: i64) -> bool {
    match value {
        Value::Number(number) => number.as_i64() == Some(wanted),
        Value::String(text) => text == &wanted.to_string(),
        Value::Array(items) => items.iter().any(|item| holds_number(item, wanted)),
        Value::Object(fields) => fields.values().any(|item| holds_number(item, wanted)),
        Value::Bool(_) | Value::Null => false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_walkthrough_over_http_with_the_event_stream() {
    let server = Server::start().await;
    let (status, body) = server
        .post(
            "/v1/admin/wallets/alice/credit",
            "admin",
            json!({"op_id": "t1", "amount": 1000}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, room) = server
        .post("/v1/rooms", "alice", json!({"name": "Night talk"}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{room}");
    let room_id = room["room_id"].as_str().unwrap().to_owned();
    for user in ["alice", "bob"] {
        let (status, _) = server
            .post(&format!("/v1/rooms/{room_id}/join"), user, json!({}))
            .await;
        assert_eq!(status, StatusCode::OK);
    }
    let (status, _) = server
        .post(
            &format!("/v1/rooms/{room_id}/seats/0/take"),
            "bob",
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);

    // Outsiders may not watch.
    let (status, body) = server
        .get(&format!("/v1/rooms/{room_id}/events"), "mallory")
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (StatusCode::UNPROCESSABLE_ENTITY, Some("NOT_A_MEMBER"))
    );

    let mut events = server
        .http
        .get(format!("{}/v1/rooms/{room_id}/events", server.base))
        .bearer_auth(server.token("bob", false))
        .send()
        .await
        .unwrap();
    assert_eq!(events.status(), StatusCode::OK);
    assert!(
        events.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let mut seen = String::new();
    read_until(&mut events, &mut seen, "event: subscribed").await;

    let (status, receipt) = server
        .post(
            &format!("/v1/rooms/{room_id}/gifts"),
            "alice",
            json!({"order_id": "sse-1", "gift_id": "rose", "count": 2, "recipients": ["bob"]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{receipt}");
    assert_eq!(receipt["coin_balance_after"], 980);
    let (_, wallet) = server.get("/v1/me/wallet", "alice").await;
    assert_eq!(wallet["balance"], 980);

    read_until(&mut events, &mut seen, "event: RoomGiftSent").await;
    let data = seen
        .split("event: RoomGiftSent")
        .nth(1)
        .and_then(|rest| rest.lines().find_map(|line| line.strip_prefix("data: ")))
        .unwrap();
    let envelope: Value = serde_json::from_str(data).unwrap();
    assert_eq!(envelope["type"], "RoomGiftSent");
    assert_eq!(envelope["room_id"], room_id.as_str());
    assert_eq!(envelope["payload"]["order_id"], "sse-1");
    assert_eq!(envelope["payload"]["sender"], "alice");
    assert_eq!(envelope["payload"]["total_value"], 20);
    // The sender's balance is never broadcast: no field names it and no
    // value equals it (the timestamp's digits may contain it by chance).
    assert!(!data.contains("balance"), "{data}");
    assert!(!holds_number(&envelope, 980), "{data}");

    // A graceful stop ends the stream and the server.
    server.stop.cancel();
    tokio::time::timeout(DEADLINE, async {
        while let Some(chunk) = events.chunk().await.unwrap_or(None) {
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
    })
    .await
    .expect("the event stream did not end on stop");
    tokio::time::timeout(DEADLINE, server.serving)
        .await
        .expect("the server did not stop")
        .unwrap()
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_repeats_over_http_debit_once() {
    // The repeats retry while the order is in progress: the per-user gift bucket holds
    // `u32::MAX` tokens so that a slow machine's many retries are not answered `RATE_LIMITED`
    // (the limiter stays in their path).
    let server =
        Arc::new(Server::start_with(|settings| settings.limits.gift_burst = u32::MAX).await);
    server
        .post(
            "/v1/admin/wallets/alice/credit",
            "admin",
            json!({"op_id": "t1", "amount": 12_000}),
        )
        .await;
    let (_, room) = server
        .post("/v1/rooms", "alice", json!({"name": "Busy"}))
        .await;
    let room_id = room["room_id"].as_str().unwrap().to_owned();
    for user in ["alice", "bob"] {
        server
            .post(&format!("/v1/rooms/{room_id}/join"), user, json!({}))
            .await;
    }
    let mut requests = Vec::new();
    for _ in 0..50 {
        let (server, room_id) = (server.clone(), room_id.clone());
        requests.push(tokio::spawn(async move {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
            loop {
                let (status, body) = server
                    .post(
                        &format!("/v1/rooms/{room_id}/gifts"),
                        "alice",
                        json!({"order_id": "once", "gift_id": "sports-car", "count": 1, "recipients": ["bob"]}),
                    )
                    .await;
                // Beyond the requests one order may queue: retried, as a client does.
                if status == StatusCode::TOO_MANY_REQUESTS
                    && body["error"]["code"] == "ORDER_IN_PROGRESS"
                {
                    assert!(
                        tokio::time::Instant::now() < deadline,
                        "the order stayed in progress for 30 s"
                    );
                    tokio::task::yield_now().await;
                    continue;
                }
                break (status, body);
            }
        }));
    }
    let expected = json!({"order_id": "once", "status": "COMPLETED", "coin_balance_after": 7000,
                          "recipients": ["bob"]});
    for request in requests {
        let (status, body) = request.await.unwrap();
        assert_eq!((status, body), (StatusCode::OK, expected.clone()));
    }
    let (_, wallet) = server.get("/v1/me/wallet", "alice").await;
    assert_eq!(wallet["balance"], 7000);
    let (_, room) = server.get(&format!("/v1/rooms/{room_id}"), "bob").await;
    assert_eq!(room["heat"], 5000);
}

fn binary() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_room-api"));
    command
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env(
            "ROOM__AUTH__JWT_SECRET",
            "binary-test-secret-of-at-least-32-bytes",
        )
        .env("ROOM__STORAGE__URL", "memory://")
        .env("ROOM__CATALOG__PATH", "no-such-dir/gifts.toml")
        .env("RUST_LOG", "warn");
    command
}

#[test]
fn the_token_subcommand_prints_a_token_for_the_configured_secret() {
    let output = binary()
        .args(["token", "--user", "alice", "--admin"])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let token = String::from_utf8(output.stdout).unwrap();
    let auth = room_node::Authenticator::new(&secrecy::SecretString::from(
        "binary-test-secret-of-at-least-32-bytes",
    ))
    .unwrap();
    let actor = auth.verify(token.trim()).unwrap();
    assert_eq!(actor.user_id.as_str(), "alice");
    assert!(actor.platform_admin);

    let output = binary().args(["token", "--user", "bob"]).output().unwrap();
    let token = String::from_utf8(output.stdout).unwrap();
    assert!(!auth.verify(token.trim()).unwrap().platform_admin);

    let output = binary()
        .args(["token", "--user", "has space"])
        .output()
        .unwrap();
    assert!(!output.status.success());
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts the binary on `database` and waits until it is ready.
async fn spawn_binary(database: &str) -> (std::process::Child, String) {
    let port = free_port();
    let child = binary()
        .env("ROOM__HTTP__ADDR", format!("127.0.0.1:{port}"))
        .env("ROOM__STORAGE__URL", database)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    wait_ready(&reqwest::Client::new(), &base).await;
    (child, base)
}

/// Sends SIGTERM and waits for the exit status.
async fn terminate(mut child: std::process::Child) -> std::process::ExitStatus {
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            panic!("room-api did not stop on SIGTERM");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_stops_gracefully_on_sigterm_and_keeps_its_data() {
    let dir = TempDir::new().unwrap();
    let database = format!("sqlite://{}", dir.path().join("room.db").display());
    let auth = room_node::Authenticator::new(&secrecy::SecretString::from(
        "binary-test-secret-of-at-least-32-bytes",
    ))
    .unwrap();
    let token = |user: &str, admin: bool| {
        auth.mint(&UserId::new(user).unwrap(), admin, Duration::from_secs(600))
            .unwrap()
    };
    let http = reqwest::Client::new();

    let (child, base) = spawn_binary(&database).await;
    let credit = http
        .post(format!("{base}/v1/admin/wallets/alice/credit"))
        .bearer_auth(token("ops", true))
        .json(&json!({"op_id": "c1", "amount": 100}))
        .send()
        .await
        .unwrap();
    assert_eq!(credit.status(), StatusCode::OK);
    let room: Value = http
        .post(format!("{base}/v1/rooms"))
        .bearer_auth(token("alice", false))
        .json(&json!({"name": "Kept"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let room_id = room["room_id"].as_str().unwrap().to_owned();
    let status = terminate(child).await;
    assert!(status.success(), "exit status {status}");

    // A second run on the same file finds the balance and the room.
    let (child, base) = spawn_binary(&database).await;
    let wallet: Value = http
        .get(format!("{base}/v1/me/wallet"))
        .bearer_auth(token("alice", false))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(wallet["balance"], 100);
    let room: Value = http
        .get(format!("{base}/v1/rooms/{room_id}"))
        .bearer_auth(token("bob", false))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(room["name"], "Kept");
    assert_eq!(room["owner"], "alice");
    let status = terminate(child).await;
    assert!(status.success(), "exit status {status}");
}

/// A client that stops sending in the middle of its body is told so with a 408 once half the
/// request timeout has passed, not with the timeout's retryable 503.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_stops_arriving_is_a_408() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let server = Server::start_with(|settings| settings.http.request_timeout_secs = 2).await;
    let token = server.token("alice", false);
    let address = server.base.trim_start_matches("http://").to_owned();
    let mut socket = tokio::net::TcpStream::connect(&address).await.unwrap();
    let head = format!(
        "POST /v1/rooms HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: 100\r\nConnection: close\r\n\r\n"
    );
    socket.write_all(head.as_bytes()).await.unwrap();
    socket.write_all(b"{\"name\":").await.unwrap();
    let mut answer = String::new();
    tokio::time::timeout(DEADLINE, socket.read_to_string(&mut answer))
        .await
        .expect("an answer within the deadline")
        .unwrap();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("\"code\":\"BODY_TIMEOUT\""), "{answer}");
    assert!(answer.contains("\"retryable\":false"), "{answer}");
    server.stop.cancel();
    tokio::time::timeout(DEADLINE, server.serving)
        .await
        .expect("the server did not stop")
        .unwrap()
        .unwrap();
}

const INTERNAL_TOKEN: &str = "the-internal-token-of-the-socket-tests";

/// A server with the internal routes on.
async fn internal_server() -> Server {
    Server::start_with(|settings| {
        settings.cluster.internal_token = Some(secrecy::SecretString::from(INTERNAL_TOKEN));
    })
    .await
}

/// Asks `base` for an internal link as `token` would, with `Upgrade: protocol`: the status
/// line of the answer and the connection.
async fn upgrade(base: &str, token: &str, protocol: &str) -> (String, tokio::net::TcpStream) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let address = base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let request = format!(
        "GET {} HTTP/1.1\r\nhost: {address}\r\nauthorization: Bearer {token}\r\n\
         connection: upgrade\r\nupgrade: {protocol}\r\n\r\n",
        room_node::LINK_PATH
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let mut byte = [0];
        assert_eq!(stream.read(&mut byte).await.unwrap(), 1, "{head:?}");
        head.push(byte[0]);
    }
    let status = String::from_utf8_lossy(&head)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned();
    (status, stream)
}

/// A link frame: length, id, JSON.
fn link_frame(id: u64, item: &Value) -> Vec<u8> {
    let json = serde_json::to_vec(item).unwrap();
    let mut frame = ((json.len() + 8) as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(&id.to_be_bytes());
    frame.extend_from_slice(&json);
    frame
}

/// The next frame of a link, or `None` when the owner closed it.
async fn read_link_frame(stream: &mut tokio::net::TcpStream) -> Option<(u64, Value)> {
    use tokio::io::AsyncReadExt;
    let mut header = [0; 12];
    stream.read_exact(&mut header).await.ok()?;
    let length = u32::from_be_bytes(header[..4].try_into().unwrap()) as usize;
    let id = u64::from_be_bytes(header[4..].try_into().unwrap());
    let mut payload = vec![0; length - 8];
    stream.read_exact(&mut payload).await.unwrap();
    Some((id, serde_json::from_slice(&payload).unwrap()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_internal_link_needs_the_token_and_answers_each_request_under_its_number() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = internal_server().await;
    let (status, room) = server
        .post("/v1/rooms", "alice", json!({"name": "Linked"}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{room}");
    let room_id = room["room_id"].as_str().unwrap().to_owned();
    let (status, _) = server
        .post(&format!("/v1/rooms/{room_id}/join"), "alice", json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);

    // Only the internal token opens a link, and only for the link protocol.
    let alice = server.token("alice", false);
    for (token, protocol, wanted) in [
        (alice.as_str(), room_node::LINK_PROTOCOL, "401"),
        ("not-the-internal-token", room_node::LINK_PROTOCOL, "401"),
        (INTERNAL_TOKEN, "websocket", "426"),
    ] {
        let (status, _) = upgrade(&server.base, token, protocol).await;
        assert!(status.contains(wanted), "{token} {protocol}: {status}");
    }

    let (status, mut link) = upgrade(&server.base, INTERNAL_TOKEN, room_node::LINK_PROTOCOL).await;
    assert!(status.starts_with("HTTP/1.1 101"), "{status}");
    let membership = |room: &str, user: &str| json!({"membership": {"room_id": room, "user": user, "kind": "newest"}});
    let requests = [
        (11, membership(&room_id, "alice")),
        (12, membership(&room_id, "bob")),
        (13, membership("r-never-created", "alice")),
        (14, membership(&room_id, "bad/user")),
    ];
    let bytes: Vec<u8> = requests
        .iter()
        .flat_map(|(id, item)| link_frame(*id, item))
        .collect();
    link.write_all(&bytes).await.unwrap();
    let mut answers = std::collections::BTreeMap::new();
    for _ in 0..requests.len() {
        let (id, answer) = read_link_frame(&mut link).await.expect("an answer");
        answers.insert(id, answer);
    }
    assert_eq!(
        answers[&11]["membership"]["ok"]["member"], true,
        "{answers:?}"
    );
    assert_eq!(
        answers[&12]["membership"]["ok"]["member"], false,
        "{answers:?}"
    );
    assert_eq!(
        answers[&13]["membership"]["err"]["rejection"]["code"], "ROOM_NOT_FOUND",
        "{answers:?}"
    );
    assert!(answers[&14]["membership"]["err"].is_object(), "{answers:?}");

    // A frame over the limit ends the link.
    link.write_all(&((room_node::MAX_FRAME + 1) as u32).to_be_bytes())
        .await
        .unwrap();
    let mut rest = Vec::new();
    let _ = link.read_to_end(&mut rest).await;
    assert!(rest.is_empty(), "nothing more is answered: {rest:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_serves_at_most_max_links_links() {
    let server = internal_server().await;
    let mut links = Vec::new();
    for _ in 0..room_node::MAX_LINKS {
        let (status, link) = upgrade(&server.base, INTERNAL_TOKEN, room_node::LINK_PROTOCOL).await;
        assert!(status.starts_with("HTTP/1.1 101"), "{status}");
        links.push(link);
    }
    let (status, _) = upgrade(&server.base, INTERNAL_TOKEN, room_node::LINK_PROTOCOL).await;
    assert!(status.contains("503"), "{status}");
    // A link that closes makes room for another.
    drop(links.pop());
    eventually("a closed link frees its place", || async {
        let (status, _) = upgrade(&server.base, INTERNAL_TOKEN, room_node::LINK_PROTOCOL).await;
        status.starts_with("HTTP/1.1 101")
    })
    .await;
}
