//! Node links: the connection over which a node sends the node that runs a room the requests
//! it got for that room, and gets their answers.
//!
//! A link is an HTTP/1.1 connection to the other node's internal endpoint, upgraded
//! (`GET /internal/v1/link` with `Connection: upgrade`, `Upgrade: room-link/1` and the
//! cluster's internal bearer token, answered `101 Switching Protocols`) to a stream of frames
//! in both directions:
//!
//! ```text
//! [length: u32][id: u64][JSON]      big-endian; length counts the id and the JSON,
//!                                   at most MAX_FRAME bytes for a request
//! ```
//!
//! The node that forwards numbers its requests ([`LinkItem`]); the owner runs them side by
//! side as they arrive, at most [`LINK_IN_FLIGHT`] at once per link (beyond, it reads no more
//! until one ends), and answers each ([`LinkAnswer`]) under its number as soon as it is done:
//! a request never waits for another's answer, and requests that arrive together reach the
//! room's cell together, so its group commit takes them in one transaction.
//!
//! A link carries no more work than an HTTP request would: a forwarding node writes a request
//! from the task that makes it, with one `write` when the socket takes it (a flusher task
//! writes what it did not take), and one reader task hands each answer to the task that waits
//! for it. There is no batch to fill, no task per request and no HTTP message per request.
//!
//! Failures keep the meaning they have for a forwarded request: a request whose answer does
//! not come (the link closed, the owner did not answer within the forward timeout) has an
//! unknown outcome, and the caller gets [`Error::Unavailable`](room_app::Error) (retryable),
//! so the gift saga keeps such an order unfinished. A request that was refused before it was
//! written (too many waiting, no link) was not sent.

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::stream::{FuturesUnordered, StreamExt};
use futures_util::{FutureExt, future::BoxFuture};
use room_app::RemoteError;
use room_domain::RoomId;
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::{Notify, oneshot};
use tokio_util::sync::CancellationToken;

use crate::config::MAX_BODY_BYTES;
use crate::serve::GaugeUp;

/// The path of the link route, under the internal prefix.
pub const LINK_PATH: &str = "/internal/v1/link";

/// The protocol name of the `Upgrade` header.
pub const LINK_PROTOCOL: &str = "room-link/1";

/// The most bytes of a request's frame after its length: the id and a request as large as a
/// request body may be.
pub const MAX_FRAME: usize = 8 + MAX_BODY_BYTES;

/// The most bytes of an answer's frame after its length (a command's reply holds all its
/// events).
const MAX_ANSWER_FRAME: usize = 32 << 20;

/// The most requests one link has under way at once, on either side: beyond, a forwarding
/// node refuses a request at once (it is not sent), and an owner reads no more frames until
/// one of its requests ends.
pub const LINK_IN_FLIGHT: usize = 4_096;

/// The most bytes a forwarding node keeps for a link whose socket does not take them (beyond,
/// a request is refused at once: it is not sent), and the most answers' bytes an owner keeps
/// before it reads no more requests from a link that does not take them.
const MAX_UNSENT: usize = 4 << 20;

/// A forwarding node closes a link that carried nothing this long.
const CLIENT_IDLE: Duration = Duration::from_secs(30);

/// An owner closes a link on which nothing arrived and nothing ran this long (the forwarding
/// node closes an idle link itself, sooner; this ends links whose peer vanished).
const SERVER_IDLE: Duration = Duration::from_secs(120);

/// How long a stopping owner gives a link to answer what runs on it; then it closes it
/// (those requests' outcomes stay unknown to the forwarding node).
const DRAIN_LIMIT: Duration = Duration::from_secs(10);

/// The most bytes of the owner's answer to the upgrade request.
const MAX_HANDSHAKE: usize = 8 << 10;

/// One request over a link.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkItem {
    /// Apply a command to the room's cell.
    Execute {
        /// The room.
        room_id: String,
        /// The command, its actor and order.
        command: Box<room_app::ports::ForwardedCommand>,
    },
    /// Apply a gift order to the room's cell: the order's own command
    /// ([`room_app::gift_apply_command`], by the system), which the owner builds from the
    /// order, so the command's content does not travel twice. Answered with
    /// [`LinkAnswer::ApplyGift`].
    ApplyGift {
        /// The room.
        room_id: String,
        /// The order.
        order: Box<room_domain::GiftOrder>,
    },
    /// Where a user stands in the room.
    Membership {
        /// The room.
        room_id: String,
        /// The user.
        user: String,
        /// Committed or newest state.
        kind: room_app::ports::ReadKind,
    },
}

/// The answer to one [`LinkItem`].
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkAnswer {
    /// The answer to [`LinkItem::Execute`].
    Execute(ForwardAnswer<room_app::CommandReply>),
    /// The answer to [`LinkItem::ApplyGift`]: the reply with the gift's `RoomGiftSent` event
    /// only, all the saga reads of it.
    ApplyGift(ForwardAnswer<room_app::CommandReply>),
    /// The answer to [`LinkItem::Membership`].
    Membership(ForwardAnswer<room_app::ports::Membership>),
}

/// The answer of the internal endpoint to a forwarded request: the reply, or the error the
/// owner's runtime answered.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ForwardAnswer<T> {
    /// What the owner answered.
    Ok(T),
    /// The owner's error, with its meaning.
    Err(RemoteError),
}

impl<T> ForwardAnswer<T> {
    /// The answer to a request that ended with `result`.
    pub(crate) fn of(result: room_app::Result<T>) -> Self {
        match result {
            Ok(value) => ForwardAnswer::Ok(value),
            Err(error) => ForwardAnswer::Err(RemoteError::from(&error)),
        }
    }

    pub(crate) fn into_result(self, room_id: &RoomId) -> room_app::Result<T> {
        match self {
            ForwardAnswer::Ok(value) => Ok(value),
            ForwardAnswer::Err(error) => Err(error.into_error(room_id)),
        }
    }
}

/// The most links a node serves at once (a cluster has far fewer nodes).
pub const MAX_LINKS: usize = 256;

/// The links a node serves: their number, bounded, and their tasks, which a stopping node
/// waits for (they end once the requests under way are answered).
#[derive(Clone)]
pub struct LinkTasks {
    /// One permit per link served.
    pub slots: Arc<tokio::sync::Semaphore>,
    /// The links' tasks.
    pub tasks: tokio_util::task::TaskTracker,
}

impl LinkTasks {
    /// Room for [`MAX_LINKS`] links, their tasks tracked by `tasks`.
    pub fn new(tasks: tokio_util::task::TaskTracker) -> Self {
        LinkTasks {
            slots: Arc::new(tokio::sync::Semaphore::new(MAX_LINKS)),
            tasks,
        }
    }
}

/// Writes `payload` as a frame numbered `id` (see the module), at most `max` bytes after its
/// length.
fn frame(id: u64, payload: &impl Serialize, max: usize) -> io::Result<Vec<u8>> {
    let mut frame = Vec::with_capacity(256);
    frame.extend_from_slice(&[0; 12]);
    serde_json::to_writer(&mut frame, payload)?;
    let length = frame.len() - 4;
    if length > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("a frame of {length} bytes is over the limit of {max}"),
        ));
    }
    frame[..4].copy_from_slice(&(length as u32).to_be_bytes());
    frame[4..12].copy_from_slice(&id.to_be_bytes());
    Ok(frame)
}

/// Renumbers a frame written by [`frame`].
fn set_id(frame: &mut [u8], id: u64) {
    frame[4..12].copy_from_slice(&id.to_be_bytes());
}

/// Reads frames from a byte stream.
struct FrameReader<R> {
    inner: R,
    /// The most bytes of a frame after its length.
    max: usize,
    /// Bytes read and not yet handed out, from `start`.
    buf: Vec<u8>,
    start: usize,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    fn new(inner: R, max: usize, already: Vec<u8>) -> Self {
        FrameReader {
            inner,
            max,
            buf: already,
            start: 0,
        }
    }

    /// A whole frame among the bytes already read: its id and payload.
    fn buffered(&mut self) -> io::Result<Option<(u64, Vec<u8>)>> {
        let unread = &self.buf[self.start..];
        let Some(length) = unread.get(..4) else {
            return Ok(None);
        };
        let length = u32::from_be_bytes([length[0], length[1], length[2], length[3]]) as usize;
        if !(8..=self.max).contains(&length) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("a frame of {length} bytes (8 to {})", self.max),
            ));
        }
        if unread.len() < 4 + length {
            return Ok(None);
        }
        let mut id = [0; 8];
        id.copy_from_slice(&unread[4..12]);
        let payload = unread[12..4 + length].to_vec();
        self.start += 4 + length;
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        }
        Ok(Some((u64::from_be_bytes(id), payload)))
    }

    /// The next frame; `None` when the stream ended between frames. Cancel-safe: a call
    /// dropped while it waits loses nothing.
    async fn next(&mut self) -> io::Result<Option<(u64, Vec<u8>)>> {
        loop {
            if let Some(frame) = self.buffered()? {
                return Ok(Some(frame));
            }
            if self.start > 0 {
                self.buf.drain(..self.start);
                self.start = 0;
            }
            self.buf.reserve(16 << 10);
            if self.inner.read_buf(&mut self.buf).await? == 0 {
                return if self.buf.is_empty() {
                    Ok(None)
                } else {
                    Err(io::ErrorKind::UnexpectedEof.into())
                };
            }
        }
    }
}

/// Runs one link on the owner's side until the forwarding node closes it, it stays idle, it
/// breaks, or `stop` is cancelled: then it reads no more requests, lets those under way end
/// and sends their answers (for at most [`DRAIN_LIMIT`] after `stop`), and closes. `answer`
/// runs one request.
pub(crate) async fn serve<IO, F>(io: IO, stop: CancellationToken, answer: F)
where
    IO: AsyncRead + AsyncWrite + Send + 'static,
    F: Fn(LinkItem) -> BoxFuture<'static, LinkAnswer>,
{
    let _open = GaugeUp::new("room_forward_links_served");
    let (read, mut write) = tokio::io::split(io);
    let mut frames = FrameReader::new(read, MAX_FRAME, Vec::new());
    let mut running = FuturesUnordered::new();
    let mut unsent: Vec<u8> = Vec::new();
    let mut reading = true;
    let idle = tokio::time::sleep(SERVER_IDLE);
    tokio::pin!(idle);
    let drained = tokio::time::sleep(Duration::MAX);
    tokio::pin!(drained);
    let mut stopping = false;
    loop {
        if !reading && running.is_empty() && unsent.is_empty() {
            break;
        }
        tokio::select! {
            biased;
            Some((id, done)) = running.next(), if !running.is_empty() => {
                push_answer(&mut unsent, id, &done);
                while let Some(Some((id, done))) = running.next().now_or_never() {
                    push_answer(&mut unsent, id, &done);
                }
            }
            // The answers go out as the socket takes them, while requests are still read:
            // a link whose two directions wait for each other would stop both nodes' work.
            written = write.write(&unsent), if !unsent.is_empty() => match written {
                Ok(n) if n > 0 => {
                    unsent.drain(..n);
                }
                _ => {
                    // The forwarding node is gone: what runs still ends in its room; the
                    // requests' outcomes are unknown to that node, which keeps them so.
                    tracing::debug!("an internal link could not be written; closed");
                    return;
                }
            },
            // Before reading: a stopping owner takes no request that arrives after the stop.
            () = stop.cancelled(), if !stopping => {
                stopping = true;
                reading = false;
                drained.as_mut().reset(tokio::time::Instant::now() + DRAIN_LIMIT);
            }
            () = &mut drained, if stopping => {
                tracing::warn!(unanswered = running.len(), "an internal link did not drain in time; closed");
                return;
            }
            // Nor does it read more while the forwarding node leaves its answers unread.
            read = frames.next(), if reading && running.len() < LINK_IN_FLIGHT && unsent.len() < MAX_UNSENT => {
                idle.as_mut().reset(tokio::time::Instant::now() + SERVER_IDLE);
                let mut frame = match read {
                    Ok(Some(frame)) => Some(frame),
                    Ok(None) => {
                        reading = false;
                        None
                    }
                    Err(error) => {
                        tracing::warn!(error = %error, "an internal link sent a bad frame; closing it");
                        reading = false;
                        None
                    }
                };
                // Every whole frame that arrived with it goes to its room now, so that they
                // reach the cells together.
                while let Some((id, payload)) = frame.take() {
                    match serde_json::from_slice::<LinkItem>(&payload) {
                        Ok(item) => running.push(answer(item).map(move |done| (id, done))),
                        Err(error) => {
                            tracing::warn!(error = %error, "an internal link sent a request this node cannot read; closing it");
                            reading = false;
                            break;
                        }
                    }
                    if running.len() >= LINK_IN_FLIGHT {
                        break;
                    }
                    match frames.buffered() {
                        Ok(next) => frame = next,
                        Err(error) => {
                            tracing::warn!(error = %error, "an internal link sent a bad frame; closing it");
                            reading = false;
                        }
                    }
                }
            }
            () = &mut idle, if reading && running.is_empty() => reading = false,
        }
    }
    let _ = write.shutdown().await;
}

/// Appends the frame of an answer to what is to be sent. An answer that cannot be written
/// (over the frame limit) is sent as the error it is, so that its request does not wait in
/// vain.
fn push_answer(unsent: &mut Vec<u8>, id: u64, answer: &LinkAnswer) {
    match frame(id, answer, MAX_ANSWER_FRAME) {
        Ok(frame) => unsent.extend_from_slice(&frame),
        Err(error) => {
            tracing::error!(error = %error, "an answer over an internal link cannot be sent");
            let refusal = ForwardAnswer::of(Err(room_app::Error::Unavailable(format!(
                "the answer was not sent: {error}"
            ))));
            if let Ok(frame) = frame(id, &LinkAnswer::Execute(refusal), MAX_ANSWER_FRAME) {
                unsent.extend_from_slice(&frame);
            }
        }
    }
}

/// A forwarding node's links, one per other node, each opened on first use and opened again
/// after it closed.
pub(crate) struct Links {
    token: Arc<SecretString>,
    /// How long a request waits for its answer.
    timeout: Duration,
    /// How long opening a link may take.
    connect_timeout: Duration,
    slots: Mutex<HashMap<String, Arc<Slot>>>,
}

/// The most other nodes a forwarder keeps a link for (a cluster has far fewer; the links of
/// nodes gone are dropped when it is reached).
const MAX_SLOTS: usize = 256;

/// The link to one node.
#[derive(Default)]
struct Slot {
    current: Mutex<Option<Arc<Link>>>,
    /// One connection attempt at a time; held, the cause of the last one that failed.
    connecting: tokio::sync::Mutex<Option<String>>,
    /// Connection attempts ended so far.
    attempts: AtomicU64,
}

impl Links {
    pub(crate) fn new(token: Arc<SecretString>, timeout: Duration) -> Self {
        Links {
            token,
            timeout,
            connect_timeout: timeout.min(Duration::from_secs(1)),
            slots: Mutex::new(HashMap::new()),
        }
    }

    /// Sends `item` to the node at `url` and waits for its answer: at most the forward
    /// timeout in all, opening the link included. The error says why there is no answer.
    pub(crate) async fn call(&self, url: &str, item: &LinkItem) -> Result<LinkAnswer, Failure> {
        let deadline = tokio::time::Instant::now() + self.timeout;
        let mut frame = frame(0, item, MAX_FRAME).map_err(|e| Failure::NotSent(e.to_string()))?;
        let slot = self.slot(url);
        // A link that closes between the lookup and the request's turn is replaced once.
        for _ in 0..2 {
            let opened = slot.link(url, &self.token, self.connect_timeout);
            let link = tokio::time::timeout_at(deadline, opened)
                .await
                .map_err(|_| Failure::NotSent("no link to the owner in time".into()))??;
            let (id, answered) = match link.register() {
                Ok(waiting) => waiting,
                Err(Registration::Closed) => continue,
                Err(Registration::Full) => {
                    metrics::counter!("room_forward_queue_full_total").increment(1);
                    return Err(Failure::NotSent(
                        "too many requests wait for this owner".into(),
                    ));
                }
            };
            set_id(&mut frame, id);
            if let Err(cause) = link.send(&frame) {
                link.forget(id);
                return Err(Failure::NotSent(cause));
            }
            return match tokio::time::timeout_at(deadline, answered).await {
                Ok(Ok(answer)) => Ok(answer),
                Ok(Err(_)) => Err(Failure::Unknown("the link to the owner closed".into())),
                Err(_) => {
                    link.forget(id);
                    Err(Failure::Unknown("no answer in time".into()))
                }
            };
        }
        Err(Failure::NotSent(
            "the link to the owner keeps closing".into(),
        ))
    }

    fn slot(&self, url: &str) -> Arc<Slot> {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(slot) = slots.get(url) {
            return slot.clone();
        }
        if slots.len() >= MAX_SLOTS {
            slots.clear();
        }
        let slot = Arc::new(Slot::default());
        slots.insert(url.to_owned(), slot.clone());
        slot
    }
}

/// Why a request over a link got no answer.
#[derive(Debug)]
pub(crate) enum Failure {
    /// It was not sent.
    NotSent(String),
    /// It may have been sent: its outcome is unknown.
    Unknown(String),
}

impl Slot {
    /// The open link, or a new one. Requests that waited for an attempt that failed share its
    /// failure rather than try again one after the other (an owner that does not answer would
    /// hold each of them a connect timeout longer than the one before).
    async fn link(
        self: &Arc<Self>,
        url: &str,
        token: &SecretString,
        connect_timeout: Duration,
    ) -> Result<Arc<Link>, Failure> {
        if let Some(link) = self.open() {
            return Ok(link);
        }
        let attempts = self.attempts.load(Ordering::Acquire);
        let mut last_failure = self.connecting.lock().await;
        // Another request may have opened it while this one waited, or failed to.
        if let Some(link) = self.open() {
            return Ok(link);
        }
        if self.attempts.load(Ordering::Acquire) != attempts
            && let Some(cause) = last_failure.as_ref()
        {
            return Err(Failure::NotSent(cause.clone()));
        }
        let opened = tokio::time::timeout(connect_timeout, handshake(url, token))
            .await
            .unwrap_or_else(|_| Err("the owner did not open a link in time".into()));
        self.attempts.fetch_add(1, Ordering::AcqRel);
        let (stream, already) = match opened {
            Ok(opened) => {
                *last_failure = None;
                opened
            }
            Err(cause) => {
                metrics::counter!("room_forward_link_connects_total", "outcome" => "failed")
                    .increment(1);
                *last_failure = Some(cause.clone());
                return Err(Failure::NotSent(cause));
            }
        };
        metrics::counter!("room_forward_link_connects_total", "outcome" => "opened").increment(1);
        let (read, write) = stream.into_split();
        let link = Arc::new(Link {
            write,
            unsent: Mutex::new(Unsent::default()),
            flush: Notify::new(),
            waiting: Mutex::new(Waiting::default()),
        });
        tokio::spawn(read_answers(
            link.clone(),
            Arc::downgrade(self),
            FrameReader::new(read, MAX_ANSWER_FRAME, already),
        ));
        tokio::spawn(flush(link.clone()));
        *self.current.lock().unwrap_or_else(|e| e.into_inner()) = Some(link.clone());
        Ok(link)
    }

    fn open(&self) -> Option<Arc<Link>> {
        self.current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .filter(|link| !link.is_closed())
            .cloned()
    }

    /// Drops `link` if it is still the slot's.
    fn forget(&self, link: &Arc<Link>) {
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if current.as_ref().is_some_and(|held| Arc::ptr_eq(held, link)) {
            *current = None;
        }
    }
}

/// Opens a connection to the node at `url` and upgrades it to a link: the stream, and what
/// was read past the owner's answer.
async fn handshake(url: &str, token: &SecretString) -> Result<(TcpStream, Vec<u8>), String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("bad owner URL {url:?}: {e}"))?;
    if parsed.scheme() != "http" {
        return Err(format!("owner URL {url:?}: links need http://"));
    }
    let host = parsed
        .host_str()
        .ok_or_else(|| format!("owner URL {url:?} has no host"))?;
    let port = parsed.port_or_known_default().unwrap_or(80);
    let mut stream = TcpStream::connect((host.trim_matches(['[', ']']), port))
        .await
        .map_err(|e| format!("cannot reach the owner: {e}"))?;
    let _ = stream.set_nodelay(true);
    let request = format!(
        "GET {}{LINK_PATH} HTTP/1.1\r\nhost: {host}:{port}\r\nauthorization: Bearer {}\r\n\
         connection: upgrade\r\nupgrade: {LINK_PROTOCOL}\r\n\r\n",
        parsed.path().trim_end_matches('/'),
        token.expose_secret()
    );
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| format!("cannot write to the owner: {e}"))?;
    let mut head = Vec::with_capacity(512);
    let end = loop {
        if let Some(at) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        if head.len() > MAX_HANDSHAKE {
            return Err("the owner's answer to the link request is too long".into());
        }
        head.reserve(1024);
        if stream
            .read_buf(&mut head)
            .await
            .map_err(|e| format!("cannot read the owner's answer: {e}"))?
            == 0
        {
            return Err("the owner closed the connection before it answered".into());
        }
    };
    let status = head
        .split(|&b| b == b'\r')
        .next()
        .map(|line| String::from_utf8_lossy(line).into_owned())
        .unwrap_or_default();
    if !status.starts_with("HTTP/1.1 101") {
        return Err(format!("the owner refused the link: {status}"));
    }
    Ok((stream, head.split_off(end)))
}

/// A link of the forwarding node.
struct Link {
    write: OwnedWriteHalf,
    unsent: Mutex<Unsent>,
    /// Wakes the flusher.
    flush: Notify,
    waiting: Mutex<Waiting>,
}

/// What the socket has not taken yet.
#[derive(Default)]
struct Unsent {
    bytes: Vec<u8>,
    /// The flusher holds bytes it is writing: later frames go behind them.
    flushing: bool,
}

/// The requests waiting for their answers.
#[derive(Default)]
struct Waiting {
    answers: HashMap<u64, oneshot::Sender<LinkAnswer>>,
    next_id: u64,
    closed: bool,
}

/// Why a request could not be registered on a link.
enum Registration {
    Closed,
    Full,
}

impl Link {
    /// Numbers a request and registers who waits for its answer.
    fn register(&self) -> Result<(u64, oneshot::Receiver<LinkAnswer>), Registration> {
        let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        if waiting.closed {
            return Err(Registration::Closed);
        }
        if waiting.answers.len() >= LINK_IN_FLIGHT {
            return Err(Registration::Full);
        }
        waiting.next_id += 1;
        let id = waiting.next_id;
        let (answer, answered) = oneshot::channel();
        waiting.answers.insert(id, answer);
        Ok((id, answered))
    }

    fn forget(&self, id: u64) {
        self.waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .answers
            .remove(&id);
    }

    /// Writes `frame` now if the socket takes it and nothing is queued before it; else queues
    /// it for the flusher.
    fn send(&self, frame: &[u8]) -> Result<(), String> {
        let mut unsent = self.unsent.lock().unwrap_or_else(|e| e.into_inner());
        let mut rest = frame;
        if !unsent.flushing && unsent.bytes.is_empty() {
            match self.write.try_write(frame) {
                Ok(n) => rest = &frame[n..],
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
                Err(error) => {
                    drop(unsent);
                    self.close();
                    return Err(format!("cannot write to the owner: {error}"));
                }
            }
        }
        if rest.is_empty() {
            return Ok(());
        }
        if rest.len() == frame.len() && unsent.bytes.len() + rest.len() > MAX_UNSENT {
            return Err("the link to the owner is not taking requests".into());
        }
        unsent.bytes.extend_from_slice(rest);
        drop(unsent);
        self.flush.notify_one();
        Ok(())
    }

    fn is_closed(&self) -> bool {
        self.waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .closed
    }

    /// Marks the link closed; everyone waiting gets "closed" (their answer is dropped).
    fn close(&self) {
        let answers = {
            let mut waiting = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
            waiting.closed = true;
            std::mem::take(&mut waiting.answers)
        };
        drop(answers);
        self.flush.notify_one();
    }
}

/// Writes what [`Link::send`] queued, in order, until the link closes.
async fn flush(link: Arc<Link>) {
    loop {
        link.flush.notified().await;
        loop {
            if link.is_closed() {
                return;
            }
            let bytes = {
                let mut unsent = link.unsent.lock().unwrap_or_else(|e| e.into_inner());
                if unsent.bytes.is_empty() {
                    unsent.flushing = false;
                    break;
                }
                unsent.flushing = true;
                std::mem::take(&mut unsent.bytes)
            };
            let mut written = 0;
            while written < bytes.len() {
                let result = match link.write.writable().await {
                    Ok(()) => link.write.try_write(&bytes[written..]),
                    Err(error) => Err(error),
                };
                match result {
                    Ok(n) => written += n,
                    Err(error) if error.kind() == io::ErrorKind::WouldBlock => {}
                    Err(error) => {
                        tracing::debug!(error = %error, "an internal link could not be written");
                        link.close();
                        return;
                    }
                }
            }
        }
    }
}

/// Hands each answer to the request that waits for it, until the link closes or stays idle
/// (no answer for [`CLIENT_IDLE`] and nobody waiting); then closes it and takes it out of its
/// slot.
async fn read_answers(
    link: Arc<Link>,
    slot: std::sync::Weak<Slot>,
    mut frames: FrameReader<OwnedReadHalf>,
) {
    let _open = GaugeUp::new("room_forward_links_open");
    let idle = tokio::time::sleep(CLIENT_IDLE);
    tokio::pin!(idle);
    loop {
        tokio::select! {
            read = frames.next() => match read {
                Ok(Some((id, payload))) => {
                    let answer = match serde_json::from_slice::<LinkAnswer>(&payload) {
                        Ok(answer) => answer,
                        Err(error) => {
                            tracing::warn!(error = %error, "an internal link answered what this node cannot read; closing it");
                            break;
                        }
                    };
                    let waiter = link
                        .waiting
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .answers
                        .remove(&id);
                    // A request that gave up waiting is gone: its answer is dropped.
                    if let Some(waiter) = waiter {
                        let _ = waiter.send(answer);
                    }
                    idle.as_mut().reset(tokio::time::Instant::now() + CLIENT_IDLE);
                }
                Ok(None) => break,
                Err(error) => {
                    tracing::debug!(error = %error, "an internal link broke");
                    break;
                }
            },
            () = &mut idle => {
                // Idle only if nobody waits: a request registers under the same lock.
                let mut waiting = link.waiting.lock().unwrap_or_else(|e| e.into_inner());
                if waiting.answers.is_empty() {
                    waiting.closed = true;
                    break;
                }
                drop(waiting);
                idle.as_mut().reset(tokio::time::Instant::now() + CLIENT_IDLE);
            }
        }
    }
    link.close();
    if let Some(slot) = slot.upgrade() {
        slot.forget(&link);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_come_out_as_they_went_in_whatever_the_reads_cut() {
        let a = frame(7, &serde_json::json!({"a": 1}), MAX_FRAME).unwrap();
        let b = frame(u64::MAX, &serde_json::json!("b"), MAX_FRAME).unwrap();
        let bytes = [a.clone(), b.clone()].concat();
        // Every cut of the stream into two reads gives the same two frames.
        for cut in 0..bytes.len() {
            let (mut client, server) = tokio::io::duplex(64);
            let mut reader = FrameReader::new(server, MAX_FRAME, bytes[..cut].to_vec());
            let rest = bytes[cut..].to_vec();
            let writer = tokio::spawn(async move {
                client.write_all(&rest).await.unwrap();
            });
            let first = reader.next().await.unwrap().unwrap();
            let second = reader.next().await.unwrap().unwrap();
            writer.await.unwrap();
            assert_eq!(first, (7, br#"{"a":1}"#.to_vec()), "cut at {cut}");
            assert_eq!(second, (u64::MAX, br#""b""#.to_vec()), "cut at {cut}");
            assert_eq!(reader.next().await.unwrap(), None, "cut at {cut}");
        }
    }

    #[tokio::test]
    async fn a_frame_over_the_limit_or_cut_short_is_an_error() {
        let (mut client, server) = tokio::io::duplex(64);
        let mut reader = FrameReader::new(server, MAX_FRAME, Vec::new());
        client
            .write_all(&((MAX_FRAME + 1) as u32).to_be_bytes())
            .await
            .unwrap();
        let error = reader.next().await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData, "{error}");

        let (mut client, server) = tokio::io::duplex(64);
        let mut reader = FrameReader::new(server, MAX_FRAME, Vec::new());
        client
            .write_all(&frame(1, &"cut", MAX_FRAME).unwrap()[..10])
            .await
            .unwrap();
        drop(client);
        let error = reader.next().await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::UnexpectedEof, "{error}");

        let too_long = "x".repeat(MAX_FRAME);
        assert!(
            frame(1, &too_long, MAX_FRAME).is_err(),
            "a payload over the limit is refused"
        );
    }

    fn membership(user: &str) -> LinkItem {
        LinkItem::Membership {
            room_id: "r1".into(),
            user: user.into(),
            kind: room_app::ports::ReadKind::Newest,
        }
    }

    fn member_answer(member: bool) -> LinkAnswer {
        LinkAnswer::Membership(ForwardAnswer::of(Ok(room_app::ports::Membership {
            status: room_domain::RoomStatus::Open,
            member,
            version: 1,
        })))
    }

    /// Polls `condition` until it holds, at most ten seconds.
    async fn eventually(what: &str, condition: impl Fn() -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while !condition() {
            assert!(tokio::time::Instant::now() < deadline, "{what}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    #[tokio::test]
    async fn an_owner_answers_each_request_under_its_number_as_it_ends() {
        let (mut peer, io) = tokio::io::duplex(1 << 20);
        let (release, released) = tokio::sync::watch::channel(false);
        let served = tokio::spawn(serve(io, CancellationToken::new(), move |item| {
            let mut released = released.clone();
            Box::pin(async move {
                let LinkItem::Membership { user, .. } = item else {
                    unreachable!("the test sends memberships")
                };
                // "slow" is answered only once released: the others must not wait for it.
                if user == "slow" {
                    let _ = released.wait_for(|go| *go).await;
                }
                member_answer(user != "bob")
            })
        }));
        let mut requests = Vec::new();
        for (id, user) in [(1, "slow"), (2, "alice"), (3, "bob")] {
            requests.extend(frame(id, &membership(user), MAX_FRAME).unwrap());
        }
        peer.write_all(&requests).await.unwrap();
        let (read, mut write) = tokio::io::split(peer);
        let mut answers = FrameReader::new(read, MAX_ANSWER_FRAME, Vec::new());
        let mut got = Vec::new();
        for _ in 0..2 {
            let (id, payload) = answers.next().await.unwrap().unwrap();
            let answer: LinkAnswer = serde_json::from_slice(&payload).unwrap();
            got.push((id, serde_json::to_value(answer).unwrap()));
        }
        got.sort_by_key(|(id, _)| *id);
        assert_eq!(got[0].0, 2);
        assert_eq!(got[0].1["membership"]["ok"]["member"], true);
        assert_eq!(got[1].0, 3);
        assert_eq!(got[1].1["membership"]["ok"]["member"], false);
        release.send(true).unwrap();
        let (id, _) = answers.next().await.unwrap().unwrap();
        assert_eq!(
            id, 1,
            "the slow request is answered last, under its own number"
        );
        // The forwarding node closes its side: the link ends.
        write.shutdown().await.unwrap();
        served.await.unwrap();
    }

    #[tokio::test]
    async fn an_owner_runs_at_most_link_in_flight_requests_of_a_link_at_once() {
        let (mut peer, io) = tokio::io::duplex(16 << 20);
        let started = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = started.clone();
        let stop = CancellationToken::new();
        let served = tokio::spawn(serve(io, stop.clone(), move |_| {
            counted.fetch_add(1, Ordering::SeqCst);
            Box::pin(std::future::pending())
        }));
        let mut requests = Vec::new();
        for id in 0..(LINK_IN_FLIGHT as u64 + 100) {
            requests.extend(frame(id, &membership("alice"), MAX_FRAME).unwrap());
        }
        peer.write_all(&requests).await.unwrap();
        eventually("the owner takes requests up to its bound", || {
            started.load(Ordering::SeqCst) >= LINK_IN_FLIGHT
        })
        .await;
        // Let the link task run on with the rest of the frames in its buffer: on this
        // single-threaded runtime it runs whenever the test yields.
        for _ in 0..1_000 {
            tokio::task::yield_now().await;
        }
        assert_eq!(started.load(Ordering::SeqCst), LINK_IN_FLIGHT);
        served.abort();
    }

    #[tokio::test]
    async fn an_owner_closes_a_link_that_sends_a_frame_it_cannot_read() {
        let (mut peer, io) = tokio::io::duplex(1 << 20);
        let served = tokio::spawn(serve(io, CancellationToken::new(), |_| {
            Box::pin(async { member_answer(true) })
        }));
        peer.write_all(&frame(1, &"not a request", MAX_FRAME).unwrap())
            .await
            .unwrap();
        let mut rest = Vec::new();
        peer.read_to_end(&mut rest).await.unwrap();
        assert!(rest.is_empty(), "nothing is answered: {rest:?}");
        served.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_stopping_owner_answers_what_ends_in_time_then_closes() {
        let (peer, io) = tokio::io::duplex(1 << 20);
        let (release, released) = tokio::sync::watch::channel(false);
        let stop = CancellationToken::new();
        let served = tokio::spawn(serve(io, stop.clone(), move |item| {
            let mut released = released.clone();
            Box::pin(async move {
                let LinkItem::Membership { user, .. } = item else {
                    unreachable!("the test sends memberships")
                };
                if user == "never" {
                    std::future::pending::<()>().await;
                }
                let _ = released.wait_for(|go| *go).await;
                member_answer(true)
            })
        }));
        let (read, mut write) = tokio::io::split(peer);
        let mut requests = frame(1, &membership("alice"), MAX_FRAME).unwrap();
        requests.extend(frame(2, &membership("never"), MAX_FRAME).unwrap());
        write.write_all(&requests).await.unwrap();
        tokio::task::yield_now().await;
        stop.cancel();
        // A request sent after the stop is not read.
        write
            .write_all(&frame(3, &membership("late"), MAX_FRAME).unwrap())
            .await
            .unwrap();
        release.send(true).unwrap();
        let mut answers = FrameReader::new(read, MAX_ANSWER_FRAME, Vec::new());
        let (id, _) = answers.next().await.unwrap().unwrap();
        assert_eq!(id, 1, "what ends while the owner stops is answered");
        let started = tokio::time::Instant::now();
        served.await.unwrap();
        assert!(started.elapsed() >= DRAIN_LIMIT - Duration::from_secs(1));
        assert_eq!(answers.next().await.unwrap(), None, "then the link closes");
    }

    /// A node that upgrades links and then reads requests without answering them.
    async fn silent_owner() -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        if socket.read_buf(&mut head).await.unwrap_or(0) == 0 {
                            return;
                        }
                    }
                    let _ = socket
                        .write_all(b"HTTP/1.1 101 Switching Protocols\r\n\r\n")
                        .await;
                    let mut sink = Vec::new();
                    let _ = socket.read_to_end(&mut sink).await;
                });
            }
        });
        url
    }

    #[tokio::test]
    async fn a_forwarding_node_refuses_a_request_beyond_link_in_flight_without_sending_it() {
        let url = silent_owner().await;
        let token = Arc::new(SecretString::from("a-token"));
        let links = Arc::new(Links::new(token, Duration::from_secs(60)));
        let mut waiting = Vec::new();
        for _ in 0..LINK_IN_FLIGHT {
            let (links, url) = (links.clone(), url.clone());
            waiting.push(tokio::spawn(async move {
                links.call(&url, &membership("alice")).await
            }));
        }
        let slot = links.slot(&url);
        eventually("every request waits for its answer", || {
            slot.open()
                .is_some_and(|link| link.waiting.lock().unwrap().answers.len() == LINK_IN_FLIGHT)
        })
        .await;
        let refused = links.call(&url, &membership("alice")).await;
        assert!(
            matches!(&refused, Err(Failure::NotSent(cause)) if cause.contains("too many")),
            "{refused:?}"
        );
        for task in waiting {
            task.abort();
        }
    }

    #[tokio::test]
    async fn a_request_without_an_answer_in_time_has_an_unknown_outcome() {
        let url = silent_owner().await;
        let token = Arc::new(SecretString::from("a-token"));
        let links = Links::new(token, Duration::from_millis(200));
        let answer = links.call(&url, &membership("alice")).await;
        assert!(matches!(answer, Err(Failure::Unknown(_))), "{answer:?}");
        let slot = links.slot(&url);
        let link = slot.open().expect("the link stays open");
        assert!(
            link.waiting.lock().unwrap().answers.is_empty(),
            "the request that gave up is forgotten"
        );
    }

    #[tokio::test]
    async fn requests_that_waited_for_a_link_that_did_not_open_share_its_failure() {
        // An owner that accepts connections and never answers the link request.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = accepted.clone();
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((socket, _)) = listener.accept().await {
                counted.fetch_add(1, Ordering::SeqCst);
                held.push(socket);
            }
        });
        // Each attempt gives up after a second; the requests wait five.
        let links = Arc::new(Links::new(
            Arc::new(SecretString::from("a-token")),
            Duration::from_secs(5),
        ));
        let calls: Vec<_> = (0..8)
            .map(|_| {
                let (links, url) = (links.clone(), url.clone());
                tokio::spawn(async move { links.call(&url, &membership("alice")).await })
            })
            .collect();
        for call in calls {
            let answer = call.await.unwrap();
            assert!(matches!(answer, Err(Failure::NotSent(_))), "{answer:?}");
        }
        assert_eq!(
            accepted.load(Ordering::SeqCst),
            1,
            "one attempt for the requests that waited together"
        );
    }

    #[tokio::test]
    async fn a_node_that_refuses_the_upgrade_gets_no_request() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut head = vec![0; 1024];
            let _ = socket.read(&mut head).await;
            let _ = socket
                .write_all(b"HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\n\r\n")
                .await;
        });
        let links = Links::new(
            Arc::new(SecretString::from("wrong")),
            Duration::from_secs(5),
        );
        let answer = links.call(&url, &membership("alice")).await;
        assert!(
            matches!(&answer, Err(Failure::NotSent(cause)) if cause.contains("401")),
            "{answer:?}"
        );
    }
}
