//! Gifts and coins: sending a gift through the saga, the catalog, balances and admin credits.

use room_domain::{Coins, UserId};

use super::room_service::RoomService;
use crate::error::{Error, Result};
use crate::gifts::{GiftReceipt, SendGift};
use crate::ports::{CatalogGift, CreditKind};

/// The most one admin credit may give: a trillion coins. Balances grow only by such credits
/// and by what gifts pay back, so they stay far from the `i64` limit.
pub const MAX_ADMIN_CREDIT: i64 = 1_000_000_000_000;

impl RoomService {
    /// Sends a gift through the saga.
    pub async fn send_gift(&self, request: SendGift) -> Result<GiftReceipt> {
        self.ensure_known(&request.room_id).await?;
        self.gifts.send(request).await
    }

    /// The catalog.
    pub async fn list_gifts(&self) -> Result<Vec<CatalogGift>> {
        self.ports.catalog.list().await
    }

    /// Creates or replaces a catalog entry.
    pub async fn put_gift(&self, gift: CatalogGift) -> Result<()> {
        if let Some(problem) = gift.problem() {
            return Err(Error::Invalid(format!("gift {}: {problem}", gift.gift_id)));
        }
        self.ports.catalog.put(&gift).await?;
        self.gifts.forget_catalog();
        Ok(())
    }

    /// A user's balance.
    pub async fn balance(&self, user: &UserId) -> Result<Coins> {
        self.ports.wallet.balance(user).await
    }

    /// Credits coins to a user (platform admins), idempotent by `op_id`; `amount` is 1 to
    /// [`MAX_ADMIN_CREDIT`].
    pub async fn admin_credit(&self, op_id: &str, user: &UserId, amount: Coins) -> Result<Coins> {
        if !(1..=MAX_ADMIN_CREDIT).contains(&amount.0) {
            return Err(Error::Invalid(format!(
                "amount must be 1 to {MAX_ADMIN_CREDIT} coins"
            )));
        }
        self.ports
            .wallet
            .credit(&format!("admin:{op_id}"), CreditKind::Admin, user, amount)
            .await
    }
}
