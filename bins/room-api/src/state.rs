//! [`AppState`]: what every handler can reach.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::FromRef;
use metrics_exporter_prometheus::PrometheusHandle;
use room_app::{BroadcastMessenger, RoomService};
use room_domain::{Rejection, RoomId};
use secrecy::SecretString;
use tokio_util::sync::CancellationToken;

use crate::auth::AuthenticatorRef;
use crate::error::{ApiError, ApiResult};
use crate::extract::parse_id;

/// Shared state of the handlers. Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    /// The use cases.
    pub service: Arc<RoomService>,
    /// Token checks.
    pub auth: AuthenticatorRef,
    /// The display events the runtime publishes, for the SSE stream. The same instance the
    /// runtime was given.
    pub messenger: Arc<BroadcastMessenger>,
    /// The TRTC callback key; `None` refuses every callback.
    pub rtc_key: Option<Arc<SecretString>>,
    /// The expected `SdkAppId` of TRTC callbacks, if checked.
    pub rtc_sdk_app_id: Option<u64>,
    /// The Prometheus registry's renderer.
    pub metrics: PrometheusHandle,
    /// Whether the service takes traffic (start-up recovery done, not shutting down).
    pub ready: Arc<AtomicBool>,
    /// Cancelled when the service begins to stop: SSE streams end.
    pub shutdown: CancellationToken,
    /// Keep-alive period of SSE streams.
    pub sse_keep_alive: Duration,
    /// Rooms known to exist.
    pub known_rooms: Arc<KnownRooms>,
}

impl FromRef<AppState> for AuthenticatorRef {
    fn from_ref(state: &AppState) -> Self {
        state.auth.clone()
    }
}

impl AppState {
    /// Whether the service is ready for traffic.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// Validates a room id from a path and checks that the room exists (open or closed).
    ///
    /// An unknown room is answered 404 here, before a request reaches the runtime: activating
    /// a cell for a made-up id would write an ownership row for it.
    pub async fn existing_room(&self, raw: &str) -> ApiResult<RoomId> {
        let room_id: RoomId = parse_id("room_id", raw)?;
        if self.known_rooms.contains(&room_id) {
            return Ok(room_id);
        }
        let summary = self
            .service
            .ports()
            .directory
            .get_summary(&room_id)
            .await
            .map_err(ApiError::from)?;
        if summary.is_none() {
            return Err(Rejection::RoomNotFound.into());
        }
        self.known_rooms.insert(room_id.clone());
        Ok(room_id)
    }
}

/// A bounded set of room ids known to exist, sparing a directory read per request. Rooms are
/// never deleted (a closed room still exists), so an entry never goes stale; when the set is
/// full it starts over.
#[derive(Debug)]
pub struct KnownRooms {
    rooms: Mutex<HashSet<RoomId>>,
    capacity: usize,
}

impl KnownRooms {
    /// A set holding at most `capacity` ids.
    pub fn new(capacity: usize) -> Self {
        KnownRooms {
            rooms: Mutex::new(HashSet::new()),
            capacity,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<RoomId>> {
        self.rooms.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether the room is known.
    pub fn contains(&self, room_id: &RoomId) -> bool {
        self.lock().contains(room_id)
    }

    /// Remembers a room.
    pub fn insert(&self, room_id: RoomId) {
        let mut rooms = self.lock();
        if rooms.len() >= self.capacity {
            rooms.clear();
        }
        rooms.insert(room_id);
    }
}
