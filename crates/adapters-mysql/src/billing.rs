//! [`BillingPolicies`] and [`IncomeLedger`], with the semantics of the SQLite store's.
//!
//! A policy version is one row, inserted by one `INSERT ... SELECT` only when the newest
//! stored version is the one before it; the primary key refuses a second row of one version,
//! so of two nodes that put one version at once, one wins.
//!
//! A credit of income is one transaction, run again by [`MySqlStore::retrying`] after a
//! deadlock (it is idempotent), in a few round trips whatever its size. Income is stored by
//! gift (migration 0080): an order's row holds the gift's fields and the keys of its parts
//! credited, each credited part is one row keyed by (user, position). A credit locks the one
//! row of `income_sequence` first, so credits run one at a time and each sees every part
//! credited before it; it reads its orders' rows, skips the parts credited already, inserts
//! the new orders' rows and the new parts in one multi-row `INSERT` each, then adds the
//! amounts to their users' accounts, in user order, each with an `UPDATE` whose condition
//! refuses a balance past `BIGINT`. Any refusal rolls the whole credit back.

use std::collections::{BTreeMap, HashMap, HashSet};

use async_trait::async_trait;
use room_app::Error;
use room_app::ports::{
    BillingPolicies, IncomeEntry, IncomeLedger, IncomeRecord, check_income_entries,
};
use room_domain::{BillingPolicy, Coins, GiftId, IncomePart, Timestamp, UserId};
use sqlx::mysql::MySqlRow;
use sqlx::{MySql, QueryBuilder};

use crate::accounts::Accounts;
use crate::codec::{TxError, col, from_json, id_col, is_duplicate_key, to_i64, u64_col};
use crate::versions::Versions;
use crate::{MySqlStore, Result};

/// How many times a credit is tried when an order's row is found inserted by another credit
/// (which the sequence's lock rules out; a safe answer kept all the same).
const CREDIT_TRIES: u32 = 5;

/// A part's number in `income_credits` (migration 0080).
fn part_code(part: IncomePart) -> i8 {
    match part {
        IncomePart::Recipient => 1,
        IncomePart::Owner => 2,
        IncomePart::Agency | IncomePart::Platform => 3,
        IncomePart::Turnover => 4,
    }
}

fn part_of_code(code: i8) -> Result<IncomePart> {
    Ok(match code {
        1 => IncomePart::Recipient,
        2 => IncomePart::Owner,
        3 => IncomePart::Agency,
        4 => IncomePart::Turnover,
        other => return Err(Error::corrupt(format!("stored income part {other}"))),
    })
}

/// A part credited now: its user, position and entry.
struct Credit<'a> {
    id: i64,
    entry: &'a IncomeEntry,
}

/// One try of a credit: `None` when an order's row was inserted by another credit meanwhile
/// (which the lock on the sequence rules out; kept as a safe answer: nothing was written,
/// and a new try sees the row).
async fn credit_once(store: &MySqlStore, entries: &[&IncomeEntry]) -> Result<Option<u32>, TxError> {
    let mut tx = store.background.begin().await?;
    // Credits run one at a time: each locks the sequence first.
    let mut last_id: i64 =
        sqlx::query_scalar("SELECT last_id FROM income_sequence WHERE one = 1 FOR UPDATE")
            .fetch_optional(&mut *tx)
            .await?
            .unwrap_or_default();
    // The entries by order (key order: sender, then order id).
    let mut orders: Vec<((&str, &str), Vec<&IncomeEntry>)> = Vec::new();
    for entry in entries {
        let order = (entry.sender.as_str(), entry.order_id.as_str());
        match orders.last_mut() {
            Some((last, parts)) if *last == order => parts.push(entry),
            _ => orders.push((order, vec![entry])),
        }
    }
    let mut select = QueryBuilder::<MySql>::new(
        "SELECT sender, order_id, parts FROM income_gifts WHERE (order_id, sender) IN ",
    );
    select.push_tuples(orders.iter(), |mut row, ((sender, order_id), _)| {
        row.push_bind(*order_id).push_bind(*sender);
    });
    let rows: Vec<(String, String, String)> = select.build_query_as().fetch_all(&mut *tx).await?;
    let stored: HashMap<(String, String), String> = rows
        .into_iter()
        .map(|(sender, order_id, parts)| ((sender, order_id), parts))
        .collect();
    let mut new_gifts: Vec<(&IncomeEntry, String)> = Vec::new();
    let mut changed_gifts: Vec<(&IncomeEntry, String)> = Vec::new();
    let mut credits: Vec<Credit<'_>> = Vec::new();
    let mut amounts: BTreeMap<&str, i64> = BTreeMap::new();
    for ((sender, order_id), parts) in &orders {
        let before = stored.get(&((*sender).to_owned(), (*order_id).to_owned()));
        let mut keys: HashSet<String> = before
            .map(|parts| parts.lines().map(str::to_owned).collect())
            .unwrap_or_default();
        let fresh: Vec<&IncomeEntry> = parts
            .iter()
            .copied()
            .filter(|e| keys.insert(format!("{} {}", e.part.as_str(), e.recipient)))
            .collect();
        let Some(first) = fresh.first().copied() else {
            continue;
        };
        let mut lines: Vec<&str> = keys.iter().map(String::as_str).collect();
        lines.sort_unstable();
        let text = lines.join("\n");
        if before.is_some() {
            changed_gifts.push((first, text));
        } else {
            new_gifts.push((first, text));
        }
        for entry in fresh {
            last_id += 1;
            credits.push(Credit { id: last_id, entry });
            let total = amounts.entry(entry.user.as_str()).or_default();
            *total = total.checked_add(entry.amount.0).ok_or_else(|| {
                Error::Invalid(format!("income balance overflow for {}", entry.user))
            })?;
        }
    }
    if credits.is_empty() {
        return Ok(Some(0));
    }
    if !new_gifts.is_empty() {
        let mut versions = Vec::with_capacity(new_gifts.len());
        for (first, _) in &new_gifts {
            versions.push(to_i64(first.billing_version, "billing version")?);
        }
        let mut insert = QueryBuilder::<MySql>::new(
            "INSERT INTO income_gifts
             (order_id, sender, room_id, gift_id, billing_version, credited_at, parts) ",
        );
        insert.push_values(
            new_gifts.iter().zip(versions),
            |mut row, ((first, parts), version)| {
                row.push_bind(first.order_id.as_str())
                    .push_bind(first.sender.as_str())
                    .push_bind(first.room_id.as_str())
                    .push_bind(stored_gift(first))
                    .push_bind(version)
                    .push_bind(first.at.as_millis())
                    .push_bind(parts.as_str());
            },
        );
        match insert.build().execute(&mut *tx).await {
            Ok(_) => {}
            Err(error) if is_duplicate_key(&error) => return Ok(None),
            Err(error) => return Err(error.into()),
        }
    }
    for (first, parts) in &changed_gifts {
        sqlx::query("UPDATE income_gifts SET parts = ? WHERE order_id = ? AND sender = ?")
            .bind(parts.as_str())
            .bind(first.order_id.as_str())
            .bind(first.sender.as_str())
            .execute(&mut *tx)
            .await?;
    }
    let mut insert = QueryBuilder::<MySql>::new(
        "INSERT INTO income_credits (user_id, id, order_id, sender, recipient, part, amount) ",
    );
    insert.push_values(credits.iter(), |mut row, credit| {
        let entry = credit.entry;
        row.push_bind(entry.user.as_str())
            .push_bind(credit.id)
            .push_bind(entry.order_id.as_str())
            .push_bind(entry.sender.as_str())
            .push_bind(entry.recipient.as_str())
            .push_bind(part_code(entry.part))
            .push_bind(entry.amount.0);
    });
    insert.build().execute(&mut *tx).await?;
    sqlx::query(
        "INSERT INTO income_sequence (one, last_id) VALUES (1, ?)
         ON DUPLICATE KEY UPDATE last_id = VALUES(last_id)",
    )
    .bind(last_id)
    .execute(&mut *tx)
    .await?;
    for (user, amount) in amounts {
        if !Accounts::Income.add(&mut tx, user, amount).await? {
            // The transaction is dropped: rolled back, nothing credited.
            return Err(Error::Invalid(format!("income balance overflow for {user}")).into());
        }
    }
    tx.commit().await?;
    Ok(Some(u32::try_from(credits.len()).unwrap_or(u32::MAX)))
}

/// An entry's gift as `income_gifts` stores it: empty for none (a turnover reward).
fn stored_gift(entry: &IncomeEntry) -> &str {
    entry.gift_id.as_ref().map_or("", |gift| gift.as_str())
}

/// The gift of a stored entry: none when empty.
fn gift_of(row: &MySqlRow) -> Result<Option<GiftId>> {
    let stored: String = col(row, "gift_id")?;
    if stored.is_empty() {
        return Ok(None);
    }
    GiftId::new(&stored)
        .map(Some)
        .map_err(|e| Error::corrupt(format!("stored gift_id: {e}")))
}

fn record_from(row: &MySqlRow) -> Result<IncomeRecord> {
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
impl BillingPolicies for MySqlStore {
    async fn current_policy(&self) -> Result<Option<BillingPolicy>> {
        self.newest_version(Versions::Billing).await
    }

    async fn get_policy(&self, version: u64) -> Result<Option<BillingPolicy>> {
        let Ok(version) = i64::try_from(version) else {
            return Ok(None);
        };
        let body: Option<String> = self
            .retrying("get_billing_policy", || async move {
                Ok(sqlx::query_scalar::<_, String>(
                    "SELECT body FROM billing_policies WHERE version = ?",
                )
                .bind(version)
                .fetch_optional(&self.pool)
                .await?)
            })
            .await?;
        body.map(|body| from_json(&body, "billing policy"))
            .transpose()
    }

    async fn put_policy(&self, policy: &BillingPolicy) -> Result<()> {
        self.put_version(Versions::Billing, policy.version, policy)
            .await
    }
}

#[async_trait]
impl IncomeLedger for MySqlStore {
    async fn credit_income(&self, entries: &[IncomeEntry]) -> Result<u32> {
        check_income_entries(entries)?;
        if entries.is_empty() {
            return Ok(0);
        }
        let mut sorted: Vec<&IncomeEntry> = entries.iter().collect();
        sorted.sort_by(|a, b| a.key().cmp(&b.key()));
        // An entry named twice in one call is one entry.
        sorted.dedup_by(|a, b| a.key() == b.key());
        let sorted = &sorted;
        for _ in 0..CREDIT_TRIES {
            if let Some(credited) = self
                .retrying("credit_income", || credit_once(self, sorted))
                .await?
            {
                return Ok(credited);
            }
            metrics::counter!("room_mysql_lock_retries_total", "operation" => "credit_income")
                .increment(1);
        }
        Err(Error::Unavailable(format!(
            "income credit: a concurrent credit of the same entries won {CREDIT_TRIES} times"
        )))
    }

    async fn income_balance(&self, user: &UserId) -> Result<Coins> {
        let balance = self
            .retrying("income_balance", || async move {
                Ok(sqlx::query_scalar::<_, i64>(
                    "SELECT balance FROM income_accounts WHERE user_id = ?",
                )
                .bind(user.as_str())
                .fetch_optional(&self.pool)
                .await?)
            })
            .await?;
        Ok(Coins(balance.unwrap_or_default()))
    }

    async fn list_income(
        &self,
        user: &UserId,
        before: Option<i64>,
        limit: u32,
    ) -> Result<Vec<IncomeRecord>> {
        let rows = self
            .retrying("list_income", || async move {
                Ok(sqlx::query(
                    "SELECT c.id, c.sender, c.order_id, c.recipient, c.part, c.user_id, c.amount,
                            g.room_id, g.gift_id, g.billing_version, g.credited_at
                     FROM income_credits AS c
                     JOIN income_gifts AS g ON g.order_id = c.order_id AND g.sender = c.sender
                     WHERE c.user_id = ? AND c.id < ?
                     ORDER BY c.id DESC LIMIT ?",
                )
                .bind(user.as_str())
                .bind(before.unwrap_or(i64::MAX))
                .bind(i64::from(limit.min(room_app::ports::MAX_INCOME_PAGE)))
                .fetch_all(&self.pool)
                .await?)
            })
            .await?;
        rows.iter().map(record_from).collect()
    }
}
