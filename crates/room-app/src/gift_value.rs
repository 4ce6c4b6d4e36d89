//! Gift value and room turnover: the consumer of the durable facts that counts each applied
//! gift ([`TallyConsumer`]), the reading of a user's gift value and a room's turnover, and
//! the settlement of each closed day's turnover ([`settle_turnovers`]).
//!
//! Every paid `RoomGiftSent` fact counts once, by its order (sender, order id), in the day,
//! week and month of its commit in the billing time zone: its total to the sender's sent
//! value, its value per recipient to each recipient's received value (all time too), and its
//! total to its room's turnover of that day. Robot gifts count nowhere; a FAILED or
//! COMPENSATED order has no fact.
//!
//! Once a day has closed (plus a delay that lets the consumers catch up), each room's
//! turnover of it is settled once: the room's owner is credited the billing policy's
//! `turnover_bp` share of it as income ([`IncomePart::Turnover`], keyed by room and day, so a
//! settlement run twice pays once), then the settlement is recorded by a compare and set.
//!
//! Metrics: the consumers' own (`room_facts_*{consumer}`), `room_gift_tallies_total` (gifts
//! newly counted; a repeat adds nothing), `room_turnover_settlements_total` (turnovers
//! settled) and `room_turnover_rewards_total` (coins of income they paid).

use async_trait::async_trait;
use room_domain::{
    Coins, DayKey, Event, EventEnvelope, IncomePart, OrderId, Periods, RoomId, Timestamp, UserId,
};

use crate::consumers::{FactError, FactHandler};
use crate::error::{Error, Result};
use crate::ports::{
    BillingPoliciesRef, GiftTalliesRef, GiftTally, GiftValues, IncomeEntry, IncomeLedgerRef,
    MAX_TALLY_COUNT, RoomDirectoryRef, RoomTurnover, TurnoverSettlement,
};

/// The gift `envelope` counts, if it is a paid `RoomGiftSent`: in the periods of its commit
/// in the zone `utc_offset_secs` east of UTC.
pub fn tally_of(envelope: &EventEnvelope, utc_offset_secs: i32) -> Option<GiftTally> {
    let Event::RoomGiftSent(gift) = &envelope.event else {
        return None;
    };
    if gift.robot {
        return None;
    }
    Some(GiftTally {
        sender: gift.sender.clone(),
        order_id: gift.order_id.clone(),
        room_id: envelope.room_id.clone(),
        recipients: gift.recipients.clone(),
        value_per_recipient: gift.value_per_recipient(),
        at: envelope.occurred_at,
        periods: Periods::at(envelope.occurred_at, utc_offset_secs),
    })
}

/// The consumer of the durable facts that counts each paid gift's value for its sender, its
/// recipients and its room's turnover.
pub struct TallyConsumer {
    tallies: GiftTalliesRef,
    utc_offset_secs: i32,
}

impl TallyConsumer {
    /// The consumer over the tallies' store, counting in the zone `utc_offset_secs` east of
    /// UTC (the billing time zone).
    pub fn new(tallies: GiftTalliesRef, utc_offset_secs: i32) -> Self {
        TallyConsumer {
            tallies,
            utc_offset_secs,
        }
    }

    async fn count(&self, tallies: &[GiftTally]) -> std::result::Result<(), FactError> {
        for chunk in tallies.chunks(MAX_TALLY_COUNT) {
            let counted = match self.tallies.count_gifts(chunk).await {
                Ok(counted) => counted,
                // A value or sum the store cannot take: no retry can mend it.
                Err(error @ Error::Invalid(_)) => return Err(FactError::permanent(error)),
                Err(error) => return Err(FactError::retryable(error)),
            };
            metrics::counter!("room_gift_tallies_total").increment(u64::from(counted));
        }
        Ok(())
    }
}

#[async_trait]
impl FactHandler for TallyConsumer {
    async fn handle(&self, envelope: &EventEnvelope) -> std::result::Result<(), FactError> {
        match tally_of(envelope, self.utc_offset_secs) {
            Some(tally) => self.count(&[tally]).await,
            None => Ok(()),
        }
    }

    /// The run's gifts counted together: one store call (one transaction) for up to
    /// [`MAX_TALLY_COUNT`] gifts.
    async fn handle_all(
        &self,
        envelopes: &[EventEnvelope],
    ) -> Option<std::result::Result<(), FactError>> {
        let tallies: Vec<GiftTally> = envelopes
            .iter()
            .filter_map(|envelope| tally_of(envelope, self.utc_offset_secs))
            .collect();
        Some(self.count(&tallies).await)
    }
}

/// A user's gift value as of one day: all time, and in that day and its week and month.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GiftValueView {
    /// The day, week and month the values are of.
    pub periods: Periods,
    /// The values.
    pub values: GiftValues,
}

/// `user`'s gift value in the periods of `day` (in the billing time zone), or of today at
/// `now` in the zone `utc_offset_secs` east of UTC when no day is given.
pub async fn gift_value(
    tallies: &GiftTalliesRef,
    user: &UserId,
    day: Option<DayKey>,
    now: Timestamp,
    utc_offset_secs: i32,
) -> Result<GiftValueView> {
    let periods = match day {
        Some(day) => Periods::of_day(day),
        None => Periods::at(now, utc_offset_secs),
    };
    let values = tallies.gift_values(user, &periods).await?;
    Ok(GiftValueView { periods, values })
}

/// The order id of a room's turnover reward for `day` (`turnover-YYYY-MM-DD`).
pub fn turnover_order_id(day: DayKey) -> Result<OrderId> {
    OrderId::new(format!("turnover-{day}")).map_err(Error::corrupt)
}

/// The income entry that pays `settlement` of `turnover`: keyed by the room (as its sender)
/// and the day, so a settlement run twice credits once.
pub fn turnover_income(
    turnover: &RoomTurnover,
    settlement: &TurnoverSettlement,
) -> Result<IncomeEntry> {
    Ok(IncomeEntry {
        sender: UserId::new(turnover.room_id.as_str()).map_err(Error::corrupt)?,
        order_id: turnover_order_id(turnover.day)?,
        recipient: settlement.owner.clone(),
        part: IncomePart::Turnover,
        user: settlement.owner.clone(),
        amount: settlement.reward,
        room_id: turnover.room_id.clone(),
        gift_id: None,
        billing_version: settlement.billing_version,
        at: settlement.settled_at,
    })
}

/// What a settlement pass reads and writes.
pub struct Settler {
    /// The turnovers.
    pub tallies: GiftTalliesRef,
    /// Where rewards are credited.
    pub income: IncomeLedgerRef,
    /// Each room's owner (its summary).
    pub directory: RoomDirectoryRef,
    /// The billing policy, whose current `turnover_bp` is the owner's share.
    pub policies: BillingPoliciesRef,
    /// The billing time zone, seconds east of UTC.
    pub utc_offset_secs: i32,
    /// How long after a day closes its turnovers are settled.
    pub delay_secs: u32,
}

impl Settler {
    /// Settles up to `limit` unsettled turnovers of the days closed `delay_secs` before
    /// `now`; returns how many it settled. Each pays the room's owner the current policy's
    /// share as income (nothing for a zero reward), then records the settlement; a pass that
    /// stops between the two pays nothing twice when run again (the credit is keyed by room
    /// and day, and a settlement recorded by another pass stands).
    pub async fn settle_turnovers(&self, now: Timestamp, limit: u32) -> Result<u32> {
        // The first day not closed yet, `delay_secs` ago.
        let open = Timestamp(now.0.saturating_sub(i64::from(self.delay_secs) * 1000))
            .day_key(self.utc_offset_secs);
        let turnovers = self.tallies.unsettled_turnovers(open, limit).await?;
        if turnovers.is_empty() {
            return Ok(0);
        }
        let policy = self
            .policies
            .current_policy()
            .await?
            .ok_or_else(|| Error::Unavailable("no billing policy is stored yet".into()))?;
        let mut settled = 0;
        for turnover in turnovers {
            let owner = self
                .directory
                .get_summary(&turnover.room_id)
                .await?
                .ok_or_else(|| {
                    Error::corrupt(format!(
                        "room {} has a turnover and no summary",
                        turnover.room_id
                    ))
                })?
                .owner;
            let settlement = TurnoverSettlement {
                owner,
                share_bp: policy.turnover_bp,
                reward: policy.turnover_reward(turnover.turnover),
                billing_version: policy.version,
                settled_at: now,
            };
            if settlement.reward > Coins::ZERO {
                let entry = turnover_income(&turnover, &settlement)?;
                self.income.credit_income(&[entry]).await?;
            }
            if self
                .tallies
                .settle_turnover(&turnover.room_id, turnover.day, &settlement)
                .await?
            {
                settled += 1;
                metrics::counter!("room_turnover_settlements_total").increment(1);
                metrics::counter!("room_turnover_rewards_total")
                    .increment(u64::try_from(settlement.reward.0).unwrap_or_default());
            }
        }
        Ok(settled)
    }
}

/// The turnover of `room` on `day`: zero, unsettled, when no gift was counted in it.
pub async fn room_turnover(
    tallies: &GiftTalliesRef,
    room: &RoomId,
    day: DayKey,
) -> Result<RoomTurnover> {
    Ok(tallies
        .room_turnover(room, day)
        .await?
        .unwrap_or_else(|| RoomTurnover {
            room_id: room.clone(),
            day,
            turnover: Coins::ZERO,
            gifts: 0,
            settlement: None,
        }))
}
