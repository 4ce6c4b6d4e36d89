//! `[boards]`: the leaderboards' consumer and how long closed periods stay readable.

use room_app::boards::BoardRetention;
use serde::{Deserialize, Serialize};

use super::reference::Section;

/// The default name of the board consumer as a consumer of the durable facts.
pub const BOARDS_CONSUMER_GROUP: &str = "room-service-boards";

/// The most periods of one kind a board may be configured to keep.
pub const MAX_KEPT_PERIODS: u32 = 1_000;

/// The fewest periods of one kind a board may be configured to keep: the current one and the
/// two closed ones the rewards pass may still record.
pub const MIN_KEPT_PERIODS: u32 = 3;

/// `[boards]`: the leaderboards.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct BoardSettings {
    /// How many days' boards stay readable, today's included.
    pub keep_days: u32,
    /// How many weeks' boards stay readable, this week's included.
    pub keep_weeks: u32,
    /// How many months' boards stay readable, this month's included.
    pub keep_months: u32,
    /// How often the entries of expired periods are deleted, in seconds.
    pub prune_every_secs: u64,
    /// How long after a period closes its rewards are paid, in seconds: time for the board
    /// consumer to count the period's last gifts.
    pub reward_delay_secs: u32,
    /// How often closed periods' rewards are recorded and paid, in seconds.
    pub reward_every_secs: u64,
    /// How long a node serves a board page it answered again, in milliseconds (0: never).
    pub page_cache_ms: u64,
    /// The most board pages a node keeps for that.
    pub page_cache_entries: usize,
    /// The board consumer's name as a consumer of the durable facts: with Kafka its consumer
    /// group, without its stored position in the outbox and its work claim. 1 to 55 ASCII
    /// letters, digits, `.`, `_` or `-`.
    pub group: String,
}

impl Default for BoardSettings {
    fn default() -> Self {
        BoardSettings {
            keep_days: 31,
            keep_weeks: 13,
            keep_months: 12,
            prune_every_secs: 3_600,
            reward_delay_secs: 600,
            reward_every_secs: 60,
            page_cache_ms: 250,
            page_cache_entries: 1_024,
            group: BOARDS_CONSUMER_GROUP.to_owned(),
        }
    }
}

impl BoardSettings {
    /// How long closed periods stay, and counted gifts' keys `key_days` UTC days
    /// (`billing.tally_keys_days`).
    pub fn retention(&self, key_days: u32) -> BoardRetention {
        BoardRetention {
            days: self.keep_days,
            weeks: self.keep_weeks,
            months: self.keep_months,
            key_days,
        }
    }

    /// Refuses values out of their bounds, naming the key; `others` are the names of the
    /// other consumers, which the group must not repeat.
    pub fn validate(&self, others: &[&str]) -> anyhow::Result<()> {
        for (key, value) in [
            ("KEEP_DAYS", self.keep_days),
            ("KEEP_WEEKS", self.keep_weeks),
            ("KEEP_MONTHS", self.keep_months),
        ] {
            anyhow::ensure!(
                (MIN_KEPT_PERIODS..=MAX_KEPT_PERIODS).contains(&value),
                "ROOM__BOARDS__{key} is {value}: {MIN_KEPT_PERIODS} to {MAX_KEPT_PERIODS} \
                 periods (a closed period's rewards are recorded from its board)"
            );
        }
        anyhow::ensure!(
            (1..=86_400).contains(&self.prune_every_secs),
            "ROOM__BOARDS__PRUNE_EVERY_SECS is {}: 1 to 86,400",
            self.prune_every_secs
        );
        anyhow::ensure!(
            self.page_cache_ms <= 10_000,
            "ROOM__BOARDS__PAGE_CACHE_MS is {}: 0 (off) to 10,000",
            self.page_cache_ms
        );
        anyhow::ensure!(
            self.page_cache_entries <= 100_000,
            "ROOM__BOARDS__PAGE_CACHE_ENTRIES is {}: 0 to 100,000",
            self.page_cache_entries
        );
        anyhow::ensure!(
            self.reward_delay_secs <= 86_400,
            "ROOM__BOARDS__REWARD_DELAY_SECS is {}: 0 to 86,400",
            self.reward_delay_secs
        );
        anyhow::ensure!(
            (1..=3_600).contains(&self.reward_every_secs),
            "ROOM__BOARDS__REWARD_EVERY_SECS is {}: 1 to 3,600",
            self.reward_every_secs
        );
        anyhow::ensure!(
            room_app::consumers::valid_consumer_name(&self.group)
                && !others.contains(&self.group.as_str()),
            "ROOM__BOARDS__GROUP is {:?}: it names a consumer of the durable facts (a Kafka \
             group, an outbox position) other than the income, tally, broadcast and IM \
             consumers, 1 to {} ASCII letters, digits, '.', '_' or '-'",
            self.group,
            room_app::consumers::MAX_CONSUMER_NAME
        );
        Ok(())
    }
}

/// What `[boards]` and each of its keys are for, in the reference (`docs/configuration.md`).
pub(super) const SECTION: Section = Section {
    name: "boards",
    about: "The leaderboards: senders, receivers and rooms of the whole app, senders and \
            receivers of each room, by day, week and month of `billing.time_zone`. A consumer \
            of the durable facts counts each paid gift once (robot gifts never); the boards \
            are read from the store, never from a room. The metrics \
            `room_board_gifts_total` (gifts counted) and `room_boards_pruned_total` (entries \
            of expired periods deleted) follow them.",
    keys: &[
        (
            "keep_days",
            "How many days' boards stay readable, today's included, 3 to 1,000 (the rewards of \
             the two closed before are recorded from their boards); older days' entries are \
             deleted, and the keys of counted gifts after `billing.tally_keys_days`.",
        ),
        (
            "keep_weeks",
            "How many weeks' boards (Monday to Sunday) stay readable, this week's included, 3 \
             to 1,000.",
        ),
        (
            "keep_months",
            "How many months' boards stay readable, this month's included, 3 to 1,000.",
        ),
        (
            "prune_every_secs",
            "How often the entries of expired periods are deleted, in seconds (1 to 86,400), \
             by one process at a time under a work claim.",
        ),
        (
            "reward_delay_secs",
            "How long after a period closes (midnight in `billing.time_zone`) its boards' rewards \
             are recorded and paid, in seconds (0 to 86,400): time for the board consumer to \
             count the period's last gifts. The reward tables are `configs/gifts.toml`'s \
             `[[board_rewards]]` (version 1) and `PUT /v1/admin/board-rewards`.",
        ),
        (
            "reward_every_secs",
            "How often closed periods' rewards are recorded and paid, in seconds (1 to 3,600), \
             by one process at a time under a work claim. Metrics: \
             `room_board_rewards_recorded_total`, `room_board_rewards_paid_total`, \
             `room_board_reward_coins_total`, `room_board_reward_failures_total`.",
        ),
        (
            "page_cache_ms",
            "How long a node answers a board page it answered lately from memory, in \
             milliseconds (0 to 10,000; 0 turns it off): a board shows a gift at most this \
             much later. Standings (`/me`) are never cached.",
        ),
        (
            "page_cache_entries",
            "The most board pages (a board, a cursor and a limit each) a node keeps for that, \
             0 to 100,000; when it is full of live pages, more are answered uncached \
             (`room_board_page_cache_full_total`).",
        ),
        (
            "group",
            "The board consumer's name as a consumer of the durable facts, also its metrics \
             label: with Kafka its consumer group, without its position in the outbox. Runs on \
             every process that runs the background passes. 1 to 55 ASCII letters, digits, \
             `.`, `_` or `-`.",
        ),
    ],
};
