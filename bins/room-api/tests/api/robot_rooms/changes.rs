//! A change of a robot room: stored before the room shows it, so one that loses a race to
//! another change changes no room; a closed room takes no profile; versions start at 1.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use room_app::ports::{RobotRoomConfig, RobotRooms, RobotRoomsRef};
use room_domain::{RoomId, UserId};
use room_node::{App, Storage};
use serde_json::{Value, json};
use tempfile::TempDir;
use tower::ServiceExt;

use super::fixtures::{PATH, config, create, patch};
use crate::support::{TestApp, error_code, parse, settings};

/// Robot room storage where another change lands between a change's read and its write,
/// once armed.
struct Racing {
    inner: RobotRoomsRef,
    armed: AtomicBool,
}

type Answer<'a, T> = Pin<Box<dyn Future<Output = room_app::Result<T>> + Send + 'a>>;

// By hand rather than with `async_trait`, which this crate does not depend on: the same
// signatures the macro gives the trait.
impl RobotRooms for Racing {
    fn create<'s, 'c, 'a>(&'s self, config: &'c RobotRoomConfig) -> Answer<'a, ()>
    where
        's: 'a,
        'c: 'a,
        Self: 'a,
    {
        self.inner.create(config)
    }

    fn get<'s, 'r, 'a>(&'s self, room_id: &'r RoomId) -> Answer<'a, Option<RobotRoomConfig>>
    where
        's: 'a,
        'r: 'a,
        Self: 'a,
    {
        self.inner.get(room_id)
    }

    fn list<'s, 'a>(&'s self, after: Option<RoomId>, limit: u32) -> Answer<'a, Vec<RobotRoomConfig>>
    where
        's: 'a,
        Self: 'a,
    {
        self.inner.list(after, limit)
    }

    fn list_by_robots<'s, 'r, 'a>(
        &'s self,
        robots: &'r [UserId],
    ) -> Answer<'a, Vec<(UserId, RoomId)>>
    where
        's: 'a,
        'r: 'a,
        Self: 'a,
    {
        self.inner.list_by_robots(robots)
    }

    fn update<'s, 'c, 'a>(&'s self, config: &'c RobotRoomConfig, expected: u64) -> Answer<'a, ()>
    where
        's: 'a,
        'c: 'a,
        Self: 'a,
    {
        Box::pin(async move {
            if self.armed.swap(false, Ordering::SeqCst) {
                let mut other = self.inner.get(&config.room_id).await?.unwrap();
                other.gift_rate_per_minute += 1;
                other.version += 1;
                self.inner.update(&other, other.version - 1).await?;
            }
            self.inner.update(config, expected).await
        })
    }

    fn delete<'s, 'r, 'a>(&'s self, room_id: &'r RoomId) -> Answer<'a, bool>
    where
        's: 'a,
        'r: 'a,
        Self: 'a,
    {
        self.inner.delete(room_id)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_that_loses_a_race_changes_no_room() {
    let dir = TempDir::new().unwrap();
    let settings = settings(&dir);
    let mut storage = Storage::open(&settings.storage).await.unwrap();
    let racing = Arc::new(Racing {
        inner: storage.robots.clone(),
        armed: AtomicBool::new(false),
    });
    storage.robots = racing.clone();
    let app = App::build_with_storage(settings, storage).await.unwrap();
    app.start().await.unwrap();
    let admin = app
        .authenticator()
        .mint(
            &UserId::new("platform-admin").unwrap(),
            true,
            Duration::from_secs(600),
        )
        .unwrap();
    let call = |method: Method, path: String, body: Option<Value>| {
        let mut request = Request::builder()
            .method(method)
            .uri(path)
            .header(header::AUTHORIZATION, format!("Bearer {admin}"));
        if body.is_some() {
            request = request.header(header::CONTENT_TYPE, "application/json");
        }
        let request = request
            .body(body.map_or_else(Body::empty, |body| Body::from(body.to_string())))
            .unwrap();
        let router = app.router();
        async move {
            let response = router.oneshot(request).await.unwrap();
            let status = response.status();
            let body = axum::body::to_bytes(response.into_body(), 1 << 20)
                .await
                .unwrap();
            (status, parse(&body))
        }
    };
    let (status, created) = call(Method::POST, PATH.into(), Some(config())).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let room_id = created["room_id"].as_str().unwrap().to_owned();

    racing.armed.store(true, Ordering::SeqCst);
    let (status, answer) = call(
        Method::PATCH,
        format!("{PATH}/{room_id}"),
        Some(json!({"profile": {"name": "Early birds", "notice": "Mornings"}})),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{answer}");
    assert_eq!(error_code(&answer), "ROBOT_ROOM_CHANGED");
    let (status, room) = call(Method::GET, format!("/v1/rooms/{room_id}"), None).await;
    assert_eq!(status, StatusCode::OK, "{room}");
    assert_eq!(room["name"], "Night owls", "the room keeps its profile");
    assert_eq!(room["notice"], "Music all night");
    let (_, got) = call(Method::GET, format!("{PATH}/{room_id}"), None).await;
    assert_eq!(got["version"], 2, "only the other change is stored");
    assert_eq!(got["profile"]["name"], "Night owls");

    // Unraced, the change is stored and shown, and its repeat (on a stale version) converges.
    for _ in 0..2 {
        let (status, patched) = call(
            Method::PATCH,
            format!("{PATH}/{room_id}"),
            Some(json!({"profile": {"name": "Early birds"}, "version": 2})),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{patched}");
        assert_eq!(patched["version"], 3);
    }
    let (_, room) = call(Method::GET, format!("/v1/rooms/{room_id}"), None).await;
    assert_eq!(room["name"], "Early birds");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_room_takes_no_profile_and_version_starts_at_1() {
    let t = TestApp::new().await;
    let admin = t.admin_token();
    let (_, created) = create(&t, config()).await;
    let room_id = created["room_id"].as_str().unwrap().to_owned();

    let (status, answer) = patch(&t, &room_id, json!({"enabled": false, "version": 0})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert_eq!(error_code(&answer), "INVALID_ROBOT_ROOM");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("version")
    );

    let (status, body) = t
        .post(&format!("/v1/rooms/{room_id}/close"), &admin, json!({}))
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    let (status, answer) = patch(&t, &room_id, json!({"profile": {"name": "Early birds"}})).await;
    assert_eq!(
        status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "the status the room gives: {answer}"
    );
    assert_eq!(error_code(&answer), "ROOM_CLOSED");
    let (_, got) = t.get(&format!("{PATH}/{room_id}"), &admin).await;
    assert_eq!(got["version"], 1, "nothing was stored");
    assert_eq!(got["profile"]["name"], "Night owls");
    // What the room does not show can still change.
    let (status, patched) = patch(&t, &room_id, json!({"enabled": false})).await;
    assert_eq!(status, StatusCode::OK, "{patched}");
}
