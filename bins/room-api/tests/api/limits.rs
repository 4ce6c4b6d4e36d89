//! Resource bounds of the HTTP layer: metric label sets, event stream channels and caps,
//! per-user rate limits.

use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Request, Response, StatusCode, header};
use room_node::{App, Settings};
use serde_json::json;
use tempfile::TempDir;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::support::{TestApp, error_code, parse, settings};

/// How long a test waits for the server to do what it must.
const DEADLINE: Duration = Duration::from_secs(20);

/// The standard methods and `OTHER`: the only values the `method` label may take.
const METHOD_LABELS: [&str; 10] = [
    "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "CONNECT", "TRACE", "OTHER",
];

/// Every `method="..."` label value in a Prometheus text exposition.
fn method_labels(text: &str) -> Vec<String> {
    text.split("method=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn odd_methods_add_no_metric_series() {
    let app = TestApp::new().await;
    for i in 0..200 {
        let method =
            Method::from_bytes(format!("ODDMETHOD{i}{}", "X".repeat(500)).as_bytes()).unwrap();
        let path = if i % 2 == 0 { "/healthz" } else { "/v1/rooms" };
        let request = Request::builder()
            .method(method)
            .uri(path)
            .body(Body::empty())
            .unwrap();
        let (status, _, _) = app.send(request).await;
        assert!(status.is_client_error(), "{status}");
    }
    let request = Request::builder()
        .uri("/metrics")
        .body(Body::empty())
        .unwrap();
    let (status, _, body) = app.send(request).await;
    assert_eq!(status, StatusCode::OK);
    let text = String::from_utf8(body.to_vec()).unwrap();
    assert!(
        !text.contains("ODDMETHOD"),
        "a client's method became a label"
    );
    let labels = method_labels(&text);
    assert!(labels.iter().any(|label| label == "OTHER"), "{labels:?}");
    for label in labels {
        assert!(METHOD_LABELS.contains(&label.as_str()), "{label}");
    }
}

/// Opens `user`'s event stream of `room_id` through the router; the response holds the stream
/// until dropped.
async fn open_stream(app: &TestApp, room_id: &str, user: &str) -> Response<Body> {
    let request = Request::builder()
        .uri(format!("/v1/rooms/{room_id}/events"))
        .header(header::AUTHORIZATION, format!("Bearer {}", app.token(user)))
        .body(Body::empty())
        .unwrap();
    app.app.router().oneshot(request).await.unwrap()
}

async fn error_of(response: Response<Body>) -> (StatusCode, String, bool) {
    let status = response.status();
    let body = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .unwrap();
    let body = parse(&body);
    let code = error_code(&body).to_owned();
    (status, code, body["error"]["retryable"].as_bool().unwrap())
}

#[tokio::test]
async fn refused_event_streams_leave_no_channel_behind() {
    let app = TestApp::new().await;
    let room_id = app.room_with_members(0).await;
    let messenger = app.app.messenger().clone();
    for _ in 0..20 {
        let response = open_stream(&app, &room_id, "mallory").await;
        let (status, code, _) = error_of(response).await;
        assert_eq!(
            (status, code.as_str()),
            (StatusCode::UNPROCESSABLE_ENTITY, "NOT_A_MEMBER")
        );
    }
    assert_eq!(messenger.channel_count(), 0);

    let stream = open_stream(&app, &room_id, "bob").await;
    assert_eq!(stream.status(), StatusCode::OK);
    let other = open_stream(&app, &room_id, "alice").await;
    assert_eq!(other.status(), StatusCode::OK);
    assert_eq!(messenger.channel_count(), 1);
    drop(stream);
    assert_eq!(messenger.channel_count(), 1);
    drop(other);
    assert_eq!(
        messenger.channel_count(),
        0,
        "a closed stream kept its room's channel"
    );
}

#[tokio::test]
async fn a_user_holds_at_most_the_configured_streams() {
    let app = TestApp::with(|settings| settings.sse.max_streams_per_user = 3).await;
    let room_id = app.room_with_members(0).await;
    let mut streams = Vec::new();
    for _ in 0..3 {
        let stream = open_stream(&app, &room_id, "bob").await;
        assert_eq!(stream.status(), StatusCode::OK);
        streams.push(stream);
    }
    let refused = open_stream(&app, &room_id, "bob").await;
    assert_eq!(refused.headers()[header::RETRY_AFTER], "1");
    assert_eq!(
        error_of(refused).await,
        (
            StatusCode::TOO_MANY_REQUESTS,
            "TOO_MANY_STREAMS".to_owned(),
            true
        )
    );
    // Another user is not affected.
    let alice = open_stream(&app, &room_id, "alice").await;
    assert_eq!(alice.status(), StatusCode::OK);
    // A stream that ends frees its slot.
    streams.pop();
    let again = open_stream(&app, &room_id, "bob").await;
    assert_eq!(again.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_user_over_a_class_budget_is_told_when_to_retry() {
    let app = TestApp::with(|settings| {
        // One token a minute: nothing refills while the test runs.
        settings.limits.join_per_minute = 1;
        settings.limits.join_burst = 3;
    })
    .await;
    let room_id = app.create_room("alice").await;
    let join = |user: &'static str| {
        let (app, room_id) = (&app, room_id.clone());
        async move {
            let request = Request::builder()
                .method(Method::POST)
                .uri(format!("/v1/rooms/{room_id}/join"))
                .header(header::AUTHORIZATION, format!("Bearer {}", app.token(user)))
                .body(Body::empty())
                .unwrap();
            app.app.router().oneshot(request).await.unwrap()
        }
    };
    for _ in 0..3 {
        let response = join("bob").await;
        assert_ne!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    }
    let refused = join("bob").await;
    let retry_after: u64 = refused.headers()[header::RETRY_AFTER]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry_after), "{retry_after}");
    assert_eq!(
        error_of(refused).await,
        (
            StatusCode::TOO_MANY_REQUESTS,
            "RATE_LIMITED".to_owned(),
            true
        )
    );
    // Another user, and another class of the same user, have budgets of their own.
    assert_eq!(join("carol").await.status(), StatusCode::OK);
    let (status, body) = app
        .post("/v1/rooms", &app.token("bob"), json!({"name": "Mine"}))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

/// A server on a real socket with `change`d settings; the test talks raw HTTP/1.1 to it.
struct RawServer {
    address: String,
    stop: CancellationToken,
    serving: JoinHandle<anyhow::Result<()>>,
    _dir: TempDir,
}

impl RawServer {
    async fn start(change: impl FnOnce(&mut Settings)) -> RawServer {
        let dir = TempDir::new().unwrap();
        let mut settings = settings(&dir);
        change(&mut settings);
        let app = App::build(settings).await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap().to_string();
        let stop = CancellationToken::new();
        let signal = stop.clone();
        let serving = tokio::spawn(app.serve(listener, async move { signal.cancelled().await }));
        RawServer {
            address,
            stop,
            serving,
            _dir: dir,
        }
    }

    async fn connect(&self) -> TcpStream {
        TcpStream::connect(&self.address).await.unwrap()
    }

    async fn stop(self) {
        self.stop.cancel();
        tokio::time::timeout(DEADLINE, self.serving)
            .await
            .expect("the server did not stop")
            .unwrap()
            .unwrap();
    }
}

/// Sends `GET path` on a keep-alive connection and reads the whole response.
async fn get(socket: &mut TcpStream, path: &str) -> String {
    socket
        .write_all(format!("GET {path} HTTP/1.1\r\nHost: test\r\n\r\n").as_bytes())
        .await
        .unwrap();
    read_response(socket).await
}

/// Reads one response (head and `Content-Length` body).
async fn read_response(socket: &mut TcpStream) -> String {
    let mut seen = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&seen).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|line| {
                    let (name, value) = line.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            if seen.len() >= end + 4 + length {
                return text;
            }
        }
        let read = socket.read(&mut chunk).await.unwrap();
        assert!(read > 0, "the connection closed mid-response: {text}");
        seen.extend_from_slice(&chunk[..read]);
    }
}

/// Waits (up to [`DEADLINE`]) for the server to close `socket`.
async fn closed_by_server(socket: &mut TcpStream) -> bool {
    let mut chunk = [0u8; 256];
    tokio::time::timeout(DEADLINE, async {
        loop {
            match socket.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await
    .is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_that_send_no_whole_head_are_closed() {
    let server = RawServer::start(|settings| {
        settings.http.header_timeout_secs = 1;
        settings.http.idle_timeout_secs = 3600;
    })
    .await;
    let mut silent = server.connect().await;
    let mut partial = server.connect().await;
    partial
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: te")
        .await
        .unwrap();
    assert!(
        closed_by_server(&mut silent).await,
        "a silent connection stayed open"
    );
    assert!(
        closed_by_server(&mut partial).await,
        "a half-sent head stayed open"
    );
    // A prompt client is served as before.
    let mut prompt = server.connect().await;
    assert!(
        get(&mut prompt, "/healthz")
            .await
            .starts_with("HTTP/1.1 200")
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_keep_alive_connection_is_closed() {
    let server = RawServer::start(|settings| {
        settings.http.header_timeout_secs = 3600;
        settings.http.idle_timeout_secs = 1;
    })
    .await;
    let mut socket = server.connect().await;
    assert!(
        get(&mut socket, "/healthz")
            .await
            .starts_with("HTTP/1.1 200")
    );
    assert!(
        closed_by_server(&mut socket).await,
        "an idle connection stayed open"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_cap_wait_for_a_free_slot() {
    let server = RawServer::start(|settings| settings.http.max_connections = 2).await;
    let mut first = server.connect().await;
    assert!(
        get(&mut first, "/healthz")
            .await
            .starts_with("HTTP/1.1 200")
    );
    let mut second = server.connect().await;
    assert!(
        get(&mut second, "/healthz")
            .await
            .starts_with("HTTP/1.1 200")
    );

    // The third waits in the listen queue: no answer while both slots are taken.
    let mut third = server.connect().await;
    third
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
        .await
        .unwrap();
    let mut byte = [0u8; 1];
    let early = tokio::time::timeout(Duration::from_millis(500), third.read(&mut byte)).await;
    assert!(early.is_err(), "a connection over the cap was served");
    // Open connections are still served.
    assert!(
        get(&mut first, "/healthz")
            .await
            .starts_with("HTTP/1.1 200")
    );

    drop(second);
    let answer = tokio::time::timeout(DEADLINE, read_response(&mut third))
        .await
        .expect("the waiting connection was not served once a slot was free");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // (The metrics recorder is shared by every test of this process, so its connection gauge
    // is no evidence here; the answers above are.)
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_closes_idle_connections_and_ends() {
    let server = RawServer::start(|_| {}).await;
    let mut idle = server.connect().await;
    assert!(get(&mut idle, "/healthz").await.starts_with("HTTP/1.1 200"));
    server.stop().await;
    assert!(closed_by_server(&mut idle).await);
}

async fn open_my_stream(app: &TestApp, user: &str) -> Response<Body> {
    let request = Request::builder()
        .uri("/v1/me/events")
        .header(header::AUTHORIZATION, format!("Bearer {}", app.token(user)))
        .body(Body::empty())
        .unwrap();
    app.app.router().oneshot(request).await.unwrap()
}

#[tokio::test]
async fn a_users_own_streams_count_against_the_same_cap_and_hold_nothing_once_closed() {
    let app = TestApp::with(|settings| settings.sse.max_streams_per_user = 2).await;
    let room_id = app.room_with_members(0).await;
    let messenger = app.app.messenger().clone();
    let room_stream = open_stream(&app, &room_id, "bob").await;
    assert_eq!(room_stream.status(), StatusCode::OK);
    let own = open_my_stream(&app, "bob").await;
    assert_eq!(own.status(), StatusCode::OK);
    assert_eq!(messenger.user_channel_count(), 1);
    let refused = open_my_stream(&app, "bob").await;
    assert_eq!(
        error_of(refused).await,
        (
            StatusCode::TOO_MANY_REQUESTS,
            "TOO_MANY_STREAMS".to_owned(),
            true
        )
    );
    // A refused stream held no channel, and a closed one leaves none behind.
    assert_eq!(messenger.user_channel_count(), 1);
    drop(own);
    assert_eq!(messenger.user_channel_count(), 0);
    let again = open_my_stream(&app, "bob").await;
    assert_eq!(again.status(), StatusCode::OK);
}
