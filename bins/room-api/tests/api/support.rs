//! A service on a fresh SQLite file, tokens, and request helpers.

use std::path::PathBuf;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, Request, StatusCode, header};
use room_app::ports::ClockRef;
use room_domain::UserId;
use room_node::{App, Role, Settings, Storage};
use secrecy::SecretString;
use serde_json::{Value, json};
use tempfile::TempDir;
use tower::ServiceExt;

pub use room_app::testkit::eventually;

pub const RTC_KEY: &str = "rtc-test-key";

/// Settings for a test service: a fresh SQLite file in `dir`, known secrets, the built-in
/// catalog.
pub fn settings(dir: &TempDir) -> Settings {
    let mut settings = Settings::default();
    settings.storage.url = format!("sqlite://{}", dir.path().join("room.db").display());
    settings.auth.jwt_secret = SecretString::from("test-secret-of-at-least-32-bytes!");
    settings.rtc.callback_key = Some(SecretString::from(RTC_KEY));
    settings.catalog.path = PathBuf::from("no-such-dir/gifts.toml");
    settings.http.addr = "127.0.0.1:0".parse().unwrap();
    settings
}

/// A started service on its own SQLite file, driven through its router.
pub struct TestApp {
    pub app: App,
    router: Router,
    _dir: TempDir,
}

impl TestApp {
    pub async fn new() -> TestApp {
        Self::with(|_| {}).await
    }

    /// A service whose settings `change` adjusts first.
    pub async fn with(change: impl FnOnce(&mut Settings)) -> TestApp {
        let t = Self::unstarted(change).await;
        t.app.start().await.unwrap();
        t
    }

    /// Like [`TestApp::with`], but not started yet: the test calls `app.start()` once it has
    /// prepared what the service should find.
    pub async fn unstarted(change: impl FnOnce(&mut Settings)) -> TestApp {
        let dir = TempDir::new().unwrap();
        let mut settings = settings(&dir);
        change(&mut settings);
        let app = App::build(settings).await.unwrap();
        let router = app.router();
        TestApp {
            app,
            router,
            _dir: dir,
        }
    }

    /// Like [`TestApp::with`], with the service's time from `clock`.
    pub async fn with_clock(change: impl FnOnce(&mut Settings), clock: ClockRef) -> TestApp {
        let dir = TempDir::new().unwrap();
        let mut settings = settings(&dir);
        change(&mut settings);
        let storage = Storage::open(&settings.storage).await.unwrap();
        let app = App::build_with_clock(settings, storage, Role::Api, clock)
            .await
            .unwrap();
        app.start().await.unwrap();
        let router = app.router();
        TestApp {
            app,
            router,
            _dir: dir,
        }
    }

    /// Ranks the room lists now, as the refresher does every `lists.refresh_ms`.
    pub async fn refresh_lists(&self) {
        self.app.lists().refresh().await.expect("lists ranked");
    }

    pub fn token(&self, user: &str) -> String {
        self.app
            .authenticator()
            .mint(&UserId::new(user).unwrap(), false, Duration::from_secs(600))
            .unwrap()
    }

    pub fn admin_token(&self) -> String {
        self.app
            .authenticator()
            .mint(
                &UserId::new("platform-admin").unwrap(),
                true,
                Duration::from_secs(600),
            )
            .unwrap()
    }

    /// Sends a request through the router.
    pub async fn send(&self, request: Request<Body>) -> (StatusCode, HeaderMap, Bytes) {
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let body = axum::body::to_bytes(response.into_body(), 16 * 1024 * 1024)
            .await
            .unwrap();
        (status, headers, body)
    }

    /// A JSON request; answers the status and the JSON body (`Null` when empty).
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut request = Request::builder().method(method).uri(path);
        if let Some(token) = token {
            request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let request = match body {
            Some(body) => request
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(body.to_string())),
            None => request.body(Body::empty()),
        }
        .unwrap();
        let (status, _, body) = self.send(request).await;
        (status, parse(&body))
    }

    pub async fn get(&self, path: &str, token: &str) -> (StatusCode, Value) {
        self.call(Method::GET, path, Some(token), None).await
    }

    pub async fn post(&self, path: &str, token: &str, body: Value) -> (StatusCode, Value) {
        self.call(Method::POST, path, Some(token), Some(body)).await
    }

    /// Credits `amount` coins to `user`.
    pub async fn credit(&self, user: &str, amount: i64) {
        let op_id = format!("test-credit-{user}-{amount}");
        let (status, body) = self
            .post(
                &format!("/v1/admin/wallets/{user}/credit"),
                &self.admin_token(),
                json!({ "op_id": op_id, "amount": amount }),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }

    pub async fn balance(&self, user: &str) -> i64 {
        let (status, body) = self.get("/v1/me/wallet", &self.token(user)).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body["balance"].as_i64().unwrap()
    }

    /// Creates a room owned by `owner` and returns its id.
    pub async fn create_room(&self, owner: &str) -> String {
        let (status, body) = self
            .post(
                "/v1/rooms",
                &self.token(owner),
                json!({ "name": "Night talk" }),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        body["room_id"].as_str().unwrap().to_owned()
    }

    pub async fn join(&self, room_id: &str, user: &str) {
        let (status, body) = self
            .call(
                Method::POST,
                &format!("/v1/rooms/{room_id}/join"),
                Some(&self.token(user)),
                None,
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }

    /// `user` does `action` (`take`, `leave`) on `seat`; must succeed. Answers the room.
    pub async fn seat(&self, room_id: &str, user: &str, seat: u8, action: &str) -> Value {
        let (status, room) = self
            .post(
                &format!("/v1/rooms/{room_id}/seats/{seat}/{action}"),
                &self.token(user),
                json!({}),
            )
            .await;
        assert_eq!(
            status,
            StatusCode::OK,
            "{user} {action} seat {seat}: {room}"
        );
        room
    }

    pub async fn room(&self, room_id: &str) -> Value {
        let (status, body) = self
            .get(&format!("/v1/rooms/{room_id}"), &self.token("reader"))
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        body
    }

    /// A room with owner `alice` and members `alice` and `bob`; alice has `coins`.
    /// `GET /v1/rooms/{room_id}/contribution-rank{query}` as `user`, once `ready` holds of
    /// the answer: the rank is the room's board of senders, which trails the gifts by the
    /// board consumer's lag.
    pub async fn rank_when(
        &self,
        room_id: &str,
        query: &str,
        user: &str,
        ready: impl Fn(&Value) -> bool,
    ) -> Value {
        let path = format!("/v1/rooms/{room_id}/contribution-rank{query}");
        let token = self.token(user);
        eventually("the contribution rank shows the gifts", || async {
            let (status, rank) = self.get(&path, &token).await;
            status == StatusCode::OK && ready(&rank)
        })
        .await;
        self.get(&path, &token).await.1
    }

    pub async fn room_with_members(&self, coins: i64) -> String {
        let room_id = self.create_room("alice").await;
        self.join(&room_id, "alice").await;
        self.join(&room_id, "bob").await;
        if coins > 0 {
            self.credit("alice", coins).await;
        }
        room_id
    }

    pub async fn gift(
        &self,
        room_id: &str,
        sender: &str,
        order_id: &str,
        gift_id: &str,
        count: i64,
        recipients: &[&str],
    ) -> (StatusCode, Value) {
        self.post(
            &format!("/v1/rooms/{room_id}/gifts"),
            &self.token(sender),
            json!({
                "order_id": order_id,
                "gift_id": gift_id,
                "count": count,
                "recipients": recipients,
            }),
        )
        .await
    }
}

pub fn parse(body: &[u8]) -> Value {
    if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(body)
            .unwrap_or_else(|_| panic!("not JSON: {}", String::from_utf8_lossy(body)))
    }
}

/// Asserts the error shape and returns the code.
pub fn error_code(body: &Value) -> &str {
    let error = &body["error"];
    assert!(error["message"].is_string(), "no message in {body}");
    assert!(error["retryable"].is_boolean(), "no retryable in {body}");
    error["code"]
        .as_str()
        .unwrap_or_else(|| panic!("no code in {body}"))
}

/// Reads an SSE stream until `needle` shows up (20 s at most), appending what it read to
/// `seen`.
pub async fn read_until(response: &mut reqwest::Response, seen: &mut String, needle: &str) {
    tokio::time::timeout(Duration::from_secs(20), async {
        while !seen.contains(needle) {
            let chunk = response
                .chunk()
                .await
                .unwrap()
                .expect("the stream ended early");
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no {needle:?} in the stream: {seen}"));
}
