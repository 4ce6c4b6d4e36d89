//! [`Wallet`]: a ledger of accounts and entries. Each operation is one entry keyed by
//! (operation id, kind) that records its first answer, so a repeat returns that answer and
//! moves nothing; a voided debit is an entry too, so a late debit with its id fails. The
//! ledger trigger of the migration moves the balance when an entry is inserted, so an
//! operation is one INSERT of an entry whose balance after was read in the same transaction,
//! the account's CHECK refuses a negative balance in SQL, and the balance can change in no
//! other way.

use async_trait::async_trait;
use room_app::Error;
use room_app::ledger::{DEBIT_KIND as DEBIT, LedgerEntry as Entry, credit_kind};
use room_app::ports::{CreditKind, DebitStatus, Wallet};
use room_domain::{Coins, UserId};
use rusqlite::{Connection, OptionalExtension, params};

use crate::codec::{col, db, sql};
use crate::{Result, SqliteStore};

fn entry(conn: &Connection, op_id: &str, kind: &str) -> Result<Option<Entry>> {
    conn.prepare_cached(
        "SELECT state, user_id, amount, balance_after FROM wallet_entries
         WHERE op_id = ?1 AND kind = ?2",
    )
    .and_then(|mut select| {
        select
            .query_row([op_id, kind], |row| {
                let state: String = row.get(0)?;
                Ok(match state.as_str() {
                    "void" => Entry::Void,
                    _ => Entry::Done {
                        user: row.get(1)?,
                        amount: row.get(2)?,
                        balance_after: row.get(3)?,
                    },
                })
            })
            .optional()
    })
    .map_err(sql)
}

fn stored_balance(conn: &Connection, user: &str) -> Result<i64> {
    conn.prepare_cached("SELECT balance FROM wallet_accounts WHERE user_id = ?1")
        .and_then(|mut select| select.query_row([user], |row| row.get(0)).optional())
        .map(Option::unwrap_or_default)
        .map_err(sql)
}

/// Answers an operation whose entry was not written: a repeat (or a voided id) gets the stored
/// entry's answer; otherwise `refused` says why.
fn not_recorded(
    conn: &Connection,
    op_id: &str,
    kind: &str,
    user: &str,
    amount: i64,
    refused: impl FnOnce(i64) -> Error,
) -> Result<Coins> {
    if let Some(entry) = entry(conn, op_id, kind)? {
        return entry.repeat(op_id, user, amount);
    }
    Err(refused(stored_balance(conn, user)?))
}

/// Records a done entry ([`record`]).
pub(crate) const RECORD: &str =
    "INSERT INTO wallet_entries (op_id, kind, state, user_id, amount, balance_after)
     VALUES (?1, ?2, 'done', ?3, ?4, ?5)";

/// Voids a debit's op id, unless it has an entry.
pub(crate) const VOID_DEBIT: &str =
    "INSERT INTO wallet_entries (op_id, kind, state) VALUES (?1, 'debit', 'void')
     ON CONFLICT (op_id, kind) DO NOTHING";

/// Records a done entry of `user` with the balance after it, unless its op id is taken;
/// returns whether it recorded it. The ledger trigger moves the coins, and the account's
/// `CHECK (balance >= 0)` refuses in SQL any entry that would take it below zero. It is one
/// INSERT of values: SQLite runs an INSERT ... SELECT into a table with a trigger through a
/// temporary table it opens and closes on every statement.
fn record(
    conn: &Connection,
    op_id: &str,
    kind: &str,
    user: &str,
    amount: i64,
    balance_after: i64,
) -> Result<bool> {
    let inserted = conn
        .prepare_cached(RECORD)
        .and_then(|mut insert| insert.execute(params![op_id, kind, user, amount, balance_after]))
        .map_err(sql);
    match inserted {
        Ok(_) => Ok(true),
        Err(Error::AlreadyExists(_)) => Ok(false),
        Err(other) => Err(other),
    }
}

fn debit(conn: &Connection, op_id: &str, user: &str, amount: i64) -> Result<Coins> {
    if amount >= 0 {
        // The balance is read in the writer's transaction, the only one that writes: it is
        // still the balance when the entry goes in.
        let after = stored_balance(conn, user)? - amount;
        if after >= 0 && record(conn, op_id, DEBIT, user, amount, after)? {
            return Ok(Coins(after));
        }
    }
    not_recorded(conn, op_id, DEBIT, user, amount, |balance| {
        if amount < 0 {
            Error::Invalid(format!("negative debit {amount}"))
        } else {
            Error::InsufficientFunds {
                balance: Coins(balance),
            }
        }
    })
}

fn credit(conn: &Connection, op_id: &str, kind: &str, user: &str, amount: i64) -> Result<Coins> {
    if amount >= 0 {
        // As for a debit; a balance past i64::MAX is refused.
        if let Some(after) = stored_balance(conn, user)?.checked_add(amount)
            && record(conn, op_id, kind, user, amount, after)?
        {
            return Ok(Coins(after));
        }
    }
    not_recorded(conn, op_id, kind, user, amount, |_| {
        if amount < 0 {
            Error::Invalid(format!("negative credit {amount}"))
        } else {
            Error::Invalid("balance overflow".into())
        }
    })
}

fn settle_debit(conn: &Connection, op_id: &str) -> Result<DebitStatus> {
    let voided = conn
        .prepare_cached(VOID_DEBIT)
        .and_then(|mut insert| insert.execute([op_id]))
        .map_err(sql)?;
    if voided > 0 {
        return Ok(DebitStatus::Void);
    }
    Ok(match entry(conn, op_id, DEBIT)? {
        Some(Entry::Done { .. }) => DebitStatus::Debited,
        Some(Entry::Void) | None => DebitStatus::Void,
    })
}

#[async_trait]
impl Wallet for SqliteStore {
    async fn debit(&self, op_id: &str, user: &UserId, amount: Coins) -> Result<Coins> {
        let (op_id, user) = (op_id.to_owned(), user.to_string());
        self.write(move |conn| debit(conn, &op_id, &user, amount.0))
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
        self.write(move |conn| credit(conn, &op_id, kind, &user, amount.0))
            .await
    }

    async fn settle_debit(&self, op_id: &str) -> Result<DebitStatus> {
        let op_id = op_id.to_owned();
        self.write(move |conn| settle_debit(conn, &op_id)).await
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
