//! Per-user bounds of the API: token buckets per class of request ([`RateLimits`]) and the cap
//! on the event streams one user holds open ([`StreamSlots`]).
//!
//! Both are keyed by the user of the bearer token. Their memory is bounded: the buckets track
//! at most `limits.max_users` users per class and forget users whose bucket is full again
//! (a background pass calls [`RateLimits::prune`]); while a class's table is full, users it
//! does not track yet pass unlimited until the next prune (counted in
//! `http_rate_limit_table_full_total`), so a crowd of users can neither grow the table nor
//! lock everyone else out. The stream slots hold one entry per user with an open stream, and
//! open streams are bounded by the connection cap.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{FromRef, FromRequestParts, MatchedPath, Request, State};
use axum::http::{HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::clock::{Clock, DefaultClock};
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};
use room_domain::UserId;

use room_app::ports::{ClockRef, OpenStreamsRef, RateBudgetsRef};

use crate::auth::{Auth, AuthenticatorRef};
use crate::config::LimitSettings;
use crate::error::{ApiCode, ApiError};

/// A class of requests with a budget of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteClass {
    /// `POST /v1/rooms`.
    CreateRoom,
    /// `POST /v1/rooms/{room_id}/join`.
    Join,
    /// `POST /v1/rooms/{room_id}/gifts`.
    Gift,
    /// `GET /v1/rooms/{room_id}/events` and `GET /v1/me/events`.
    Stream,
    /// Any other `POST`, `PUT`, `PATCH` or `DELETE` (heartbeats excepted).
    Write,
}

impl RouteClass {
    const ALL: [RouteClass; 5] = [
        RouteClass::CreateRoom,
        RouteClass::Join,
        RouteClass::Gift,
        RouteClass::Stream,
        RouteClass::Write,
    ];

    /// The class of a request to the route template `route`; `None` for reads and heartbeats,
    /// which are not limited.
    pub fn of(method: &Method, route: &str) -> Option<RouteClass> {
        match (method.as_str(), route) {
            ("POST", "/v1/rooms") => Some(RouteClass::CreateRoom),
            ("POST", "/v1/rooms/{room_id}/join") => Some(RouteClass::Join),
            ("POST", "/v1/rooms/{room_id}/gifts") => Some(RouteClass::Gift),
            ("GET", "/v1/rooms/{room_id}/events" | "/v1/me/events") => Some(RouteClass::Stream),
            // A heartbeat reads the room and refreshes an entry in memory: it costs what a
            // read costs and, like reads, is not limited.
            ("POST", "/v1/rooms/{room_id}/heartbeat") => None,
            // TRTC's webhook, signed by TRTC: no user sends it, whatever bearer header it has.
            ("POST", "/v1/rtc/callbacks") => None,
            ("POST" | "PUT" | "PATCH" | "DELETE", _) => Some(RouteClass::Write),
            _ => None,
        }
    }

    /// The metrics label.
    pub fn label(self) -> &'static str {
        match self {
            RouteClass::CreateRoom => "create_room",
            RouteClass::Join => "join",
            RouteClass::Gift => "gift",
            RouteClass::Stream => "stream",
            RouteClass::Write => "write",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

type UserLimiter = RateLimiter<UserId, DefaultKeyedStateStore<UserId>, DefaultClock>;

/// Token buckets per user and [`RouteClass`]: the cluster's, in Redis, when configured
/// ([`RateLimits::shared`]), else (and whenever Redis does not answer) the node's own.
pub struct RateLimits {
    classes: Vec<UserLimiter>,
    /// Each class's interval between requests and burst, as the shared buckets take them.
    quotas: Vec<(Duration, u32)>,
    shared: Option<RateBudgetsRef>,
    max_users: usize,
    prune_every: Duration,
}

impl std::fmt::Debug for RateLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimits")
            .field("max_users", &self.max_users)
            .field("tracked_users", &self.tracked_users())
            .finish_non_exhaustive()
    }
}

/// Why a request was refused: when the same request may succeed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryAfter(pub Duration);

impl RateLimits {
    /// The buckets of `settings`; `None` when the limits are turned off.
    pub fn new(settings: &LimitSettings) -> Option<RateLimits> {
        if !settings.enabled {
            return None;
        }
        let quota = |per_minute: u32, burst: u32| {
            let period = Duration::from_secs(60) / per_minute.max(1);
            Quota::with_period(period.max(Duration::from_nanos(1)))
                .unwrap_or_else(|| Quota::per_second(NonZeroU32::MIN))
                .allow_burst(NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN))
        };
        let budgets = RouteClass::ALL.map(|class| match class {
            RouteClass::CreateRoom => (settings.create_room_per_minute, settings.create_room_burst),
            RouteClass::Join => (settings.join_per_minute, settings.join_burst),
            RouteClass::Gift => (settings.gift_per_minute, settings.gift_burst),
            RouteClass::Stream => (settings.stream_per_minute, settings.stream_burst),
            RouteClass::Write => (settings.write_per_minute, settings.write_burst),
        });
        let classes = budgets
            .iter()
            .map(|(per_minute, burst)| RateLimiter::keyed(quota(*per_minute, *burst)))
            .collect();
        let quotas = budgets
            .iter()
            .map(|(per_minute, burst)| {
                (
                    (Duration::from_secs(60) / (*per_minute).max(1)).max(Duration::from_millis(1)),
                    (*burst).max(1),
                )
            })
            .collect();
        Some(RateLimits {
            classes,
            quotas,
            shared: None,
            max_users: settings.max_users.max(1),
            prune_every: Duration::from_secs(settings.prune_every_secs.max(1)),
        })
    }

    /// The same limits, counted over the cluster in `budgets` when given (the same defaults
    /// hold for the cluster as for one node).
    pub fn shared(mut self, budgets: Option<RateBudgetsRef>) -> Self {
        self.shared = budgets;
        self
    }

    /// Takes one request from `user`'s budget of `class`, or says how long to wait: from the
    /// cluster's bucket when there is one; when it does not answer, from the node's own, and
    /// counted (`http_rate_limit_fallback_total`): a limiter outage never fails a request.
    pub async fn take(&self, class: RouteClass, user: &UserId) -> Result<(), RetryAfter> {
        let Some(shared) = &self.shared else {
            return self.check(class, user);
        };
        let (interval, burst) = self.quotas[class.index()];
        match shared
            .take(&format!("{}:{user}", class.label()), interval, burst)
            .await
        {
            Ok(None) => Ok(()),
            Ok(Some(wait)) => Err(RetryAfter(wait)),
            Err(error) => {
                metrics::counter!("http_rate_limit_fallback_total", "class" => class.label())
                    .increment(1);
                tracing::debug!(%error, "the shared rate limits did not answer; the node's own apply");
                self.check(class, user)
            }
        }
    }

    /// Takes one token from `user`'s bucket of `class` on this node, or says how long to wait.
    pub fn check(&self, class: RouteClass, user: &UserId) -> Result<(), RetryAfter> {
        let limiter = &self.classes[class.index()];
        // A full table takes no one new until the next prune forgets the quiet users, so its
        // memory stays bounded whatever the number of users. Refusing instead would let many
        // users lock everyone out of the class; the store cannot tell a known user from a new
        // one without inserting it, so while full every request of the class passes.
        if limiter.len() >= self.max_users {
            metrics::counter!("http_rate_limit_table_full_total", "class" => class.label())
                .increment(1);
            return Ok(());
        }
        limiter
            .check_key(user)
            .map_err(|not_until| RetryAfter(not_until.wait_time_from(limiter.clock().now())))
    }

    /// Forgets users whose buckets are full again (they are as good as new).
    pub fn prune(&self) {
        for limiter in &self.classes {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
    }

    /// Users tracked, over all classes.
    pub fn tracked_users(&self) -> usize {
        self.classes.iter().map(UserLimiter::len).sum()
    }

    /// How often [`RateLimits::prune`] should run.
    pub fn prune_every(&self) -> Duration {
        self.prune_every
    }
}

/// What the [`rate_limit`] middleware needs: the buckets, and the token authority that tells
/// whose request it is.
#[derive(Clone)]
pub struct RateLimitState {
    /// The buckets.
    pub limits: Arc<RateLimits>,
    /// Token checks, to name the user of a request.
    pub auth: AuthenticatorRef,
}

impl FromRef<RateLimitState> for AuthenticatorRef {
    fn from_ref(state: &RateLimitState) -> Self {
        state.auth.clone()
    }
}

/// The middleware: a request of a limited class, with a valid bearer token, takes a token from
/// its user's bucket or is answered 429 `RATE_LIMITED` with `Retry-After`. Requests without a
/// valid token pass (their handler refuses them).
pub async fn rate_limit(
    State(state): State<RateLimitState>,
    request: Request,
    next: Next,
) -> Response {
    let class = request
        .extensions()
        .get::<MatchedPath>()
        .and_then(|route| RouteClass::of(request.method(), route.as_str()));
    let Some(class) = class else {
        return next.run(request).await;
    };
    let (mut parts, body) = request.into_parts();
    let user = <Auth as FromRequestParts<RateLimitState>>::from_request_parts(&mut parts, &state)
        .await
        .ok()
        .map(|Auth(actor)| actor.user_id);
    let request = Request::from_parts(parts, body);
    let Some(user) = user else {
        return next.run(request).await;
    };
    match state.limits.take(class, &user).await {
        Ok(()) => next.run(request).await,
        Err(RetryAfter(wait)) => {
            metrics::counter!("http_rate_limited_total", "class" => class.label()).increment(1);
            rate_limited(class, wait)
        }
    }
}

/// 429 `RATE_LIMITED`, retryable, with `Retry-After` in whole seconds (at least 1).
fn rate_limited(class: RouteClass, wait: Duration) -> Response {
    let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    let mut response = ApiError::of(
        ApiCode::RateLimited,
        format!(
            "too many {} requests from this user; retry after the Retry-After header's seconds",
            class.label()
        ),
    )
    .into_response();
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(seconds.max(1)));
    response
}

/// The open event streams per user, capped.
#[derive(Debug)]
pub struct StreamSlots {
    max_per_user: usize,
    users: Mutex<HashMap<UserId, usize>>,
    shared: Option<SharedStreams>,
}

/// How long a stream's entry in the cluster's count lives unless renewed: the entries of a
/// node that died stop counting this long after.
pub const STREAM_ENTRY_TTL: Duration = Duration::from_secs(30);

/// The cluster's count of open streams, and what this node names its streams by.
struct SharedStreams {
    streams: OpenStreamsRef,
    clock: ClockRef,
    node: String,
    next: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for SharedStreams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedStreams")
            .field("node", &self.node)
            .finish_non_exhaustive()
    }
}

impl StreamSlots {
    /// At most `max_per_user` streams per user (at least 1).
    pub fn new(max_per_user: usize) -> Arc<StreamSlots> {
        Arc::new(StreamSlots {
            max_per_user: max_per_user.max(1),
            users: Mutex::new(HashMap::new()),
            shared: None,
        })
    }

    /// At most `max_per_user` streams per user over the cluster, counted in `streams` (as
    /// node `node`, on `clock`'s time); when that count does not answer, this node's own.
    pub fn shared(
        max_per_user: usize,
        streams: OpenStreamsRef,
        clock: ClockRef,
        node: impl Into<String>,
    ) -> Arc<StreamSlots> {
        Arc::new(StreamSlots {
            max_per_user: max_per_user.max(1),
            users: Mutex::new(HashMap::new()),
            shared: Some(SharedStreams {
                streams,
                clock,
                node: node.into(),
                next: std::sync::atomic::AtomicU64::new(0),
            }),
        })
    }

    /// A slot for one more stream of `user`, held until the [`StreamSlot`] is dropped; `None`
    /// when the user has all theirs open, over the cluster when it counts them (the entry is
    /// renewed while the slot lives). When the cluster's count does not answer, this node's
    /// own decides, counted in `http_stream_cap_fallback_total`.
    pub async fn acquire(self: &Arc<Self>, user: &UserId) -> Option<StreamSlot> {
        let Some(shared) = &self.shared else {
            return self.try_acquire(user);
        };
        let stream = format!(
            "{}:{}",
            shared.node,
            shared
                .next
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let max = u32::try_from(self.max_per_user).unwrap_or(u32::MAX);
        let now = shared.clock.now();
        match shared
            .streams
            .open(user, &stream, max, now, STREAM_ENTRY_TTL)
            .await
        {
            Ok(false) => None,
            Ok(true) => {
                let renewing = tokio_util::sync::CancellationToken::new();
                let (streams, clock, who, id, stop) = (
                    shared.streams.clone(),
                    shared.clock.clone(),
                    user.clone(),
                    stream.clone(),
                    renewing.clone(),
                );
                tokio::spawn(async move {
                    let mut every = tokio::time::interval(STREAM_ENTRY_TTL / 3);
                    every.tick().await;
                    loop {
                        tokio::select! {
                            () = stop.cancelled() => break,
                            _ = every.tick() => {
                                if let Err(error) =
                                    streams.renew(&who, &id, clock.now(), STREAM_ENTRY_TTL).await
                                {
                                    tracing::debug!(%error, "a stream's entry was not renewed");
                                }
                            }
                        }
                    }
                    let _ = streams.close(&who, &id).await;
                });
                let mut slot = self.take_slot(user);
                slot.renewing = Some(renewing);
                Some(slot)
            }
            Err(error) => {
                metrics::counter!("http_stream_cap_fallback_total").increment(1);
                tracing::debug!(%error, "the cluster's stream count did not answer; the node's own applies");
                self.try_acquire(user)
            }
        }
    }

    /// A slot for one more stream of `user`, counted on this node only; `None` when the user
    /// has all theirs open here.
    pub fn try_acquire(self: &Arc<Self>, user: &UserId) -> Option<StreamSlot> {
        if self
            .lock()
            .get(user)
            .is_some_and(|open| *open >= self.max_per_user)
        {
            return None;
        }
        Some(self.take_slot(user))
    }

    /// Counts one more stream of `user` on this node.
    fn take_slot(self: &Arc<Self>, user: &UserId) -> StreamSlot {
        *self.lock().entry(user.clone()).or_insert(0) += 1;
        metrics::gauge!("room_sse_streams_open").increment(1.0);
        StreamSlot {
            slots: self.clone(),
            user: user.clone(),
            renewing: None,
        }
    }

    /// Users with at least one open stream.
    pub fn users(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<UserId, usize>> {
        self.users.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One open stream of a user ([`StreamSlots::acquire`]).
#[derive(Debug)]
pub struct StreamSlot {
    slots: Arc<StreamSlots>,
    user: UserId,
    /// Stops the renewal of the stream's entry in the cluster's count, which then closes it.
    renewing: Option<tokio_util::sync::CancellationToken>,
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        if let Some(renewing) = &self.renewing {
            renewing.cancel();
        }
        let mut users = self.slots.lock();
        if let Some(open) = users.get_mut(&self.user) {
            *open -= 1;
            if *open == 0 {
                users.remove(&self.user);
            }
        }
        metrics::gauge!("room_sse_streams_open").decrement(1.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_cover_the_writes_and_the_stream() {
        let class = |method: Method, route: &str| RouteClass::of(&method, route);
        assert_eq!(
            class(Method::POST, "/v1/rooms"),
            Some(RouteClass::CreateRoom)
        );
        assert_eq!(
            class(Method::POST, "/v1/rooms/{room_id}/join"),
            Some(RouteClass::Join)
        );
        assert_eq!(
            class(Method::POST, "/v1/rooms/{room_id}/gifts"),
            Some(RouteClass::Gift)
        );
        assert_eq!(
            class(Method::GET, "/v1/rooms/{room_id}/events"),
            Some(RouteClass::Stream)
        );
        assert_eq!(
            class(Method::GET, "/v1/me/events"),
            Some(RouteClass::Stream)
        );
        assert_eq!(
            class(Method::DELETE, "/v1/rooms/{room_id}/admins/{user_id}"),
            Some(RouteClass::Write)
        );
        assert_eq!(class(Method::GET, "/v1/rooms"), None);
        assert_eq!(class(Method::POST, "/v1/rooms/{room_id}/heartbeat"), None);
        assert_eq!(class(Method::POST, "/v1/rtc/callbacks"), None);
    }

    #[test]
    fn the_user_table_is_bounded() {
        let settings = LimitSettings {
            max_users: 2,
            ..LimitSettings::default()
        };
        let limits = RateLimits::new(&settings).unwrap();
        let user = |name: &str| UserId::new(name).unwrap();
        assert!(limits.check(RouteClass::Join, &user("a")).is_ok());
        assert!(limits.check(RouteClass::Join, &user("b")).is_ok());
        // Full: a third user passes without being tracked, however often.
        for _ in 0..100 {
            assert!(limits.check(RouteClass::Join, &user("c")).is_ok());
        }
        assert_eq!(limits.tracked_users(), 2);
        // Another class has a table of its own.
        assert!(limits.check(RouteClass::Gift, &user("c")).is_ok());
        assert_eq!(limits.tracked_users(), 3);
    }

    /// Shared budgets that never answer, as a Redis that is down.
    struct Down;

    #[async_trait::async_trait]
    impl room_app::ports::RateBudgets for Down {
        async fn take(
            &self,
            _key: &str,
            _interval: Duration,
            _burst: u32,
        ) -> room_app::Result<Option<Duration>> {
            Err(room_app::Error::unavailable("Redis is down"))
        }
    }

    fn create_room_settings() -> LimitSettings {
        LimitSettings {
            create_room_per_minute: 6,
            create_room_burst: 3,
            ..LimitSettings::default()
        }
    }

    #[tokio::test]
    async fn two_nodes_on_shared_budgets_allow_what_one_node_allows() {
        let clock: ClockRef = Arc::new(room_app::SystemClock);
        let shared: RateBudgetsRef = Arc::new(room_app::LocalRateBudgets::new(clock));
        let node = || {
            RateLimits::new(&create_room_settings())
                .unwrap()
                .shared(Some(shared.clone()))
        };
        let nodes = [node(), node()];
        let alice = UserId::new("alice").unwrap();
        let mut through = 0;
        for i in 0..10 {
            through += usize::from(
                nodes[i % 2]
                    .take(RouteClass::CreateRoom, &alice)
                    .await
                    .is_ok(),
            );
        }
        assert_eq!(through, 3, "the burst of one node, over both");
        let Err(RetryAfter(wait)) = nodes[0].take(RouteClass::CreateRoom, &alice).await else {
            panic!("over budget");
        };
        assert!(wait <= Duration::from_secs(10), "{wait:?}");
        assert!(
            nodes[1].take(RouteClass::Join, &alice).await.is_ok(),
            "another class is another budget"
        );
    }

    #[tokio::test]
    async fn when_the_shared_budgets_fail_the_nodes_own_limits_apply() {
        let limits = RateLimits::new(&create_room_settings())
            .unwrap()
            .shared(Some(Arc::new(Down)));
        let alice = UserId::new("alice").unwrap();
        let mut through = 0;
        for _ in 0..10 {
            through += usize::from(limits.take(RouteClass::CreateRoom, &alice).await.is_ok());
        }
        assert_eq!(
            through, 3,
            "no request failed, and the node's own burst held"
        );
    }

    #[tokio::test]
    async fn two_nodes_on_a_shared_stream_count_hold_one_nodes_cap() {
        let clock: ClockRef = Arc::new(room_app::SystemClock);
        let shared: OpenStreamsRef = Arc::new(room_app::LocalOpenStreams::new());
        let nodes = [
            StreamSlots::shared(2, shared.clone(), clock.clone(), "node-0"),
            StreamSlots::shared(2, shared.clone(), clock.clone(), "node-1"),
        ];
        let alice = UserId::new("alice").unwrap();
        let first = nodes[0].acquire(&alice).await.expect("one");
        let _second = nodes[1].acquire(&alice).await.expect("two");
        assert!(
            nodes[0].acquire(&alice).await.is_none(),
            "a third, on either node"
        );
        assert!(nodes[1].acquire(&alice).await.is_none());
        drop(first);
        // The entry is closed by the slot's renewal task as it stops: poll for it.
        let mut again = None;
        for _ in 0..1_000 {
            tokio::task::yield_now().await;
            again = nodes[1].acquire(&alice).await;
            if again.is_some() {
                break;
            }
        }
        assert!(
            again.is_some(),
            "a closed stream frees its place over the cluster"
        );
    }

    /// A stream count that never answers, as a Redis that is down.
    struct StreamsDown;

    #[async_trait::async_trait]
    impl room_app::ports::OpenStreams for StreamsDown {
        async fn open(
            &self,
            _: &UserId,
            _: &str,
            _: u32,
            _: room_domain::Timestamp,
            _: Duration,
        ) -> room_app::Result<bool> {
            Err(room_app::Error::unavailable("down"))
        }
        async fn renew(
            &self,
            _: &UserId,
            _: &str,
            _: room_domain::Timestamp,
            _: Duration,
        ) -> room_app::Result<()> {
            Err(room_app::Error::unavailable("down"))
        }
        async fn close(&self, _: &UserId, _: &str) -> room_app::Result<()> {
            Err(room_app::Error::unavailable("down"))
        }
    }

    #[tokio::test]
    async fn when_the_stream_count_fails_the_nodes_own_cap_applies() {
        let clock: ClockRef = Arc::new(room_app::SystemClock);
        let slots = StreamSlots::shared(2, Arc::new(StreamsDown), clock, "node-0");
        let alice = UserId::new("alice").unwrap();
        let _one = slots
            .acquire(&alice)
            .await
            .expect("no stream fails for the outage");
        let _two = slots.acquire(&alice).await.expect("two");
        assert!(
            slots.acquire(&alice).await.is_none(),
            "the node's own cap holds"
        );
    }

    #[test]
    fn a_stream_slot_returns_when_dropped() {
        let slots = StreamSlots::new(2);
        let alice = UserId::new("alice").unwrap();
        let first = slots.try_acquire(&alice).unwrap();
        let _second = slots.try_acquire(&alice).unwrap();
        assert!(slots.try_acquire(&alice).is_none());
        assert!(slots.try_acquire(&UserId::new("bob").unwrap()).is_some());
        drop(first);
        assert!(slots.try_acquire(&alice).is_some());
        assert_eq!(slots.users(), 1);
    }
}
