//! The accept loop of the API: HTTP/1.1 connections served by hyper, with the bounds a client
//! cannot get around — a cap on open connections, a deadline for each request head, and a
//! deadline for idle keep-alive connections — and a graceful stop.
//!
//! hyper's own `header_read_timeout` restarts at the end of every response, so it would also
//! close idle keep-alive connections after the (short) header deadline; each connection has a
//! watchdog instead, which knows whether a request is in flight:
//!
//! - no request yet, nothing received: closed `header_timeout` after the connection opened;
//! - the first byte of a request head received: closed `header_timeout` after that byte unless
//!   the head is complete by then;
//! - a response sent, nothing received since: closed `idle_timeout` after the response ended;
//! - a request in flight (its body arriving, its handler running, its response streaming):
//!   never closed by the watchdog (the request timeout and the body deadline bound those).
//!
//! The watchdog wakes at the deadline, and at least once per the shorter of the two timeouts
//! to look again; requests only note the time in the connection's state and never wake it.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::{Pin, pin};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{Request, Response};
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

use crate::chain::ErrorChain;

/// Bounds of the connections.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// Time to send a whole request head, from the connection's opening or the head's first
    /// byte.
    pub header_timeout: Duration,
    /// Time a keep-alive connection may stay without a request after its last response.
    pub idle_timeout: Duration,
    /// Most connections open at once; more wait in the listen queue.
    pub max_connections: usize,
}

/// Serves `router` on `listener` until `stop` completes; then accepts no more connections,
/// lets requests in flight finish, closes idle connections, and returns once every
/// connection has closed.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    stop: impl Future<Output = ()>,
) {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let closing = CancellationToken::new();
    let connections = TaskTracker::new();
    let mut stop = pin!(stop);
    loop {
        let permit = match slots.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                // At the cap: further connections wait in the listen queue until one closes.
                metrics::counter!("http_connection_cap_reached_total").increment(1);
                tokio::select! {
                    permit = slots.clone().acquire_owned() => match permit {
                        Ok(permit) => permit,
                        Err(_) => break,
                    },
                    () = &mut stop => break,
                }
            }
        };
        let socket = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut stop => break,
        };
        match socket {
            Ok((socket, _)) => {
                let _ = socket.set_nodelay(true);
                connections.spawn(connection(
                    socket,
                    router.clone(),
                    limits,
                    closing.clone(),
                    permit,
                ));
            }
            Err(error) if is_per_connection(&error) => {}
            Err(error) => {
                // Out of file descriptors, most likely: accepting again at once would spin.
                tracing::error!(error = %error, "cannot accept a connection");
                metrics::counter!("http_accept_errors_total").increment(1);
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(100)) => {}
                    () = &mut stop => break,
                }
            }
        }
    }
    drop(listener);
    closing.cancel();
    connections.close();
    connections.wait().await;
}

/// Errors of one incoming connection (it went away before it was accepted), not of the
/// listener.
fn is_per_connection(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
    )
}

/// Serves one connection until it ends, its watchdog closes it, or the service stops.
async fn connection(
    socket: TcpStream,
    router: Router,
    limits: ConnectionLimits,
    closing: CancellationToken,
    _slot: OwnedSemaphorePermit,
) {
    let _open = GaugeUp::new("http_connections_open");
    let activity = Arc::new(Activity::new());
    let io = TokioIo::new(WatchedIo {
        inner: socket,
        activity: activity.clone(),
    });
    let service = ConnectionService {
        router,
        activity: activity.clone(),
    };
    let mut builder = hyper::server::conn::http1::Builder::new();
    // The watchdog keeps the deadlines (see the module's documentation).
    builder.header_read_timeout(None);
    // Upgrades: the internal link route hands its connection over to a link.
    let mut served = pin!(builder.serve_connection(io, service).with_upgrades());
    let mut stopping = false;
    // The watchdog never sleeps longer than the shortest timeout: whatever the connection
    // does meanwhile sets no deadline before that wake-up (a deadline is always one of the
    // timeouts after the moment that set it), so no request has to wake it.
    let check_every = limits.header_timeout.min(limits.idle_timeout);
    let watchdog = tokio::time::sleep(check_every);
    let mut watchdog = pin!(watchdog);
    loop {
        let now = Instant::now();
        let next_check = now + check_every;
        match activity.deadline_and_reason(&limits) {
            Some((deadline, reason)) if deadline <= now => {
                metrics::counter!("http_connections_timed_out_total", "reason" => reason)
                    .increment(1);
                return;
            }
            Some((deadline, _)) => watchdog.as_mut().reset(deadline.min(next_check)),
            None => watchdog.as_mut().reset(next_check),
        }
        tokio::select! {
            result = served.as_mut() => {
                if let Err(error) = result {
                    tracing::debug!(error = %ErrorChain(&error), "connection ended with an error");
                }
                return;
            }
            () = closing.cancelled(), if !stopping => {
                // Requests in flight finish; an idle connection closes at once.
                stopping = true;
                served.as_mut().graceful_shutdown();
            }
            () = watchdog.as_mut() => {}
        }
    }
}

/// A gauge one higher while the value lives (`http_connections_open` while a connection
/// lives, the links' gauges while a link lives).
pub(crate) struct GaugeUp(&'static str);

impl GaugeUp {
    /// Raises gauge `name` until the value is dropped.
    pub(crate) fn new(name: &'static str) -> Self {
        metrics::gauge!(name).increment(1.0);
        GaugeUp(name)
    }
}

impl Drop for GaugeUp {
    fn drop(&mut self) {
        metrics::gauge!(self.0).decrement(1.0);
    }
}

/// What a connection's watchdog knows of it.
struct Activity {
    state: Mutex<ActivityState>,
}

struct ActivityState {
    /// Requests whose response has not been sent completely.
    in_flight: usize,
    /// When the connection began to wait for its next request.
    waiting_since: Instant,
    /// Whether a response was sent: the wait is then a keep-alive one.
    served: bool,
    /// When the first byte of the next request head arrived.
    head_started: Option<Instant>,
}

impl Activity {
    fn new() -> Self {
        Activity {
            state: Mutex::new(ActivityState {
                in_flight: 0,
                waiting_since: Instant::now(),
                served: false,
                head_started: None,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ActivityState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// When the connection must close unless something happens first, with why; `None` while
    /// a request is in flight.
    fn deadline_and_reason(&self, limits: &ConnectionLimits) -> Option<(Instant, &'static str)> {
        let state = self.lock();
        if state.in_flight > 0 {
            return None;
        }
        Some(match state.head_started {
            Some(started) => (started + limits.header_timeout, "header"),
            None if state.served => (state.waiting_since + limits.idle_timeout, "idle"),
            None => (state.waiting_since + limits.header_timeout, "header"),
        })
    }

    fn received(&self) {
        let mut state = self.lock();
        if state.in_flight == 0 && state.head_started.is_none() {
            state.head_started = Some(Instant::now());
        }
    }

    fn request_began(&self) {
        let mut state = self.lock();
        state.in_flight += 1;
        state.head_started = None;
    }

    fn request_ended(&self) {
        let mut state = self.lock();
        state.in_flight = state.in_flight.saturating_sub(1);
        if state.in_flight == 0 {
            state.waiting_since = Instant::now();
            state.served = true;
            state.head_started = None;
        }
    }
}

/// The socket, telling the watchdog when bytes arrive.
struct WatchedIo {
    inner: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for WatchedIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let result = Pin::new(&mut this.inner).poll_read(cx, buf);
        if matches!(result, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.activity.received();
        }
        result
    }
}

impl AsyncWrite for WatchedIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// The router as a hyper service of one connection, marking each request in flight until its
/// response body has been sent or dropped.
#[derive(Clone)]
struct ConnectionService {
    router: Router,
    activity: Arc<Activity>,
}

impl hyper::service::Service<Request<Incoming>> for ConnectionService {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn call(&self, request: Request<Incoming>) -> Self::Future {
        let busy = InFlight::new(self.activity.clone());
        let router = self.router.clone();
        Box::pin(async move {
            let response = router.oneshot(request.map(Body::new)).await?;
            Ok(response.map(|body| {
                Body::new(InFlightBody {
                    inner: body,
                    busy: Some(busy),
                })
            }))
        })
    }
}

/// A request in flight; ends when dropped.
struct InFlight(Arc<Activity>);

impl InFlight {
    fn new(activity: Arc<Activity>) -> Self {
        activity.request_began();
        InFlight(activity)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.request_ended();
    }
}

/// A response body that ends its request's [`InFlight`] once it has no more to send.
struct InFlightBody {
    inner: Body,
    busy: Option<InFlight>,
}

impl http_body::Body for InFlightBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = self.get_mut();
        let frame = Pin::new(&mut this.inner).poll_frame(cx);
        if matches!(frame, Poll::Ready(None)) {
            this.busy = None;
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
