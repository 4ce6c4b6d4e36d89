//! Credits owed by commits ([`Payouts`]): rocket rewards a room's commit records, paid by
//! the payout worker.

use std::sync::Arc;

use async_trait::async_trait;
use room_domain::{Coins, RoomId, UserId};
use serde::{Deserialize, Serialize};

use super::wallet::CreditKind;
use crate::error::Result;

/// A credit owed by a commit (a rocket reward), paid by the payout worker with
/// [`Wallet::credit`](crate::ports::Wallet::credit) under `op_id`, then deleted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Payout {
    /// The wallet operation id: unique per reward.
    pub op_id: String,
    /// Why.
    pub kind: CreditKind,
    /// Who gets it.
    pub user: UserId,
    /// How much.
    pub amount: Coins,
    /// The room that owes it.
    pub room_id: RoomId,
}

/// Credits owed by commits.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait Payouts: Send + Sync {
    /// Owed credits, oldest first, at most `limit`: those owed after the one with op id
    /// `after` when it is given and still owed (a pass goes on past credits it cannot pay),
    /// from the oldest otherwise.
    async fn list_pending(&self, after: Option<String>, limit: u32) -> Result<Vec<Payout>>;
    /// Forgets a paid credit.
    async fn delete(&self, op_id: &str) -> Result<()>;
}

/// Shared handle to [`Payouts`].
pub type PayoutsRef = Arc<dyn Payouts>;
