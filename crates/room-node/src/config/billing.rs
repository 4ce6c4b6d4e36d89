//! `[billing]`: the time zone gift value and turnover are counted in, and when closed days'
//! turnovers are settled.

use serde::{Deserialize, Serialize};

use super::reference::Section;

/// The longest a closed day's turnovers may wait for their settlement, in seconds (a day).
pub const MAX_SETTLE_DELAY_SECS: u32 = 86_400;

/// `[billing]`: periods and the turnover settlement. The shares themselves are the billing
/// policy's (`[billing]` of the catalog file, then `PUT /v1/admin/billing`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct BillingSettings {
    /// The zone days, weeks and months of gift value and turnover follow: `+HH:MM`,
    /// `-HH:MM` or `Z`.
    pub time_zone: String,
    /// How long after a day closes its rooms' turnovers are settled, in seconds: the
    /// consumers of the durable facts count the day's last gifts meanwhile.
    pub settle_delay_secs: u32,
    /// How often closed days' turnovers are looked for, in seconds.
    pub settle_every_secs: u64,
    /// How many days the keys of counted gifts are kept (at least 1): a fact handed to the
    /// tally consumer again within them counts once; one older would count again.
    pub tally_keys_days: u32,
}

impl Default for BillingSettings {
    fn default() -> Self {
        BillingSettings {
            time_zone: "+00:00".to_owned(),
            settle_delay_secs: 600,
            settle_every_secs: 60,
            tally_keys_days: 7,
        }
    }
}

impl BillingSettings {
    /// The time zone's offset east of UTC, in seconds, or why it is refused.
    pub fn utc_offset_secs(&self) -> anyhow::Result<i32> {
        room_domain::parse_utc_offset(&self.time_zone).ok_or_else(|| {
            anyhow::anyhow!(
                "ROOM__BILLING__TIME_ZONE is {:?}: write the offset from UTC as +HH:MM or -HH:MM \
                 (at most 14 hours), or Z",
                self.time_zone
            )
        })
    }

    /// Refuses a time zone that is no offset and bounds out of range.
    pub fn validate(&self) -> anyhow::Result<()> {
        self.utc_offset_secs()?;
        anyhow::ensure!(
            self.settle_delay_secs <= MAX_SETTLE_DELAY_SECS,
            "ROOM__BILLING__SETTLE_DELAY_SECS is {}: at most {MAX_SETTLE_DELAY_SECS}",
            self.settle_delay_secs
        );
        anyhow::ensure!(
            self.settle_every_secs >= 1,
            "ROOM__BILLING__SETTLE_EVERY_SECS is 0: at least 1"
        );
        anyhow::ensure!(
            self.tally_keys_days >= 1,
            "ROOM__BILLING__TALLY_KEYS_DAYS is 0: at least 1 (a fact handed over again would \
             count twice)"
        );
        Ok(())
    }
}

/// What `[billing]` and each of its keys are for, in the reference (`docs/configuration.md`).
pub(super) const SECTION: Section = Section {
    name: "billing",
    about: "The periods of gift value and room turnover, and the settlement of each closed \
            day's turnover (the room owner's reward, the billing policy's `turnover_bp` share, \
            credited as income). The shares are the billing policy's: the catalog file's \
            `[billing]` seeds it, `PUT /v1/admin/billing` changes it. Metrics: \
            `room_gift_tallies_total`, `room_turnover_settlements_total`, \
            `room_turnover_rewards_total`, `room_turnover_settlement_failures_total`.",
    keys: &[
        (
            "time_zone",
            "The zone whose days, weeks (Monday first) and months gift value and turnover are \
             counted in: `+HH:MM`, `-HH:MM` (at most 14 hours) or `Z`. Change it only between \
             periods: a gift is counted in the periods of the zone current when it is counted.",
        ),
        (
            "settle_delay_secs",
            "How long after a day closes (midnight in `time_zone`) its rooms' turnovers are \
             settled, in seconds, at most 86,400: the consumers count the day's last gifts \
             meanwhile. A gift counted after its day was settled makes it pending again, and a \
             later settlement pays what it adds.",
        ),
        (
            "settle_every_secs",
            "How often closed days' unsettled turnovers are looked for, in seconds (at least \
             1); one process of the deployment does it at a time.",
        ),
        (
            "tally_keys_days",
            "How many days the keys of counted gifts are kept, at least 1: a fact the tally \
             consumer is handed again within them (after a restart, by another node) counts \
             once. Keep it longer than the consumer can fall behind.",
        ),
    ],
};
