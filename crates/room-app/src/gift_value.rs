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
//! turnover of it is settled: the settlement is recorded first (by a compare and set on the
//! number of settlements, with what it owes: the billing policy's `turnover_bp` share of the
//! turnover), then the room's owner is credited that as income ([`IncomePart::Turnover`],
//! keyed by room, day and settlement number), then the settlement is marked paid. A pass
//! stopped anywhere pays what was recorded when it runs again, once. A gift counted after its
//! day was settled (the consumer fell behind) makes the turnover pending again, and the next
//! settlement pays what the larger turnover earns beyond what was recorded.
//!
//! Metrics: the consumers' own (`room_facts_*{consumer}`), `room_gift_tallies_total` (gifts
//! newly counted; a repeat adds nothing), `room_turnover_settlements_total` (settlements
//! recorded), `room_turnover_rewards_total` (coins of income they paid) and
//! `room_turnover_settlement_failures_total` (turnovers a pass passed over).

use async_trait::async_trait;
use room_domain::{
    BillingPolicy, Coins, DayKey, Event, EventEnvelope, IncomePart, OrderId, Periods, RoomId,
    Timestamp, UserId,
};

use crate::consumers::{FactError, FactHandler};
use crate::error::{Error, Result};
use crate::ids::SYSTEM_ID_PREFIX;
use crate::ports::{
    BillingPoliciesRef, GiftTalliesRef, GiftTally, GiftValues, IncomeEntry, IncomeLedgerRef,
    MAX_TALLY_COUNT, MAX_TURNOVER_PAGE, RoomDirectoryRef, RoomTurnover, TurnoverSettlement,
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

/// The order id of settlement number `settlement` (from 1) of a room's turnover of `day`:
/// `sys-turnover-YYYY-MM-DD` for the first, `sys-turnover-YYYY-MM-DD-n` for a later one (gifts
/// counted after the day was first settled). A client's order id never starts with `sys-`,
/// so the key is no gift's.
pub fn turnover_order_id(day: DayKey, settlement: u32) -> Result<OrderId> {
    let id = if settlement <= 1 {
        format!("{SYSTEM_ID_PREFIX}turnover-{day}")
    } else {
        format!("{SYSTEM_ID_PREFIX}turnover-{day}-{settlement}")
    };
    OrderId::new(id).map_err(Error::corrupt)
}

/// The income entry that pays what settlement number `settlement` of `turnover` owes
/// (`amount`): keyed by the room (as its sender), the day and the settlement's number, so a
/// settlement paid twice credits once.
pub fn turnover_income(
    turnover: &RoomTurnover,
    settlement_number: u32,
    settlement: &TurnoverSettlement,
    amount: Coins,
) -> Result<IncomeEntry> {
    Ok(IncomeEntry {
        sender: UserId::new(turnover.room_id.as_str()).map_err(Error::corrupt)?,
        order_id: turnover_order_id(turnover.day, settlement_number)?,
        recipient: settlement.owner.clone(),
        part: IncomePart::Turnover,
        user: settlement.owner.clone(),
        amount,
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
    /// Where the next pass starts: after the last turnover a pass read when it stopped with
    /// more to read, so that turnovers that keep failing never hold back those after them;
    /// `None` (from the first) once a pass read to the end.
    pub resume: std::sync::Mutex<Option<(DayKey, RoomId)>>,
}

/// How many pages of pending turnovers one pass reads at most.
const SETTLE_PAGES: u32 = 10;

impl Settler {
    /// Settles the pending turnovers of the days closed `delay_secs` before `now`, `limit` a
    /// page and at most [`SETTLE_PAGES`] pages, from where the last pass stopped; returns
    /// how many it handled. A turnover that fails (no summary for its room, a credit the
    /// ledger refuses, the store down) is counted in `room_turnover_settlement_failures_total`,
    /// logged and passed over: it stays pending, the others go on, and a later pass comes
    /// back to it once it has read to the end.
    pub async fn settle_turnovers(&self, now: Timestamp, limit: u32) -> Result<u32> {
        // The first day not closed yet, `delay_secs` ago.
        let open = Timestamp(now.0.saturating_sub(i64::from(self.delay_secs) * 1000))
            .day_key(self.utc_offset_secs);
        let page_size = limit.clamp(1, MAX_TURNOVER_PAGE) as usize;
        let mut done = 0;
        let mut after = self.resume.lock().unwrap_or_else(|e| e.into_inner()).take();
        for _ in 0..SETTLE_PAGES {
            let page = self
                .tallies
                .unsettled_turnovers(open, after.clone(), limit)
                .await?;
            let Some(last) = page.last() else {
                after = None;
                break;
            };
            let full = page.len() >= page_size;
            after = full.then(|| (last.day, last.room_id.clone()));
            let policy = self
                .policies
                .current_policy()
                .await?
                .ok_or_else(|| Error::Unavailable("no billing policy is stored yet".into()))?;
            for turnover in page {
                match self.settle(&turnover, &policy, now).await {
                    Ok(()) => done += 1,
                    Err(error) => {
                        metrics::counter!("room_turnover_settlement_failures_total").increment(1);
                        tracing::warn!(
                            room_id = %turnover.room_id,
                            day = %turnover.day,
                            %error,
                            "a room's turnover could not be settled; it is tried again later"
                        );
                    }
                }
            }
            if !full {
                break;
            }
        }
        *self.resume.lock().unwrap_or_else(|e| e.into_inner()) = after;
        Ok(done)
    }

    /// Pays what `turnover`'s latest settlement owes, or records the next settlement (what the
    /// turnover earns under `policy` beyond what was recorded) and pays it. A pending
    /// turnover owes, or was counted beyond its latest settlement, or has none.
    async fn settle(
        &self,
        turnover: &RoomTurnover,
        policy: &BillingPolicy,
        now: Timestamp,
    ) -> Result<()> {
        if let Some(settlement) = &turnover.settlement
            && turnover.owed > Coins::ZERO
        {
            // Recorded and not marked paid: a pass stopped after recording it.
            return self
                .pay(turnover, turnover.settlements, settlement, turnover.owed)
                .await;
        }
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
        let recorded = turnover
            .settlement
            .as_ref()
            .map(|settlement| settlement.reward)
            .unwrap_or_default();
        let earned = policy.turnover_reward(turnover.turnover);
        // Never less than recorded before (a later policy may share less).
        let owed = Coins(earned.0.saturating_sub(recorded.0).max(0));
        let settlement = TurnoverSettlement {
            owner,
            share_bp: policy.turnover_bp,
            reward: Coins(recorded.0.saturating_add(owed.0)),
            billing_version: policy.version,
            settled_at: now,
        };
        let number = turnover.settlements + 1;
        if !self
            .tallies
            .record_settlement(
                &turnover.room_id,
                turnover.day,
                turnover.settlements,
                turnover.turnover,
                owed,
                &settlement,
            )
            .await?
        {
            // Another pass recorded one first; the next pass sees it.
            return Ok(());
        }
        metrics::counter!("room_turnover_settlements_total").increment(1);
        self.pay(turnover, number, &settlement, owed).await
    }

    /// Credits `amount` that settlement number `number` owes (nothing for zero), then marks
    /// it paid.
    async fn pay(
        &self,
        turnover: &RoomTurnover,
        number: u32,
        settlement: &TurnoverSettlement,
        amount: Coins,
    ) -> Result<()> {
        if amount > Coins::ZERO {
            let entry = turnover_income(turnover, number, settlement, amount)?;
            let credited = self.income.credit_income(&[entry]).await?;
            if credited > 0 {
                metrics::counter!("room_turnover_rewards_total")
                    .increment(u64::try_from(amount.0).unwrap_or_default());
            }
        }
        self.tallies
            .mark_settlement_paid(&turnover.room_id, turnover.day, number)
            .await
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
        .unwrap_or_else(|| RoomTurnover::empty(room.clone(), day)))
}
