//! The [`Orchestrator`]: each round it reads the robot room configurations and starts, stops
//! and hands over the runtimes of the rooms this node should run.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use room_domain::RoomId;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::config::{OrchestratorConfig, OrchestratorDeps};
use super::placement::{ORCHESTRATOR_GROUP, preferred_node};
use super::runtime::{RobotRuntime, StopReason};
use crate::cell::HeldCell;
use crate::error::{Error, Result};
use crate::ports::{MAX_ROBOT_ROOM_PAGE, RobotRoomConfig};

/// Rounds a room taken in place of its preferred node is kept before it is handed back.
const FALLBACK_HOLD_ROUNDS: u64 = 12;

/// Robot rooms one reconcile activates at once (each takes its lease and loads the room).
const ACTIVATIONS_AT_ONCE: usize = 32;

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
