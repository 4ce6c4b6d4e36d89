//! The forwarding side of a link: [`Links`] keeps one link per other node, opened on first use
//! (an upgraded HTTP/1.1 connection), writes each request from the task that makes it, and
//! hands each answer to the task that waits for it.

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use room_app::ports::Peer;
use secrecy::{ExposeSecret, SecretString};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::{Notify, oneshot};

use super::protocol::{
    FrameReader, LINK_IN_FLIGHT, LINK_PATH, LINK_PROTOCOL, LinkAnswer, LinkItem, MAX_ANSWER_FRAME,
    MAX_FRAME, MAX_UNSENT, NODE_HEADER, frame, set_id,
};
use crate::serve::GaugeUp;

/// A forwarding node closes a link that carried nothing this long.
const CLIENT_IDLE: Duration = Duration::from_secs(30);

/// The most bytes of the owner's answer to the upgrade request.
const MAX_HANDSHAKE: usize = 8 << 10;

/// A forwarding node's links, one per other node (its id and URL), each opened on first use
/// and opened again after it closed. A link is opened only to the node it is meant for: the
/// upgrade request names it (`room-node`), and the answer must name it too.
pub(crate) struct Links {
    token: Arc<SecretString>,
    /// How long a request waits for its answer.
    timeout: Duration,
    /// How long opening a link may take.
    connect_timeout: Duration,
    slots: Mutex<HashMap<Peer, Arc<Slot>>>,
}

/// The most other nodes a forwarder keeps a link for (a cluster has far fewer; the links of
/// nodes gone are dropped when it is reached).
const MAX_SLOTS: usize = 256;

/// The link to one node.
#[derive(Default)]
pub(super) struct Slot {
    current: Mutex<Option<Arc<Link>>>,
    /// One connection attempt at a time; held, the last one's failure.
    connecting: tokio::sync::Mutex<Option<Failure>>,
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

    /// Sends `item` to the node `peer` and waits for its answer: at most the forward
    /// timeout in all, opening the link included. The error says why there is no answer.
    pub(crate) async fn call(&self, peer: &Peer, item: &LinkItem) -> Result<LinkAnswer, Failure> {
        let deadline = tokio::time::Instant::now() + self.timeout;
        let mut frame = frame(0, item, MAX_FRAME).map_err(|e| Failure::NotSent(e.to_string()))?;
        let slot = self.slot(peer);
        // A link that closes between the lookup and the request's turn is replaced once.
        for _ in 0..2 {
            let opened = slot.link(peer, &self.token, self.connect_timeout);
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

    pub(super) fn slot(&self, peer: &Peer) -> Arc<Slot> {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(slot) = slots.get(peer) {
            return slot.clone();
        }
        if slots.len() >= MAX_SLOTS {
            slots.clear();
        }
        let slot = Arc::new(Slot::default());
        slots.insert(peer.clone(), slot.clone());
        slot
    }
}

/// Why a request over a link got no answer.
#[derive(Debug, Clone)]
pub(crate) enum Failure {
    /// It was not sent.
    NotSent(String),
    /// It may have been sent: its outcome is unknown.
    Unknown(String),
    /// It was not sent: the node at the URL is not the node it was meant for (it refused the
    /// link 421, or named another node).
    WrongNode(String),
}

impl Slot {
    /// The open link, or a new one. Requests that waited for an attempt that failed share its
    /// failure rather than try again one after the other (an owner that does not answer would
    /// hold each of them a connect timeout longer than the one before).
    async fn link(
        self: &Arc<Self>,
        peer: &Peer,
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
            && let Some(failure) = last_failure.as_ref()
        {
            return Err(failure.clone());
        }
        let opened = tokio::time::timeout(connect_timeout, handshake(peer, token))
            .await
            .unwrap_or_else(|_| {
                Err(Failure::NotSent(
                    "the owner did not open a link in time".into(),
                ))
            });
        self.attempts.fetch_add(1, Ordering::AcqRel);
        let (stream, already) = match opened {
            Ok(opened) => {
                *last_failure = None;
                opened
            }
            Err(failure) => {
                let outcome = match failure {
                    Failure::WrongNode(_) => "wrong_node",
                    _ => "failed",
                };
                metrics::counter!("room_forward_link_connects_total", "outcome" => outcome)
                    .increment(1);
                *last_failure = Some(failure.clone());
                return Err(failure);
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

    pub(super) fn open(&self) -> Option<Arc<Link>> {
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

/// Opens a connection to the node `peer` and upgrades it to a link: the stream, and what was
/// read past the owner's answer. The request names the node it is meant for, and the answer
/// must come from that node ([`Failure::WrongNode`] otherwise).
async fn handshake(peer: &Peer, token: &SecretString) -> Result<(TcpStream, Vec<u8>), Failure> {
    let url = &peer.url;
    let not_sent = Failure::NotSent;
    let parsed =
        reqwest::Url::parse(url).map_err(|e| not_sent(format!("bad owner URL {url:?}: {e}")))?;
    if parsed.scheme() != "http" {
        return Err(not_sent(format!("owner URL {url:?}: links need http://")));
    }
    let host = parsed
        .host_str()
        .ok_or_else(|| not_sent(format!("owner URL {url:?} has no host")))?;
    let port = parsed.port_or_known_default().unwrap_or(80);
    let mut stream = TcpStream::connect((host.trim_matches(['[', ']']), port))
        .await
        .map_err(|e| not_sent(format!("cannot reach the owner: {e}")))?;
    let _ = stream.set_nodelay(true);
    let request = format!(
        "GET {}{LINK_PATH} HTTP/1.1\r\nhost: {host}:{port}\r\nauthorization: Bearer {}\r\n\
         {NODE_HEADER}: {}\r\nconnection: upgrade\r\nupgrade: {LINK_PROTOCOL}\r\n\r\n",
        parsed.path().trim_end_matches('/'),
        token.expose_secret(),
        peer.node_id,
    );
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| not_sent(format!("cannot write to the owner: {e}")))?;
    let mut head = Vec::with_capacity(512);
    let end = loop {
        if let Some(at) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        if head.len() > MAX_HANDSHAKE {
            return Err(not_sent(
                "the owner's answer to the link request is too long".into(),
            ));
        }
        head.reserve(1024);
        if stream
            .read_buf(&mut head)
            .await
            .map_err(|e| not_sent(format!("cannot read the owner's answer: {e}")))?
            == 0
        {
            return Err(not_sent(
                "the owner closed the connection before it answered".into(),
            ));
        }
    };
    let text = String::from_utf8_lossy(&head[..end]);
    let mut lines = text.split("\r\n");
    let status = lines.next().unwrap_or_default().to_owned();
    let answering = lines.find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.trim()
            .eq_ignore_ascii_case(NODE_HEADER)
            .then(|| value.trim().to_owned())
    });
    if status.starts_with("HTTP/1.1 421") {
        return Err(Failure::WrongNode(format!(
            "the node at {url} is not {}",
            peer.node_id
        )));
    }
    if !status.starts_with("HTTP/1.1 101") {
        return Err(not_sent(format!("the owner refused the link: {status}")));
    }
    if answering.as_deref() != Some(peer.node_id.as_str()) {
        return Err(Failure::WrongNode(format!(
            "the node at {url} answered as {}, not {}",
            answering.as_deref().unwrap_or("no node"),
            peer.node_id
        )));
    }
    Ok((stream, head.split_off(end)))
}

/// A link of the forwarding node.
pub(super) struct Link {
    write: OwnedWriteHalf,
    unsent: Mutex<Unsent>,
    /// Wakes the flusher.
    flush: Notify,
    pub(super) waiting: Mutex<Waiting>,
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
pub(super) struct Waiting {
    pub(super) answers: HashMap<u64, oneshot::Sender<LinkAnswer>>,
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
