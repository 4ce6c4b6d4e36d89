//! The Room Cell runtime: one tokio task per active room, the only writer of that room.
//!
//! A cell drains up to `max_batch` queued commands, decides and evolves each in memory, commits
//! them all in ONE storage transaction conditional on its epoch and version (group commit),
//! then answers every caller and hands display events to the messenger. A rejected command
//! costs no write. A failed epoch check or a lost lease stops the cell; its queued commands
//! fail with the retryable [`Error::NotOwner`].

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use room_domain::{
    Actor, Coins, Command, CommandId, CommandKind, Ctx, DayKey, Event, EventEnvelope, GiftOrder,
    MicChange, RoomId, RoomRules, RoomState, RoomStatus, SagaOutcome, Snapshot, Timestamp, UserId,
    decide, evolve,
};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::ports::{
    CellStoreRef, ClockRef, CommandRecord, CommandReply, CommitBatch, CreditKind, DisplayMessage,
    ForwardedCommand, ForwarderRef, IdGenRef, LeaseRef, Membership, MessengerRef, Payout,
    PresenceRef, ReadKind, RoomSummary, SnapshotStoreRef, StoredEvent, Timer,
};
use crate::{Error, Result};

/// Tuning of the Room Cell runtime.
#[derive(Debug, Clone)]
pub struct CellConfig {
    /// This node's id, recorded as the owner on activation.
    pub node_id: String,
    /// Queued requests per room; a full mailbox answers [`Error::Overloaded`] at once.
    pub mailbox: usize,
    /// Most commands per group commit (1 turns group commit off).
    pub max_batch: usize,
    /// A snapshot is written after this many events (and on orderly deactivation).
    pub snapshot_every: u64,
    /// A cell with no request for this long deactivates.
    pub idle_after: Duration,
    /// How often the keeper renews the leases of this node's active rooms, all in one call
    /// (a third of the lease's TTL).
    pub lease_renew_every: Duration,
    /// Command ids remembered per cell for idempotent answers without a storage read.
    pub recent_commands: usize,
    /// The most bytes (estimated) the replies remembered per cell may take; the oldest are
    /// forgotten first. A repeat of a forgotten command is answered from the log.
    pub recent_commands_bytes: usize,
    /// The room rules.
    pub rules: Arc<RoomRules>,
    /// Whether this node's background passes reach every room: items of rooms another node
    /// runs are forwarded to it. Off (the default), every node runs its own passes and
    /// leaves such items to the owner's; on for the one process that runs the passes for a
    /// cluster whose API nodes do not (`room-worker`).
    pub background_forwards: bool,
    /// Whether this node's background passes settle only the items of rooms it runs itself,
    /// leaving every other room's to other nodes: a robot orchestrator, which runs robot
    /// rooms and no other. Off by default.
    pub background_own_rooms_only: bool,
    /// The robot id prefix, on nodes that do not run robot rooms (clustered API nodes and
    /// workers): a room owned by a robot that such a node activates (a person's request while
    /// no orchestrator holds it, the room's creation) goes idle a second after its last
    /// request instead of [`CellConfig::idle_after`], releasing its lease, so that an
    /// orchestrator takes it at its next round. `None`: this node keeps robot rooms like any
    /// other (embedded mode, orchestrators).
    pub release_robot_rooms: Option<String>,
}

impl Default for CellConfig {
    fn default() -> Self {
        CellConfig {
            node_id: "local".into(),
            mailbox: 1024,
            max_batch: 256,
            snapshot_every: 1000,
            idle_after: Duration::from_secs(300),
            lease_renew_every: Duration::from_secs(3),
            recent_commands: 4096,
            recent_commands_bytes: 256 * 1024,
            rules: Arc::new(RoomRules::default()),
            background_forwards: false,
            background_own_rooms_only: false,
            release_robot_rooms: None,
        }
    }
}

/// What the runtime needs from outside.
#[derive(Clone)]
pub struct CellDeps {
    /// The command log.
    pub store: CellStoreRef,
    /// Snapshots.
    pub snapshots: SnapshotStoreRef,
    /// Room ownership.
    pub lease: LeaseRef,
    /// Display events.
    pub messenger: MessengerRef,
    /// Time.
    pub clock: ClockRef,
    /// Random values.
    pub ids: IdGenRef,
}

/// What an active cell keeps in memory to answer repeated commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecentReplies {
    /// Replies remembered.
    pub count: usize,
    /// Their estimated size in bytes, within [`CellConfig::recent_commands_bytes`].
    pub bytes: usize,
}

type Query = Box<dyn FnOnce(&RoomState) + Send>;

enum Request {
    Command(Box<CommandRequest>),
    /// Reads what storage holds: waits for a commit in flight.
    Query(Query),
    /// Reads the newest state, which may hold a batch whose commit is in flight.
    Peek(Query),
    /// Reads what the cell remembers of recent commands.
    Recent(oneshot::Sender<RecentReplies>),
}

struct CommandRequest {
    command: Command,
    actor: Actor,
    order: Option<GiftOrder>,
    reply: oneshot::Sender<Result<Arc<CommandReply>>>,
}

struct CellEntry {
    id: u64,
    tx: mpsc::Sender<Request>,
    control: Arc<CellControl>,
}

/// What the keeper shares with one cell.
#[derive(Default)]
struct CellControl {
    /// Set once the cell holds its lease and has activated: only such cells are renewed, so a
    /// cell still acquiring is not taken for one that lost its lease.
    active: std::sync::atomic::AtomicBool,
    /// Cancelled by the keeper when the lease is lost: the cell stops as fenced.
    fence: CancellationToken,
    /// Cancelled to have the cell stop in order, as when idle ([`CellRuntime::release`]).
    release: CancellationToken,
}

/// This node's cell of a room, as [`CellRuntime::activate_here`] started it. What is sent
/// through it reaches that cell only: never a later cell of the room, never another node.
/// Once the cell stops (its lease lost, idle, released, the node stopping), every request
/// through it is answered [`Error::NotOwner`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldCell {
    room_id: RoomId,
    id: u64,
}

impl HeldCell {
    /// The room.
    pub fn room_id(&self) -> &RoomId {
        &self.room_id
    }
}

/// What one keeper tick did ([`CellRuntime::renew_leases`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeeperTick {
    /// Active rooms whose lease was renewed.
    pub renewed: usize,
    /// Active rooms whose lease was lost (expired, taken, or the renewal failed): their cells
    /// were told to stop.
    pub lost: usize,
}

struct Inner {
    deps: CellDeps,
    config: CellConfig,
    presence: std::sync::OnceLock<PresenceRef>,
    forwarder: std::sync::OnceLock<ForwarderRef>,
    /// Rooms other nodes run, as lately looked up: room -> (the owner's URL, when looked up).
    owners: Mutex<HashMap<RoomId, (String, tokio::time::Instant)>>,
    /// Members of open rooms other nodes run, as their owners lately answered a newest-state
    /// membership read or applied a gift of theirs: (room, user) -> (the answer, when). See
    /// [`MEMBER_HINT_FOR`].
    member_hints: Mutex<HashMap<(RoomId, UserId), (Membership, tokio::time::Instant)>>,
    cells: Mutex<HashMap<RoomId, CellEntry>>,
    /// Cells that left the registry and are still stopping (draining, writing their snapshot,
    /// releasing the lease), by room: a new cell of the room waits for the old one's release,
    /// which would otherwise delete the lease the new cell just took (same node, same holder).
    stopping: Mutex<HashMap<RoomId, (u64, CancellationToken)>>,
    next_cell_id: AtomicU64,
    tracker: TaskTracker,
    cancel: CancellationToken,
}

/// The registry of active Room Cells on this node. Cheap to clone.
#[derive(Clone)]
pub struct CellRuntime {
    inner: Arc<Inner>,
}

impl CellRuntime {
    /// A runtime whose cells stop when `cancel` is cancelled.
    ///
    /// Starts the node's lease keeper, so it must be called within a tokio runtime.
    pub fn new(deps: CellDeps, config: CellConfig, cancel: CancellationToken) -> Self {
        let runtime = CellRuntime {
            inner: Arc::new(Inner {
                deps,
                config,
                presence: std::sync::OnceLock::new(),
                forwarder: std::sync::OnceLock::new(),
                owners: Mutex::new(HashMap::new()),
                member_hints: Mutex::new(HashMap::new()),
                cells: Mutex::new(HashMap::new()),
                stopping: Mutex::new(HashMap::new()),
                next_cell_id: AtomicU64::new(1),
                tracker: TaskTracker::new(),
                cancel,
            }),
        };
        runtime.spawn_keeper();
        runtime
    }

    /// Has every room loaded from storage restore its members into `presence`, so that members
    /// whose clients went away while the room was not loaded are evicted too. Set once.
    pub fn restore_presence_into(&self, presence: PresenceRef) {
        let _ = self.inner.presence.set(presence);
    }

    /// The rules cells decide with.
    pub fn rules(&self) -> &Arc<RoomRules> {
        &self.inner.config.rules
    }

    /// The lease the runtime holds its rooms with.
    pub fn lease(&self) -> &LeaseRef {
        &self.inner.deps.lease
    }

    /// Sends requests for rooms that another live node owns to that node through `forwarder`
    /// (several nodes); without one, every room is this node's to run (embedded mode). Set
    /// once.
    pub fn forward_with(&self, forwarder: ForwarderRef) {
        let _ = self.inner.forwarder.set(forwarder);
    }

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
                Route::Remote(url) => {
                    let answer = forwarder.execute(&url, room_id, &request).await;
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

    /// Applies `command` on this node's cell of the room, activating it if needed (the
    /// internal endpoint that forwarded requests reach): never forwards.
    pub async fn execute_local(
        &self,
        room_id: &RoomId,
        command: Command,
        actor: Actor,
        order: Option<GiftOrder>,
    ) -> Result<Arc<CommandReply>> {
        let (reply, answer) = oneshot::channel();
        self.send(
            room_id,
            Request::Command(Box::new(CommandRequest {
                command,
                actor,
                order,
                reply,
            })),
        )?;
        // A cell that stops without answering lost the room: the caller may retry.
        answer
            .await
            .unwrap_or_else(|_| Err(Error::NotOwner(room_id.to_string())))
    }

    /// Runs `read` on the room's state and returns the result. The state is what storage
    /// holds: a query that arrives during a commit waits for it to end. When another live node
    /// owns the room, its state comes from that node.
    pub async fn query<T, F>(&self, room_id: &RoomId, read: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&RoomState) -> T + Send + 'static,
    {
        self.read(room_id, read, ReadKind::Committed).await
    }

    /// Like [`CellRuntime::query`], but answered at once from the newest state, which may
    /// hold a batch whose commit is still in flight (and could yet fail). Only for checks
    /// the room makes again when it decides, such as a gift's pre-check.
    pub async fn peek<T, F>(&self, room_id: &RoomId, read: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&RoomState) -> T + Send + 'static,
    {
        self.read(room_id, read, ReadKind::Newest).await
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
        let Some(forwarder) = self.inner.forwarder.get() else {
            return self.membership_local(room_id, user, kind).await;
        };
        let mut answer = Err(Error::NotOwner(room_id.to_string()));
        for _ in 0..2 {
            answer = match self.route(room_id).await? {
                Route::Local => self.membership_local(room_id, user, kind).await,
                Route::Remote(url) => {
                    if kind == ReadKind::Newest
                        && let Some(hint) = self.inner.member_hint(room_id, user)
                    {
                        return Ok(hint);
                    }
                    let answer = forwarder.membership(&url, room_id, user, kind).await;
                    forwarded(&answer);
                    if kind == ReadKind::Newest
                        && let Ok(membership) = &answer
                    {
                        self.inner.remember_member(room_id, user, *membership);
                    }
                    answer
                }
            };
            if !matches!(answer, Err(Error::NotOwner(_))) {
                break;
            }
            self.inner.forget_owner(room_id);
        }
        answer
    }

    /// [`CellRuntime::membership`] on this node's cell (activating it if needed): what the
    /// internal endpoint answers other nodes. Never forwards.
    pub async fn membership_local(
        &self,
        room_id: &RoomId,
        user: &UserId,
        kind: ReadKind,
    ) -> Result<Membership> {
        let user = user.clone();
        self.read_here(
            room_id,
            move |state| Membership {
                status: state.status,
                member: state.members.contains_key(&user),
                version: state.version,
            },
            kind,
        )
        .await
    }

    /// A copy of the room's state on this node's cell (activating it if needed), as
    /// [`CellRuntime::query`] or [`CellRuntime::peek`] see it: what the internal endpoint
    /// answers other nodes. Never forwards.
    pub async fn read_local(&self, room_id: &RoomId, kind: ReadKind) -> Result<RoomState> {
        self.read_here(room_id, RoomState::clone, kind).await
    }

    async fn read<T, F>(&self, room_id: &RoomId, read: F, kind: ReadKind) -> Result<T>
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
                Route::Remote(url) => {
                    let state = forwarder.read(&url, room_id, kind).await;
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

    async fn read_here<T, F>(&self, room_id: &RoomId, read: F, kind: ReadKind) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&RoomState) -> T + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let query: Query = Box::new(move |state| {
            let _ = reply.send(read(state));
        });
        let request = match kind {
            ReadKind::Committed => Request::Query(query),
            ReadKind::Newest => Request::Peek(query),
        };
        self.send(room_id, request)?;
        answer
            .await
            .map_err(|_| Error::NotOwner(room_id.to_string()))
    }

    /// Whether another live node runs `room_id` (never in embedded mode): background passes
    /// leave such a room's items to that node, which settles them with its own passes,
    /// rather than forwarding or taking the room.
    pub async fn owned_elsewhere(&self, room_id: &RoomId) -> Result<bool> {
        Ok(matches!(self.route(room_id).await?, Route::Remote(_)))
    }

    /// Whether a background pass of this node leaves an item of `room_id` to the node that
    /// runs the room ([`CellRuntime::owned_elsewhere`]), rather than sending the item's
    /// command there: always `false` with [`CellConfig::background_forwards`].
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
        if let Some(url) = self.inner.known_owner(room_id) {
            return Ok(Route::Remote(url));
        }
        match self.inner.deps.lease.get_holder(room_id).await? {
            Some(holder) if holder.node_id != self.inner.config.node_id => match holder.url {
                Some(url) => {
                    self.inner.remember_owner(room_id, &url);
                    Ok(Route::Remote(url))
                }
                None => Err(Error::NotOwner(room_id.to_string())),
            },
            _ => Ok(Route::Local),
        }
    }

    /// The display events of `room_id` with `after < seq <= up_to`, in seq order, as the
    /// messenger got them when they were committed (redacted): what a watcher that reconnects
    /// missed. Read from the log, so it holds whichever node ran the room; at most
    /// `up_to - after` events are read. `up_to` is at most the room's committed version.
    ///
    /// `None` when the log no longer holds every event after `after` up to `up_to`: it was
    /// pruned behind a snapshot ([`CellStore::prune_log`]), so the first event it holds comes
    /// after `after + 1` (or there is none). The watcher then reads the room again (an event
    /// stream's `resync`) instead of being sent a replay with a hole in it.
    ///
    /// [`CellStore::prune_log`]: crate::ports::CellStore::prune_log
    pub async fn missed_events(
        &self,
        room_id: &RoomId,
        after: u64,
        up_to: u64,
    ) -> Result<Option<Vec<DisplayMessage>>> {
        const PAGE: u64 = 1000;
        let mut display = Vec::new();
        let mut seen = after;
        while seen < up_to {
            let limit = (up_to - seen).min(PAGE) as u32;
            let events = self
                .inner
                .deps
                .store
                .list_events(room_id, seen, limit)
                .await?;
            if events.is_empty() {
                // Events up to `up_to` were committed: none left means they were pruned.
                metrics::counter!("room_replay_gaps_total").increment(1);
                return Ok(None);
            }
            // At most `up_to - seen` events were asked for: without a gap, they all come at or
            // before `up_to`.
            for stored in &events {
                if stored.seq != seen + 1 {
                    metrics::counter!("room_replay_gaps_total").increment(1);
                    return Ok(None);
                }
                seen = stored.seq;
                display.extend(display_message(room_id, stored));
            }
        }
        Ok(Some(display))
    }

    /// What the room's cell remembers of recent commands (activating it if needed).
    pub async fn recent_replies(&self, room_id: &RoomId) -> Result<RecentReplies> {
        let (reply, answer) = oneshot::channel();
        self.send(room_id, Request::Recent(reply))?;
        answer
            .await
            .map_err(|_| Error::NotOwner(room_id.to_string()))
    }

    /// Whether the room has an active cell on this node.
    pub fn is_active(&self, room_id: &RoomId) -> bool {
        self.inner.lock_cells().contains_key(room_id)
    }

    /// The id of the node running the room's cell: this node when the cell is active here,
    /// else the holder of the room's lease ([`Lease::get_holder`](crate::ports::Lease)), if
    /// any. `None` when no node runs the room. Reads only: activates nothing.
    pub async fn running_on(&self, room_id: &RoomId) -> Result<Option<String>> {
        if self.is_active(room_id) {
            return Ok(Some(self.inner.config.node_id.clone()));
        }
        Ok(self
            .inner
            .deps
            .lease
            .get_holder(room_id)
            .await?
            .map(|holder| holder.node_id))
    }

    /// Rooms with an active cell on this node.
    pub fn active_rooms(&self) -> usize {
        self.inner.lock_cells().len()
    }

    /// Stops intake and waits until every cell has drained its queue, written its snapshot and
    /// released its lease.
    pub async fn shutdown(&self) {
        self.inner.cancel.cancel();
        self.inner.tracker.close();
        self.inner.tracker.wait().await;
    }

    /// One keeper tick: renews the leases of every active room of this node (and the node's
    /// registration) in one call to the lease backend, and stops at once, as fenced, every
    /// cell whose lease was not renewed. A failed renewal loses them all: a cell must not
    /// run on a lease it cannot show, and the epoch fences whatever it had in flight.
    pub async fn renew_leases(&self) -> KeeperTick {
        let (rooms, controls): (Vec<RoomId>, Vec<Arc<CellControl>>) = self
            .inner
            .lock_cells()
            .iter()
            .filter(|(_, entry)| entry.control.active.load(Ordering::Acquire))
            .map(|(room, entry)| (room.clone(), entry.control.clone()))
            .unzip();
        let held = match self.inner.deps.lease.renew_all(&rooms).await {
            Ok(held) if held.len() == rooms.len() => held,
            Ok(held) => {
                tracing::error!(
                    rooms = rooms.len(),
                    answers = held.len(),
                    "the lease backend answered a renewal for another number of rooms"
                );
                vec![false; rooms.len()]
            }
            Err(error) => {
                metrics::counter!("room_lease_renewal_failures_total").increment(1);
                tracing::warn!(error = %error, rooms = rooms.len(), "lease renewal failed; stopping this node's cells");
                vec![false; rooms.len()]
            }
        };
        let mut tick = KeeperTick::default();
        for ((room, control), held) in rooms.iter().zip(&controls).zip(held) {
            if held {
                tick.renewed += 1;
            } else {
                tick.lost += 1;
                tracing::warn!(room_id = %room, "lost the room lease; stopping the cell");
                control.fence.cancel();
            }
        }
        metrics::counter!("room_lease_renewals_total").increment(tick.renewed as u64);
        metrics::counter!("room_leases_lost_total").increment(tick.lost as u64);
        tick
    }

    /// Renews this node's leases every [`CellConfig::lease_renew_every`] until the runtime
    /// stops ([`CellRuntime::renew_leases`]).
    fn spawn_keeper(&self) {
        let runtime = self.clone();
        let every = self
            .inner
            .config
            .lease_renew_every
            .max(Duration::from_millis(10));
        let cancel = self.inner.cancel.clone();
        self.inner.tracker.spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticks.tick().await;
            loop {
                tokio::select! {
                    () = cancel.cancelled() => break,
                    _ = ticks.tick() => {
                        let started = Instant::now();
                        runtime.renew_leases().await;
                        metrics::histogram!("room_lease_renewal_seconds")
                            .record(started.elapsed().as_secs_f64());
                    }
                }
            }
        });
    }

    /// Activates the room on this node, never forwarding: the cell takes the room's lease
    /// and loads the room, and once it has, the room is held here until the cell stops
    /// ([`HeldCell`]). An active cell of the room is taken as it is. [`Error::NotOwner`] when
    /// another node holds the lease or the cell stopped before it was active.
    pub async fn activate_here(&self, room_id: &RoomId) -> Result<HeldCell> {
        let (reply, answer) = oneshot::channel();
        let id = self.send(
            room_id,
            Request::Query(Box::new(move |_| {
                let _ = reply.send(());
            })),
        )?;
        answer
            .await
            .map_err(|_| Error::NotOwner(room_id.to_string()))?;
        let held = HeldCell {
            room_id: room_id.clone(),
            id,
        };
        // A cell that was already stopping answered from its drain: it holds nothing.
        if !self.holds(&held) {
            return Err(Error::NotOwner(room_id.to_string()));
        }
        Ok(held)
    }

    /// Whether the cell `held` still runs.
    pub fn holds(&self, held: &HeldCell) -> bool {
        self.held_sender(held).is_some()
    }

    /// Applies `command` as `actor` on the cell `held`, and only there: [`Error::NotOwner`]
    /// once it stopped.
    pub async fn execute_on(
        &self,
        held: &HeldCell,
        command: Command,
        actor: Actor,
    ) -> Result<Arc<CommandReply>> {
        let (reply, answer) = oneshot::channel();
        self.send_held(
            held,
            Request::Command(Box::new(CommandRequest {
                command,
                actor,
                order: None,
                reply,
            })),
        )?;
        answer
            .await
            .unwrap_or_else(|_| Err(Error::NotOwner(held.room_id.to_string())))
    }

    /// Runs `read` on the committed state of the cell `held`, as [`CellRuntime::query`]
    /// does, and only there: [`Error::NotOwner`] once it stopped.
    pub async fn query_on<T, F>(&self, held: &HeldCell, read: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&RoomState) -> T + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        self.send_held(
            held,
            Request::Query(Box::new(move |state| {
                let _ = reply.send(read(state));
            })),
        )?;
        answer
            .await
            .map_err(|_| Error::NotOwner(held.room_id.to_string()))
    }

    /// Has the cell `held` stop in order, as an idle one does: it answers what is queued,
    /// writes its snapshot and releases the room's lease, so that another node may take the
    /// room at once.
    pub fn release(&self, held: &HeldCell) {
        if let Some(entry) = self.inner.lock_cells().get(&held.room_id)
            && entry.id == held.id
        {
            entry.control.release.cancel();
        }
    }

    /// Has this node's cell of `room_id`, if it has one, stop in order as
    /// [`CellRuntime::release`] does.
    pub fn release_room(&self, room_id: &RoomId) {
        if let Some(entry) = self.inner.lock_cells().get(room_id) {
            entry.control.release.cancel();
        }
    }

    fn held_sender(&self, held: &HeldCell) -> Option<mpsc::Sender<Request>> {
        let cells = self.inner.lock_cells();
        cells
            .get(&held.room_id)
            .filter(|entry| {
                entry.id == held.id
                    && entry.control.active.load(Ordering::Acquire)
                    && !entry.control.fence.is_cancelled()
                    && !entry.control.release.is_cancelled()
            })
            .map(|entry| entry.tx.clone())
    }

    fn send_held(&self, held: &HeldCell, request: Request) -> Result<()> {
        let not_owner = || Error::NotOwner(held.room_id.to_string());
        let tx = self.held_sender(held).ok_or_else(not_owner)?;
        match tx.try_send(request) {
            Ok(()) => Ok(()),
            Err(mpsc::error::TrySendError::Full(_)) => {
                metrics::counter!("room_cell_overloaded_total").increment(1);
                Err(Error::Overloaded(held.room_id.to_string()))
            }
            Err(mpsc::error::TrySendError::Closed(_)) => Err(not_owner()),
        }
    }

    /// Sends `request` to this node's cell of the room (activating it if needed); answers
    /// the cell's registry id.
    fn send(&self, room_id: &RoomId, mut request: Request) -> Result<u64> {
        // The second attempt covers a cell that was deactivating when we found it.
        for _ in 0..2 {
            if self.inner.cancel.is_cancelled() {
                return Err(Error::Cancelled);
            }
            let (id, tx) = self.sender_for(room_id);
            match tx.try_send(request) {
                Ok(()) => return Ok(id),
                Err(mpsc::error::TrySendError::Full(_)) => {
                    metrics::counter!("room_cell_overloaded_total").increment(1);
                    return Err(Error::Overloaded(room_id.to_string()));
                }
                Err(mpsc::error::TrySendError::Closed(returned)) => {
                    self.inner.forget(room_id, id);
                    request = returned;
                }
            }
        }
        Err(Error::NotOwner(room_id.to_string()))
    }

    fn sender_for(&self, room_id: &RoomId) -> (u64, mpsc::Sender<Request>) {
        let mut cells = self.inner.lock_cells();
        if let Some(entry) = cells.get(room_id) {
            return (entry.id, entry.tx.clone());
        }
        let id = self.inner.next_cell_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel(self.inner.config.mailbox);
        let control = Arc::new(CellControl::default());
        cells.insert(
            room_id.clone(),
            CellEntry {
                id,
                tx: tx.clone(),
                control: control.clone(),
            },
        );
        metrics::gauge!("room_cells_active").set(cells.len() as f64);
        let inner = self.inner.clone();
        let room = room_id.clone();
        self.inner
            .tracker
            .spawn(async move { run_cell(inner, room, id, rx, control).await });
        (id, tx)
    }
}

/// The display message of a stored event, as the messenger got it at its commit, if the event
/// is displayed at all.
fn display_message(room_id: &RoomId, stored: &StoredEvent) -> Option<DisplayMessage> {
    let delivery = stored.event.delivery();
    delivery.im.map(|priority| DisplayMessage {
        envelope: EventEnvelope::new(
            room_id.clone(),
            stored.seq,
            stored.occurred_at,
            &stored.event,
        ),
        priority,
        coalesce_key: delivery.coalesce_key,
    })
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
    ) -> std::sync::MutexGuard<'_, HashMap<RoomId, (String, tokio::time::Instant)>> {
        self.owners.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn known_owner(&self, room_id: &RoomId) -> Option<String> {
        self.lock_owners()
            .get(room_id)
            .filter(|(_, since)| since.elapsed() < OWNER_CACHE_FOR)
            .map(|(url, _)| url.clone())
    }

    fn remember_owner(&self, room_id: &RoomId, url: &str) {
        let mut owners = self.lock_owners();
        if owners.len() >= OWNER_CACHE_ROOMS {
            owners.clear();
        }
        owners.insert(
            room_id.clone(),
            (url.to_owned(), tokio::time::Instant::now()),
        );
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

    fn lock_cells(&self) -> std::sync::MutexGuard<'_, HashMap<RoomId, CellEntry>> {
        self.cells.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Removes the registry entry of cell `id` (not of a newer cell of the same room).
    fn forget(&self, room_id: &RoomId, id: u64) {
        let mut cells = self.lock_cells();
        if cells.get(room_id).is_some_and(|entry| entry.id == id) {
            cells.remove(room_id);
        }
        metrics::gauge!("room_cells_active").set(cells.len() as f64);
    }
}

/// Where [`CellRuntime::route`] sends a request.
enum Route {
    /// This node's cell.
    Local,
    /// The internal endpoint of the owner.
    Remote(String),
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

/// Why a cell's loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// Idle, shutdown or a closed mailbox: drain, snapshot, release.
    Orderly,
    /// The room is no longer ours: answer NotOwner, write nothing.
    Fenced,
}

async fn run_cell(
    inner: Arc<Inner>,
    room_id: RoomId,
    id: u64,
    rx: mpsc::Receiver<Request>,
    control: Arc<CellControl>,
) {
    let mut mailbox = Mailbox {
        rx,
        held: VecDeque::new(),
        held_queries: Vec::new(),
        cap: inner.config.mailbox,
    };
    let mut cell = match Cell::activate(&inner, &room_id, id).await {
        Ok(cell) => cell,
        Err(error) => {
            if matches!(error, Error::NotOwner(_)) {
                // Another node took the room first: expected among several nodes.
                metrics::counter!("room_cell_activation_conflicts_total").increment(1);
                tracing::debug!(room_id = %room_id, "room activation found the room held elsewhere");
            } else {
                tracing::warn!(room_id = %room_id, error = %error, "room activation failed");
            }
            inner.forget(&room_id, id);
            mailbox.rx.close();
            let retryable = if error.is_retryable() {
                error
            } else {
                Error::Unavailable(error.to_string())
            };
            while let Some(request) = mailbox.recv().await {
                fail(request, &retryable, &room_id);
            }
            return;
        }
    };
    let config = &inner.config;
    // From here on the keeper renews this room's lease with the node's others.
    control.active.store(true, Ordering::Release);
    let mut stop = Stop::Orderly;
    // The idle deadline moves only when a request arrives: lease renewals do not count.
    let mut idle_deadline = tokio::time::Instant::now() + config.idle_after;
    loop {
        tokio::select! {
            biased;
            _ = inner.cancel.cancelled() => break,
            () = control.fence.cancelled() => {
                stop = Stop::Fenced;
                break;
            }
            () = control.release.cancelled() => break,
            _ = tokio::time::sleep_until(idle_deadline) => break,
            received = mailbox.recv() => {
                let Some(first) = received else { break };
                let batch = mailbox.take_batch(first, config.max_batch);
                if cell.process(batch, &mut mailbox).await == Some(Stop::Fenced) {
                    stop = Stop::Fenced;
                    break;
                }
                let robot_room = config.release_robot_rooms.as_ref().is_some_and(|prefix| {
                    cell.state
                        .owner
                        .as_ref()
                        .is_some_and(|owner| owner.as_str().starts_with(prefix.as_str()))
                });
                // A robot room is an orchestrator's to run: let go of it soon after use. Read
                // after each batch: the room's creation may be the batch that made it one.
                let idle = if robot_room {
                    ROBOT_ROOM_IDLE.min(config.idle_after)
                } else {
                    config.idle_after
                };
                idle_deadline = tokio::time::Instant::now() + idle;
            }
        }
    }
    // No new requests from here on; answer what is queued before leaving.
    let stopped = CancellationToken::new();
    inner
        .stopping
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(room_id.clone(), (id, stopped.clone()));
    inner.forget(&room_id, id);
    mailbox.rx.close();
    while stop == Stop::Orderly {
        let Some(first) = mailbox.recv().await else {
            break;
        };
        let batch = mailbox.take_batch(first, config.max_batch);
        if cell.process(batch, &mut mailbox).await == Some(Stop::Fenced) {
            stop = Stop::Fenced;
        }
    }
    while let Some(request) = mailbox.recv().await {
        fail(request, &Error::NotOwner(room_id.to_string()), &room_id);
    }
    if stop == Stop::Orderly {
        cell.write_snapshot().await;
        if let Err(error) = inner.deps.lease.release(&room_id).await {
            tracing::warn!(room_id = %room_id, error = %error, "lease release failed");
        }
    }
    let mut stopping = inner.stopping.lock().unwrap_or_else(|e| e.into_inner());
    if stopping.get(&room_id).is_some_and(|(cell, _)| *cell == id) {
        stopping.remove(&room_id);
    }
    stopped.cancel();
}

/// How long a new cell waits for the room's previous cell on this node to finish stopping.
const PREVIOUS_CELL_WAIT: Duration = Duration::from_secs(10);

/// How soon a robot room goes idle on a node that leaves robot rooms to the orchestrators
/// ([`CellConfig::release_robot_rooms`]).
const ROBOT_ROOM_IDLE: Duration = Duration::from_secs(1);

/// A cell's queue: the channel, plus the requests that arrived while a commit was in flight.
struct Mailbox {
    rx: mpsc::Receiver<Request>,
    /// Commands (in arrival order) taken off the channel during a commit, for the next batch.
    held: VecDeque<Request>,
    /// Queries taken off the channel during a commit, answered once it has ended.
    held_queries: Vec<Query>,
    /// The most requests held; beyond that the channel fills and senders are told to back off.
    cap: usize,
}

impl Mailbox {
    async fn recv(&mut self) -> Option<Request> {
        match self.held.pop_front() {
            Some(request) => Some(request),
            None => self.rx.recv().await,
        }
    }

    fn take_batch(&mut self, first: Request, max: usize) -> Vec<Request> {
        let mut batch = Vec::with_capacity(max.min(64));
        batch.push(first);
        while batch.len() < max {
            match self
                .held
                .pop_front()
                .map(Ok)
                .unwrap_or_else(|| self.rx.try_recv())
            {
                Ok(request) => batch.push(request),
                Err(_) => break,
            }
        }
        batch
    }

    /// Waits for `work` (a commit), taking requests off the channel meanwhile: commands for
    /// the next batch, queries to answer once the commit has ended. `state` already holds
    /// the batch being committed: a query answered from it now could show what a failed
    /// commit then takes back, so only peeks are answered from it.
    async fn hold_while<F: Future>(&mut self, state: &RoomState, work: F) -> F::Output {
        tokio::pin!(work);
        loop {
            tokio::select! {
                biased;
                output = &mut work => return output,
                Some(request) = self.rx.recv(), if self.held.len() + self.held_queries.len() < self.cap => match request {
                    Request::Query(query) => self.held_queries.push(query),
                    Request::Peek(peek) => peek(state),
                    command => self.held.push_back(command),
                },
            }
        }
    }
}

fn fail(request: Request, error: &Error, room_id: &RoomId) {
    if let Request::Command(command) = request {
        let error = match error {
            Error::NotOwner(_) => Error::NotOwner(room_id.to_string()),
            Error::Cancelled => Error::Cancelled,
            other => Error::Unavailable(other.to_string()),
        };
        let _ = command.reply.send(Err(error));
    }
    // A dropped query answers NotOwner through its closed channel.
}

struct Cell {
    inner: Arc<Inner>,
    room_id: RoomId,
    /// This cell's registry id.
    id: u64,
    epoch: u64,
    state: RoomState,
    snapshot_version: u64,
    recent: HashMap<CommandId, Arc<CommandReply>>,
    /// Remembered ids, oldest first, with the estimated bytes of each entry.
    recent_order: VecDeque<(CommandId, usize)>,
    /// The estimated bytes of everything in `recent`.
    recent_bytes: usize,
    /// When the rocket-reset timer this cell last committed is due: every gift fuels the
    /// rocket, and re-arming the same timer each time would cost a write per gift.
    reset_armed_at: Option<Timestamp>,
    /// Whether the commands being planned are the fresh ones of [`Cell::resolve_duplicates`]:
    /// a second clash on a command id then is an id the log no longer answers.
    resolving: bool,
}

impl Cell {
    async fn activate(inner: &Arc<Inner>, room_id: &RoomId, id: u64) -> Result<Cell> {
        let deps = &inner.deps;
        let previous = inner
            .stopping
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(room_id)
            .map(|(_, stopped)| stopped.clone());
        if let Some(stopped) = previous {
            // Its lease release must come before our acquire, not after.
            let _ = tokio::time::timeout(PREVIOUS_CELL_WAIT, stopped.cancelled()).await;
        }
        if !deps.lease.acquire(room_id).await? {
            return Err(Error::NotOwner(room_id.to_string()));
        }
        let activation = deps.store.activate(room_id, &inner.config.node_id).await?;
        let (state, snapshot_version) = load_state(inner, room_id).await?;
        if state.version != activation.version {
            return Err(Error::corrupt(format!(
                "room {room_id}: replay reached version {}, the log says {}",
                state.version, activation.version
            )));
        }
        if let Some(presence) = inner.presence.get() {
            let now = deps.clock.now();
            // Robots have no client to heartbeat: the orchestrator running the room is their
            // presence, and the eviction pass must not take them out.
            for (user, _) in state.members.iter().filter(|(_, member)| !member.robot) {
                presence.restore(room_id, user, now).await?;
            }
        }
        tracing::debug!(room_id = %room_id, epoch = activation.epoch, version = state.version, "room activated");
        metrics::counter!("room_cell_activations_total").increment(1);
        Ok(Cell {
            inner: inner.clone(),
            room_id: room_id.clone(),
            id,
            epoch: activation.epoch,
            state,
            snapshot_version,
            recent: HashMap::new(),
            recent_order: VecDeque::new(),
            recent_bytes: 0,
            reset_armed_at: None,
            resolving: false,
        })
    }

    /// Decides, evolves and commits one batch, then answers. Returns `Some(Stop::Fenced)` when
    /// the room is no longer ours.
    async fn process(&mut self, batch: Vec<Request>, mailbox: &mut Mailbox) -> Option<Stop> {
        let mut commands = Vec::with_capacity(batch.len());
        let mut queries = Vec::new();
        for request in batch {
            match request {
                Request::Command(command) => commands.push(*command),
                Request::Query(query) => queries.push(query),
                // Nothing is in flight yet: the state is what storage holds.
                Request::Peek(peek) => peek(&self.state),
                Request::Recent(reply) => {
                    let _ = reply.send(RecentReplies {
                        count: self.recent.len(),
                        bytes: self.recent_bytes,
                    });
                }
            }
        }
        let stop = if commands.is_empty() {
            None
        } else {
            self.process_commands(commands, mailbox).await
        };
        // Past the commit (or the reload after a failed one), the state is what storage
        // holds. A cell that stops drops the queries, which answers them NotOwner.
        queries.append(&mut mailbox.held_queries);
        if stop.is_none() {
            for query in queries {
                query(&self.state);
            }
        }
        stop
    }

    async fn process_commands(
        &mut self,
        commands: Vec<CommandRequest>,
        mailbox: &mut Mailbox,
    ) -> Option<Stop> {
        let started = Instant::now();
        let mut plan = self.plan(&commands);
        self.answer_repeats_from_log(&commands, &mut plan.outcomes)
            .await;
        if plan.batch.events.is_empty() {
            self.answer(commands, plan.outcomes);
            return None;
        }
        let store = self.inner.deps.store.clone();
        let committed = mailbox
            .hold_while(&self.state, store.commit(&plan.batch))
            .await;
        metrics::histogram!("room_cell_commit_seconds").record(started.elapsed().as_secs_f64());
        metrics::histogram!("room_cell_batch_commands").record(commands.len() as f64);
        match committed {
            Ok(()) => {
                if let Some(reset) = plan.batch.timers.iter().find(|t| is_rocket_reset(t)) {
                    self.reset_armed_at = Some(reset.due_at);
                }
                self.remember(&commands, &plan.outcomes);
                let display = std::mem::take(&mut plan.display);
                self.answer(commands, plan.outcomes);
                if !display.is_empty() {
                    self.inner
                        .deps
                        .messenger
                        .publish(&self.room_id, display)
                        .await;
                }
                if self.state.version - self.snapshot_version >= self.inner.config.snapshot_every {
                    self.write_snapshot().await;
                }
                None
            }
            Err(Error::NotOwner(_)) | Err(Error::Conflict(_)) => {
                tracing::warn!(room_id = %self.room_id, epoch = self.epoch, "commit fenced; stopping the cell");
                metrics::counter!("room_cell_fenced_total").increment(1);
                // Leave the registry before answering, so that a caller's retry activates a
                // fresh cell instead of landing in this one's closing mailbox.
                self.inner.forget(&self.room_id, self.id);
                for command in commands {
                    let _ = command
                        .reply
                        .send(Err(Error::NotOwner(self.room_id.to_string())));
                }
                Some(Stop::Fenced)
            }
            Err(Error::AlreadyExists(_)) => self.resolve_duplicates(commands, mailbox).await,
            Err(error) if !error.is_retryable() && commands.len() > 1 => {
                // The store refused the batch for good, and so wrote nothing: one command in it
                // may be the culprit. Each runs again in a commit of its own, on the state
                // rebuilt from storage, so the bad one fails alone and the others apply.
                tracing::warn!(room_id = %self.room_id, error = %error, commands = commands.len(), "commit refused; committing its commands one by one");
                metrics::counter!("room_cell_commit_errors_total").increment(1);
                metrics::counter!("room_cell_batch_splits_total").increment(1);
                self.split(commands, mailbox).await
            }
            Err(error) => {
                // A retryable failure leaves the outcome unknown: the transaction may have
                // committed. Callers retry under the same command ids; the state is rebuilt
                // from what storage holds. A definite failure (the store refused what it was
                // sent) wrote nothing and is the answer: the batch held this one command
                // only, since a larger one refused for good is split above.
                tracing::warn!(room_id = %self.room_id, error = %error, "commit failed");
                metrics::counter!("room_cell_commit_errors_total").increment(1);
                let definite = !error.is_retryable();
                for command in commands {
                    let answer = match &error {
                        // The domain accepted the command: whatever the store refused for
                        // good is the service's fault, never the caller's.
                        Error::Internal(_) | Error::Corrupt(_) if definite => error.clone(),
                        // Another drive settled the gift order: the saga reads it again.
                        Error::OrderSettled(_) => error.clone(),
                        _ if definite => Error::internal(&error),
                        _ => Error::Unavailable(error.to_string()),
                    };
                    let _ = command.reply.send(Err(answer));
                }
                self.reload().await
            }
        }
    }

    /// A command that changes nothing now (a no-op or a rejection) may repeat one that changed
    /// something before this cell could remember it (an earlier activation, a reload): answer
    /// it from the log, as the first time. A command with events needs no lookup: the commit
    /// refuses a stored id.
    async fn answer_repeats_from_log(&self, commands: &[CommandRequest], outcomes: &mut [Outcome]) {
        for (request, outcome) in commands.iter().zip(outcomes.iter_mut()) {
            let unchanged = match outcome {
                Outcome::Done(Ok(reply)) => reply.events.is_empty(),
                Outcome::Done(Err(Error::Rejected(_))) => true,
                _ => false,
            };
            if !unchanged {
                continue;
            }
            match self.stored_reply(&request.command.command_id).await {
                Ok(Some(reply)) => *outcome = Outcome::Done(Ok(reply)),
                Ok(None) => {}
                Err(error) => *outcome = Outcome::Done(Err(error)),
            }
        }
    }

    /// Commits each command in a batch of its own, after the state of a refused batch is
    /// taken back.
    async fn split(
        &mut self,
        commands: Vec<CommandRequest>,
        mailbox: &mut Mailbox,
    ) -> Option<Stop> {
        match self.reload_for_retry(commands).await {
            Ok(commands) => self.one_by_one(commands, mailbox).await,
            Err(stop) => Some(stop),
        }
    }

    /// Takes back the state of a batch the store refused, from storage, before its commands
    /// run again. When that fails the cell stops, and they are answered as unavailable.
    async fn reload_for_retry(
        &mut self,
        commands: Vec<CommandRequest>,
    ) -> Result<Vec<CommandRequest>, Stop> {
        let Some(stop) = self.reload().await else {
            return Ok(commands);
        };
        for command in commands {
            let _ = command
                .reply
                .send(Err(Error::Unavailable("room reload failed".into())));
        }
        Err(stop)
    }

    /// Runs each command in a batch of its own, in order. When the cell stops on one, the
    /// commands after it are answered [`Error::NotOwner`] (retryable): they never ran.
    async fn one_by_one(
        &mut self,
        commands: Vec<CommandRequest>,
        mailbox: &mut Mailbox,
    ) -> Option<Stop> {
        let mut commands = commands.into_iter();
        while let Some(command) = commands.next() {
            // A batch of one is never split again, so this recursion is one level deep.
            if let Some(stop) = Box::pin(self.process_commands(vec![command], mailbox)).await {
                for command in commands {
                    let _ = command
                        .reply
                        .send(Err(Error::NotOwner(self.room_id.to_string())));
                }
                return Some(stop);
            }
        }
        None
    }

    /// Some command of the batch is already in the log (a retry after a restart): answer those
    /// from the log and run the rest again on the reloaded state.
    async fn resolve_duplicates(
        &mut self,
        commands: Vec<CommandRequest>,
        mailbox: &mut Mailbox,
    ) -> Option<Stop> {
        let commands = match self.reload_for_retry(commands).await {
            Ok(commands) => commands,
            Err(stop) => return Some(stop),
        };
        if self.resolving {
            // They clashed again, yet the log answered none of them: among them is an id whose
            // record is being pruned (its first events already gone). Alone, such a command
            // gets a definite answer, never a loop; a batch is planned again command by
            // command, so that the others still commit.
            if let [command] = commands.as_slice() {
                let error = Error::AlreadyExists(format!(
                    "command {} of room {} is too old to be answered again",
                    command.command.command_id, self.room_id
                ));
                for command in commands {
                    let _ = command.reply.send(Err(error.clone()));
                }
                return None;
            }
            return self.one_by_one(commands, mailbox).await;
        }
        let mut fresh = Vec::with_capacity(commands.len());
        for command in commands {
            let id = &command.command.command_id;
            match self.stored_reply(id).await {
                Ok(Some(reply)) => {
                    let _ = command.reply.send(Ok(reply));
                }
                Ok(None) => fresh.push(command),
                Err(error) => {
                    let _ = command.reply.send(Err(error));
                }
            }
        }
        if fresh.is_empty() {
            return None;
        }
        // One level only: the stored duplicates are gone from `fresh`, and a second clash is
        // answered above.
        self.resolving = true;
        let stop = Box::pin(self.process_commands(fresh, mailbox)).await;
        self.resolving = false;
        stop
    }

    async fn stored_reply(&self, id: &CommandId) -> Result<Option<Arc<CommandReply>>> {
        let store = &self.inner.deps.store;
        let Some(record) = store.get_command(&self.room_id, id).await? else {
            return Ok(None);
        };
        // A stored command covers the events first_seq..=last_seq (none: last = first - 1).
        let (Some(after), Some(count)) = (
            record.first_seq.checked_sub(1),
            record
                .last_seq
                .checked_add(1)
                .and_then(|end| end.checked_sub(record.first_seq))
                .and_then(|count| u32::try_from(count).ok()),
        ) else {
            return Err(Error::corrupt(format!(
                "command {id} of room {} covers events {}..={}",
                self.room_id, record.first_seq, record.last_seq
            )));
        };
        let events = store.list_events(&self.room_id, after, count).await?;
        Ok(Some(Arc::new(CommandReply {
            version: record.last_seq,
            events,
        })))
    }

    /// Rebuilds the state from storage after a commit of unknown outcome.
    async fn reload(&mut self) -> Option<Stop> {
        match load_state(&self.inner, &self.room_id).await {
            Ok((state, snapshot_version)) => {
                self.state = state;
                self.snapshot_version = snapshot_version;
                self.recent.clear();
                self.recent_order.clear();
                self.recent_bytes = 0;
                self.reset_armed_at = None;
                None
            }
            Err(error) => {
                tracing::error!(room_id = %self.room_id, error = %error, "room reload failed; stopping the cell");
                Some(Stop::Fenced)
            }
        }
    }

    /// Decides and evolves every command in memory and builds the commit.
    fn plan(&mut self, commands: &[CommandRequest]) -> Plan {
        let deps = &self.inner.deps;
        let rules = &*self.inner.config.rules;
        let now = deps.clock.now();
        let room_id = &self.room_id;
        let mut batch = CommitBatch {
            room_id: room_id.clone(),
            epoch: self.epoch,
            expected_version: self.state.version,
            commands: Vec::new(),
            events: Vec::new(),
            outbox: Vec::new(),
            orders: Vec::new(),
            timers: Vec::new(),
            payouts: Vec::new(),
            summary: None,
        };
        let mut display = Vec::new();
        let mut outcomes: Vec<Outcome> = Vec::with_capacity(commands.len());
        let mut in_batch: HashMap<&CommandId, usize> = HashMap::new();
        for (index, request) in commands.iter().enumerate() {
            let id = &request.command.command_id;
            if let Some(reply) = self.recent.get(id) {
                outcomes.push(Outcome::Done(Ok(reply.clone())));
                continue;
            }
            if let Some(first) = in_batch.get(id) {
                outcomes.push(Outcome::SameAs(*first));
                continue;
            }
            in_batch.insert(id, index);
            let ctx = Ctx {
                now,
                actor: &request.actor,
                random: deps.ids.random(),
                rules,
            };
            let events = match decide(&self.state, &request.command, &ctx) {
                Ok(events) => events,
                Err(rejection) => {
                    outcomes.push(Outcome::Done(Err(Error::Rejected(rejection))));
                    continue;
                }
            };
            if events.is_empty() {
                outcomes.push(Outcome::Done(Ok(Arc::new(CommandReply {
                    version: self.state.version,
                    events: Vec::new(),
                }))));
                continue;
            }
            let first_seq = self.state.version + 1;
            let mut lucky_reward = Coins::ZERO;
            let mut stored = Vec::with_capacity(events.len());
            for event in events {
                evolve(&mut self.state, &event);
                let seq = self.state.version;
                let delivery = event.delivery();
                if delivery.durable || delivery.im.is_some() {
                    let envelope = EventEnvelope::new(room_id.clone(), seq, now, &event);
                    if let Some(priority) = delivery.im {
                        display.push(DisplayMessage {
                            envelope: envelope.clone(),
                            priority,
                            coalesce_key: delivery.coalesce_key,
                        });
                    }
                    if delivery.durable {
                        batch.outbox.push(envelope);
                    }
                }
                self.follow_up(&event, &mut batch);
                if let Event::RoomGiftSent(gift) = &event {
                    lucky_reward = gift.lucky.map(|l| l.reward).unwrap_or_default();
                }
                stored.push(StoredEvent {
                    seq,
                    occurred_at: now,
                    event,
                });
            }
            if let Some(order) = &request.order {
                let mut order = order.clone();
                match order.record(SagaOutcome::Applied { lucky_reward }) {
                    Ok(()) => batch.orders.push(order),
                    Err(error) => {
                        tracing::error!(room_id = %room_id, error = %error, "gift order out of step")
                    }
                }
            }
            batch.commands.push(CommandRecord {
                command_id: id.clone(),
                command: request.command.clone(),
                actor: request.actor.clone(),
                applied_at: now,
                first_seq,
                last_seq: self.state.version,
            });
            batch.events.extend(stored.iter().cloned());
            outcomes.push(Outcome::Done(Ok(Arc::new(CommandReply {
                version: self.state.version,
                events: stored,
            }))));
        }
        if !batch.events.is_empty() {
            batch.summary = summary_of(&self.state);
            dedup_timers(&mut batch.timers);
            let armed = self.reset_armed_at;
            batch
                .timers
                .retain(|t| !(is_rocket_reset(t) && Some(t.due_at) == armed));
        }
        Plan {
            batch,
            display,
            outcomes,
        }
    }

    /// Timers and payouts an event calls for.
    fn follow_up(&self, event: &Event, batch: &mut CommitBatch) {
        let room = &self.room_id;
        match event {
            Event::RoomMicChanged {
                seat,
                change:
                    MicChange::Up {
                        session,
                        publish_deadline,
                        robot: false,
                        ..
                    },
            } => batch.timers.push(Timer {
                timer_id: format!("{room}:mic:{seat}"),
                room_id: room.clone(),
                due_at: *publish_deadline,
                command: CommandKind::MicPublishTimeout {
                    seat: *seat,
                    session: *session,
                },
            }),
            Event::RoomRocketIgnited {
                rocket_id,
                level,
                launch_at,
                ..
            } => batch.timers.push(Timer {
                timer_id: format!("{room}:rocket-launch"),
                room_id: room.clone(),
                due_at: *launch_at,
                command: CommandKind::LaunchRocket {
                    rocket_id: *rocket_id,
                    level: *level,
                    scheduled_at: *launch_at,
                },
            }),
            Event::RoomRocketFuelChanged { .. } => {
                let offset = self.inner.config.rules.day_utc_offset_secs;
                let tomorrow = DayKey(self.state.rocket.day_key.0 + 1);
                batch.timers.push(Timer {
                    timer_id: format!("{room}:rocket-reset"),
                    room_id: room.clone(),
                    due_at: tomorrow.start(offset),
                    command: CommandKind::ResetRocket,
                });
            }
            Event::RoomRocketLaunched {
                rocket_id, rewards, ..
            } => {
                for reward in rewards {
                    batch.payouts.push(Payout {
                        op_id: format!("{room}:rocket:{}:{}", rocket_id.0, reward.user),
                        kind: CreditKind::RocketReward,
                        user: reward.user.clone(),
                        amount: reward.coins,
                        room_id: room.clone(),
                    });
                }
            }
            _ => {}
        }
    }

    fn answer(&self, commands: Vec<CommandRequest>, outcomes: Vec<Outcome>) {
        let mut results: Vec<Option<Result<Arc<CommandReply>>>> =
            Vec::with_capacity(outcomes.len());
        for outcome in &outcomes {
            let result = match outcome {
                Outcome::Done(result) => clone_result(result),
                Outcome::SameAs(first) => results[*first]
                    .as_ref()
                    .map(clone_result)
                    .unwrap_or_else(|| Err(Error::Unavailable("lost answer".into()))),
            };
            results.push(Some(result));
        }
        for (command, result) in commands.into_iter().zip(results) {
            if let Some(result) = result {
                let _ = command.reply.send(result);
            }
        }
    }

    /// Remembers the replies of applied commands, within the count and the byte budget: the
    /// oldest go first, and a reply larger than the whole budget is not kept. A forgotten one
    /// is answered from the log when its command repeats.
    fn remember(&mut self, commands: &[CommandRequest], outcomes: &[Outcome]) {
        let cap = self.inner.config.recent_commands;
        let budget = self.inner.config.recent_commands_bytes;
        for (command, outcome) in commands.iter().zip(outcomes) {
            let Outcome::Done(Ok(reply)) = outcome else {
                continue;
            };
            if reply.events.is_empty() || self.recent.contains_key(&command.command.command_id) {
                continue;
            }
            let id = command.command.command_id.clone();
            let bytes = reply_bytes(&id, reply);
            if cap == 0 || bytes > budget {
                continue;
            }
            while self.recent_order.len() >= cap || self.recent_bytes + bytes > budget {
                let Some((old, old_bytes)) = self.recent_order.pop_front() else {
                    break;
                };
                self.recent.remove(&old);
                self.recent_bytes -= old_bytes;
            }
            self.recent.insert(id.clone(), reply.clone());
            self.recent_order.push_back((id, bytes));
            self.recent_bytes += bytes;
        }
        metrics::histogram!("room_cell_recent_bytes").record(self.recent_bytes as f64);
    }

    async fn write_snapshot(&mut self) {
        if self.state.version == self.snapshot_version || self.state.status == RoomStatus::Absent {
            return;
        }
        let snapshot = Snapshot::new(self.state.clone());
        match self.inner.deps.snapshots.put(&snapshot).await {
            Ok(()) => {
                self.snapshot_version = self.state.version;
                metrics::counter!("room_snapshots_written_total").increment(1);
            }
            Err(error) => {
                tracing::warn!(room_id = %self.room_id, error = %error, "snapshot write failed")
            }
        }
    }
}

/// What a remembered reply costs, roughly: its id and the entry around it, plus what each
/// event holds ([`crate::footprint::estimate`]: the text its strings hold dominates) and its
/// place in the reply. The estimate walks the events once and writes nothing.
fn reply_bytes(id: &CommandId, reply: &CommandReply) -> usize {
    let held: usize = reply
        .events
        .iter()
        .map(|stored| crate::footprint::estimate(&stored.event))
        .sum();
    const ENTRY: usize = 2 * size_of::<CommandId>()
        + size_of::<Arc<CommandReply>>()
        + size_of::<CommandReply>()
        + size_of::<(CommandId, usize)>();
    ENTRY + 2 * id.as_str().len() + held + reply.events.len() * size_of::<StoredEvent>()
}

struct Plan {
    batch: CommitBatch,
    display: Vec<DisplayMessage>,
    outcomes: Vec<Outcome>,
}

enum Outcome {
    Done(Result<Arc<CommandReply>>),
    /// A repeat, within the batch, of the command at this index.
    SameAs(usize),
}

fn clone_result(result: &Result<Arc<CommandReply>>) -> Result<Arc<CommandReply>> {
    match result {
        Ok(reply) => Ok(reply.clone()),
        Err(Error::Rejected(rejection)) => Err(Error::Rejected(rejection.clone())),
        Err(other) => Err(Error::Unavailable(other.to_string())),
    }
}

fn is_rocket_reset(timer: &Timer) -> bool {
    matches!(timer.command, CommandKind::ResetRocket)
}

/// Keeps the last timer of each id.
fn dedup_timers(timers: &mut Vec<Timer>) {
    if timers.len() < 2 {
        return;
    }
    let mut seen = std::collections::HashSet::new();
    let mut kept: Vec<Timer> = timers
        .drain(..)
        .rev()
        .filter(|t| seen.insert(t.timer_id.clone()))
        .collect();
    kept.reverse();
    *timers = kept;
}

fn summary_of(state: &RoomState) -> Option<RoomSummary> {
    Some(RoomSummary {
        room_id: state.room_id.clone(),
        owner: state.owner.clone()?,
        name: state.profile.name.clone(),
        open: state.status == RoomStatus::Open,
        heat: state.heat,
        online: u32::try_from(state.members.len()).unwrap_or(u32::MAX),
        locked: state.settings.lock.is_some(),
        version: state.version,
    })
}

/// The newest snapshot plus every event after it. Returns the state and the snapshot's version.
async fn load_state(inner: &Inner, room_id: &RoomId) -> Result<(RoomState, u64)> {
    let deps = &inner.deps;
    let mut state = match deps.snapshots.get_latest(room_id).await? {
        Some(snapshot) => snapshot.into_state().map_err(Error::corrupt)?,
        None => RoomState::new(room_id.clone()),
    };
    let snapshot_version = state.version;
    const PAGE: u32 = 1000;
    loop {
        let events = deps.store.list_events(room_id, state.version, PAGE).await?;
        let done = events.len() < PAGE as usize;
        for stored in &events {
            if stored.seq != state.version + 1 {
                return Err(Error::corrupt(format!(
                    "room {room_id}: event {} follows version {}",
                    stored.seq, state.version
                )));
            }
            evolve(&mut state, &stored.event);
        }
        if done {
            break;
        }
    }
    Ok((state, snapshot_version))
}
