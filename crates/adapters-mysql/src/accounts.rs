//! Balances of accounts kept in a table of `(user_id, balance)` whose balance may not pass
//! `BIGINT`: the wallet's coins and the income ledger's income.

use sqlx::MySqlConnection;

use crate::codec::TxError;

/// A table of balances.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Accounts {
    /// `wallet_accounts`: coins.
    Wallet,
    /// `income_accounts`: income.
    Income,
}

impl Accounts {
    fn add_statement(self) -> &'static str {
        match self {
            Accounts::Wallet => {
                "UPDATE wallet_accounts SET balance = balance + ?
                 WHERE user_id = ? AND balance <= 9223372036854775807 - ?"
            }
            Accounts::Income => {
                "UPDATE income_accounts SET balance = balance + ?
                 WHERE user_id = ? AND balance <= 9223372036854775807 - ?"
            }
        }
    }

    fn open_statement(self) -> &'static str {
        match self {
            Accounts::Wallet => {
                "INSERT INTO wallet_accounts (user_id, balance) VALUES (?, 0)
                 ON DUPLICATE KEY UPDATE user_id = user_id"
            }
            Accounts::Income => {
                "INSERT INTO income_accounts (user_id, balance) VALUES (?, 0)
                 ON DUPLICATE KEY UPDATE user_id = user_id"
            }
        }
    }

    /// Adds `amount` (not negative) to `user`'s balance in the transaction of `conn`, opening
    /// the account first if there is none (the upsert locks the row, whichever transaction
    /// inserts it, so two first credits of one user queue). `false`: the sum would pass
    /// `BIGINT`, and nothing changed.
    pub(crate) async fn add(
        self,
        conn: &mut MySqlConnection,
        user: &str,
        amount: i64,
    ) -> Result<bool, TxError> {
        if self.add_existing(conn, user, amount).await? {
            return Ok(true);
        }
        // No account yet, or one the amount would overflow: open it (a no-op on an existing
        // row) and try once more.
        sqlx::query(self.open_statement())
            .bind(user)
            .execute(&mut *conn)
            .await?;
        self.add_existing(conn, user, amount).await
    }

    /// Adds `amount` to an existing account if the sum fits; whether it did. The driver asks
    /// for matched rather than changed rows, so a zero credit counts.
    async fn add_existing(
        self,
        conn: &mut MySqlConnection,
        user: &str,
        amount: i64,
    ) -> Result<bool, TxError> {
        let updated = sqlx::query(self.add_statement())
            .bind(amount)
            .bind(user)
            .bind(amount)
            .execute(&mut *conn)
            .await?;
        Ok(updated.rows_affected() > 0)
    }
}
