//! The link protocol: the route and the `Upgrade` name, the requests ([`LinkItem`]) and answers
//! ([`LinkAnswer`], [`ForwardAnswer`]) it carries, their frames (`[length: u32][id: u64][JSON]`,
//! big-endian) and the bounds both sides keep.

use std::io;

use room_app::RemoteError;
use room_domain::RoomId;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::config::MAX_BODY_BYTES;

/// The path of the link route, under the internal prefix.
pub const LINK_PATH: &str = "/internal/v1/link";

/// The header of an internal request (a link's upgrade request included) that names the node
/// it is meant for, and of an internal answer that names the node that gives it.
pub const NODE_HEADER: &str = "room-node";

/// The protocol name of the `Upgrade` header.
pub const LINK_PROTOCOL: &str = "room-link/1";

/// The most bytes of a request's frame after its length: the id and a request as large as a
/// request body may be.
pub const MAX_FRAME: usize = 8 + MAX_BODY_BYTES;

/// The most bytes of an answer's frame after its length (a command's reply holds all its
/// events).
pub(super) const MAX_ANSWER_FRAME: usize = 32 << 20;

/// The most requests one link has under way at once, on either side: beyond, a forwarding
/// node refuses a request at once (it is not sent), and an owner reads no more frames until
/// one of its requests ends.
pub const LINK_IN_FLIGHT: usize = 4_096;

/// The most bytes a forwarding node keeps for a link whose socket does not take them (beyond,
/// a request is refused at once: it is not sent), and the most answers' bytes an owner keeps
/// before it reads no more requests from a link that does not take them.
pub(super) const MAX_UNSENT: usize = 4 << 20;

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
    /// Where a batch gift's sender stands in the room, and whom its scope names there.
    BatchStanding {
        /// The room.
        room_id: String,
        /// The sender.
        sender: String,
        /// The batch gift's scope.
        scope: room_domain::GiftScope,
        /// The most recipients wanted.
        most: u32,
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
    /// The answer to [`LinkItem::BatchStanding`].
    BatchStanding(ForwardAnswer<room_app::ports::BatchStanding>),
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

/// Writes `payload` as a frame numbered `id` (see the module), at most `max` bytes after its
/// length.
pub(super) fn frame(id: u64, payload: &impl Serialize, max: usize) -> io::Result<Vec<u8>> {
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
pub(super) fn set_id(frame: &mut [u8], id: u64) {
    frame[4..12].copy_from_slice(&id.to_be_bytes());
}

/// Reads frames from a byte stream.
pub(super) struct FrameReader<R> {
    inner: R,
    /// The most bytes of a frame after its length.
    max: usize,
    /// Bytes read and not yet handed out, from `start`.
    buf: Vec<u8>,
    start: usize,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    pub(super) fn new(inner: R, max: usize, already: Vec<u8>) -> Self {
        FrameReader {
            inner,
            max,
            buf: already,
            start: 0,
        }
    }

    /// A whole frame among the bytes already read: its id and payload.
    pub(super) fn buffered(&mut self) -> io::Result<Option<(u64, Vec<u8>)>> {
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
    pub(super) async fn next(&mut self) -> io::Result<Option<(u64, Vec<u8>)>> {
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
