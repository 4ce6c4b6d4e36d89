//! The owner's side of a link: [`serve`] runs the requests that arrive over one link side by
//! side and answers each as soon as it ends; [`LinkTasks`] bounds the links a node serves and
//! tracks their tasks.

use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::{FuturesUnordered, StreamExt};
use futures_util::{FutureExt, future::BoxFuture};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use super::protocol::{
    ForwardAnswer, FrameReader, LINK_IN_FLIGHT, LinkAnswer, LinkItem, MAX_ANSWER_FRAME, MAX_FRAME,
    MAX_UNSENT, frame,
};
use crate::serve::GaugeUp;

/// An owner closes a link on which nothing arrived and nothing ran this long (the forwarding
/// node closes an idle link itself, sooner; this ends links whose peer vanished).
const SERVER_IDLE: Duration = Duration::from_secs(120);

/// How long a stopping owner gives a link to answer what runs on it; then it closes it
/// (those requests' outcomes stay unknown to the forwarding node).
pub(super) const DRAIN_LIMIT: Duration = Duration::from_secs(10);

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
