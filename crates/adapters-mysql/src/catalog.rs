//! [`GiftCatalog`]: the gifts users can send, one row each.

use async_trait::async_trait;
use room_app::ports::{CatalogGift, GiftCatalog};
use room_domain::{Coins, GiftId};
use sqlx::mysql::MySqlRow;

use crate::codec::{col, id_col};
use crate::{MySqlStore, Result};

fn gift(row: &MySqlRow) -> Result<CatalogGift> {
    Ok(CatalogGift {
        gift_id: id_col(row, "gift_id")?,
        name: col(row, "name")?,
        price: Coins(col(row, "price")?),
        heat: col(row, "heat")?,
        fuel: col(row, "fuel")?,
        lucky: col(row, "lucky")?,
        enabled: col(row, "enabled")?,
    })
}

#[async_trait]
impl GiftCatalog for MySqlStore {
    async fn get(&self, gift_id: &GiftId) -> Result<Option<CatalogGift>> {
        let row = self
            .retrying("get_gift", || async move {
                Ok(sqlx::query(
                    "SELECT gift_id, name, price, heat, fuel, lucky, enabled FROM gift_catalog
                     WHERE gift_id = ?",
                )
                .bind(gift_id.as_str())
                .fetch_optional(&self.pool)
                .await?)
            })
            .await?;
        row.as_ref().map(gift).transpose()
    }

    async fn list(&self) -> Result<Vec<CatalogGift>> {
        let rows = self
            .retrying("list_gifts", || async move {
                Ok(sqlx::query(
                    "SELECT gift_id, name, price, heat, fuel, lucky, enabled FROM gift_catalog
                     ORDER BY gift_id",
                )
                .fetch_all(&self.pool)
                .await?)
            })
            .await?;
        rows.iter().map(gift).collect()
    }

    async fn put(&self, gift: &CatalogGift) -> Result<()> {
        let name = gift.name.as_str();
        self.retrying("put_gift", || async move {
            sqlx::query(
                "INSERT INTO gift_catalog (gift_id, name, price, heat, fuel, lucky, enabled)
                 VALUES (?, ?, ?, ?, ?, ?, ?)
                 ON DUPLICATE KEY UPDATE name = ?, price = ?, heat = ?, fuel = ?, lucky = ?,
                     enabled = ?",
            )
            .bind(gift.gift_id.as_str())
            .bind(name)
            .bind(gift.price.0)
            .bind(gift.heat)
            .bind(gift.fuel)
            .bind(gift.lucky)
            .bind(gift.enabled)
            .bind(name)
            .bind(gift.price.0)
            .bind(gift.heat)
            .bind(gift.fuel)
            .bind(gift.lucky)
            .bind(gift.enabled)
            .execute(&self.pool)
            .await?;
            Ok(())
        })
        .await
    }
}
