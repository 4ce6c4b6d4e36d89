//! The gift catalog ([`GiftCatalog`]): what each gift costs and what it does to a room, and
//! the limits an entry must keep.

use std::sync::Arc;

use async_trait::async_trait;
use room_domain::{Coins, GiftId};
use serde::{Deserialize, Serialize};

use crate::error::Result;

/// One entry of the gift catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogGift {
    /// The gift.
    pub gift_id: GiftId,
    /// Display name.
    pub name: String,
    /// Coins per unit.
    pub price: Coins,
    /// Heat per unit and recipient.
    pub heat: i64,
    /// Rocket fuel per unit and recipient.
    pub fuel: i64,
    /// Whether it is a lucky gift.
    pub lucky: bool,
    /// Whether it can be sent.
    pub enabled: bool,
}

impl CatalogGift {
    /// The gift as a gift command carries it (and its events show it).
    pub fn snapshot(&self) -> room_domain::GiftSnapshot {
        room_domain::GiftSnapshot {
            gift_id: self.gift_id.clone(),
            price: self.price,
            heat: self.heat,
            fuel: self.fuel,
            lucky: self.lucky,
            billing_version: None,
        }
    }
}

/// The most a catalog gift's price, heat or fuel may be per unit. With at most 9,999 units
/// to each of at most 20 recipients, a gift's coins, heat and fuel then stay below 2 * 10^14,
/// far from the `i64` limits the totals, balances and rewards they feed are kept in.
pub const MAX_GIFT_UNIT_VALUE: i64 = 1_000_000_000;

/// The longest catalog gift name, in characters.
pub const MAX_GIFT_NAME_CHARS: usize = 64;

impl CatalogGift {
    /// Why this entry cannot be in the catalog, if it cannot: a name that is blank or longer
    /// than [`MAX_GIFT_NAME_CHARS`], a price, heat or fuel outside `0..=`[`MAX_GIFT_UNIT_VALUE`].
    pub fn problem(&self) -> Option<String> {
        if self.name.trim().is_empty() || self.name.chars().count() > MAX_GIFT_NAME_CHARS {
            return Some(format!(
                "a gift name has 1 to {MAX_GIFT_NAME_CHARS} characters"
            ));
        }
        [
            ("price", self.price.0),
            ("heat", self.heat),
            ("fuel", self.fuel),
        ]
        .into_iter()
        .find(|(_, value)| !(0..=MAX_GIFT_UNIT_VALUE).contains(value))
        .map(|(field, value)| format!("{field} {value} is outside 0..={MAX_GIFT_UNIT_VALUE}"))
    }
}

/// The gift catalog.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait GiftCatalog: Send + Sync {
    /// A gift by id.
    async fn get(&self, gift_id: &GiftId) -> Result<Option<CatalogGift>>;
    /// Every gift, by id.
    async fn list(&self) -> Result<Vec<CatalogGift>>;
    /// Creates or replaces a gift.
    async fn put(&self, gift: &CatalogGift) -> Result<()>;
}

/// Shared handle to a [`GiftCatalog`].
pub type GiftCatalogRef = Arc<dyn GiftCatalog>;
