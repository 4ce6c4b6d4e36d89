//! Robot rooms at run time: the script a robot room follows ([`plan_step`]), the runtime that
//! plays it on this node's cell of the room, and the [`Orchestrator`] that decides which robot
//! rooms this node runs.
//!
//! A runtime starts only once this node's cell holds the room's lease
//! ([`CellRuntime::activate_here`]), and sends every command to that cell alone
//! ([`CellRuntime::execute_on`]): the node's keeper renews the lease with its other rooms',
//! and the moment the lease is lost the cell stops and so does the runtime. Nothing it sends
//! can reach another node, and the epoch fences whatever was in flight.
//!
//! Orchestrators share the robot rooms by rendezvous hashing over the live members of one
//! lease group ([`ORCHESTRATOR_GROUP`]): each room has one preferred node, a node takes the
//! free rooms it is preferred for (and, after a while, those the preferred node leaves
//! free), and hands over, by releasing the lease, rooms another live member is preferred
//! for. Conflicts (two nodes reaching for one room) are expected: the lease decides, the
//! loser skips the room, and a counter says how often.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use room_domain::{
    Actor, Command, CommandId, CommandKind, GiftId, GiftSnapshot, RobotGift, RoomId, RoomState,
    RoomStatus, SeatIndex, Timestamp, UserId,
};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::cell::{CellRuntime, HeldCell};
use crate::ports::{
    ClockRef, GiftCatalogRef, IdGenRef, LeaseRef, MAX_ROBOT_ROOM_PAGE, RobotRoomConfig,
    RobotRoomsRef,
};
use crate::{Error, Result};

/// The lease group of the nodes that run robot rooms.
pub const ORCHESTRATOR_GROUP: &str = "robot-orchestrators";

/// Rounds a room taken in place of its preferred node is kept before it is handed back.
const FALLBACK_HOLD_ROUNDS: u64 = 12;

/// How long a runtime trusts the catalog gifts it read.
const GIFT_CACHE_FOR: Duration = Duration::from_secs(60);

/// Robot rooms one reconcile activates at once (each takes its lease and loads the room).
const ACTIVATIONS_AT_ONCE: usize = 32;

/// The most robot gifts one step sends, whatever the rate.
const MAX_GIFTS_PER_STEP: u32 = 20;

/// How an [`Orchestrator`] runs.
#[derive(Debug, Clone)]
pub struct OrchestratorConfig {
    /// This node's id (the cell runtime's).
    pub node_id: String,
    /// How often the configurations are read and runtimes started, stopped and handed over.
    pub reconcile_every: Duration,
    /// How often each runtime plays one step of its room's script.
    pub step_every: Duration,
    /// How long a robot stays in the room on average before another robot of the pool takes
    /// its place (the audience turns over even when its size holds).
    pub robot_stay: Duration,
    /// The most runtimes one reconcile starts (the rest wait for the next).
    pub max_starts_per_reconcile: usize,
    /// The most runtimes this node runs at once.
    pub max_runtimes: usize,
}

impl Default for OrchestratorConfig {
    fn default() -> Self {
        OrchestratorConfig {
            node_id: "local".into(),
            reconcile_every: Duration::from_secs(5),
            step_every: Duration::from_secs(2),
            robot_stay: Duration::from_secs(600),
            max_starts_per_reconcile: 1000,
            max_runtimes: 10_000,
        }
    }
}

/// What the script reads of a robot room, taken from its state at the start of a step.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RobotView {
    /// Whether the room is open.
    pub open: bool,
    /// Robots of the pool in the room, in pool order.
    pub present: Vec<UserId>,
    /// Robots of the pool out of the room and free to join (not banned), in pool order.
    pub absent: Vec<UserId>,
    /// Robots of the pool on a seat, with the seat.
    pub seated: Vec<(UserId, SeatIndex)>,
    /// Seats nobody holds and nobody locked, in seat order.
    pub free_seats: Vec<SeatIndex>,
    /// Whoever is on a seat, robot or not: who robot gifts go to.
    pub on_seats: Vec<UserId>,
}

impl RobotView {
    /// What the script reads of `state` for the pool of `config`, at `now`.
    pub fn of(state: &RoomState, config: &RobotRoomConfig, now: Timestamp) -> RobotView {
        let pool: HashSet<&UserId> = config.robots.iter().collect();
        let mut view = RobotView {
            open: state.status == RoomStatus::Open,
            ..RobotView::default()
        };
        for robot in &config.robots {
            if state.members.get(robot).is_some_and(|m| m.robot) {
                view.present.push(robot.clone());
            } else if !state.members.contains_key(robot)
                && state.bans.get(robot).is_none_or(|until| *until <= now)
            {
                view.absent.push(robot.clone());
            }
        }
        for (i, seat) in state.seats.iter().enumerate() {
            let index = SeatIndex(i as u8);
            match &seat.occupant {
                Some(occupant) => {
                    if pool.contains(&occupant.user) {
                        view.seated.push((occupant.user.clone(), index));
                    }
                    view.on_seats.push(occupant.user.clone());
                }
                None if !seat.locked => view.free_seats.push(index),
                None => {}
            }
        }
        view
    }
}

/// One robot action of a step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RobotAction {
    /// The robot joins the room.
    Join(UserId),
    /// The robot leaves the room.
    Leave(UserId),
    /// The robot takes the seat.
    TakeSeat(UserId, SeatIndex),
    /// The robot leaves the seat.
    LeaveSeat(UserId, SeatIndex),
    /// The robot sends one unit of the gift to the recipient.
    Gift {
        /// Who sends.
        sender: UserId,
        /// Which gift of the mix.
        gift_id: GiftId,
        /// Who receives.
        recipient: UserId,
    },
}

impl RobotAction {
    /// The action's name, for metrics.
    pub fn name(&self) -> &'static str {
        match self {
            RobotAction::Join(_) => "join",
            RobotAction::Leave(_) => "leave",
            RobotAction::TakeSeat(..) => "take_seat",
            RobotAction::LeaveSeat(..) => "leave_seat",
            RobotAction::Gift { .. } => "gift",
        }
    }
}

/// What a step carries over to the next: the fraction of a gift not yet sent.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ScriptCarry {
    /// Gifts owed by the rate and not yet sent, below one.
    pub gifts: f64,
}

/// The robot listeners `config` asks for at `now` (its audience for the hour of the day, UTC).
pub fn target_listeners(config: &RobotRoomConfig, now: Timestamp) -> usize {
    let hour = (now.0.div_euclid(3_600_000)).rem_euclid(24) as usize;
    config.audience.get(hour).copied().unwrap_or(0) as usize
}

/// Plans one step of a robot room's script: at most one join or leave toward the hour's
/// audience (and, at the audience, now and then one robot leaves so that another takes its
/// place), at most one seat change toward the configured seats, and the gifts the rate owes
/// for `step` (a fraction carried over in `carry`). Robots never take the last free seat:
/// with one seat free they sit down no more, with none free one of them stands up.
/// `random` draws uniform values.
pub fn plan_step(
    config: &RobotRoomConfig,
    view: &RobotView,
    now: Timestamp,
    step: Duration,
    robot_stay: Duration,
    carry: &mut ScriptCarry,
    random: &mut dyn FnMut() -> u64,
) -> Vec<RobotAction> {
    let mut actions = Vec::new();
    if !view.open {
        return actions;
    }
    let mut pick = |items: usize| (random() % items.max(1) as u64) as usize;
    let target = target_listeners(config, now).min(config.robots.len());
    let present = view.present.len();
    let seated: HashSet<&UserId> = view.seated.iter().map(|(robot, _)| robot).collect();
    // Who leaves this step: no seat change is asked of it, no gift sent by or to it.
    let mut leaving: Option<&UserId> = None;
    if present < target && !view.absent.is_empty() {
        actions.push(RobotAction::Join(
            view.absent[pick(view.absent.len())].clone(),
        ));
    } else if present > target {
        // Robots off the seats leave first.
        let standing: Vec<&UserId> = view
            .present
            .iter()
            .filter(|r| !seated.contains(r))
            .collect();
        let robot = if standing.is_empty() {
            &view.present[pick(present)]
        } else {
            standing[pick(standing.len())]
        };
        leaving = Some(robot);
        actions.push(RobotAction::Leave(robot.clone()));
    } else if present > 0 && !view.absent.is_empty() {
        // Turnover: each robot leaves once per stay on average; another joins next step.
        let chance = step.as_secs_f64() / robot_stay.as_secs_f64().max(0.001);
        let draw = (pick(1_000_000) as f64) / 1_000_000.0;
        if draw < chance * present as f64 {
            let standing: Vec<&UserId> = view
                .present
                .iter()
                .filter(|r| !seated.contains(r))
                .collect();
            if !standing.is_empty() {
                let robot = standing[pick(standing.len())];
                leaving = Some(robot);
                actions.push(RobotAction::Leave(robot.clone()));
            }
        }
    }

    // The seats as the step's leave leaves them: a seated robot that leaves frees its seat,
    // and is told nothing more.
    let staying = present - usize::from(leaving.is_some());
    let still_seated: Vec<&(UserId, SeatIndex)> = view
        .seated
        .iter()
        .filter(|(robot, _)| Some(robot) != leaving)
        .collect();
    let free_after_leave = view.free_seats.len() + (view.seated.len() - still_seated.len());
    let wanted_seats = usize::from(config.seats).min(staying);
    if free_after_leave == 0 && !still_seated.is_empty() {
        // No seat left for a person: a robot makes room.
        let (robot, seat) = still_seated[pick(still_seated.len())];
        actions.push(RobotAction::LeaveSeat(robot.clone(), *seat));
    } else if still_seated.len() > wanted_seats {
        let (robot, seat) = still_seated[pick(still_seated.len())];
        actions.push(RobotAction::LeaveSeat(robot.clone(), *seat));
    } else if still_seated.len() < wanted_seats && free_after_leave > 1 {
        let standing: Vec<&UserId> = view
            .present
            .iter()
            .filter(|r| !seated.contains(r) && Some(*r) != leaving)
            .collect();
        if !standing.is_empty() {
            let robot = standing[pick(standing.len())];
            let seat = view.free_seats[pick(view.free_seats.len())];
            actions.push(RobotAction::TakeSeat(robot.clone(), seat));
        }
    }

    carry.gifts += f64::from(config.gift_rate_per_minute) * step.as_secs_f64() / 60.0;
    let due = carry.gifts.floor().min(f64::from(MAX_GIFTS_PER_STEP));
    carry.gifts = (carry.gifts - due).clamp(0.0, 1.0);
    let senders: Vec<&UserId> = view
        .present
        .iter()
        .filter(|r| Some(*r) != leaving)
        .collect();
    let total_weight: u64 = config.gift_mix.iter().map(|g| u64::from(g.weight)).sum();
    if senders.is_empty() || total_weight == 0 {
        return actions;
    }
    for _ in 0..due as u32 {
        let sender = senders[pick(senders.len())];
        // Never the robot leaving this step: its leave comes first, and a gift to someone
        // no longer in the room is refused.
        let on_seats: Vec<&UserId> = view
            .on_seats
            .iter()
            .filter(|u| *u != sender && Some(*u) != leaving)
            .collect();
        let recipients: Vec<&UserId> = if on_seats.is_empty() {
            senders.iter().copied().filter(|u| *u != sender).collect()
        } else {
            on_seats
        };
        if recipients.is_empty() {
            break;
        }
        let mut draw = pick(usize::MAX) as u64 % total_weight;
        let gift = config
            .gift_mix
            .iter()
            .find(|share| {
                let weight = u64::from(share.weight);
                if draw < weight {
                    true
                } else {
                    draw -= weight;
                    false
                }
            })
            .unwrap_or(&config.gift_mix[0]);
        actions.push(RobotAction::Gift {
            sender: sender.clone(),
            gift_id: gift.gift_id.clone(),
            recipient: recipients[pick(recipients.len())].clone(),
        });
    }
    actions
}

/// Why a runtime stopped, for the metric `room_robot_runtime_stops_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StopReason {
    /// Its configuration was disabled.
    Disabled,
    /// Its configuration was deleted.
    Deleted,
    /// The room's lease was lost or taken (or its cell stopped otherwise).
    LeaseLost,
    /// Handed over to the node the room prefers.
    Rebalanced,
    /// The room was closed.
    Closed,
    /// This node is stopping.
    Shutdown,
}

impl StopReason {
    /// The reason's label.
    pub fn label(self) -> &'static str {
        match self {
            StopReason::Disabled => "disabled",
            StopReason::Deleted => "deleted",
            StopReason::LeaseLost => "lease_lost",
            StopReason::Rebalanced => "rebalanced",
            StopReason::Closed => "closed",
            StopReason::Shutdown => "shutdown",
        }
    }
}

/// What an orchestrator needs.
#[derive(Clone)]
pub struct OrchestratorDeps {
    /// The cells of this node.
    pub runtime: CellRuntime,
    /// The configurations.
    pub robot_rooms: RobotRoomsRef,
    /// The gift catalog (robot gifts show catalog gifts).
    pub catalog: GiftCatalogRef,
    /// Room leases and the orchestrators' group.
    pub lease: LeaseRef,
    /// Time.
    pub clock: ClockRef,
    /// Command ids and random draws.
    pub ids: IdGenRef,
}

/// One runtime this node runs.
struct Running {
    config: watch::Sender<RobotRoomConfig>,
    /// Cancelled, with `reason` set, to have the runtime stop.
    stop: CancellationToken,
    /// Why it stops: set before `stop` is cancelled, or by the runtime when it ends by itself.
    reason: Arc<std::sync::Mutex<Option<StopReason>>>,
    done: Arc<std::sync::atomic::AtomicBool>,
    /// The round it was started in, when started in place of the node the room prefers (which
    /// left it free): not handed back before [`FALLBACK_HOLD_ROUNDS`] rounds, so that a
    /// preferred node that cannot take it (full, failing) does not make the two trade it.
    fallback_since: Option<u64>,
}

/// What one [`Orchestrator::reconcile`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReconcileReport {
    /// Enabled configurations seen.
    pub enabled: usize,
    /// Runtimes started.
    pub started: usize,
    /// Runtimes told to stop.
    pub stopped: usize,
    /// Rooms found running on another live node.
    pub elsewhere: usize,
    /// Rooms this node reached for and found taken (a conflict).
    pub conflicts: usize,
    /// The other live orchestrators.
    pub peers: usize,
}

/// Starts, stops and hands over the runtimes of robot rooms on this node.
pub struct Orchestrator {
    deps: OrchestratorDeps,
    config: OrchestratorConfig,
    running: HashMap<RoomId, Running>,
    /// Peers as of the previous reconcile: a peer is trusted to take rooms over once it was
    /// seen twice in a row.
    peers_before: HashSet<String>,
    /// Reconciles done so far.
    round: u64,
    /// Rooms found free but preferring another node, with how many reconciles in a row: a
    /// room left free that long is taken by whoever sees it.
    free_since: HashMap<RoomId, u32>,
    /// Rooms whose runtime found them closed, with the version of their configuration then:
    /// not started again until it changes (a closed room stays closed, and each start would
    /// take its lease and load it only to let it go).
    closed: HashMap<RoomId, u64>,
    tasks: TaskTracker,
    cancel: CancellationToken,
}

impl Orchestrator {
    /// An orchestrator with no runtime yet; its runtimes stop when `cancel` is cancelled.
    pub fn new(
        deps: OrchestratorDeps,
        config: OrchestratorConfig,
        cancel: CancellationToken,
    ) -> Self {
        Orchestrator {
            deps,
            config,
            running: HashMap::new(),
            peers_before: HashSet::new(),
            round: 0,
            free_since: HashMap::new(),
            closed: HashMap::new(),
            tasks: TaskTracker::new(),
            cancel,
        }
    }

    /// Reconciles every `reconcile_every` until cancelled, then stops every runtime (their
    /// robots stay: the next node to run the room carries on with them) and leaves the group.
    pub async fn run(mut self) {
        let mut ticks =
            tokio::time::interval(self.config.reconcile_every.max(Duration::from_millis(10)));
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = self.cancel.cancelled() => break,
                _ = ticks.tick() => {
                    let started = std::time::Instant::now();
                    match self.reconcile().await {
                        Ok(_) => {}
                        Err(error) => {
                            metrics::counter!("room_robot_reconcile_failures_total").increment(1);
                            tracing::warn!(error = %error, "robot room reconcile failed; retrying next round");
                        }
                    }
                    metrics::histogram!("room_robot_reconcile_seconds").record(started.elapsed().as_secs_f64());
                }
            }
        }
        for running in self.running.values() {
            stop(running, StopReason::Shutdown);
        }
        self.tasks.close();
        self.tasks.wait().await;
        self.running.clear();
        metrics::gauge!("room_robot_runtimes").set(0.0);
        if let Err(error) = self.deps.lease.leave_group(ORCHESTRATOR_GROUP).await {
            tracing::debug!(error = %error, "cannot leave the orchestrators' group");
        }
    }

    /// Rooms whose runtime runs on this node.
    pub fn running(&self) -> Vec<RoomId> {
        let mut rooms: Vec<RoomId> = self.running.keys().cloned().collect();
        rooms.sort();
        rooms
    }

    /// One round: forgets runtimes that ended, reads every configuration, stops runtimes
    /// whose room was disabled or deleted or prefers a peer, and starts runtimes for enabled
    /// rooms no live node runs.
    pub async fn reconcile(&mut self) -> Result<ReconcileReport> {
        let mut report = ReconcileReport::default();
        let closed = &mut self.closed;
        self.running.retain(|room, running| {
            if !running.done.load(std::sync::atomic::Ordering::Acquire) {
                return true;
            }
            let reason = *running.reason.lock().unwrap_or_else(|e| e.into_inner());
            if reason == Some(StopReason::Closed) {
                closed.insert(room.clone(), running.config.borrow().version);
            }
            false
        });
        let peers: HashSet<String> = self
            .deps
            .lease
            .join_group(ORCHESTRATOR_GROUP)
            .await?
            .into_iter()
            .collect();
        report.peers = peers.len();
        let trusted: Vec<String> = peers.intersection(&self.peers_before).cloned().collect();

        let mut seen = HashSet::new();
        let mut after = None;
        let mut starts = 0;
        loop {
            let page = self
                .deps
                .robot_rooms
                .list(after.clone(), MAX_ROBOT_ROOM_PAGE)
                .await?;
            let Some(last) = page.last() else { break };
            after = Some(last.room_id.clone());
            let full = page.len() as u32 == MAX_ROBOT_ROOM_PAGE;
            let mut candidates = Vec::new();
            for config in page {
                seen.insert(config.room_id.clone());
                self.reconcile_room(
                    config,
                    &peers,
                    &trusted,
                    &mut starts,
                    &mut candidates,
                    &mut report,
                )
                .await;
            }
            self.start_all(candidates, &mut report).await;
            if !full {
                break;
            }
        }
        // Configurations deleted since the runtime started.
        for (room, running) in &self.running {
            if !seen.contains(room) && !running.stop.is_cancelled() {
                stop(running, StopReason::Deleted);
                report.stopped += 1;
            }
        }
        self.free_since.retain(|room, _| seen.contains(room));
        self.closed.retain(|room, _| seen.contains(room));
        self.peers_before = peers;
        self.round += 1;
        metrics::gauge!("room_robot_runtimes").set(self.running.len() as f64);
        Ok(report)
    }

    async fn reconcile_room(
        &mut self,
        config: RobotRoomConfig,
        peers: &HashSet<String>,
        trusted: &[String],
        starts: &mut usize,
        candidates: &mut Vec<(RobotRoomConfig, bool)>,
        report: &mut ReconcileReport,
    ) {
        let room = config.room_id.clone();
        if config.enabled {
            report.enabled += 1;
        }
        if let Some(running) = self.running.get(&room) {
            if running.stop.is_cancelled() {
                // Told to stop already; forgotten once it has.
                return;
            }
            if !config.enabled {
                stop(running, StopReason::Disabled);
                report.stopped += 1;
                return;
            }
            let preferred = preferred_node(&room, &self.config.node_id, trusted.iter());
            let held_back = running
                .fallback_since
                .is_some_and(|since| self.round < since + FALLBACK_HOLD_ROUNDS);
            if preferred != self.config.node_id.as_str() && !held_back {
                stop(running, StopReason::Rebalanced);
                report.stopped += 1;
                return;
            }
            if running.config.borrow().version != config.version {
                running.config.send_replace(config);
            }
            return;
        }
        if !config.enabled || self.closed.get(&room) == Some(&config.version) {
            return;
        }
        match self.deps.lease.get_holder(&room).await {
            Ok(Some(holder)) if holder.node_id != self.config.node_id => {
                // Live (or about to expire): either way not this node's to take now.
                report.elsewhere += 1;
                self.free_since.remove(&room);
                return;
            }
            Ok(Some(_))
                if preferred_node(&room, &self.config.node_id, trusted.iter())
                    != self.config.node_id.as_str() =>
            {
                // A cell of this node holds the room without a runtime (a forwarded request
                // came after a handover): let it go to the node the room prefers.
                self.deps.runtime.release_room(&room);
                return;
            }
            Ok(_) => {}
            Err(error) => {
                tracing::debug!(room_id = %room, error = %error, "cannot look up the room's holder");
                return;
            }
        }
        let preferred = preferred_node(&room, &self.config.node_id, peers.iter());
        let fallback = preferred != self.config.node_id.as_str();
        if fallback {
            // Left to the node the room prefers, unless it leaves the room free too long.
            let rounds = self.free_since.entry(room.clone()).or_insert(0);
            *rounds += 1;
            if *rounds < 3 {
                return;
            }
        }
        if *starts >= self.config.max_starts_per_reconcile
            || self.running.len() + *starts >= self.config.max_runtimes
        {
            return;
        }
        *starts += 1;
        candidates.push((config, fallback));
    }

    /// Activates the rooms of `candidates` on this node, [`ACTIVATIONS_AT_ONCE`] at a time
    /// (each takes the lease and loads the room), and starts a runtime on each cell it got.
    async fn start_all(
        &mut self,
        candidates: Vec<(RobotRoomConfig, bool)>,
        report: &mut ReconcileReport,
    ) {
        let mut pending = candidates.into_iter();
        let mut activations = tokio::task::JoinSet::new();
        loop {
            while activations.len() < ACTIVATIONS_AT_ONCE {
                let Some((config, fallback)) = pending.next() else {
                    break;
                };
                let runtime = self.deps.runtime.clone();
                activations.spawn(async move {
                    let activated = runtime.activate_here(&config.room_id).await;
                    (config, fallback, activated)
                });
            }
            let Some(joined) = activations.join_next().await else {
                break;
            };
            let Ok((config, fallback, activated)) = joined else {
                continue;
            };
            let room = config.room_id.clone();
            match activated {
                Ok(held) => {
                    self.free_since.remove(&room);
                    self.closed.remove(&room);
                    self.start(held, config, fallback);
                    report.started += 1;
                }
                // A cell that could not activate answers `NotOwner` whatever the cause: the
                // lease says whether another node took the room or the activation failed.
                Err(Error::NotOwner(_))
                    if matches!(
                        self.deps.lease.get_holder(&room).await,
                        Ok(Some(holder)) if holder.node_id != self.config.node_id
                    ) =>
                {
                    metrics::counter!("room_robot_ownership_conflicts_total").increment(1);
                    tracing::debug!(room_id = %room, "another node took the robot room first");
                    report.conflicts += 1;
                }
                Err(error) => {
                    metrics::counter!("room_robot_activation_failures_total").increment(1);
                    tracing::debug!(room_id = %room, error = %error, "cannot activate the robot room");
                }
            }
        }
    }

    fn start(&mut self, held: HeldCell, config: RobotRoomConfig, fallback: bool) {
        let room = held.room_id().clone();
        let (config_tx, config_rx) = watch::channel(config);
        let stop = self.cancel.child_token();
        let reason = Arc::new(std::sync::Mutex::new(None));
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let runtime = RobotRuntime {
            deps: self.deps.clone(),
            held,
            config: config_rx,
            stop: stop.clone(),
            reason: reason.clone(),
            step_every: self.config.step_every,
            robot_stay: self.config.robot_stay,
            gifts: HashMap::new(),
            gifts_read_at: tokio::time::Instant::now(),
        };
        let finished = done.clone();
        self.tasks.spawn(async move {
            runtime.run().await;
            finished.store(true, std::sync::atomic::Ordering::Release);
        });
        metrics::counter!("room_robot_runtime_starts_total").increment(1);
        tracing::debug!(room_id = %room, "robot room runtime started");
        self.running.insert(
            room,
            Running {
                config: config_tx,
                stop,
                reason,
                done,
                fallback_since: fallback.then_some(self.round),
            },
        );
    }
}

fn stop(running: &Running, reason: StopReason) {
    let mut slot = running.reason.lock().unwrap_or_else(|e| e.into_inner());
    slot.get_or_insert(reason);
    running.stop.cancel();
}

/// The node a room prefers among `me` and `peers`: the highest score of (node, room), a
/// 64-bit FNV-1a hash finished by SplitMix64's avalanche, ties to the smaller id. Every node
/// computes the same answer from the same members, and a member joining or leaving moves
/// only the rooms that prefer it.
pub fn preferred_node<'a>(
    room: &RoomId,
    me: &'a str,
    peers: impl IntoIterator<Item = &'a String>,
) -> &'a str {
    let score = |node: &str| {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in node.bytes().chain([0]).chain(room.as_str().bytes()) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        // FNV-1a alone ranks node ids that differ in one late byte ("node-a", "node-b") the
        // same way for most rooms: its last multiplications carry the difference upward only
        // in part. The avalanche makes every bit of the score depend on every input bit.
        hash = (hash ^ (hash >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        hash = (hash ^ (hash >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        hash ^ (hash >> 31)
    };
    let mut best = (score(me), me);
    for peer in peers {
        let candidate = (score(peer), peer.as_str());
        if candidate.0 > best.0 || (candidate.0 == best.0 && candidate.1 < best.1) {
            best = candidate;
        }
    }
    best.1
}

/// The runtime of one robot room on this node.
struct RobotRuntime {
    deps: OrchestratorDeps,
    held: HeldCell,
    config: watch::Receiver<RobotRoomConfig>,
    stop: CancellationToken,
    reason: Arc<std::sync::Mutex<Option<StopReason>>>,
    step_every: Duration,
    robot_stay: Duration,
    /// Catalog gifts of the mix, as read since the configuration last changed (and at most
    /// [`GIFT_CACHE_FOR`] ago).
    gifts: HashMap<GiftId, Option<GiftSnapshot>>,
    gifts_read_at: tokio::time::Instant,
}

impl RobotRuntime {
    async fn run(mut self) {
        let room = self.held.room_id().clone();
        let runtime = self.deps.runtime.clone();
        // Rooms started together do not step together.
        let offset = self.deps.ids.random() % self.step_every.as_millis().max(1) as u64;
        let mut ticks = tokio::time::interval_at(
            tokio::time::Instant::now() + Duration::from_millis(offset),
            self.step_every.max(Duration::from_millis(10)),
        );
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut carry = ScriptCarry::default();
        let reason = loop {
            tokio::select! {
                () = self.stop.cancelled() => break self.reason.lock().unwrap_or_else(|e| e.into_inner()).unwrap_or(StopReason::Shutdown),
                _ = ticks.tick() => {
                    if !runtime.holds(&self.held) {
                        break StopReason::LeaseLost;
                    }
                    match self.step(&mut carry).await {
                        Ok(true) => {}
                        Ok(false) => break StopReason::Closed,
                        Err(Error::NotOwner(_)) => break StopReason::LeaseLost,
                        Err(error) => {
                            tracing::debug!(room_id = %room, error = %error, "robot step failed");
                        }
                    }
                }
            }
        };
        // The orchestrator reads why it ended (a closed room is not started again).
        self.reason
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert(reason);
        if matches!(reason, StopReason::Disabled | StopReason::Deleted) {
            self.empty_room().await;
        }
        if matches!(
            reason,
            StopReason::Disabled
                | StopReason::Deleted
                | StopReason::Rebalanced
                | StopReason::Closed
        ) {
            // The lease goes at once: the node the room prefers takes it at its next round.
            runtime.release(&self.held);
        }
        metrics::counter!("room_robot_runtime_stops_total", "reason" => reason.label())
            .increment(1);
        tracing::debug!(room_id = %room, reason = reason.label(), "robot room runtime stopped");
    }

    /// One step of the script; `false` once the room is closed.
    async fn step(&mut self, carry: &mut ScriptCarry) -> Result<bool> {
        if self.config.has_changed().unwrap_or(false)
            || self.gifts_read_at.elapsed() >= GIFT_CACHE_FOR
        {
            self.gifts.clear();
            self.gifts_read_at = tokio::time::Instant::now();
        }
        let config = self.config.borrow_and_update().clone();
        let now = self.deps.clock.now();
        let view = {
            let config = config.clone();
            self.deps
                .runtime
                .query_on(&self.held, move |state| RobotView::of(state, &config, now))
                .await?
        };
        if !view.open {
            return Ok(false);
        }
        let ids = self.deps.ids.clone();
        let mut random = move || ids.random();
        let actions = plan_step(
            &config,
            &view,
            now,
            self.step_every,
            self.robot_stay,
            carry,
            &mut random,
        );
        for action in actions {
            if self.stop.is_cancelled() {
                break;
            }
            self.act(action).await?;
        }
        Ok(true)
    }

    /// Sends one action's command to the room's cell here; a refusal is counted and passed
    /// over (the next step reads the room afresh), a lost cell ends the runtime.
    async fn act(&mut self, action: RobotAction) -> Result<()> {
        let name = action.name();
        let (robot, kind) = match action {
            RobotAction::Join(robot) => (
                robot,
                CommandKind::Join {
                    password_verified: false,
                    verified_lock: None,
                },
            ),
            RobotAction::Leave(robot) => (robot, CommandKind::Leave),
            RobotAction::TakeSeat(robot, seat) => (robot, CommandKind::TakeSeat { seat }),
            RobotAction::LeaveSeat(robot, seat) => (robot, CommandKind::LeaveSeat { seat }),
            RobotAction::Gift {
                sender,
                gift_id,
                recipient,
            } => {
                let Some(gift) = self.gift(&gift_id).await? else {
                    metrics::counter!("room_robot_commands_total", "action" => name, "outcome" => "skipped").increment(1);
                    return Ok(());
                };
                (
                    sender,
                    CommandKind::RobotGift(RobotGift {
                        gift,
                        count: 1,
                        recipients: vec![recipient],
                    }),
                )
            }
        };
        let id = CommandId::new(self.deps.ids.next_id()).map_err(Error::corrupt)?;
        let outcome = match self
            .deps
            .runtime
            .execute_on(&self.held, Command::new(id, kind), Actor::Robot(robot))
            .await
        {
            Ok(_) => "ok",
            Err(Error::Rejected(_)) => "rejected",
            Err(error @ Error::NotOwner(_)) => {
                metrics::counter!("room_robot_commands_total", "action" => name, "outcome" => "not_owner").increment(1);
                return Err(error);
            }
            Err(_) => "failed",
        };
        metrics::counter!("room_robot_commands_total", "action" => name, "outcome" => outcome)
            .increment(1);
        Ok(())
    }

    /// The catalog gift `gift_id` as robots show it, if it exists and is enabled.
    async fn gift(&mut self, gift_id: &GiftId) -> Result<Option<GiftSnapshot>> {
        if let Some(known) = self.gifts.get(gift_id) {
            return Ok(known.clone());
        }
        let snapshot = self
            .deps
            .catalog
            .get(gift_id)
            .await?
            .filter(|gift| gift.enabled)
            .map(|gift| gift.snapshot());
        self.gifts.insert(gift_id.clone(), snapshot.clone());
        Ok(snapshot)
    }

    /// A disabled or deleted room's robots leave it (best effort: a cell lost meanwhile
    /// leaves them to whoever runs the room next).
    async fn empty_room(&mut self) {
        let config = self.config.borrow().clone();
        let now = self.deps.clock.now();
        let Ok(view) = self
            .deps
            .runtime
            .query_on(&self.held, move |state| RobotView::of(state, &config, now))
            .await
        else {
            return;
        };
        for robot in view.present {
            if self.act(RobotAction::Leave(robot)).await.is_err() {
                return;
            }
        }
    }
}
