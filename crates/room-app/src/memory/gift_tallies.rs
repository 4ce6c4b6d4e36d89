//! [`GiftTallies`] of the [`InMemoryStore`]: the counted orders in a map by their key day, the
//! values and turnovers in maps, every count checked whole before anything changes.

use std::collections::BTreeSet;

use async_trait::async_trait;
use room_domain::{Coins, DayKey, Periods, RoomId, UserId};

use super::InMemoryStore;
use crate::error::{Error, Result};
use crate::ports::{
    GiftTallies, GiftTally, GiftValues, MAX_TURNOVER_PAGE, RoomTurnover, TallySums,
    TurnoverSettlement, ValueTotals, check_tallies, period_keys,
};

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
                .or_insert_with(|| RoomTurnover {
                    room_id: room,
                    day: DayKey(day),
                    turnover: Coins::ZERO,
                    gifts: 0,
                    settlement: None,
                });
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

    async fn unsettled_turnovers(&self, before: DayKey, limit: u32) -> Result<Vec<RoomTurnover>> {
        Ok(self
            .lock()
            .tallies
            .turnovers
            .values()
            .filter(|turnover| turnover.day < before && turnover.settlement.is_none())
            .take(limit.min(MAX_TURNOVER_PAGE) as usize)
            .cloned()
            .collect())
    }

    async fn settle_turnover(
        &self,
        room: &RoomId,
        day: DayKey,
        settlement: &TurnoverSettlement,
    ) -> Result<bool> {
        let mut t = self.lock();
        let Some(turnover) = t.tallies.turnovers.get_mut(&(day.0, room.clone())) else {
            return Err(Error::NotFound(format!(
                "turnover of room {room} on day {day}"
            )));
        };
        if turnover.settlement.is_some() {
            return Ok(false);
        }
        turnover.settlement = Some(settlement.clone());
        Ok(true)
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
