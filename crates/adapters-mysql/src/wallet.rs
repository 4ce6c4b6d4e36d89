//! [`Wallet`]: a ledger of accounts and entries, with the semantics of the SQLite store's.
//! Each operation is one entry keyed by (kind, operation id) that records its first answer,
//! so a repeat returns that answer and moves nothing; a voided debit is an entry too, so a
//! late debit with its id fails. Each operation is one transaction, run again by
//! [`MySqlStore::retrying`] when the server picks it as a deadlock victim or times it out on a
//! lock.
//!
//! A balance never goes below zero by a condition in SQL: a debit takes its coins with
//! `UPDATE ... SET balance = balance - ? WHERE user_id = ? AND balance >= ?` and goes on only
//! when that matched the account, and the accounts table's `CHECK (balance >= 0)` refuses
//! any other statement that would overdraw one.
//!
//! # Lock order: the account row first, then the entry key
//!
//! Every debit and credit locks its user's account row with its first write (the guarded
//! `UPDATE` itself; a first credit opens the account with an upsert, which locks the row
//! whoever inserted it), and only then inserts its entry, as its last statement. A
//! transaction therefore holds at most one account row and one entry key, and takes them in
//! that order; `settle_debit` takes an entry key only. No two wallet transactions can wait
//! for each other in a cycle, so concurrent operations of one user, or of one op id from
//! several nodes, queue instead of deadlocking. The entry's primary key decides exactly once:
//! a second attempt of an operation either waits for the first on the account row and then
//! finds its entry taken, or waits on the key; either way it rolls back whatever it moved and
//! answers with the stored entry. The other order (the entry first) would write an entry
//! before the balance after it is known, and an entry that must then be rolled back (funds
//! short) would wake the attempts queued on its key into the three-way insert deadlock
//! InnoDB documents; here the entry insert is the last statement, never rolled back by the
//! adapter's own logic.

use async_trait::async_trait;
use room_app::Error;
use room_app::ledger::{DEBIT_KIND as DEBIT, LedgerEntry as Entry, credit_kind};
use room_app::ports::{CreditKind, DebitStatus, Wallet};
use room_domain::{Coins, UserId};
use sqlx::MySqlConnection;

use crate::accounts::Accounts;
use crate::pool::Tx;

use crate::codec::{TxError, col, is_duplicate_key};
use crate::{MySqlStore, Result};

async fn entry(
    conn: &mut MySqlConnection,
    kind: &str,
    op_id: &str,
) -> Result<Option<Entry>, TxError> {
    let row = sqlx::query(
        "SELECT state, user_id, amount, balance_after FROM wallet_entries
         WHERE kind = ? AND op_id = ?",
    )
    .bind(kind)
    .bind(op_id)
    .fetch_optional(&mut *conn)
    .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    let state: String = col(&row, "state")?;
    let user: Option<String> = col(&row, "user_id")?;
    let amount: Option<i64> = col(&row, "amount")?;
    let balance_after: Option<i64> = col(&row, "balance_after")?;
    Ok(Some(match (state.as_str(), user, amount, balance_after) {
        ("void", ..) => Entry::Void,
        ("done", Some(user), Some(amount), Some(balance_after)) => Entry::Done {
            user,
            amount,
            balance_after,
        },
        _ => {
            return Err(Error::corrupt(format!(
                "wallet entry {kind} {op_id} in state {state:?} without its answer"
            ))
            .into());
        }
    }))
}

/// The stored balance, `None` when the user has no account. Inside a transaction that
/// changed the account, it reads that change.
async fn stored_balance(conn: &mut MySqlConnection, user: &str) -> Result<Option<i64>, TxError> {
    Ok(
        sqlx::query_scalar("SELECT balance FROM wallet_accounts WHERE user_id = ?")
            .bind(user)
            .fetch_optional(&mut *conn)
            .await?,
    )
}

/// The balance of an account this transaction has just changed.
async fn changed_balance(conn: &mut MySqlConnection, user: &str) -> Result<i64, TxError> {
    stored_balance(conn, user).await?.ok_or_else(|| {
        Error::corrupt(format!(
            "the wallet account of {user} vanished while locked"
        ))
        .into()
    })
}

/// Ends an operation that moved `amount` coins of `user`, leaving `balance_after`: records
/// its entry and commits, or, when another attempt of the operation recorded it first (the
/// key is taken), rolls back what this one moved and answers as that one did.
async fn finish(
    mut tx: Tx,
    kind: &str,
    op_id: &str,
    user: &str,
    amount: i64,
    balance_after: i64,
) -> Result<Coins, TxError> {
    let inserted = sqlx::query(
        "INSERT INTO wallet_entries (kind, op_id, state, user_id, amount, balance_after)
         VALUES (?, ?, 'done', ?, ?, ?)",
    )
    .bind(kind)
    .bind(op_id)
    .bind(user)
    .bind(amount)
    .bind(balance_after)
    .execute(&mut *tx)
    .await;
    match inserted {
        Ok(_) => {
            tx.commit().await?;
            Ok(Coins(balance_after))
        }
        Err(error) if is_duplicate_key(&error) => {
            // The duplicate key check waited for the entry's writer to end: it is committed.
            let stored = entry(&mut tx, kind, op_id)
                .await?
                .ok_or_else(|| Error::corrupt(format!("wallet entry {kind} {op_id} vanished")))?;
            tx.rollback().await?;
            Ok(stored.repeat(op_id, user, amount)?)
        }
        Err(error) => Err(error.into()),
    }
}

async fn debit_once(
    store: &MySqlStore,
    op_id: &str,
    user: &str,
    amount: i64,
) -> Result<Coins, TxError> {
    let mut tx = store.pool.begin().await?;
    if amount >= 0 {
        let taken = sqlx::query(
            "UPDATE wallet_accounts SET balance = balance - ? WHERE user_id = ? AND balance >= ?",
        )
        .bind(amount)
        .bind(user)
        .bind(amount)
        .execute(&mut *tx)
        .await?
        .rows_affected()
            > 0;
        if taken {
            let after = changed_balance(&mut tx, user).await?;
            return finish(tx, DEBIT, op_id, user, amount, after).await;
        }
    }
    // Nothing moved: a repeat (or a voided id) gets the stored entry's answer.
    if let Some(stored) = entry(&mut tx, DEBIT, op_id).await? {
        return Ok(stored.repeat(op_id, user, amount)?);
    }
    if amount < 0 {
        return Err(Error::Invalid(format!("negative debit {amount}")).into());
    }
    match stored_balance(&mut tx, user).await? {
        // A zero debit of a user without an account succeeds, as it does in every store.
        None if amount == 0 => finish(tx, DEBIT, op_id, user, amount, 0).await,
        balance => Err(Error::InsufficientFunds {
            balance: Coins(balance.unwrap_or_default()),
        }
        .into()),
    }
}

async fn credit_once(
    store: &MySqlStore,
    op_id: &str,
    kind: &str,
    user: &str,
    amount: i64,
) -> Result<Coins, TxError> {
    let mut tx = store.pool.begin().await?;
    if amount >= 0 {
        let added = Accounts::Wallet.add(&mut tx, user, amount).await?;
        if added {
            let after = changed_balance(&mut tx, user).await?;
            return finish(tx, kind, op_id, user, amount, after).await;
        }
    }
    if let Some(stored) = entry(&mut tx, kind, op_id).await? {
        return Ok(stored.repeat(op_id, user, amount)?);
    }
    Err(Error::Invalid(if amount < 0 {
        format!("negative credit {amount}")
    } else {
        "balance overflow".into()
    })
    .into())
}

async fn settle_debit_once(store: &MySqlStore, op_id: &str) -> Result<DebitStatus, TxError> {
    let mut tx = store.pool.begin().await?;
    // A plain insert, and the duplicate key error when the id is taken: an upsert's affected
    // rows cannot tell an insert from a no-op with the found-rows flag the driver sets. A
    // debit of this id still running holds the key: the insert waits for it to end.
    let voided =
        sqlx::query("INSERT INTO wallet_entries (kind, op_id, state) VALUES ('debit', ?, 'void')")
            .bind(op_id)
            .execute(&mut *tx)
            .await;
    match voided {
        Ok(_) => {
            tx.commit().await?;
            Ok(DebitStatus::Void)
        }
        Err(error) if is_duplicate_key(&error) => Ok(match entry(&mut tx, DEBIT, op_id).await? {
            Some(Entry::Done { .. }) => DebitStatus::Debited,
            Some(Entry::Void) => DebitStatus::Void,
            None => {
                return Err(Error::corrupt(format!("wallet entry debit {op_id} vanished")).into());
            }
        }),
        Err(error) => Err(error.into()),
    }
}

#[async_trait]
impl Wallet for MySqlStore {
    async fn debit(&self, op_id: &str, user: &UserId, amount: Coins) -> Result<Coins> {
        let user = user.as_str();
        self.retrying("wallet_debit", || debit_once(self, op_id, user, amount.0))
            .await
    }

    async fn credit(
        &self,
        op_id: &str,
        kind: CreditKind,
        user: &UserId,
        amount: Coins,
    ) -> Result<Coins> {
        let (kind, user) = (credit_kind(kind), user.as_str());
        self.retrying("wallet_credit", || {
            credit_once(self, op_id, kind, user, amount.0)
        })
        .await
    }

    async fn settle_debit(&self, op_id: &str) -> Result<DebitStatus> {
        self.retrying("wallet_settle_debit", || settle_debit_once(self, op_id))
            .await
    }

    async fn balance(&self, user: &UserId) -> Result<Coins> {
        let balance = self
            .retrying("wallet_balance", || async move {
                Ok(sqlx::query_scalar::<_, i64>(
                    "SELECT balance FROM wallet_accounts WHERE user_id = ?",
                )
                .bind(user.as_str())
                .fetch_optional(&self.pool)
                .await?)
            })
            .await?;
        Ok(Coins(balance.unwrap_or_default()))
    }
}
