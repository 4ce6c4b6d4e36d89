//! Requests for rooms another node runs: routing by the room's lease, forwarding to the owner
//! through the [`Forwarder`](crate::ports::Forwarder) port, and the short-lived tables of
//! owners and members that spare the lookups.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use room_domain::{
    Actor, Command, CommandKind, GiftOrder, GiftScope, RoomId, RoomState, RoomStatus, UserId,
};

use super::registry::Inner;
use super::runtime::CellRuntime;
use crate::error::{Error, Result};
use crate::ports::{
    BatchStanding, CommandReply, ForwardedCommand, ForwarderRef, Membership, Peer, ReadKind,
};

impl CellRuntime {
    /// Applies `command` to its room as `actor`, on this node's cell of the room (activating
    /// it if needed) or, when another live node owns the room, on that node's cell
    /// ([`CellRuntime::forward_with`]). A request that finds ownership moved is routed once
    /// more, then answered [`Error::NotOwner`] (retryable). `order` is the gift order an
    /// `ApplyGift` applies: the commit records it APPLIED (or COMPLETED) in the same
    /// transaction. A forwarded gift order's apply may be answered with the gift's
    /// `RoomGiftSent` event only ([`Forwarder::execute`](crate::ports::Forwarder::execute)).
    pub async fn execute(
        &self,
        room_id: &RoomId,
        command: Command,
        actor: Actor,
        order: Option<GiftOrder>,
    ) -> Result<Arc<CommandReply>> {
        let Some(forwarder) = self.inner.forwarder.get() else {
            return self.execute_local(room_id, command, actor, order).await;
        };
        // A user's own command (leaving, say) may change where they stand: their next gift's
        // pre-check asks the owner again.
        if let Actor::User(user) = &actor
            && !matches!(command.kind, CommandKind::ApplyGift(_))
        {
            self.inner.forget_member(room_id, &user.user_id);
        }
        let request = ForwardedCommand {
            command,
            actor,
            order,
        };
        let mut answer = Err(Error::NotOwner(room_id.to_string()));
        for _ in 0..2 {
            answer = match self.route(room_id).await? {
                Route::Local => {
                    let request = request.clone();
                    self.execute_local(room_id, request.command, request.actor, request.order)
                        .await
                }
                Route::Remote(peer) => {
                    let answer = forwarder.execute(&peer, room_id, &request).await;
                    forwarded(&answer);
                    if let (Ok(reply), CommandKind::ApplyGift(gift)) =
                        (&answer, &request.command.kind)
                    {
                        // The room applies a gift only from a member of the open room: the
                        // owner's answer says where the sender stands, as a membership read
                        // would, and their next gift's pre-check needs no read.
                        self.inner.remember_member(
                            room_id,
                            &gift.sender,
                            Membership {
                                status: RoomStatus::Open,
                                member: true,
                                version: reply.version,
                            },
                        );
                    }
                    answer.map(Arc::new)
                }
            };
            if !matches!(answer, Err(Error::NotOwner(_))) {
                break;
            }
            self.inner.forget_owner(room_id);
        }
        answer
    }

    /// Where `user` stands in the room (status, membership, version), read as `kind` says
    /// (committed, as [`CellRuntime::query`], or newest, as [`CellRuntime::peek`]); from the
    /// owner when another live node runs the room, without shipping the room's state.
    pub async fn membership(
        &self,
        room_id: &RoomId,
        user: &UserId,
        kind: ReadKind,
    ) -> Result<Membership> {
        let local = || self.membership_local(room_id, user, kind);
        let remote = |forwarder: ForwarderRef, peer: Peer| async move {
            if kind == ReadKind::Newest
                && let Some(hint) = self.inner.member_hint(room_id, user)
            {
                return Ok(hint);
            }
            let answer = forwarder.membership(&peer, room_id, user, kind).await;
            forwarded(&answer);
            if kind == ReadKind::Newest
                && let Ok(membership) = &answer
            {
                self.inner.remember_member(room_id, user, *membership);
            }
            answer
        };
        self.routed(room_id, local, remote).await
    }

    /// Where a batch gift's `sender` stands in the room's newest state and at most `most`
    /// recipients of `scope` there ([`BatchStanding`]); from the owner when another live node
    /// runs the room, without shipping the room's state.
    pub async fn batch_standing(
        &self,
        room_id: &RoomId,
        sender: &UserId,
        scope: GiftScope,
        most: u32,
    ) -> Result<BatchStanding> {
        let local = || self.batch_standing_local(room_id, sender, scope, most);
        let remote = |forwarder: ForwarderRef, peer: Peer| async move {
            let answer = forwarder
                .batch_standing(&peer, room_id, sender, scope, most)
                .await;
            forwarded(&answer);
            answer
        };
        self.routed(room_id, local, remote).await
    }

    /// Answers a read of `room_id` here (`local`) or from its owner through the node's
    /// forwarder (`remote`), as the room's lease routes it (here when there is no forwarder);
    /// an answer that finds ownership moved is routed once more, then answered
    /// [`Error::NotOwner`] (retryable).
    async fn routed<T, L, LF, R, RF>(&self, room_id: &RoomId, local: L, remote: R) -> Result<T>
    where
        L: Fn() -> LF,
        LF: Future<Output = Result<T>>,
        R: Fn(ForwarderRef, Peer) -> RF,
        RF: Future<Output = Result<T>>,
    {
        let mut answer = Err(Error::NotOwner(room_id.to_string()));
        for _ in 0..2 {
            answer = match self.route(room_id).await? {
                Route::Local => local().await,
                Route::Remote(peer) => match self.inner.forwarder.get() {
                    Some(forwarder) => remote(forwarder.clone(), peer).await,
                    None => local().await,
                },
            };
            if !matches!(answer, Err(Error::NotOwner(_))) {
                break;
            }
            self.inner.forget_owner(room_id);
        }
        answer
    }

    /// [`CellRuntime::batch_standing`] on this node's cell (activating it if needed): what
    /// the internal endpoint answers other nodes. Never forwards.
    pub async fn batch_standing_local(
        &self,
        room_id: &RoomId,
        sender: &UserId,
        scope: GiftScope,
        most: u32,
    ) -> Result<BatchStanding> {
        let sender = sender.clone();
        self.read_here(
            room_id,
            move |state| BatchStanding::of(state, &sender, scope, most as usize),
            ReadKind::Newest,
        )
        .await
    }

    pub(super) async fn read<T, F>(&self, room_id: &RoomId, read: F, kind: ReadKind) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&RoomState) -> T + Send + 'static,
    {
        let Some(forwarder) = self.inner.forwarder.get() else {
            return self.read_here(room_id, read, kind).await;
        };
        // A local cell that stops before it runs the read leaves it here for the retry.
        let slot = Arc::new(Mutex::new(Some(read)));
        let take = |slot: &Mutex<Option<F>>| slot.lock().unwrap_or_else(|e| e.into_inner()).take();
        let mut answer = Err(Error::NotOwner(room_id.to_string()));
        for _ in 0..2 {
            answer = match self.route(room_id).await? {
                Route::Local => {
                    let shared = slot.clone();
                    self.read_here(
                        room_id,
                        move |state| take(&shared).map(|read| read(state)),
                        kind,
                    )
                    .await
                    .and_then(|ran| ran.ok_or_else(|| Error::NotOwner(room_id.to_string())))
                }
                Route::Remote(peer) => {
                    let state = forwarder.read(&peer, room_id, kind).await;
                    forwarded(&state);
                    match (state, take(&slot)) {
                        (Ok(state), Some(read)) => Ok(read(&state)),
                        (Ok(_), None) => Err(Error::NotOwner(room_id.to_string())),
                        (Err(error), read) => {
                            *slot.lock().unwrap_or_else(|e| e.into_inner()) = read;
                            Err(error)
                        }
                    }
                }
            };
            if !matches!(answer, Err(Error::NotOwner(_))) {
                break;
            }
            self.inner.forget_owner(room_id);
        }
        answer
    }

    /// Whether another live node runs `room_id` (never in embedded mode): background passes
    /// leave such a room's items to that node, which settles them with its own passes,
    /// rather than forwarding or taking the room.
    pub async fn owned_elsewhere(&self, room_id: &RoomId) -> Result<bool> {
        Ok(matches!(self.route(room_id).await?, Route::Remote(_)))
    }

    /// Whether a background pass of this node leaves an item of `room_id` to the node that
    /// runs the room ([`CellRuntime::owned_elsewhere`]), rather than sending the item's
    /// command there: always `false` with
    /// [`CellConfig::background_forwards`](crate::CellConfig::background_forwards).
    pub async fn leaves_to_owner(&self, room_id: &RoomId) -> Result<bool> {
        if self.inner.config.background_own_rooms_only {
            return Ok(!self.is_active(room_id));
        }
        if self.inner.config.background_forwards {
            return Ok(false);
        }
        self.owned_elsewhere(room_id).await
    }

    /// Where a request for `room_id` goes: this node's cell when it has one, when no other
    /// node holds the room's lease, or when forwarding is off; else the holder's endpoint. A
    /// holder whose registration has expired is not live, and its lease expires within one
    /// TTL: until then the room is [`Error::NotOwner`] (retryable).
    async fn route(&self, room_id: &RoomId) -> Result<Route> {
        if self.inner.forwarder.get().is_none() || self.is_active(room_id) {
            return Ok(Route::Local);
        }
        if let Some(peer) = self.inner.known_owner(room_id) {
            return Ok(Route::Remote(peer));
        }
        match self.inner.deps.lease.get_holder(room_id).await? {
            Some(holder) if holder.node_id != self.inner.config.node_id => match holder.url {
                Some(url) => {
                    let peer = Peer {
                        node_id: holder.node_id,
                        url,
                    };
                    self.inner.remember_owner(room_id, &peer);
                    Ok(Route::Remote(peer))
                }
                None => Err(Error::NotOwner(room_id.to_string())),
            },
            _ => Ok(Route::Local),
        }
    }
}

/// How long a looked-up owner of a room is trusted without asking the lease again. A stale
/// entry costs one answer `NotOwner` from the old owner, after which the room is looked up
/// afresh: routing is liveness only, the epoch keeps the writes right.
const OWNER_CACHE_FOR: Duration = Duration::from_secs(1);

/// How long a node answers a newest-state membership read of a room another node runs from
/// the owner's last answer that the user is a member of the open room (to a membership read,
/// or the last gift of theirs it applied, which only a member of the open room can give): a
/// gift's pre-check, which the room makes again when it applies the gift. A member who left
/// meanwhile (on another node, or through this one while a gift of theirs was being applied:
/// their own commands through this node forget the hint) has their gift debited, refused by
/// the room and refunded, where a fresh read would have refused it before the debit. Only
/// that answer is kept; any other is asked every time.
pub const MEMBER_HINT_FOR: Duration = Duration::from_secs(1);

/// The most (room, user) pairs remembered as members; past it the table starts over.
const MEMBER_HINTS: usize = 100_000;

/// The most rooms whose owner is remembered; past it the table starts over. Only rooms that
/// exist get there (use cases check a room is known before they reach the runtime).
const OWNER_CACHE_ROOMS: usize = 100_000;

impl Inner {
    fn lock_owners(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<RoomId, (Peer, tokio::time::Instant)>> {
        self.owners.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn known_owner(&self, room_id: &RoomId) -> Option<Peer> {
        self.lock_owners()
            .get(room_id)
            .filter(|(_, since)| since.elapsed() < OWNER_CACHE_FOR)
            .map(|(peer, _)| peer.clone())
    }

    fn remember_owner(&self, room_id: &RoomId, peer: &Peer) {
        let mut owners = self.lock_owners();
        if owners.len() >= OWNER_CACHE_ROOMS {
            owners.clear();
        }
        owners.insert(room_id.clone(), (peer.clone(), tokio::time::Instant::now()));
    }

    fn forget_owner(&self, room_id: &RoomId) {
        self.lock_owners().remove(room_id);
    }

    fn lock_member_hints(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<(RoomId, UserId), (Membership, tokio::time::Instant)>>
    {
        self.member_hints.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn member_hint(&self, room_id: &RoomId, user: &UserId) -> Option<Membership> {
        self.lock_member_hints()
            .get(&(room_id.clone(), user.clone()))
            .filter(|(_, since)| since.elapsed() < MEMBER_HINT_FOR)
            .map(|(membership, _)| *membership)
    }

    fn remember_member(&self, room_id: &RoomId, user: &UserId, membership: Membership) {
        let key = (room_id.clone(), user.clone());
        let mut hints = self.lock_member_hints();
        if !(membership.member && membership.status == RoomStatus::Open) {
            hints.remove(&key);
            return;
        }
        if hints.len() >= MEMBER_HINTS {
            hints.clear();
        }
        hints.insert(key, (membership, tokio::time::Instant::now()));
    }

    fn forget_member(&self, room_id: &RoomId, user: &UserId) {
        self.lock_member_hints()
            .remove(&(room_id.clone(), user.clone()));
    }
}

/// Where [`CellRuntime::route`] sends a request.
enum Route {
    /// This node's cell.
    Local,
    /// The owner, at its internal endpoint.
    Remote(Peer),
}

/// Counts a forwarded request by outcome.
fn forwarded<T>(answer: &Result<T>) {
    let outcome = match answer {
        Ok(_) => "ok",
        Err(Error::NotOwner(_)) => "not_owner",
        Err(error) if error.is_retryable() => "unavailable",
        Err(_) => "refused",
    };
    metrics::counter!("room_forwarded_requests_total", "outcome" => outcome).increment(1);
}
