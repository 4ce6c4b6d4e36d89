//! [`Wallet`]: a ledger of accounts and entries. Each operation is one entry keyed by
//! (operation id, kind) that records its first answer, so a repeat returns that answer and
//! moves nothing; a voided debit is an entry too, so a late debit with its id fails.

use async_trait::async_trait;
use room_app::Error;
use room_app::ports::{CreditKind, DebitStatus, Wallet};
use room_domain::{Coins, UserId};
use sqlx::SqliteConnection;

use crate::codec::{col, db};
use crate::{Result, SqliteStore};

const DEBIT: &str = "debit";

fn credit_kind(kind: CreditKind) -> &'static str {
    match kind {
        CreditKind::Admin => "credit_admin",
        CreditKind::Refund => "refund",
        CreditKind::LuckyReward => "lucky_reward",
        CreditKind::RocketReward => "rocket_reward",
    }
}

/// A ledger entry as stored.
enum Entry {
    Done {
        user: String,
        amount: i64,
        balance_after: i64,
    },
    Void,
}

impl Entry {
    /// The answer to a repeat of the operation that wrote this entry.
    fn repeat(&self, op_id: &str, user: &str, amount: i64) -> Result<Coins> {
        match self {
            Entry::Done {
                user: u,
                amount: a,
                balance_after,
            } if u == user && *a == amount => Ok(Coins(*balance_after)),
            _ => Err(Error::Conflict(format!(
                "wallet operation {op_id} was voided or used for another amount or user"
            ))),
        }
    }
}

async fn entry(conn: &mut SqliteConnection, op_id: &str, kind: &str) -> Result<Option<Entry>> {
    let row = sqlx::query(
        "SELECT state, user_id, amount, balance_after FROM wallet_entries
         WHERE op_id = ?1 AND kind = ?2",
    )
    .bind(op_id)
    .bind(kind)
    .fetch_optional(&mut *conn)
    .await
    .map_err(db)?;
    let Some(row) = row else { return Ok(None) };
    let state: String = col(&row, "state")?;
    Ok(Some(match state.as_str() {
        "void" => Entry::Void,
        _ => Entry::Done {
            user: col(&row, "user_id")?,
            amount: col(&row, "amount")?,
            balance_after: col(&row, "balance_after")?,
        },
    }))
}

async fn stored_balance(conn: &mut SqliteConnection, user: &str) -> Result<Option<i64>> {
    let row = sqlx::query("SELECT balance FROM wallet_accounts WHERE user_id = ?1")
        .bind(user)
        .fetch_optional(&mut *conn)
        .await
        .map_err(db)?;
    row.map(|row| col(&row, "balance")).transpose()
}

async fn debit(
    conn: &mut SqliteConnection,
    op_id: String,
    user: String,
    amount: i64,
) -> Result<Coins> {
    if amount < 0 {
        // A repeat is answered before the amount is judged, as for any other operation.
        return match entry(conn, &op_id, DEBIT).await? {
            Some(entry) => entry.repeat(&op_id, &user, amount),
            None => Err(Error::Invalid(format!("negative debit {amount}"))),
        };
    }
    // The common case in one statement: record the entry if the op id is new and the funds
    // suffice, with the balance it leaves.
    let recorded = sqlx::query(
        "INSERT INTO wallet_entries (op_id, kind, state, user_id, amount, balance_after)
         SELECT ?1, 'debit', 'done', user_id, ?3, balance - ?3 FROM wallet_accounts
         WHERE user_id = ?2 AND balance >= ?3",
    )
    .bind(&op_id)
    .bind(&user)
    .bind(amount)
    .execute(&mut *conn)
    .await
    .map_err(db);
    match recorded {
        Ok(done) if done.rows_affected() > 0 => {}
        Ok(_) | Err(Error::AlreadyExists(_)) => {
            // A repeat (or a voided id), or too few coins.
            if let Some(entry) = entry(conn, &op_id, DEBIT).await? {
                return entry.repeat(&op_id, &user, amount);
            }
            let balance = stored_balance(conn, &user).await?;
            if amount > 0 || balance.is_some() {
                return Err(Error::InsufficientFunds {
                    balance: Coins(balance.unwrap_or_default()),
                });
            }
            // A zero debit of a user without an account: open the account at zero.
            sqlx::query("INSERT INTO wallet_accounts (user_id, balance) VALUES (?1, 0)")
                .bind(&user)
                .execute(&mut *conn)
                .await
                .map_err(db)?;
            sqlx::query(
                "INSERT INTO wallet_entries (op_id, kind, state, user_id, amount, balance_after)
                 VALUES (?1, 'debit', 'done', ?2, 0, 0)",
            )
            .bind(&op_id)
            .bind(&user)
            .execute(&mut *conn)
            .await
            .map_err(db)?;
            return Ok(Coins::ZERO);
        }
        Err(other) => return Err(other),
    }
    let row = sqlx::query(
        "UPDATE wallet_accounts SET balance = balance - ?2 WHERE user_id = ?1 RETURNING balance",
    )
    .bind(&user)
    .bind(amount)
    .fetch_one(&mut *conn)
    .await
    .map_err(db)?;
    Ok(Coins(col(&row, "balance")?))
}

async fn credit(
    conn: &mut SqliteConnection,
    op_id: String,
    kind: &'static str,
    user: String,
    amount: i64,
) -> Result<Coins> {
    if let Some(entry) = entry(conn, &op_id, kind).await? {
        return entry.repeat(&op_id, &user, amount);
    }
    if amount < 0 {
        return Err(Error::Invalid(format!("negative credit {amount}")));
    }
    let balance = stored_balance(conn, &user).await?.unwrap_or_default();
    let after = balance
        .checked_add(amount)
        .ok_or_else(|| Error::Invalid("balance overflow".into()))?;
    sqlx::query(
        "INSERT INTO wallet_accounts (user_id, balance) VALUES (?1, ?2)
         ON CONFLICT (user_id) DO UPDATE SET balance = excluded.balance",
    )
    .bind(&user)
    .bind(after)
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    sqlx::query(
        "INSERT INTO wallet_entries (op_id, kind, state, user_id, amount, balance_after)
         VALUES (?1, ?2, 'done', ?3, ?4, ?5)",
    )
    .bind(&op_id)
    .bind(kind)
    .bind(&user)
    .bind(amount)
    .bind(after)
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    Ok(Coins(after))
}

async fn settle_debit(conn: &mut SqliteConnection, op_id: String) -> Result<DebitStatus> {
    let voided = sqlx::query(
        "INSERT INTO wallet_entries (op_id, kind, state) VALUES (?1, 'debit', 'void')
         ON CONFLICT (op_id, kind) DO NOTHING",
    )
    .bind(&op_id)
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    if voided.rows_affected() > 0 {
        return Ok(DebitStatus::Void);
    }
    Ok(match entry(conn, &op_id, DEBIT).await? {
        Some(Entry::Done { .. }) => DebitStatus::Debited,
        Some(Entry::Void) | None => DebitStatus::Void,
    })
}

#[async_trait]
impl Wallet for SqliteStore {
    async fn debit(&self, op_id: &str, user: &UserId, amount: Coins) -> Result<Coins> {
        let (op_id, user) = (op_id.to_owned(), user.to_string());
        self.write(move |conn| Box::pin(debit(conn, op_id, user, amount.0)))
            .await
    }

    async fn credit(
        &self,
        op_id: &str,
        kind: CreditKind,
        user: &UserId,
        amount: Coins,
    ) -> Result<Coins> {
        let (op_id, user) = (op_id.to_owned(), user.to_string());
        let kind = credit_kind(kind);
        self.write(move |conn| Box::pin(credit(conn, op_id, kind, user, amount.0)))
            .await
    }

    async fn settle_debit(&self, op_id: &str) -> Result<DebitStatus> {
        let op_id = op_id.to_owned();
        self.write(move |conn| Box::pin(settle_debit(conn, op_id)))
            .await
    }

    async fn balance(&self, user: &UserId) -> Result<Coins> {
        let row = sqlx::query("SELECT balance FROM wallet_accounts WHERE user_id = ?1")
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
}
