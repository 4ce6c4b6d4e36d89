//! [`GiftTallies`] (migration 0120), with the semantics of the SQLite store's.
//!
//! A count is one transaction on the background connections, run again by
//! [`MySqlStore::retrying`] after a deadlock, in a few round trips whatever its size: it reads
//! which of its orders' keys are stored, inserts the others' keys in one multi-row `INSERT`
//! (of two counts of one order at once, the second waits on the first's key and then fails
//! on it, and is tried again: it then finds the key), then adds to each (user, period) value
//! and each (day, room) turnover with multi-row upserts in key order. A sum past `BIGINT` is
//! refused by the server (error 1690) and rolls the whole count back. A settlement is one
//! `UPDATE` whose condition is that the turnover is not settled yet.

use std::collections::HashSet;

use async_trait::async_trait;
use room_app::Error;
use room_app::ports::{
    GiftTallies, GiftTally, GiftValues, MAX_TURNOVER_PAGE, RoomTurnover, TallySums,
    TurnoverSettlement, ValueTotals, check_tallies, period_keys,
};
use room_domain::{Coins, DayKey, Periods, RoomId, Timestamp, UserId};
use sqlx::mysql::MySqlRow;
use sqlx::{MySql, QueryBuilder};

use crate::codec::{
    TxError, col, id_col, is_arithmetic_overflow, is_duplicate_key, stored_u32, stored_u64, to_i64,
};
use crate::{MySqlStore, Result};

/// How many times a count is tried when another count inserted one of its orders' keys
/// meanwhile.
const COUNT_TRIES: u32 = 5;

/// The most rows one upsert writes (five values a row, under the protocol's 65,535).
const ROWS_PER_STATEMENT: usize = 2_000;

/// Maps a sum the server refused to [`Error::Invalid`].
fn refused_sum(error: sqlx::Error) -> TxError {
    if is_arithmetic_overflow(&error) {
        TxError::Port(Error::Invalid("gift value overflow".into()))
    } else {
        TxError::Db(error)
    }
}

/// A day number as the `INT` column stores it.
fn day_number(day: i64) -> Result<i32> {
    i32::try_from(day).map_err(|_| Error::Invalid(format!("day {day} is out of range")))
}

/// One try of a count: `None` when another count inserted one of its keys meanwhile.
async fn count_once(store: &MySqlStore, tallies: &[GiftTally]) -> Result<Option<u32>, TxError> {
    let mut keys = Vec::with_capacity(tallies.len());
    for tally in tallies {
        keys.push((
            day_number(tally.key_day().0)?,
            tally.sender.as_str(),
            tally.order_id.as_str(),
        ));
    }
    let mut tx = store.background.begin().await?;
    let mut select = QueryBuilder::<MySql>::new(
        "SELECT key_day, sender, order_id FROM gift_tally_orders
         WHERE (key_day, sender, order_id) IN ",
    );
    select.push_tuples(keys.iter(), |mut row, (day, sender, order_id)| {
        row.push_bind(*day).push_bind(*sender).push_bind(*order_id);
    });
    let stored: HashSet<(i32, String, String)> = select
        .build_query_as()
        .fetch_all(&mut *tx)
        .await?
        .into_iter()
        .collect();
    let mut sums = TallySums::default();
    let mut fresh: Vec<(i32, &str, &str)> = Vec::new();
    for (tally, key) in tallies.iter().zip(&keys) {
        if fresh.contains(key) || stored.contains(&(key.0, key.1.to_owned(), key.2.to_owned())) {
            continue;
        }
        sums.add(tally)?;
        fresh.push(*key);
    }
    if fresh.is_empty() {
        return Ok(Some(0));
    }
    let mut insert =
        QueryBuilder::<MySql>::new("INSERT INTO gift_tally_orders (key_day, sender, order_id) ");
    insert.push_values(fresh.iter(), |mut row, (day, sender, order_id)| {
        row.push_bind(*day).push_bind(*sender).push_bind(*order_id);
    });
    match insert.build().execute(&mut *tx).await {
        Ok(_) => {}
        Err(error) if is_duplicate_key(&error) => return Ok(None),
        Err(error) => return Err(error.into()),
    }
    let values: Vec<_> = sums.values.iter().collect();
    for chunk in values.chunks(ROWS_PER_STATEMENT) {
        let mut upsert = QueryBuilder::<MySql>::new(
            "INSERT INTO gift_values (user_id, period, number, sent, received) ",
        );
        let mut numbers = Vec::with_capacity(chunk.len());
        for ((_, _, number), _) in chunk {
            numbers.push(day_number(*number)?);
        }
        upsert.push_values(
            chunk.iter().zip(numbers),
            |mut row, (((user, period, _), (sent, received)), number)| {
                row.push_bind(user.as_str())
                    .push_bind(*period)
                    .push_bind(number)
                    .push_bind(*sent)
                    .push_bind(*received);
            },
        );
        upsert.push(
            " ON DUPLICATE KEY UPDATE sent = sent + VALUES(sent),
              received = received + VALUES(received)",
        );
        upsert
            .build()
            .execute(&mut *tx)
            .await
            .map_err(refused_sum)?;
    }
    let turnovers: Vec<_> = sums.turnovers.iter().collect();
    for chunk in turnovers.chunks(ROWS_PER_STATEMENT) {
        let mut upsert = QueryBuilder::<MySql>::new(
            "INSERT INTO room_turnovers (day, room_id, turnover, gifts) ",
        );
        let mut rows = Vec::with_capacity(chunk.len());
        for ((day, room), (value, gifts)) in chunk {
            rows.push((
                day_number(*day)?,
                room.as_str(),
                *value,
                to_i64(*gifts, "gifts")?,
            ));
        }
        upsert.push_values(rows, |mut row, (day, room, value, gifts)| {
            row.push_bind(day)
                .push_bind(room)
                .push_bind(value)
                .push_bind(gifts);
        });
        upsert.push(
            " ON DUPLICATE KEY UPDATE turnover = turnover + VALUES(turnover),
              gifts = gifts + VALUES(gifts)",
        );
        upsert
            .build()
            .execute(&mut *tx)
            .await
            .map_err(refused_sum)?;
    }
    tx.commit().await?;
    Ok(Some(u32::try_from(fresh.len()).unwrap_or(u32::MAX)))
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

fn turnover_from(row: &MySqlRow) -> Result<RoomTurnover> {
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
        day: DayKey(i64::from(col::<i32>(row, "day")?)),
        turnover: Coins(col(row, "turnover")?),
        gifts: stored_u64(col(row, "gifts")?, "gifts")?,
        settlements: stored_u32(col(row, "settlements")?, "settlements")?,
        settled_turnover: Coins(col(row, "settled_turnover")?),
        owed: Coins(col(row, "owed")?),
        settlement,
    })
}

#[async_trait]
impl GiftTallies for MySqlStore {
    async fn count_gifts(&self, tallies: &[GiftTally]) -> Result<u32> {
        check_tallies(tallies)?;
        if tallies.is_empty() {
            return Ok(0);
        }
        for _ in 0..COUNT_TRIES {
            if let Some(counted) = self
                .retrying("count_gifts", || count_once(self, tallies))
                .await?
            {
                return Ok(counted);
            }
            metrics::counter!("room_mysql_lock_retries_total", "operation" => "count_gifts")
                .increment(1);
        }
        Err(Error::Unavailable(format!(
            "gift count: a concurrent count of the same gifts won {COUNT_TRIES} times"
        )))
    }

    async fn gift_values(&self, user: &UserId, periods: &Periods) -> Result<GiftValues> {
        let keys = period_keys(periods);
        let mut numbers = Vec::with_capacity(keys.len());
        for (_, number) in keys {
            numbers.push(day_number(number)?);
        }
        let rows: Vec<(i8, i32, i64, i64)> = self
            .retrying("gift_values", || async {
                let mut select = QueryBuilder::<MySql>::new(
                    "SELECT period, number, sent, received FROM gift_values WHERE user_id = ",
                );
                select.push_bind(user.as_str());
                select.push(" AND (period, number) IN ");
                select.push_tuples(keys.iter().zip(&numbers), |mut row, ((code, _), number)| {
                    row.push_bind(*code).push_bind(*number);
                });
                Ok(select.build_query_as().fetch_all(&self.pool).await?)
            })
            .await?;
        let mut values = [ValueTotals::default(); 4];
        for (code, number, sent, received) in rows {
            if let Some(slot) = keys.iter().position(|key| {
                Some(key.0) == u8::try_from(code).ok() && key.1 == i64::from(number)
            }) {
                values[slot] = ValueTotals {
                    sent: Coins(sent),
                    received: Coins(received),
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
        let day = day_number(day.0)?;
        let query = select_turnovers!("WHERE day = ? AND room_id = ?");
        let row = self
            .retrying("room_turnover", || async {
                Ok(sqlx::query(query)
                    .bind(day)
                    .bind(room.as_str())
                    .fetch_optional(&self.pool)
                    .await?)
            })
            .await?;
        row.as_ref().map(turnover_from).transpose()
    }

    async fn unsettled_turnovers(
        &self,
        before: DayKey,
        after: Option<(DayKey, RoomId)>,
        limit: u32,
    ) -> Result<Vec<RoomTurnover>> {
        let before = day_number(before.0.clamp(i64::from(i32::MIN), i64::from(i32::MAX)))?;
        let (after_day, after_room) = match &after {
            Some((day, room)) => (day_number(day.0)?, room.as_str()),
            None => (i32::MIN, ""),
        };
        let query = select_turnovers!(
            "WHERE pending = 1 AND day < ? AND (day > ? OR (day = ? AND room_id > ?))
             ORDER BY day, room_id LIMIT ?"
        );
        let rows = self
            .retrying("unsettled_turnovers", || async {
                Ok(sqlx::query(query)
                    .bind(before)
                    .bind(after_day)
                    .bind(after_day)
                    .bind(after_room)
                    .bind(limit.min(MAX_TURNOVER_PAGE))
                    .fetch_all(&self.background)
                    .await?)
            })
            .await?;
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
        let day_value = day_number(day.0)?;
        let version = to_i64(settlement.billing_version, "billing version")?;
        let recorded = self
            .retrying("record_settlement", || async {
                let updated = sqlx::query(
                    "UPDATE room_turnovers SET settlements = settlements + 1,
                         settled_turnover = ?, owed = ?, reward = ?, owner = ?, share_bp = ?,
                         billing_version = ?, settled_at = ?
                     WHERE day = ? AND room_id = ? AND settlements = ? AND owed = 0",
                )
                .bind(settled_turnover.0)
                .bind(owed.0)
                .bind(settlement.reward.0)
                .bind(settlement.owner.as_str())
                .bind(settlement.share_bp)
                .bind(version)
                .bind(settlement.settled_at.as_millis())
                .bind(day_value)
                .bind(room.as_str())
                .bind(settlements)
                .execute(&self.background)
                .await?;
                Ok(updated.rows_affected() > 0)
            })
            .await?;
        if recorded {
            return Ok(true);
        }
        match self.room_turnover(room, day).await? {
            Some(_) => Ok(false),
            None => Err(Error::NotFound(format!(
                "turnover of room {room} on day {day}"
            ))),
        }
    }

    async fn mark_settlement_paid(
        &self,
        room: &RoomId,
        day: DayKey,
        settlements: u32,
    ) -> Result<()> {
        let day_value = day_number(day.0)?;
        self.retrying("mark_settlement_paid", || async {
            sqlx::query(
                "UPDATE room_turnovers SET owed = 0
                 WHERE day = ? AND room_id = ? AND settlements = ?",
            )
            .bind(day_value)
            .bind(room.as_str())
            .bind(settlements)
            .execute(&self.background)
            .await?;
            Ok(())
        })
        .await
    }

    async fn prune_counted(&self, before: DayKey, limit: u32) -> Result<u64> {
        let before = day_number(before.0.clamp(i64::from(i32::MIN), i64::from(i32::MAX)))?;
        self.retrying("prune_counted", || async {
            let deleted = sqlx::query(
                "DELETE FROM gift_tally_orders WHERE key_day < ? ORDER BY key_day LIMIT ?",
            )
            .bind(before)
            .bind(limit)
            .execute(&self.background)
            .await?;
            Ok(deleted.rows_affected())
        })
        .await
    }
}
