//! [`GiftTallies`] of the [`InMemoryStore`]: the counted orders in a map by their key day, the
//! values and turnovers in maps, every count checked whole before anything changes.

use std::collections::BTreeSet;
use std::ops::Bound;

use async_trait::async_trait;
use room_domain::{Coins, DayKey, Periods, RoomId, UserId};

use super::InMemoryStore;
use crate::error::{Error, Result};
use crate::ports::{
    GiftTallies, GiftTally, GiftValues, MAX_TURNOVER_PAGE, RoomTurnover, TallySums,
    TurnoverSettlement, ValueTotals, check_tallies, period_keys,
};

/// Whether `turnover` waits for a settlement: never settled, counted beyond its latest
/// settlement, or owing what its latest settlement recorded.
fn pending(turnover: &RoomTurnover) -> bool {
    turnover.settlements == 0
        || turnover.turnover > turnover.settled_turnover
        || turnover.owed > Coins::ZERO
}

#[async_trait]
impl GiftTallies for InMemoryStore {
    async fn count_gifts(&self, tallies: &[GiftTally]) -> Result<u32> {
        check_tallies(tallies)?;
        let mut t = self.lock();
        let t = &mut t.tallies;
        let mut sums = TallySums::default();
        let mut fresh = BTreeSet::new();
        for tally in tallies {
            let key = (
                tally.key_day().0,
                tally.sender.clone(),
                tally.order_id.clone(),
            );
            if t.counted.contains(&key) || !fresh.insert(key) {
                continue;
            }
            sums.add(tally)?;
        }
        // Every new sum is checked before anything changes.
        let overflow = || Error::Invalid("gift value overflow".into());
        let mut values = Vec::with_capacity(sums.values.len());
        for (key, (sent, received)) in sums.values {
            let (old_sent, old_received) = t.values.get(&key).copied().unwrap_or_default();
            let sent = old_sent.checked_add(sent).ok_or_else(overflow)?;
            let received = old_received.checked_add(received).ok_or_else(overflow)?;
            values.push((key, (sent, received)));
        }
        let mut turnovers = Vec::with_capacity(sums.turnovers.len());
        for ((day, room), (value, gifts)) in sums.turnovers {
            let (old_value, old_gifts) = t
                .turnovers
                .get(&(day, room.clone()))
                .map(|old| (old.turnover.0, old.gifts))
                .unwrap_or_default();
            let value = old_value.checked_add(value).ok_or_else(overflow)?;
            turnovers.push(((day, room), (value, old_gifts + gifts)));
        }
        let counted = u32::try_from(fresh.len()).unwrap_or(u32::MAX);
        t.counted.extend(fresh);
        t.values.extend(values);
        for ((day, room), (value, gifts)) in turnovers {
            let entry = t
                .turnovers
                .entry((day, room.clone()))
                .or_insert_with(|| RoomTurnover::empty(room, DayKey(day)));
            entry.turnover = Coins(value);
            entry.gifts = gifts;
        }
        Ok(counted)
    }

    async fn gift_values(&self, user: &UserId, periods: &Periods) -> Result<GiftValues> {
        let t = self.lock();
        let [lifetime, day, week, month] = period_keys(periods).map(|(code, number)| {
            let (sent, received) = t
                .tallies
                .values
                .get(&(user.clone(), code, number))
                .copied()
                .unwrap_or_default();
            ValueTotals {
                sent: Coins(sent),
                received: Coins(received),
            }
        });
        Ok(GiftValues {
            lifetime,
            day,
            week,
            month,
        })
    }

    async fn room_turnover(&self, room: &RoomId, day: DayKey) -> Result<Option<RoomTurnover>> {
        Ok(self
            .lock()
            .tallies
            .turnovers
            .get(&(day.0, room.clone()))
            .cloned())
    }

    async fn unsettled_turnovers(
        &self,
        before: DayKey,
        after: Option<(DayKey, RoomId)>,
        limit: u32,
    ) -> Result<Vec<RoomTurnover>> {
        let t = self.lock();
        let from = match &after {
            Some((day, room)) => Bound::Excluded((day.0, room.clone())),
            None => Bound::Unbounded,
        };
        Ok(t.tallies
            .turnovers
            .range((from, Bound::Unbounded))
            .map(|(_, turnover)| turnover)
            .take_while(|turnover| turnover.day < before)
            .filter(|turnover| pending(turnover))
            .take(limit.min(MAX_TURNOVER_PAGE) as usize)
            .cloned()
            .collect())
    }

    async fn record_settlement(
        &self,
        room: &RoomId,
        day: DayKey,
        settlements: u32,
        settled_turnover: Coins,
        owed: Coins,
        settlement: &TurnoverSettlement,
    ) -> Result<bool> {
        let mut t = self.lock();
        let Some(turnover) = t.tallies.turnovers.get_mut(&(day.0, room.clone())) else {
            return Err(Error::NotFound(format!(
                "turnover of room {room} on day {day}"
            )));
        };
        if turnover.settlements != settlements || turnover.owed != Coins::ZERO {
            return Ok(false);
        }
        turnover.settlements = settlements + 1;
        turnover.settled_turnover = settled_turnover;
        turnover.owed = owed;
        turnover.settlement = Some(settlement.clone());
        Ok(true)
    }

    async fn mark_settlement_paid(
        &self,
        room: &RoomId,
        day: DayKey,
        settlements: u32,
    ) -> Result<()> {
        let mut t = self.lock();
        if let Some(turnover) = t.tallies.turnovers.get_mut(&(day.0, room.clone()))
            && turnover.settlements == settlements
        {
            turnover.owed = Coins::ZERO;
        }
        Ok(())
    }

    async fn prune_counted(&self, before: DayKey, limit: u32) -> Result<u64> {
        let mut t = self.lock();
        let old: Vec<_> = t
            .tallies
            .counted
            .iter()
            .take_while(|(day, _, _)| *day < before.0)
            .take(limit as usize)
            .cloned()
            .collect();
        for key in &old {
            t.tallies.counted.remove(key);
        }
        Ok(old.len() as u64)
    }
}
