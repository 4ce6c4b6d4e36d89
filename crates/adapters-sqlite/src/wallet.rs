//! [`Wallet`]: a ledger of accounts and entries. Each operation is one entry keyed by
//! (operation id, kind) that records its first answer, so a repeat returns that answer and
//! moves nothing; a voided debit is an entry too, so a late debit with its id fails. The
//! ledger trigger of the migration moves the balance when an entry is inserted, so an
//! operation is one INSERT whose guard checks the funds (or the overflow) on the way, and the
//! balance can change in no other way.

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

/// Runs an entry INSERT of `user` and returns the balance after it if it recorded the entry.
/// A unique violation (the op id is taken) and no row (the guard refused) both mean: not
/// recorded. The ledger trigger has moved the coins, so the account holds the entry's
/// `balance_after`; reading it back costs less than `RETURNING`, which SQLite runs through a
/// temporary table it opens and closes on every statement.
fn record(
    conn: &Connection,
    insert: &str,
    params: impl rusqlite::Params,
    user: &str,
) -> Result<Option<Coins>> {
    let inserted = conn
        .prepare_cached(insert)
        .and_then(|mut insert| insert.execute(params))
        .map_err(sql);
    match inserted {
        Ok(0) => Ok(None),
        Ok(_) => stored_balance(conn, user).map(|balance| Some(Coins(balance))),
        Err(Error::AlreadyExists(_)) => Ok(None),
        Err(other) => Err(other),
    }
}

fn debit(conn: &Connection, op_id: &str, user: &str, amount: i64) -> Result<Coins> {
    if amount >= 0 {
        // One statement: record the entry if the op id is new and the funds suffice; the
        // ledger trigger takes the coins from the account.
        let recorded = record(
            conn,
            "INSERT INTO wallet_entries (op_id, kind, state, user_id, amount, balance_after)
             SELECT ?1, 'debit', 'done', ?2, ?3, balance - ?3
             FROM (SELECT coalesce((SELECT balance FROM wallet_accounts WHERE user_id = ?2), 0)
                   AS balance)
             WHERE balance >= ?3",
            params![op_id, user, amount],
            user,
        )?;
        if let Some(after) = recorded {
            return Ok(after);
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
        // One statement, as for a debit; the guard refuses a balance past i64::MAX.
        let recorded = record(
            conn,
            "INSERT INTO wallet_entries (op_id, kind, state, user_id, amount, balance_after)
             SELECT ?1, ?2, 'done', ?3, ?4, balance + ?4
             FROM (SELECT coalesce((SELECT balance FROM wallet_accounts WHERE user_id = ?3), 0)
                   AS balance)
             WHERE balance <= 9223372036854775807 - ?4",
            params![op_id, kind, user, amount],
            user,
        )?;
        if let Some(after) = recorded {
            return Ok(after);
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
        .prepare_cached(
            "INSERT INTO wallet_entries (op_id, kind, state) VALUES (?1, 'debit', 'void')
             ON CONFLICT (op_id, kind) DO NOTHING",
        )
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
