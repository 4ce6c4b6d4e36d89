//! [`GiftOrders`]: the gift saga's orders, as JSON with their status and creation time in
//! columns for the recovery worker's query.

use async_trait::async_trait;
use room_app::Error;
use room_app::ports::GiftOrders;
use room_domain::{GiftOrder, OrderId, OrderStatus, Timestamp};
use serde::Serialize;
use sqlx::SqliteConnection;

use crate::codec::{db, json_col, to_json};
use crate::{Result, SqliteStore};

/// An order encoded for its table (and for the `room_commit` view).
#[derive(Serialize)]
pub(crate) struct OrderRow {
    order_id: String,
    room_id: String,
    sender: String,
    status: &'static str,
    created_at: i64,
    body: String,
}

impl OrderRow {
    pub(crate) fn new(order: &GiftOrder) -> Result<Self> {
        Ok(OrderRow {
            order_id: order.order_id.to_string(),
            room_id: order.room_id.to_string(),
            sender: order.sender.to_string(),
            status: order.status.as_str(),
            created_at: order.created_at.as_millis(),
            body: to_json(order)?,
        })
    }

    /// Replaces the stored order if its status is `expected`; returns whether it did.
    async fn replace(&self, conn: &mut SqliteConnection, expected: &'static str) -> Result<bool> {
        let updated = sqlx::query(
            "UPDATE gift_orders
             SET room_id = ?1, sender = ?2, status = ?3, created_at = ?4, body = ?5
             WHERE order_id = ?6 AND status = ?7",
        )
        .bind(&self.room_id)
        .bind(&self.sender)
        .bind(self.status)
        .bind(self.created_at)
        .bind(&self.body)
        .bind(&self.order_id)
        .bind(expected)
        .execute(&mut *conn)
        .await
        .map_err(db)?;
        Ok(updated.rows_affected() > 0)
    }
}

async fn create_or_get(
    conn: &mut SqliteConnection,
    row: OrderRow,
    order: GiftOrder,
) -> Result<(GiftOrder, bool)> {
    let inserted = sqlx::query(
        "INSERT INTO gift_orders (order_id, room_id, sender, status, created_at, body)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (order_id) DO NOTHING",
    )
    .bind(&row.order_id)
    .bind(&row.room_id)
    .bind(&row.sender)
    .bind(row.status)
    .bind(row.created_at)
    .bind(&row.body)
    .execute(&mut *conn)
    .await
    .map_err(db)?;
    if inserted.rows_affected() > 0 {
        return Ok((order, true));
    }
    let stored = sqlx::query("SELECT body FROM gift_orders WHERE order_id = ?1")
        .bind(&row.order_id)
        .fetch_one(&mut *conn)
        .await
        .map_err(db)?;
    Ok((json_col(&stored, "body")?, false))
}

async fn update(conn: &mut SqliteConnection, row: OrderRow, expected: OrderStatus) -> Result<()> {
    if row.replace(conn, expected.as_str()).await? {
        return Ok(());
    }
    let stored = sqlx::query("SELECT status FROM gift_orders WHERE order_id = ?1")
        .bind(&row.order_id)
        .fetch_optional(&mut *conn)
        .await
        .map_err(db)?;
    Err(match stored {
        None => Error::NotFound(format!("order {}", row.order_id)),
        Some(stored) => Error::Conflict(format!(
            "order {} is {}, not {}",
            row.order_id,
            crate::codec::col::<String>(&stored, "status")?,
            expected.as_str()
        )),
    })
}

#[async_trait]
impl GiftOrders for SqliteStore {
    async fn create_or_get(&self, order: &GiftOrder) -> Result<(GiftOrder, bool)> {
        let row = OrderRow::new(order)?;
        let order = order.clone();
        self.write_statement(move |conn| Box::pin(create_or_get(conn, row, order)))
            .await
    }

    async fn get(&self, order_id: &OrderId) -> Result<Option<GiftOrder>> {
        let row = sqlx::query("SELECT body FROM gift_orders WHERE order_id = ?1")
            .bind(order_id.as_str())
            .fetch_optional(&self.readers)
            .await
            .map_err(db)?;
        row.map(|row| json_col(&row, "body")).transpose()
    }

    async fn update(&self, order: &GiftOrder, expected: OrderStatus) -> Result<()> {
        let row = OrderRow::new(order)?;
        self.write_statement(move |conn| Box::pin(update(conn, row, expected)))
            .await
    }

    async fn list_unfinished(&self, before: Timestamp, limit: u32) -> Result<Vec<GiftOrder>> {
        // The status condition is the partial index's, word for word, so the index serves it.
        let rows = sqlx::query(
            "SELECT body FROM gift_orders
             WHERE status NOT IN ('COMPLETED', 'FAILED', 'COMPENSATED') AND created_at < ?1
             ORDER BY created_at, order_id LIMIT ?2",
        )
        .bind(before.as_millis())
        .bind(i64::from(limit))
        .fetch_all(&self.readers)
        .await
        .map_err(db)?;
        rows.iter().map(|row| json_col(row, "body")).collect()
    }
}
