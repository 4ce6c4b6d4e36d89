//! [`BillingPolicies`] and [`IncomeLedger`]. A policy version is one row, inserted by one
//! statement only when the newest stored version is the one before it. A credit of income is
//! one job of the single writer, in its own savepoint: each entry is inserted unless its key
//! is taken, and what the inserted ones add moves each user's balance once, checked for
//! overflow; any error rolls the whole credit back.

use std::collections::BTreeMap;

use async_trait::async_trait;
use room_app::Error;
use room_app::ports::{
    BillingPolicies, IncomeEntry, IncomeLedger, IncomeRecord, check_income_entries,
};
use room_domain::{BillingPolicy, Coins, IncomePart, Timestamp, UserId};
use rusqlite::{Connection, OptionalExtension, params};
use sqlx::sqlite::SqliteRow;

use crate::codec::{col, db, from_json, id_col, sql, to_i64, to_json, u64_col};
use crate::{Result, SqliteStore};

/// Inserts version `?1` with body `?2` if the newest stored version is `?1 - 1`.
const PUT_POLICY: &str = "INSERT INTO billing_policies (version, body)
     SELECT ?1, ?2 WHERE COALESCE((SELECT MAX(version) FROM billing_policies), 0) = ?1 - 1";

/// Inserts an income entry unless its key is taken.
const CREDIT_ENTRY: &str = "INSERT INTO income_entries
     (sender, order_id, recipient, part, user_id, amount, room_id, gift_id, billing_version,
      credited_at)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
     ON CONFLICT (sender, order_id, recipient, part) DO NOTHING";

fn credit(conn: &Connection, entries: &[IncomeEntry]) -> Result<u32> {
    let mut credited = 0;
    // What the inserted entries add to each user's balance, written once a user.
    let mut amounts: BTreeMap<&str, i64> = BTreeMap::new();
    for entry in entries {
        let version = to_i64(entry.billing_version, "billing version")?;
        let inserted = conn
            .prepare_cached(CREDIT_ENTRY)
            .and_then(|mut insert| {
                insert.execute(params![
                    entry.sender.as_str(),
                    entry.order_id.as_str(),
                    entry.recipient.as_str(),
                    entry.part.as_str(),
                    entry.user.as_str(),
                    entry.amount.0,
                    entry.room_id.as_str(),
                    entry.gift_id.as_str(),
                    version,
                    entry.at.as_millis(),
                ])
            })
            .map_err(sql)?;
        if inserted == 0 {
            continue;
        }
        let total = amounts.entry(entry.user.as_str()).or_default();
        *total = total
            .checked_add(entry.amount.0)
            .ok_or_else(|| Error::Invalid(format!("income balance overflow for {}", entry.user)))?;
        credited += 1;
    }
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

fn record_from(row: &SqliteRow) -> Result<IncomeRecord> {
    let part: String = col(row, "part")?;
    Ok(IncomeRecord {
        id: col(row, "id")?,
        entry: IncomeEntry {
            sender: id_col(row, "sender")?,
            order_id: id_col(row, "order_id")?,
            recipient: id_col(row, "recipient")?,
            part: IncomePart::parse(&part)
                .ok_or_else(|| Error::corrupt(format!("stored income part {part:?}")))?,
            user: id_col(row, "user_id")?,
            amount: Coins(col(row, "amount")?),
            room_id: id_col(row, "room_id")?,
            gift_id: id_col(row, "gift_id")?,
            billing_version: u64_col(row, "billing_version")?,
            at: Timestamp(col(row, "credited_at")?),
        },
    })
}

#[async_trait]
impl BillingPolicies for SqliteStore {
    async fn current_policy(&self) -> Result<Option<BillingPolicy>> {
        let row = sqlx::query("SELECT body FROM billing_policies ORDER BY version DESC LIMIT 1")
            .fetch_optional(&self.readers)
            .await
            .map_err(db)?;
        row.map(|row| from_json(&col::<String>(&row, "body")?, "billing policy"))
            .transpose()
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
        if policy.version == 0 {
            return Err(Error::Invalid("billing policy version 0".into()));
        }
        let version = to_i64(policy.version, "billing policy version")?;
        let body = to_json(policy)?;
        let inserted = self
            .write(move |conn| {
                let inserted = conn
                    .prepare_cached(PUT_POLICY)
                    .and_then(|mut insert| insert.execute(params![version, body]))
                    .map_err(sql);
                match inserted {
                    Ok(rows) => Ok(rows > 0),
                    Err(Error::AlreadyExists(_)) => Ok(false),
                    Err(other) => Err(other),
                }
            })
            .await?;
        if inserted {
            Ok(())
        } else {
            Err(Error::Conflict(format!(
                "billing policy version {version} does not follow the newest stored version"
            )))
        }
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
            "SELECT id, sender, order_id, recipient, part, user_id, amount, room_id, gift_id,
                    billing_version, credited_at
             FROM income_entries WHERE user_id = ?1 AND id < ?2 ORDER BY id DESC LIMIT ?3",
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
