//! [`GiftTallies`] (migration 0120). A count is one job of the single writer, in its own
//! savepoint: it skips the orders whose keys are stored, stores the others' keys, and moves
//! each (user, period) value and each (day, room) turnover once, checked for overflow before
//! it is written; any error rolls the whole count back. A settlement is one `UPDATE` whose
//! condition is that the turnover is not settled yet.

use std::collections::BTreeSet;

use async_trait::async_trait;
use room_app::Error;
use room_app::ports::{
    GiftTallies, GiftTally, GiftValues, MAX_TURNOVER_PAGE, RoomTurnover, TallySums,
    TurnoverSettlement, ValueTotals, check_tallies, period_keys,
};
use room_domain::{Coins, DayKey, Periods, RoomId, Timestamp, UserId};
use rusqlite::{Connection, OptionalExtension, params};
use sqlx::sqlite::SqliteRow;

use crate::codec::{col, db, id_col, sql, stored_u32, stored_u64, to_i64};
use crate::{Result, SqliteStore};

fn overflow() -> Error {
    Error::Invalid("gift value overflow".into())
}

fn count(conn: &Connection, tallies: &[GiftTally]) -> Result<u32> {
    let mut sums = TallySums::default();
    let mut fresh = BTreeSet::new();
    for tally in tallies {
        let key = (
            tally.key_day().0,
            tally.sender.as_str(),
            tally.order_id.as_str(),
        );
        if fresh.contains(&key) {
            continue;
        }
        let stored = conn
            .prepare_cached(
                "SELECT 1 FROM gift_tally_orders
                 WHERE key_day = ?1 AND sender = ?2 AND order_id = ?3",
            )
            .and_then(|mut select| {
                select
                    .query_row(params![key.0, key.1, key.2], |_| Ok(()))
                    .optional()
            })
            .map_err(sql)?;
        if stored.is_some() {
            continue;
        }
        sums.add(tally)?;
        fresh.insert(key);
    }
    if fresh.is_empty() {
        return Ok(0);
    }
    for (day, sender, order_id) in &fresh {
        conn.prepare_cached(
            "INSERT INTO gift_tally_orders (key_day, sender, order_id) VALUES (?1, ?2, ?3)",
        )
        .and_then(|mut insert| insert.execute(params![day, sender, order_id]))
        .map_err(sql)?;
    }
    for ((user, period, number), (sent, received)) in &sums.values {
        let old: Option<(i64, i64)> = conn
            .prepare_cached(
                "SELECT sent, received FROM gift_values
                 WHERE user_id = ?1 AND period = ?2 AND number = ?3",
            )
            .and_then(|mut select| {
                select
                    .query_row(params![user.as_str(), period, number], |row| {
                        Ok((row.get(0)?, row.get(1)?))
                    })
                    .optional()
            })
            .map_err(sql)?;
        let (old_sent, old_received) = old.unwrap_or_default();
        let sent = old_sent.checked_add(*sent).ok_or_else(overflow)?;
        let received = old_received.checked_add(*received).ok_or_else(overflow)?;
        conn.prepare_cached(
            "INSERT INTO gift_values (user_id, period, number, sent, received)
             VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (user_id, period, number)
             DO UPDATE SET sent = excluded.sent, received = excluded.received",
        )
        .and_then(|mut upsert| {
            upsert.execute(params![user.as_str(), period, number, sent, received])
        })
        .map_err(sql)?;
    }
    for ((day, room), (value, gifts)) in &sums.turnovers {
        let old: Option<(i64, i64)> = conn
            .prepare_cached(
                "SELECT turnover, gifts FROM room_turnovers WHERE day = ?1 AND room_id = ?2",
            )
            .and_then(|mut select| {
                select
                    .query_row(params![day, room.as_str()], |row| {
                        Ok((row.get(0)?, row.get(1)?))
                    })
                    .optional()
            })
            .map_err(sql)?;
        let (old_value, old_gifts) = old.unwrap_or_default();
        let value = old_value.checked_add(*value).ok_or_else(overflow)?;
        let gifts = to_i64(*gifts, "gifts")?
            .checked_add(old_gifts)
            .ok_or_else(overflow)?;
        conn.prepare_cached(
            "INSERT INTO room_turnovers (day, room_id, turnover, gifts) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (day, room_id)
             DO UPDATE SET turnover = excluded.turnover, gifts = excluded.gifts",
        )
        .and_then(|mut upsert| upsert.execute(params![day, room.as_str(), value, gifts]))
        .map_err(sql)?;
    }
    Ok(u32::try_from(fresh.len()).unwrap_or(u32::MAX))
}

/// The columns [`turnover_from`] reads, in a `SELECT` of `room_turnovers`.
macro_rules! select_turnovers {
    ($rest:literal) => {
        concat!(
            "SELECT day, room_id, turnover, gifts, settlements, settled_turnover, owed, reward, \
             owner, share_bp, billing_version, settled_at FROM room_turnovers ",
            $rest
        )
    };
}

fn turnover_from(row: &SqliteRow) -> Result<RoomTurnover> {
    let settled_at: Option<i64> = col(row, "settled_at")?;
    let settlement = match settled_at {
        None => None,
        Some(settled_at) => Some(TurnoverSettlement {
            owner: id_col(row, "owner")?,
            share_bp: stored_u32(col(row, "share_bp")?, "share_bp")?,
            reward: Coins(col(row, "reward")?),
            billing_version: stored_u64(col(row, "billing_version")?, "billing_version")?,
            settled_at: Timestamp(settled_at),
        }),
    };
    Ok(RoomTurnover {
        room_id: id_col(row, "room_id")?,
        day: DayKey(col(row, "day")?),
        turnover: Coins(col(row, "turnover")?),
        gifts: stored_u64(col(row, "gifts")?, "gifts")?,
        settlements: stored_u32(col(row, "settlements")?, "settlements")?,
        settled_turnover: Coins(col(row, "settled_turnover")?),
        owed: Coins(col(row, "owed")?),
        settlement,
    })
}

#[async_trait]
impl GiftTallies for SqliteStore {
    async fn count_gifts(&self, tallies: &[GiftTally]) -> Result<u32> {
        check_tallies(tallies)?;
        if tallies.is_empty() {
            return Ok(0);
        }
        let tallies = tallies.to_vec();
        self.write(move |conn| count(conn, &tallies)).await
    }

    async fn gift_values(&self, user: &UserId, periods: &Periods) -> Result<GiftValues> {
        let rows = sqlx::query(
            "SELECT period, number, sent, received FROM gift_values
             WHERE user_id = ?1 AND (period, number) IN
                 (VALUES (?2, ?3), (?4, ?5), (?6, ?7), (?8, ?9))",
        );
        let rows = period_keys(periods)
            .into_iter()
            .fold(rows.bind(user.as_str()), |query, (code, number)| {
                query.bind(i64::from(code)).bind(number)
            })
            .fetch_all(&self.readers)
            .await
            .map_err(db)?;
        let mut values = [ValueTotals::default(); 4];
        for row in &rows {
            let key = (
                u8::try_from(col::<i64>(row, "period")?)
                    .map_err(|_| Error::corrupt("stored gift value period"))?,
                col::<i64>(row, "number")?,
            );
            if let Some(slot) = period_keys(periods).iter().position(|k| *k == key) {
                values[slot] = ValueTotals {
                    sent: Coins(col(row, "sent")?),
                    received: Coins(col(row, "received")?),
                };
            }
        }
        let [lifetime, day, week, month] = values;
        Ok(GiftValues {
            lifetime,
            day,
            week,
            month,
        })
    }

    async fn room_turnover(&self, room: &RoomId, day: DayKey) -> Result<Option<RoomTurnover>> {
        let row = sqlx::query(select_turnovers!("WHERE day = ?1 AND room_id = ?2"))
            .bind(day.0)
            .bind(room.as_str())
            .fetch_optional(&self.readers)
            .await
            .map_err(db)?;
        row.as_ref().map(turnover_from).transpose()
    }

    async fn unsettled_turnovers(
        &self,
        before: DayKey,
        after: Option<(DayKey, RoomId)>,
        limit: u32,
    ) -> Result<Vec<RoomTurnover>> {
        let (after_day, after_room) = match &after {
            Some((day, room)) => (day.0, room.as_str()),
            None => (i64::MIN, ""),
        };
        let rows = sqlx::query(select_turnovers!(
            "WHERE (settlements = 0 OR turnover > settled_turnover OR owed > 0)
                 AND day < ?1 AND (day, room_id) > (?2, ?3)
             ORDER BY day, room_id LIMIT ?4"
        ))
        .bind(before.0)
        .bind(after_day)
        .bind(after_room)
        .bind(i64::from(limit.min(MAX_TURNOVER_PAGE)))
        .fetch_all(&self.readers)
        .await
        .map_err(db)?;
        rows.iter().map(turnover_from).collect()
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
        let (room, settlement) = (room.clone(), settlement.clone());
        let version = to_i64(settlement.billing_version, "billing version")?;
        self.write(move |conn| {
            let recorded = conn
                .prepare_cached(
                    "UPDATE room_turnovers SET settlements = ?3 + 1, settled_turnover = ?4,
                         owed = ?5, reward = ?6, owner = ?7, share_bp = ?8,
                         billing_version = ?9, settled_at = ?10
                     WHERE day = ?1 AND room_id = ?2 AND settlements = ?3 AND owed = 0",
                )
                .and_then(|mut update| {
                    update.execute(params![
                        day.0,
                        room.as_str(),
                        settlements,
                        settled_turnover.0,
                        owed.0,
                        settlement.reward.0,
                        settlement.owner.as_str(),
                        settlement.share_bp,
                        version,
                        settlement.settled_at.as_millis(),
                    ])
                })
                .map_err(sql)?;
            if recorded > 0 {
                return Ok(true);
            }
            let exists = conn
                .prepare_cached("SELECT 1 FROM room_turnovers WHERE day = ?1 AND room_id = ?2")
                .and_then(|mut select| {
                    select
                        .query_row(params![day.0, room.as_str()], |_| Ok(()))
                        .optional()
                })
                .map_err(sql)?;
            match exists {
                Some(()) => Ok(false),
                None => Err(Error::NotFound(format!(
                    "turnover of room {room} on day {day}"
                ))),
            }
        })
        .await
    }

    async fn mark_settlement_paid(
        &self,
        room: &RoomId,
        day: DayKey,
        settlements: u32,
    ) -> Result<()> {
        let room = room.clone();
        self.write(move |conn| {
            conn.prepare_cached(
                "UPDATE room_turnovers SET owed = 0
                 WHERE day = ?1 AND room_id = ?2 AND settlements = ?3",
            )
            .and_then(|mut update| update.execute(params![day.0, room.as_str(), settlements]))
            .map(|_| ())
            .map_err(sql)
        })
        .await
    }

    async fn prune_counted(&self, before: DayKey, limit: u32) -> Result<u64> {
        self.write(move |conn| {
            conn.prepare_cached(
                "DELETE FROM gift_tally_orders WHERE (key_day, sender, order_id) IN
                     (SELECT key_day, sender, order_id FROM gift_tally_orders
                      WHERE key_day < ?1 ORDER BY key_day LIMIT ?2)",
            )
            .and_then(|mut delete| delete.execute(params![before.0, limit]))
            .map(|rows| rows as u64)
            .map_err(sql)
        })
        .await
    }
}
