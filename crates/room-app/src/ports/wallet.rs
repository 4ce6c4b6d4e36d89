//! Coin balances ([`Wallet`]): debits, credits and the settling of a debit whose outcome is
//! unknown, each idempotent by its operation id.

use std::sync::Arc;

use async_trait::async_trait;
use room_domain::{Coins, UserId};
use serde::{Deserialize, Serialize};

use crate::error::Result;

/// What the wallet knows of a debit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DebitStatus {
    /// The debit happened.
    Debited,
    /// No debit happened, and none will: the operation id is void.
    Void,
}

/// Why coins move into an account.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CreditKind {
    /// A platform admin's top-up (coins enter the system).
    Admin,
    /// A refund of a gift the room refused.
    Refund,
    /// A lucky-gift reward.
    LuckyReward,
    /// A rocket-launch reward.
    RocketReward,
    /// A leaderboard's reward for a rank of a closed period.
    BoardReward,
}

/// Coin balances. Every operation is idempotent by its operation id (per kind: a debit, an
/// admin credit, a refund, ... of one id are distinct): repeating it returns the first answer
/// and moves no more coins. Gift orders use
/// [`GiftOrder::wallet_op_id`](room_domain::GiftOrder::wallet_op_id), which names the sender.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait Wallet: Send + Sync {
    /// Takes `amount` from `user`; returns the balance after.
    /// [`Error::InsufficientFunds`](crate::Error::InsufficientFunds) if too low (nothing moves);
    /// [`Error::Conflict`](crate::Error::Conflict) if `op_id` was voided or used differently.
    async fn debit(&self, op_id: &str, user: &UserId, amount: Coins) -> Result<Coins>;
    /// Gives `amount` to `user`; returns the balance after.
    async fn credit(
        &self,
        op_id: &str,
        kind: CreditKind,
        user: &UserId,
        amount: Coins,
    ) -> Result<Coins>;
    /// Settles a debit of unknown outcome, atomically: [`DebitStatus::Debited`] if it
    /// happened, else voids `op_id` so a late debit with it fails, and returns
    /// [`DebitStatus::Void`].
    async fn settle_debit(&self, op_id: &str) -> Result<DebitStatus>;
    /// The user's balance (zero for an unknown user).
    async fn balance(&self, user: &UserId) -> Result<Coins>;
}

/// Shared handle to a [`Wallet`].
pub type WalletRef = Arc<dyn Wallet>;
