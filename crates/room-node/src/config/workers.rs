//! `[workers]`: the background passes and who runs them.

use serde::{Deserialize, Serialize};

use super::reference::Section;

/// The default name of the IM group effects as a consumer of the durable facts
/// (`workers.im_effects_group`): its Kafka consumer group, or its position in the outbox.
pub const GROUP_EFFECTS_CONSUMER_GROUP: &str = "room-service-im-group-effects";

/// The default name of the income consumer (`workers.income_group`), which credits each
/// paid gift's parts as income.
pub const INCOME_CONSUMER_GROUP: &str = "room-service-income";

/// The default name of the tally consumer (`workers.tallies_group`), which counts each paid
/// gift's value for its sender, recipients and room.
pub const TALLIES_CONSUMER_GROUP: &str = "room-service-gift-tallies";

/// `[workers]`: the background passes of the embedded mode.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkerSettings {
    /// How often due timers (rocket launch, mic publish timeout) are fired, in milliseconds.
    pub timers_every_ms: u64,
    /// How often members without a recent heartbeat are looked for, in seconds.
    pub presence_every_secs: u64,
    /// How often owed rocket rewards are paid, in seconds.
    pub payouts_every_secs: u64,
    /// How often unfinished gift orders are recovered, in seconds.
    pub recovery_every_secs: u64,
    /// The periodic recovery settles orders unfinished for longer than this many seconds;
    /// so does recovery at start-up with several nodes (embedded, it settles every unfinished
    /// order). Clustered, it must be longer than `http.request_timeout_secs`: younger orders
    /// may be driven by another node right now.
    pub recovery_older_than_secs: u64,
    /// Most items one pass handles (timers, evictions, payouts); gift recovery reads
    /// unfinished orders in pages of this size and walks all of them in one pass.
    pub batch_limit: u32,
    /// Whether `room-api` runs the background passes itself (`ROOM__WORKERS__IN_PROCESS`).
    /// Set it to `false` on the API nodes when `room-worker` processes are deployed.
    pub in_process: bool,
    /// How long a process's claim on a pass holds without renewal, in seconds: when a worker
    /// dies, another takes its passes over after this long.
    pub claim_ttl_secs: u64,
    /// The name of the IM group effects as a consumer of the durable facts
    /// (`ROOM__WORKERS__IM_EFFECTS_GROUP`): with Kafka, the consumer group every process
    /// running them joins; without, the name of their stored position in the outbox and of
    /// their work claim. 1 to 55 ASCII letters, digits, `.`, `_` or `-`.
    pub im_effects_group: String,
    /// The name of the income consumer, which credits each paid gift's parts as income
    /// (`ROOM__WORKERS__INCOME_GROUP`): as `im_effects_group`, its Kafka consumer group or its
    /// stored position in the outbox. 1 to 55 ASCII letters, digits, `.`, `_` or `-`.
    pub income_group: String,
    /// The name of the tally consumer, which counts each paid gift's value for its sender,
    /// its recipients and its room's turnover (`ROOM__WORKERS__TALLIES_GROUP`): as
    /// `income_group`.
    pub tallies_group: String,
}

impl Default for WorkerSettings {
    fn default() -> Self {
        WorkerSettings {
            timers_every_ms: 500,
            presence_every_secs: 10,
            payouts_every_secs: 2,
            recovery_every_secs: 30,
            recovery_older_than_secs: 60,
            batch_limit: 200,
            in_process: true,
            claim_ttl_secs: 30,
            im_effects_group: GROUP_EFFECTS_CONSUMER_GROUP.to_owned(),
            income_group: INCOME_CONSUMER_GROUP.to_owned(),
            tallies_group: TALLIES_CONSUMER_GROUP.to_owned(),
        }
    }
}

/// What `[workers]` and each of its keys are for, in the reference (`docs/configuration.md`).
pub(super) const SECTION: Section = Section {
    name: "workers",
    about: "The background passes (due timers, evictions, payouts, gift recovery) and who runs \
        them.",
    keys: &[
        (
            "timers_every_ms",
            "How often due timers (rocket launches, mic publish timeouts) fire, in milliseconds.",
        ),
        (
            "presence_every_secs",
            "How often members without a recent heartbeat are looked for, in seconds.",
        ),
        (
            "payouts_every_secs",
            "How often owed rocket rewards are paid, in seconds.",
        ),
        (
            "recovery_every_secs",
            "How often unfinished gift orders are settled, in seconds (they are also settled at \
             start-up, before the service reports ready: every one in embedded mode, those older \
             than `recovery_older_than_secs` with several nodes).",
        ),
        (
            "recovery_older_than_secs",
            "The periodic recovery, and with several nodes the one at start-up, settles orders \
             unfinished for longer than this many seconds; clustered, it must be longer than \
             `http.request_timeout_secs` (younger orders may be driven by another node right now).",
        ),
        (
            "batch_limit",
            "The most items one background pass handles (timers, evictions, payouts); gift \
             recovery reads unfinished orders in pages of this size and walks all of them in one \
             pass.",
        ),
        (
            "in_process",
            "Whether `room-api` runs the background passes itself; set `false` on the API nodes \
             when `room-worker` processes run them (MySQL storage only).",
        ),
        (
            "claim_ttl_secs",
            "How long a process's claim on a shared pass (the outbox publisher, the retention, an \
             in-process consumer of the durable facts reading the outbox; on workers every pass) \
             holds without renewal, in seconds: when a worker dies, another takes its passes over \
             after this long.",
        ),
        (
            "im_effects_group",
            "The name of the IM group effects (creating, destroying, muting, banning) as a consumer \
             of the durable facts, also its metrics label: with Kafka, the consumer group every \
             process running them joins; without, the name of their position in the outbox (one \
             process reads at a time, under a work claim). 1 to 55 ASCII letters, digits, `.`, \
             `_` or `-`.",
        ),
        (
            "income_group",
            "The name of the income consumer (it credits each paid gift's parts, split under the \
             billing policy, as income) as a consumer of the durable facts, also its metrics label: \
             with Kafka, its consumer group; without, the name of its position in the outbox. Runs \
             on every process that runs the background passes. 1 to 55 ASCII letters, digits, \
             `.`, `_` or `-`.",
        ),
        (
            "tallies_group",
            "The name of the tally consumer (it counts each paid gift's value for its sender, \
             its recipients and its room's turnover of the day, in `billing.time_zone`) as a \
             consumer of the durable facts, also its metrics label: as `income_group`. Runs on \
             every process that runs the background passes.",
        ),
    ],
};
