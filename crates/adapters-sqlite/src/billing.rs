//! [`BillingPolicies`] and [`IncomeLedger`]. A policy version is one row, inserted by one
//! statement only when the newest stored version is the one before it. A credit of income is
//! one job of the single writer, in its own savepoint. Income is stored by gift (migration
//! 0080): an order's row holds the gift's fields and the keys of the parts credited, so the
//! writer, reading it, skips the parts credited already; each new part is one row keyed by
//! (user, position), and what the new parts add moves each user's balance once, checked for
//! overflow; any error rolls the whole credit back.

use std::collections::{BTreeMap, HashSet};

use async_trait::async_trait;
use room_app::Error;
use room_app::ports::{
    BillingPolicies, IncomeEntry, IncomeLedger, IncomeRecord, check_income_entries,
};
use room_domain::{BillingPolicy, Coins, GiftId, IncomePart, Timestamp, UserId};
use rusqlite::{Connection, OptionalExtension, params};
use sqlx::sqlite::SqliteRow;

use crate::codec::{col, db, from_json, id_col, sql, stored_id, to_i64, u64_col};
use crate::versions::Versions;
use crate::{Result, SqliteStore};

/// A part's number in `income_credits` (migration 0080).
fn part_code(part: IncomePart) -> i64 {
    match part {
        IncomePart::Recipient => 1,
        IncomePart::Owner => 2,
        IncomePart::Agency | IncomePart::Platform => 3,
        IncomePart::Turnover => 4,
    }
}

fn part_of_code(code: i64) -> Result<IncomePart> {
    Ok(match code {
        1 => IncomePart::Recipient,
        2 => IncomePart::Owner,
        3 => IncomePart::Agency,
        4 => IncomePart::Turnover,
        other => return Err(Error::corrupt(format!("stored income part {other}"))),
    })
}

fn credit(conn: &Connection, entries: &[IncomeEntry]) -> Result<u32> {
    let mut credited = 0;
    // What the inserted entries add to each user's balance, written once a user.
    let mut amounts: BTreeMap<&str, i64> = BTreeMap::new();
    let mut last_id: i64 = conn
        .prepare_cached("SELECT last_id FROM income_sequence WHERE one = 1")
        .and_then(|mut select| select.query_row([], |row| row.get(0)).optional())
        .map_err(sql)?
        .unwrap_or_default();
    // The entries by order, each order's in the order given.
    let mut orders: BTreeMap<(&str, &str), Vec<&IncomeEntry>> = BTreeMap::new();
    for entry in entries {
        orders
            .entry((entry.order_id.as_str(), entry.sender.as_str()))
            .or_default()
            .push(entry);
    }
    for ((order_id, sender), parts) in orders {
        // The keys of the parts credited: `part recipient`, a line each.
        let stored: Option<String> = conn
            .prepare_cached("SELECT parts FROM income_gifts WHERE order_id = ?1 AND sender = ?2")
            .and_then(|mut select| {
                select
                    .query_row(params![order_id, sender], |row| row.get(0))
                    .optional()
            })
            .map_err(sql)?;
        let mut keys: HashSet<String> = stored
            .as_deref()
            .map(|parts| parts.lines().map(str::to_owned).collect())
            .unwrap_or_default();
        let fresh: Vec<&IncomeEntry> = parts
            .into_iter()
            .filter(|e| keys.insert(format!("{} {}", e.part.as_str(), e.recipient)))
            .collect();
        let Some(first) = fresh.first() else {
            continue;
        };
        let mut lines: Vec<&String> = keys.iter().collect();
        lines.sort();
        let parts_text = lines
            .iter()
            .map(|line| line.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        if stored.is_some() {
            conn.prepare_cached(
                "UPDATE income_gifts SET parts = ?3 WHERE order_id = ?1 AND sender = ?2",
            )
            .and_then(|mut update| update.execute(params![order_id, sender, parts_text]))
            .map_err(sql)?;
        } else {
            // The first credit of an order stores the gift's fields; later parts keep them.
            let version = to_i64(first.billing_version, "billing version")?;
            conn.prepare_cached(
                "INSERT INTO income_gifts
                 (order_id, sender, room_id, gift_id, billing_version, credited_at, parts)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .and_then(|mut insert| {
                insert.execute(params![
                    order_id,
                    sender,
                    first.room_id.as_str(),
                    stored_gift(first),
                    version,
                    first.at.as_millis(),
                    parts_text,
                ])
            })
            .map_err(sql)?;
        }
        for entry in fresh {
            last_id += 1;
            conn.prepare_cached(
                "INSERT INTO income_credits
                 (user_id, id, order_id, sender, recipient, part, amount)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )
            .and_then(|mut insert| {
                insert.execute(params![
                    entry.user.as_str(),
                    last_id,
                    order_id,
                    sender,
                    entry.recipient.as_str(),
                    part_code(entry.part),
                    entry.amount.0,
                ])
            })
            .map_err(sql)?;
            let total = amounts.entry(entry.user.as_str()).or_default();
            *total = total.checked_add(entry.amount.0).ok_or_else(|| {
                Error::Invalid(format!("income balance overflow for {}", entry.user))
            })?;
            credited += 1;
        }
    }
    if credited == 0 {
        return Ok(0);
    }
    conn.prepare_cached(
        "INSERT INTO income_sequence (one, last_id) VALUES (1, ?1)
         ON CONFLICT (one) DO UPDATE SET last_id = excluded.last_id",
    )
    .and_then(|mut upsert| upsert.execute([last_id]))
    .map_err(sql)?;
    for (user, amount) in amounts {
        let balance: i64 = conn
            .prepare_cached("SELECT balance FROM income_accounts WHERE user_id = ?1")
            .and_then(|mut select| select.query_row([user], |row| row.get(0)).optional())
            .map_err(sql)?
            .unwrap_or_default();
        let after = balance
            .checked_add(amount)
            .ok_or_else(|| Error::Invalid(format!("income balance overflow for {user}")))?;
        conn.prepare_cached(
            "INSERT INTO income_accounts (user_id, balance) VALUES (?1, ?2)
             ON CONFLICT (user_id) DO UPDATE SET balance = excluded.balance",
        )
        .and_then(|mut upsert| upsert.execute(params![user, after]))
        .map_err(sql)?;
    }
    Ok(credited)
}

/// An entry's gift as `income_gifts` stores it: empty for none (a turnover reward).
fn stored_gift(entry: &IncomeEntry) -> &str {
    entry.gift_id.as_ref().map_or("", |gift| gift.as_str())
}

/// The gift of a stored entry: none when empty.
fn gift_of(row: &SqliteRow) -> Result<Option<GiftId>> {
    let stored: String = col(row, "gift_id")?;
    if stored.is_empty() {
        return Ok(None);
    }
    stored_id(&stored, "gift_id").map(Some)
}

fn record_from(row: &SqliteRow) -> Result<IncomeRecord> {
    Ok(IncomeRecord {
        id: col(row, "id")?,
        entry: IncomeEntry {
            sender: id_col(row, "sender")?,
            order_id: id_col(row, "order_id")?,
            recipient: id_col(row, "recipient")?,
            part: part_of_code(col(row, "part")?)?,
            user: id_col(row, "user_id")?,
            amount: Coins(col(row, "amount")?),
            room_id: id_col(row, "room_id")?,
            gift_id: gift_of(row)?,
            billing_version: u64_col(row, "billing_version")?,
            at: Timestamp(col(row, "credited_at")?),
        },
    })
}

#[async_trait]
impl BillingPolicies for SqliteStore {
    async fn current_policy(&self) -> Result<Option<BillingPolicy>> {
        self.newest_version(Versions::Billing).await
    }

    async fn get_policy(&self, version: u64) -> Result<Option<BillingPolicy>> {
        let Ok(version) = i64::try_from(version) else {
            return Ok(None);
        };
        let row = sqlx::query("SELECT body FROM billing_policies WHERE version = ?1")
            .bind(version)
            .fetch_optional(&self.readers)
            .await
            .map_err(db)?;
        row.map(|row| from_json(&col::<String>(&row, "body")?, "billing policy"))
            .transpose()
    }

    async fn put_policy(&self, policy: &BillingPolicy) -> Result<()> {
        self.put_version(Versions::Billing, policy.version, policy)
            .await
    }
}

#[async_trait]
impl IncomeLedger for SqliteStore {
    async fn credit_income(&self, entries: &[IncomeEntry]) -> Result<u32> {
        check_income_entries(entries)?;
        if entries.is_empty() {
            return Ok(0);
        }
        let entries = entries.to_vec();
        self.write(move |conn| credit(conn, &entries)).await
    }

    async fn income_balance(&self, user: &UserId) -> Result<Coins> {
        let row = sqlx::query("SELECT balance FROM income_accounts WHERE user_id = ?1")
            .bind(user.as_str())
            .fetch_optional(&self.readers)
            .await
            .map_err(db)?;
        Ok(Coins(
            row.map(|row| col(&row, "balance"))
                .transpose()?
                .unwrap_or_default(),
        ))
    }

    async fn list_income(
        &self,
        user: &UserId,
        before: Option<i64>,
        limit: u32,
    ) -> Result<Vec<IncomeRecord>> {
        let rows = sqlx::query(
            "SELECT c.id, c.sender, c.order_id, c.recipient, c.part, c.user_id, c.amount,
                    g.room_id, g.gift_id, g.billing_version, g.credited_at
             FROM income_credits AS c
             JOIN income_gifts AS g ON g.order_id = c.order_id AND g.sender = c.sender
             WHERE c.user_id = ?1 AND c.id < ?2 ORDER BY c.id DESC LIMIT ?3",
        )
        .bind(user.as_str())
        .bind(before.unwrap_or(i64::MAX))
        .bind(i64::from(limit.min(room_app::ports::MAX_INCOME_PAGE)))
        .fetch_all(&self.readers)
        .await
        .map_err(db)?;
        rows.iter().map(record_from).collect()
    }
}
