//! [`Wallet`]: a ledger of accounts and entries. Each operation is one entry keyed by
//! (operation id, kind) that records its first answer, so a repeat returns that answer and
//! moves nothing; a voided debit is an entry too, so a late debit with its id fails. The
//! ledger trigger of the migration moves the balance when an entry is inserted, so every
//! operation is one INSERT whose guard checks the funds (or the overflow) on the way.

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

async fn stored_balance(conn: &mut SqliteConnection, user: &str) -> Result<i64> {
    let row = sqlx::query("SELECT balance FROM wallet_accounts WHERE user_id = ?1")
        .bind(user)
        .fetch_optional(&mut *conn)
        .await
        .map_err(db)?;
    Ok(row
        .map(|row| col(&row, "balance"))
        .transpose()?
        .unwrap_or_default())
}

/// Answers an operation whose entry was not written: a repeat (or a voided id) gets the stored
/// entry's answer; otherwise `refused` says why.
async fn not_recorded(
    conn: &mut SqliteConnection,
    op_id: &str,
    kind: &str,
    user: &str,
    amount: i64,
    refused: impl FnOnce(i64) -> Error,
) -> Result<Coins> {
    if let Some(entry) = entry(conn, op_id, kind).await? {
        return entry.repeat(op_id, user, amount);
    }
    Err(refused(stored_balance(conn, user).await?))
}

/// Runs an entry INSERT that returns `balance_after` if it recorded the entry. A unique
/// violation (the op id is taken) and "no row" (the guard refused) both mean: not recorded.
async fn record(
    query: sqlx::query::Query<'_, sqlx::Sqlite, sqlx::sqlite::SqliteArguments>,
    conn: &mut SqliteConnection,
) -> Result<Option<Coins>> {
    match query.fetch_optional(&mut *conn).await.map_err(db) {
        Ok(Some(row)) => Ok(Some(Coins(col(&row, "balance_after")?))),
        Ok(None) | Err(Error::AlreadyExists(_)) => Ok(None),
        Err(other) => Err(other),
    }
}

async fn debit(
    conn: &mut SqliteConnection,
    op_id: String,
    user: String,
    amount: i64,
) -> Result<Coins> {
    if amount >= 0 {
        // One statement: record the entry if the op id is new and the funds suffice; the
        // ledger trigger takes the coins from the account.
        let insert = sqlx::query(
            "INSERT INTO wallet_entries (op_id, kind, state, user_id, amount, balance_after)
             SELECT ?1, 'debit', 'done', ?2, ?3, balance - ?3
             FROM (SELECT coalesce((SELECT balance FROM wallet_accounts WHERE user_id = ?2), 0)
                   AS balance)
             WHERE balance >= ?3
             RETURNING balance_after",
        )
        .bind(&op_id)
        .bind(&user)
        .bind(amount);
        if let Some(after) = record(insert, conn).await? {
            return Ok(after);
        }
    }
    not_recorded(conn, &op_id, DEBIT, &user, amount, |balance| {
        if amount < 0 {
            Error::Invalid(format!("negative debit {amount}"))
        } else {
            Error::InsufficientFunds {
                balance: Coins(balance),
            }
        }
    })
    .await
}

async fn credit(
    conn: &mut SqliteConnection,
    op_id: String,
    kind: &'static str,
    user: String,
    amount: i64,
) -> Result<Coins> {
    if amount >= 0 {
        // One statement, as for a debit; the guard refuses a balance past i64::MAX.
        let insert = sqlx::query(
            "INSERT INTO wallet_entries (op_id, kind, state, user_id, amount, balance_after)
             SELECT ?1, ?2, 'done', ?3, ?4, balance + ?4
             FROM (SELECT coalesce((SELECT balance FROM wallet_accounts WHERE user_id = ?3), 0)
                   AS balance)
             WHERE balance <= 9223372036854775807 - ?4
             RETURNING balance_after",
        )
        .bind(&op_id)
        .bind(kind)
        .bind(&user)
        .bind(amount);
        if let Some(after) = record(insert, conn).await? {
            return Ok(after);
        }
    }
    not_recorded(conn, &op_id, kind, &user, amount, |_| {
        if amount < 0 {
            Error::Invalid(format!("negative credit {amount}"))
        } else {
            Error::Invalid("balance overflow".into())
        }
    })
    .await
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
        self.write_statement(move |conn| Box::pin(debit(conn, op_id, user, amount.0)))
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
        self.write_statement(move |conn| Box::pin(credit(conn, op_id, kind, user, amount.0)))
            .await
    }

    async fn settle_debit(&self, op_id: &str) -> Result<DebitStatus> {
        let op_id = op_id.to_owned();
        self.write_statement(move |conn| Box::pin(settle_debit(conn, op_id)))
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
