//! `[robots]`: the robot rooms, the orchestrator that runs them, and robot visitors.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::reference::Section;

/// `[robots]`: the users that robot rooms run.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct RobotSettings {
    /// The user-id prefix that marks robots (`ROOM__ROBOTS__ID_PREFIX`): a robot room's pool
    /// holds only ids with it.
    pub id_prefix: String,
    /// The share of robot display events (robot gifts, joins, leaves and mic changes) sent to
    /// Tencent IM (`ROOM__ROBOTS__IM_SAMPLE`, 0 to 1): robot rooms must not eat the rooms' IM
    /// budget. The event stream gets them all.
    pub im_sample: f64,
    /// Whether `room-api` runs the robot rooms itself in embedded mode
    /// (`ROOM__ROBOTS__IN_PROCESS`). Clustered, `room-orchestrator` nodes run them and
    /// `room-api` never does.
    pub in_process: bool,
    /// How often an orchestrator reads the robot room configurations and starts, stops and
    /// hands over runtimes, in milliseconds (`ROOM__ROBOTS__RECONCILE_EVERY_MS`).
    pub reconcile_every_ms: u64,
    /// How often each robot room plays one step of its script, in milliseconds
    /// (`ROOM__ROBOTS__STEP_EVERY_MS`): at most one join or leave, one seat change and the
    /// gifts its rate owes per step.
    pub step_every_ms: u64,
    /// How long a robot stays in a room on average before another of the pool takes its
    /// place, in seconds (`ROOM__ROBOTS__STAY_SECS`).
    pub stay_secs: u64,
    /// The most robot rooms one node runs (`ROOM__ROBOTS__MAX_RUNTIMES`); past it the rest
    /// wait for another orchestrator.
    pub max_runtimes: usize,
    /// Human rooms with at least one person and fewer than this many get robot visitors
    /// (`ROOM__ROBOTS__VISITORS_BELOW`); 0, the default: none do.
    pub visitors_below: u32,
    /// The most robot visitors one room gets (`ROOM__ROBOTS__VISITORS_PER_ROOM`).
    pub visitors_per_room: u32,
    /// The visitor robots, `{id_prefix}visitor-0` up to this many
    /// (`ROOM__ROBOTS__VISITOR_POOL`).
    pub visitor_pool: u32,
    /// How often the quiet rooms are looked at, in seconds (`ROOM__ROBOTS__VISITORS_EVERY_SECS`).
    pub visitors_every_secs: u64,
    /// The most open rooms one look goes through, hottest first (`ROOM__ROBOTS__VISITORS_SCAN`).
    pub visitors_scan: u32,
}

impl Default for RobotSettings {
    fn default() -> Self {
        RobotSettings {
            id_prefix: "robot-".into(),
            im_sample: 0.1,
            in_process: true,
            reconcile_every_ms: 5_000,
            step_every_ms: 2_000,
            stay_secs: 600,
            max_runtimes: 10_000,
            visitors_below: 0,
            visitors_per_room: 2,
            visitor_pool: 1_000,
            visitors_every_secs: 10,
            visitors_scan: 500,
        }
    }
}

impl RobotSettings {
    /// The orchestrator's configuration for node `node_id`.
    pub fn orchestrator(&self, node_id: &str) -> room_app::robots::OrchestratorConfig {
        room_app::robots::OrchestratorConfig {
            node_id: node_id.to_owned(),
            reconcile_every: Duration::from_millis(self.reconcile_every_ms.max(10)),
            step_every: Duration::from_millis(self.step_every_ms.max(10)),
            robot_stay: Duration::from_secs(self.stay_secs.max(1)),
            max_runtimes: self.max_runtimes,
            ..room_app::robots::OrchestratorConfig::default()
        }
    }

    /// The robot visitors' configuration.
    pub fn visitors(&self) -> room_app::visitors::VisitorConfig {
        room_app::visitors::VisitorConfig {
            below: self.visitors_below,
            per_room: self.visitors_per_room,
            pool: self.visitor_pool,
            id_prefix: self.id_prefix.clone(),
            scan: self.visitors_scan.max(1),
            every: Duration::from_secs(self.visitors_every_secs.max(1)),
        }
    }
}

/// What `[robots]` and each of its keys are for, in the reference (`docs/configuration.md`).
pub(super) const SECTION: Section = Section {
    name: "robots",
    about: "Robot rooms, the orchestrators that run them, and robot visitors in quiet rooms.",
    keys: &[
        (
            "id_prefix",
            "The user-id prefix that marks robots: a robot room's pool holds only such ids, and a \
             token whose `sub` has it is refused 401 `INVALID_TOKEN`.",
        ),
        (
            "im_sample",
            "The share of robot display events (robot gifts, joins, leaves, mic changes) sent to \
             Tencent IM, from 0 to 1, the same events on every node; the event stream gets them \
             all.",
        ),
        (
            "in_process",
            "Whether `room-api` runs the robot rooms itself in embedded mode; clustered, \
             `room-orchestrator` nodes run them and `room-api` never does.",
        ),
        (
            "reconcile_every_ms",
            "How often an orchestrator reads the robot room configurations and starts, stops and \
             hands over runtimes, in milliseconds: at least 100, and on an orchestrator at most \
             half of `ROOM__LEASE__TTL_MS`.",
        ),
        (
            "step_every_ms",
            "How often each robot room plays one step of its script, in milliseconds (at least \
             100): at most one join or leave, one seat change and the gifts its rate owes.",
        ),
        (
            "stay_secs",
            "How long a robot stays in a room on average before another of the pool takes its \
             place, in seconds.",
        ),
        (
            "max_runtimes",
            "The most robot rooms one node runs; past it, the rest wait for another orchestrator.",
        ),
        (
            "visitors_below",
            "Human rooms with at least one person and fewer than this many get robot visitors \
             (listeners only), which leave once enough people came or the last one left; 0: none \
             do.",
        ),
        (
            "visitors_per_room",
            "The most robot visitors one room gets.",
        ),
        (
            "visitor_pool",
            "The visitor robots, `{id_prefix}visitor-0` up to this many.",
        ),
        (
            "visitors_every_secs",
            "How often the quiet rooms are looked at, in seconds.",
        ),
        (
            "visitors_scan",
            "The most open rooms one look goes through, hottest first.",
        ),
    ],
};
