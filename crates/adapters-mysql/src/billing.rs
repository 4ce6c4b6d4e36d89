//! [`BillingPolicies`] and [`IncomeLedger`], with the semantics of the SQLite store's.
//!
//! A policy version is one row, inserted by one `INSERT ... SELECT` only when the newest
//! stored version is the one before it; the primary key refuses a second row of one version,
//! so of two nodes that put one version at once, one wins.
//!
//! A credit of income is one transaction, run again by [`MySqlStore::retrying`] after a
//! deadlock (it is idempotent), in a few round trips whatever its size: it reads which of its
//! keys are credited already (and the gift fields their orders were first credited with,
//! which later parts keep), inserts the others in one multi-row `INSERT` in key order, then
//! adds the inserted amounts to their users' accounts, in user order, each with an `UPDATE`
//! whose condition refuses a balance past `BIGINT`. The unique key is the arbiter: when a
//! concurrent credit of one of the same keys commits between the read and the insert, the
//! insert waits for it and fails on the duplicate key, nothing of this try is kept, and the
//! credit is tried again, seeing that key taken. Any other refusal rolls the whole credit
//! back. Entries before accounts, each in one order, is the same order in every credit: two
//! credits cannot wait for each other in a cycle.

use std::collections::{BTreeMap, HashMap, HashSet};

use async_trait::async_trait;
use room_app::Error;
use room_app::ports::{
    BillingPolicies, IncomeEntry, IncomeLedger, IncomeRecord, check_income_entries,
};
use room_domain::{BillingPolicy, Coins, IncomePart, Timestamp, UserId};
use sqlx::mysql::MySqlRow;
use sqlx::{MySql, MySqlConnection, QueryBuilder};

use crate::codec::{TxError, col, from_json, id_col, is_duplicate_key, to_i64, to_json, u64_col};
use crate::{MySqlStore, Result};

/// How many times a credit is tried when a concurrent credit of the same keys commits between
/// its read and its insert (each try after that sees those keys taken).
const CREDIT_TRIES: u32 = 5;

/// Adds `amount` to `user`'s account if it exists and the sum fits; whether it did.
async fn add(conn: &mut MySqlConnection, user: &str, amount: i64) -> Result<bool, TxError> {
    let updated = sqlx::query(
        "UPDATE income_accounts SET balance = balance + ?
         WHERE user_id = ? AND balance <= 9223372036854775807 - ?",
    )
    .bind(amount)
    .bind(user)
    .bind(amount)
    .execute(&mut *conn)
    .await?;
    Ok(updated.rows_affected() > 0)
}

/// What is stored of the orders of `entries`: the keys credited already (committed; under
/// READ COMMITTED), and each order's gift fields as its first credit stored them.
struct Stored {
    keys: HashSet<(String, String, String, String)>,
    gifts: HashMap<(String, String), GiftFields>,
}

/// The fields of a gift (room, gift, billing version, time) every part of its order is
/// stored with.
#[derive(Clone)]
struct GiftFields {
    room_id: String,
    gift_id: String,
    billing_version: i64,
    at: i64,
}

/// A stored entry's key and gift fields.
type StoredRow = (String, String, String, String, String, String, i64, i64);

async fn stored_of(
    conn: &mut MySqlConnection,
    entries: &[&IncomeEntry],
) -> Result<Stored, TxError> {
    let mut orders: Vec<(&str, &str)> = entries
        .iter()
        .map(|e| (e.sender.as_str(), e.order_id.as_str()))
        .collect();
    orders.dedup();
    let mut select = QueryBuilder::<MySql>::new(
        "SELECT sender, order_id, recipient, part, room_id, gift_id, billing_version,
                credited_at
         FROM income_entries WHERE (sender, order_id) IN ",
    );
    select.push_tuples(orders, |mut row, (sender, order_id)| {
        row.push_bind(sender).push_bind(order_id);
    });
    let rows: Vec<StoredRow> = select.build_query_as().fetch_all(&mut *conn).await?;
    let mut stored = Stored {
        keys: HashSet::with_capacity(rows.len()),
        gifts: HashMap::new(),
    };
    for (sender, order_id, recipient, part, room_id, gift_id, billing_version, at) in rows {
        stored
            .gifts
            .entry((sender.clone(), order_id.clone()))
            .or_insert(GiftFields {
                room_id,
                gift_id,
                billing_version,
                at,
            });
        stored.keys.insert((sender, order_id, recipient, part));
    }
    Ok(stored)
}

/// One try of a credit: `None` when a concurrent credit of one of the same keys committed
/// between this one's read and its insert (the unique key refused the insert; nothing was
/// written, and a new try sees it).
async fn credit_once(store: &MySqlStore, entries: &[&IncomeEntry]) -> Result<Option<u32>, TxError> {
    let mut tx = store.pool.begin().await?;
    let mut stored = stored_of(&mut tx, entries).await?;
    let fresh: Vec<&IncomeEntry> = entries
        .iter()
        .copied()
        .filter(|e| {
            !stored.keys.contains(&(
                e.sender.as_str().to_owned(),
                e.order_id.as_str().to_owned(),
                e.recipient.as_str().to_owned(),
                e.part.as_str().to_owned(),
            ))
        })
        .collect();
    if fresh.is_empty() {
        return Ok(Some(0));
    }
    let mut amounts: BTreeMap<&str, i64> = BTreeMap::new();
    let mut gifts = Vec::with_capacity(fresh.len());
    for entry in &fresh {
        let total = amounts.entry(entry.user.as_str()).or_default();
        *total = total
            .checked_add(entry.amount.0)
            .ok_or_else(|| Error::Invalid(format!("income balance overflow for {}", entry.user)))?;
        // Every part of an order is stored with its first credited entry's gift fields.
        let order = (
            entry.sender.as_str().to_owned(),
            entry.order_id.as_str().to_owned(),
        );
        let fields = match stored.gifts.get(&order) {
            Some(fields) => fields.clone(),
            None => {
                let fields = GiftFields {
                    room_id: entry.room_id.as_str().to_owned(),
                    gift_id: entry.gift_id.as_str().to_owned(),
                    billing_version: to_i64(entry.billing_version, "billing version")?,
                    at: entry.at.as_millis(),
                };
                stored.gifts.insert(order, fields.clone());
                fields
            }
        };
        gifts.push(fields);
    }
    let mut insert = QueryBuilder::<MySql>::new(
        "INSERT INTO income_entries
         (sender, order_id, recipient, part, user_id, amount, room_id, gift_id, billing_version,
          credited_at) ",
    );
    insert.push_values(fresh.iter().zip(gifts), |mut row, (entry, gift)| {
        row.push_bind(entry.sender.as_str())
            .push_bind(entry.order_id.as_str())
            .push_bind(entry.recipient.as_str())
            .push_bind(entry.part.as_str())
            .push_bind(entry.user.as_str())
            .push_bind(entry.amount.0)
            .push_bind(gift.room_id)
            .push_bind(gift.gift_id)
            .push_bind(gift.billing_version)
            .push_bind(gift.at);
    });
    match insert.build().execute(&mut *tx).await {
        Ok(_) => {}
        Err(error) if is_duplicate_key(&error) => return Ok(None),
        Err(error) => return Err(error.into()),
    }
    for (user, amount) in amounts {
        let mut added = add(&mut tx, user, amount).await?;
        if !added {
            // No account yet, or one the amount would overflow: open it (a no-op on an
            // existing row) and try once more.
            sqlx::query(
                "INSERT INTO income_accounts (user_id, balance) VALUES (?, 0)
                 ON DUPLICATE KEY UPDATE user_id = user_id",
            )
            .bind(user)
            .execute(&mut *tx)
            .await?;
            added = add(&mut tx, user, amount).await?;
        }
        if !added {
            // The transaction is dropped: rolled back, nothing credited.
            return Err(Error::Invalid(format!("income balance overflow for {user}")).into());
        }
    }
    tx.commit().await?;
    Ok(Some(u32::try_from(fresh.len()).unwrap_or(u32::MAX)))
}

fn record_from(row: &MySqlRow) -> Result<IncomeRecord> {
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
impl BillingPolicies for MySqlStore {
    async fn current_policy(&self) -> Result<Option<BillingPolicy>> {
        let body: Option<String> = self
            .retrying("current_billing_policy", || async move {
                Ok(sqlx::query_scalar::<_, String>(
                    "SELECT body FROM billing_policies ORDER BY version DESC LIMIT 1",
                )
                .fetch_optional(&self.pool)
                .await?)
            })
            .await?;
        body.map(|body| from_json(&body, "billing policy"))
            .transpose()
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
        if policy.version == 0 {
            return Err(Error::Invalid("billing policy version 0".into()));
        }
        let version = to_i64(policy.version, "billing policy version")?;
        let body = to_json(policy)?;
        let body = body.as_str();
        let inserted = self
            .retrying("put_billing_policy", || async move {
                let inserted = sqlx::query(
                    "INSERT INTO billing_policies (version, body)
                     SELECT ?, ? FROM DUAL
                     WHERE (SELECT COALESCE(MAX(version), 0) FROM billing_policies) = ?",
                )
                .bind(version)
                .bind(body)
                .bind(version - 1)
                .execute(&self.pool)
                .await;
                match inserted {
                    Ok(done) => Ok(done.rows_affected() > 0),
                    Err(error) if is_duplicate_key(&error) => Ok(false),
                    Err(error) => Err(TxError::from(error)),
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
                    "SELECT id, sender, order_id, recipient, part, user_id, amount, room_id,
                            gift_id, billing_version, credited_at
                     FROM income_entries WHERE user_id = ? AND id < ?
                     ORDER BY id DESC LIMIT ?",
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
