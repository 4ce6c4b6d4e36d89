//! The runtime of one robot room on this node: it plays the room's script step by step on the
//! cell it holds, and only there, until it is told to stop or the cell stops
//! ([`StopReason`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use room_domain::{Actor, Command, CommandId, CommandKind, GiftId, GiftSnapshot, RobotGift};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::config::OrchestratorDeps;
use super::script::{RobotAction, RobotView, ScriptCarry, plan_step};
use crate::cell::HeldCell;
use crate::error::{Error, Result};
use crate::ports::RobotRoomConfig;

/// How long a runtime trusts the catalog gifts it read.
const GIFT_CACHE_FOR: Duration = Duration::from_secs(60);

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

/// The runtime of one robot room on this node.
pub(super) struct RobotRuntime {
    pub(super) deps: OrchestratorDeps,
    pub(super) held: HeldCell,
    pub(super) config: watch::Receiver<RobotRoomConfig>,
    pub(super) stop: CancellationToken,
    pub(super) reason: Arc<std::sync::Mutex<Option<StopReason>>>,
    pub(super) step_every: Duration,
    pub(super) robot_stay: Duration,
    /// Catalog gifts of the mix, as read since the configuration last changed (and at most
    /// [`GIFT_CACHE_FOR`] ago).
    pub(super) gifts: HashMap<GiftId, Option<GiftSnapshot>>,
    pub(super) gifts_read_at: tokio::time::Instant,
}

impl RobotRuntime {
    pub(super) async fn run(mut self) {
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
