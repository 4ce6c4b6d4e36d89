//! [`GiftCatalog`]: the gifts users can send, one row each.

use async_trait::async_trait;
use room_app::ports::{CatalogGift, GiftCatalog};
use room_domain::{Coins, GiftId};
use sqlx::sqlite::SqliteRow;

use crate::codec::{col, db, id_col};
use crate::{Result, SqliteStore};

fn gift(row: &SqliteRow) -> Result<CatalogGift> {
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
impl GiftCatalog for SqliteStore {
    async fn get(&self, gift_id: &GiftId) -> Result<Option<CatalogGift>> {
        let row = sqlx::query(
            "SELECT gift_id, name, price, heat, fuel, lucky, enabled FROM gift_catalog
             WHERE gift_id = ?1",
        )
        .bind(gift_id.as_str())
        .fetch_optional(&self.readers)
        .await
        .map_err(db)?;
        row.as_ref().map(gift).transpose()
    }

    async fn list(&self) -> Result<Vec<CatalogGift>> {
        let rows = sqlx::query(
            "SELECT gift_id, name, price, heat, fuel, lucky, enabled FROM gift_catalog
             ORDER BY gift_id",
        )
        .fetch_all(&self.readers)
        .await
        .map_err(db)?;
        rows.iter().map(gift).collect()
    }

    async fn put(&self, gift: &CatalogGift) -> Result<()> {
        self.execute(
            "INSERT INTO gift_catalog (gift_id, name, price, heat, fuel, lucky, enabled)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
             ON CONFLICT (gift_id) DO UPDATE SET name = excluded.name, price = excluded.price,
                 heat = excluded.heat, fuel = excluded.fuel, lucky = excluded.lucky,
                 enabled = excluded.enabled",
            (
                gift.gift_id.to_string(),
                gift.name.clone(),
                gift.price.0,
                gift.heat,
                gift.fuel,
                gift.lucky,
                gift.enabled,
            ),
        )
        .await?;
        Ok(())
    }
}
