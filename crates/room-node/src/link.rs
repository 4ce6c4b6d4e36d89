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
//! side as they arrive, at most [`LINK_IN_FLIGHT`](protocol::LINK_IN_FLIGHT) at once per link (beyond, it reads no more
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

mod forward;
mod owner;
mod protocol;
#[cfg(test)]
mod tests;

pub(crate) use forward::{Failure, Links};
pub(crate) use owner::serve;
pub use owner::{LinkTasks, MAX_LINKS};
pub use protocol::{
    ForwardAnswer, LINK_PATH, LINK_PROTOCOL, LinkAnswer, LinkItem, MAX_FRAME, NODE_HEADER,
};
