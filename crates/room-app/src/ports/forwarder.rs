//! Forwarding ([`Forwarder`]): how a node reaches a room's cell on the node that owns it, and
//! what it sends and reads there.

use std::sync::Arc;

use async_trait::async_trait;
use room_domain::{Actor, Command, GiftOrder, GiftScope, RoomId, RoomState, UserId};
use serde::{Deserialize, Serialize};

use super::cell_store::CommandReply;
use crate::error::Result;

/// The node a forwarded request is for, as the lease registry names the room's holder: its
/// id and the URL of its internal endpoint. The request goes to the URL, and only the node of
/// that id may take it: a URL now served by another node (a stale registration, an address
/// reused) is refused by that node and by the sender alike.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Peer {
    /// The holder's node id.
    pub node_id: String,
    /// Its internal endpoint's base URL.
    pub url: String,
}

/// A command for a room whose cell runs on another node, as [`Forwarder::execute`] sends it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForwardedCommand {
    /// The command, with its id.
    pub command: Command,
    /// Who issued it (already authenticated by the node that received it).
    pub actor: Actor,
    /// The gift order an `ApplyGift` applies.
    pub order: Option<GiftOrder>,
}

/// Which state of a room [`Forwarder::read`] asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadKind {
    /// What storage holds ([`CellRuntime::query`](crate::CellRuntime::query)).
    Committed,
    /// The newest state, which may hold a batch in flight
    /// ([`CellRuntime::peek`](crate::CellRuntime::peek)).
    Newest,
}

/// Where a user stands in a room, as [`Forwarder::membership`] answers it: the few facts the
/// hottest checks need (a gift's pre-check, a heartbeat, an event stream's membership), so
/// that they do not ship the whole room between nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Membership {
    /// The room's status.
    pub status: room_domain::RoomStatus,
    /// Whether the user is a member.
    pub member: bool,
    /// The room's version.
    pub version: u64,
}

/// Where a batch gift's sender stands in a room and whom its scope names there, as
/// [`Forwarder::batch_standing`] answers it: what a batch gift's pre-check needs, without the
/// whole room.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchStanding {
    /// The room's status.
    pub status: room_domain::RoomStatus,
    /// Whether the sender is a member.
    pub member: bool,
    /// Whom the scope names ([`RoomState::batch_recipients`]), at most as many as asked.
    pub recipients: Vec<UserId>,
}

impl BatchStanding {
    /// `sender`'s standing in `state` and at most `most` recipients of `scope`.
    pub fn of(state: &RoomState, sender: &UserId, scope: GiftScope, most: usize) -> Self {
        BatchStanding {
            status: state.status,
            member: state.members.contains_key(sender),
            recipients: state.batch_recipients(scope, sender, most),
        }
    }
}

/// Reaches a room's cell on the node that owns it, through that node's internal endpoint
/// (the URL the node registered with its lease), checking that the node answering is that
/// node ([`Peer`]). The owner runs the request on its own cell
/// and never forwards it again: a node that does not own the room answers
/// [`Error::NotOwner`](crate::Error::NotOwner), and the sender looks the owner up once more.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait Forwarder: Send + Sync {
    /// Has the node `peer` apply `command` to its cell of `room_id`. The reply to a gift
    /// order's own apply ([`crate::gift_apply_command`] by the system, with its `order`) may
    /// hold only the gift's `RoomGiftSent` event of the events it produced: all the saga
    /// reads of it.
    async fn execute(
        &self,
        peer: &Peer,
        room_id: &RoomId,
        command: &ForwardedCommand,
    ) -> Result<CommandReply>;
    /// The state of `room_id` as the node `peer` holds it.
    async fn read(&self, peer: &Peer, room_id: &RoomId, kind: ReadKind) -> Result<RoomState>;
    /// Where `user` stands in `room_id` on the node `peer`.
    async fn membership(
        &self,
        peer: &Peer,
        room_id: &RoomId,
        user: &UserId,
        kind: ReadKind,
    ) -> Result<Membership>;
    /// Where a batch gift's `sender` stands in `room_id`'s newest state on the node `peer`,
    /// and at most `most` recipients of `scope` there. By default the whole state is read
    /// ([`Forwarder::read`]) and resolved here; a forwarder that can ask the owner for the
    /// answer alone does so.
    async fn batch_standing(
        &self,
        peer: &Peer,
        room_id: &RoomId,
        sender: &UserId,
        scope: GiftScope,
        most: u32,
    ) -> Result<BatchStanding> {
        let state = self.read(peer, room_id, ReadKind::Newest).await?;
        Ok(BatchStanding::of(&state, sender, scope, most as usize))
    }
}

/// Shared handle to a [`Forwarder`].
pub type ForwarderRef = Arc<dyn Forwarder>;
