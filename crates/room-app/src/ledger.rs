//! What the SQL wallets (SQLite, MySQL) share of their ledger: the stored name of each kind of
//! operation and the answer to a repeated operation, so that both answer repeats alike.

use room_domain::Coins;

use crate::error::{Error, Result};
use crate::ports::CreditKind;

/// The stored kind of a debit.
pub const DEBIT_KIND: &str = "debit";

/// The stored kind of a credit.
pub fn credit_kind(kind: CreditKind) -> &'static str {
    match kind {
        CreditKind::Admin => "credit_admin",
        CreditKind::Refund => "refund",
        CreditKind::LuckyReward => "lucky_reward",
        CreditKind::RocketReward => "rocket_reward",
        CreditKind::BoardReward => "board_reward",
    }
}

/// A ledger entry as stored: one per operation id and kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LedgerEntry {
    /// The operation moved `amount` coins of `user`, leaving `balance_after`.
    Done {
        /// Whose account.
        user: String,
        /// How many coins.
        amount: i64,
        /// The balance after it.
        balance_after: i64,
    },
    /// The operation id was voided: no operation with it will ever move coins.
    Void,
}

impl LedgerEntry {
    /// The answer to a repeat of the operation that wrote this entry: its first answer when it
    /// names the same user and amount, else [`Error::Conflict`].
    pub fn repeat(&self, op_id: &str, user: &str, amount: i64) -> Result<Coins> {
        match self {
            LedgerEntry::Done {
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
