//! [`GiftOrders`]: the gift saga's orders. The fields that queries read (room, status,
//! creation time, the room's refusal) are columns, the rest of the order a compact body
//! ([`room_app::stored`]) without them, and the creation time of the unfinished ones is in an
//! indexed generated column for the recovery worker's query. Keyed by sender and order id:
//! an order id is its sender's own.

use async_trait::async_trait;
use room_app::Error;
use room_app::ports::{GiftOrders, OrderCursor};
use room_app::stored;
use room_domain::{GiftOrder, OrderId, OrderStatus, Timestamp, UserId};
use serde_json::Value;
use sqlx::MySqlConnection;
use sqlx::mysql::MySqlRow;

use crate::codec::{TxError, col, is_duplicate_key};
use crate::{MySqlStore, Result};

/// An order encoded for its table.
pub(crate) struct OrderRow {
    order_id: String,
    room_id: String,
    sender: String,
    status: &'static str,
    created_at: i64,
    rejection: Option<Vec<u8>>,
    body: Vec<u8>,
}

/// The fields of an order that its row has in columns, left out of its body.
const ORDER_COLUMNS: &[&str] = &[
    "order_id",
    "room_id",
    "sender",
    "status",
    "created_at",
    "rejection",
];

/// One order, by sender and order id.
const SELECT_ORDER: &str =
    "SELECT order_id, room_id, sender, status, created_at, rejection, body FROM gift_orders
     WHERE sender = ? AND order_id = ?";

/// An order from a row with the columns of [`SELECT_ORDER`].
fn order_row(row: &MySqlRow) -> Result<GiftOrder> {
    let order_id: String = col(row, "order_id")?;
    let room_id: String = col(row, "room_id")?;
    let sender: String = col(row, "sender")?;
    let status: String = col(row, "status")?;
    let created_at: i64 = col(row, "created_at")?;
    let rejection: Option<&[u8]> = col(row, "rejection")?;
    let body: &[u8] = col(row, "body")?;
    let rejection = match rejection {
        Some(bytes) => stored::decode::<Value>(bytes, "rejection")?,
        None => Value::Null,
    };
    stored::decode_with(
        body,
        "order",
        [
            ("order_id", order_id.into()),
            ("room_id", room_id.into()),
            ("sender", sender.into()),
            ("status", status.into()),
            ("created_at", created_at.into()),
            ("rejection", rejection),
        ],
    )
}

impl OrderRow {
    pub(crate) fn new(order: &GiftOrder) -> Result<Self> {
        Ok(OrderRow {
            order_id: order.order_id.to_string(),
            room_id: order.room_id.to_string(),
            sender: order.sender.to_string(),
            status: order.status.as_str(),
            created_at: order.created_at.as_millis(),
            rejection: order.rejection.as_ref().map(stored::encode).transpose()?,
            body: stored::encode_without(order, ORDER_COLUMNS)?,
        })
    }

    /// Replaces the stored order if it exists and its status is `expected` (any status
    /// without `expected`); returns whether it did. The driver asks the server for matched
    /// rather than changed rows, so replacing an order by an identical one counts.
    /// Replaces the stored order as a commit applies it, if it still awaits its room
    /// (`GiftOrder::awaits_room`: PENDING, or DEBITED with no refusal recorded):
    /// [`Error::NotFound`] when it is not stored, [`Error::OrderSettled`] when another drive
    /// settled it. Only the order's own room applies it: an order of another room is not
    /// found. The commit holds the room's cell row, and the update locks the order's.
    pub(crate) async fn replace_applied(&self, conn: &mut MySqlConnection) -> Result<(), TxError> {
        let updated = sqlx::query(
            "UPDATE gift_orders
             SET room_id = ?, sender = ?, status = ?, created_at = ?, body = ?, rejection = ?
             WHERE sender = ? AND order_id = ? AND room_id = ?
               AND (status = 'PENDING' OR (status = 'DEBITED' AND rejection IS NULL))",
        )
        .bind(&self.room_id)
        .bind(&self.sender)
        .bind(self.status)
        .bind(self.created_at)
        .bind(&self.body)
        .bind(&self.rejection)
        .bind(&self.sender)
        .bind(&self.order_id)
        .bind(&self.room_id)
        .execute(&mut *conn)
        .await?;
        if updated.rows_affected() > 0 {
            return Ok(());
        }
        match stored_status(conn, &self.sender, &self.order_id, Some(&self.room_id)).await? {
            Some(_) => Err(Error::OrderSettled(
                OrderId::new(self.order_id.as_str()).map_err(Error::corrupt)?,
            )
            .into()),
            None => Err(Error::NotFound(format!("order {}", self.order_id)).into()),
        }
    }

    pub(crate) async fn replace(
        &self,
        conn: &mut MySqlConnection,
        expected: Option<&str>,
    ) -> Result<bool, TxError> {
        let updated = sqlx::query(
            "UPDATE gift_orders
             SET room_id = ?, sender = ?, status = ?, created_at = ?, body = ?, rejection = ?
             WHERE sender = ? AND order_id = ? AND (? IS NULL OR status = ?)",
        )
        .bind(&self.room_id)
        .bind(&self.sender)
        .bind(self.status)
        .bind(self.created_at)
        .bind(&self.body)
        .bind(&self.rejection)
        .bind(&self.sender)
        .bind(&self.order_id)
        .bind(expected)
        .bind(expected)
        .execute(&mut *conn)
        .await?;
        Ok(updated.rows_affected() > 0)
    }
}

async fn stored_status(
    conn: &mut MySqlConnection,
    sender: &str,
    order_id: &str,
    room: Option<&str>,
) -> Result<Option<String>, TxError> {
    Ok(sqlx::query_scalar(
        "SELECT status FROM gift_orders
         WHERE sender = ? AND order_id = ? AND (? IS NULL OR room_id = ?)",
    )
    .bind(sender)
    .bind(order_id)
    .bind(room)
    .bind(room)
    .fetch_optional(&mut *conn)
    .await?)
}

async fn create_or_get_once(
    store: &MySqlStore,
    row: &OrderRow,
    order: &GiftOrder,
) -> Result<(GiftOrder, bool), TxError> {
    let mut conn = store.pool.acquire().await?;
    // A plain insert, and the duplicate key error when the id is taken: with the found-rows
    // flag the driver sets, an upsert's affected rows cannot tell an insert from a no-op.
    let inserted = sqlx::query(
        "INSERT INTO gift_orders (order_id, room_id, sender, status, created_at, body, rejection)
         VALUES (?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&row.order_id)
    .bind(&row.room_id)
    .bind(&row.sender)
    .bind(row.status)
    .bind(row.created_at)
    .bind(&row.body)
    .bind(&row.rejection)
    .execute(&mut *conn)
    .await;
    match inserted {
        Ok(_) => {
            conn.release();
            return Ok((order.clone(), true));
        }
        Err(error) if is_duplicate_key(&error) => {}
        Err(error) => return Err(error.into()),
    }
    let stored = sqlx::query(SELECT_ORDER)
        .bind(&row.sender)
        .bind(&row.order_id)
        .fetch_optional(&mut *conn)
        .await?;
    let stored =
        stored.ok_or_else(|| Error::corrupt(format!("order {} vanished", row.order_id)))?;
    Ok((order_row(&stored)?, false))
}

async fn update_once(
    store: &MySqlStore,
    row: &OrderRow,
    expected: OrderStatus,
) -> Result<(), TxError> {
    let mut conn = store.pool.acquire().await?;
    if row.replace(&mut conn, Some(expected.as_str())).await? {
        conn.release();
        return Ok(());
    }
    Err(
        match stored_status(&mut conn, &row.sender, &row.order_id, None).await? {
            None => Error::NotFound(format!("order {}", row.order_id)),
            Some(status) => Error::Conflict(format!(
                "order {} is {status}, not {}",
                row.order_id,
                expected.as_str()
            )),
        }
        .into(),
    )
}

#[async_trait]
impl GiftOrders for MySqlStore {
    async fn create_or_get(&self, order: &GiftOrder) -> Result<(GiftOrder, bool)> {
        let row = OrderRow::new(order)?;
        self.retrying("create_order", || create_or_get_once(self, &row, order))
            .await
    }

    async fn get(&self, sender: &UserId, order_id: &OrderId) -> Result<Option<GiftOrder>> {
        let row = self
            .retrying("get_order", || async move {
                Ok(sqlx::query(SELECT_ORDER)
                    .bind(sender.as_str())
                    .bind(order_id.as_str())
                    .fetch_optional(&self.pool)
                    .await?)
            })
            .await?;
        row.as_ref().map(order_row).transpose()
    }

    async fn update(&self, order: &GiftOrder, expected: OrderStatus) -> Result<()> {
        let row = OrderRow::new(order)?;
        self.retrying("update_order", || update_once(self, &row, expected))
            .await
    }

    async fn list_unfinished(
        &self,
        before: Timestamp,
        after: Option<OrderCursor>,
        limit: u32,
    ) -> Result<Vec<GiftOrder>> {
        // Without a cursor, start before every order: ids are never empty. `pending_at` is
        // the creation time of an unfinished order and NULL for a finished one (migration
        // 0003), so its index holds the unfinished orders in the order asked for. The bound
        // `pending_at >= ?` starts the index range at the cursor's time (MariaDB does not
        // turn the row-value comparison into a range); the comparison skips the rest of that
        // time up to the cursor.
        let (after_at, after_id, after_sender) =
            after.map_or((i64::MIN, String::new(), String::new()), |cursor| {
                (
                    cursor.created_at.as_millis(),
                    cursor.order_id.to_string(),
                    cursor.sender.to_string(),
                )
            });
        let (after_id, after_sender) = (after_id.as_str(), after_sender.as_str());
        let rows = self
            .retrying("list_unfinished_orders", || async move {
                Ok(sqlx::query(
                    "SELECT order_id, room_id, sender, status, created_at, rejection, body
                     FROM gift_orders
                     WHERE pending_at >= ? AND pending_at < ?
                       AND (pending_at, order_id, sender) > (?, ?, ?)
                     ORDER BY pending_at, order_id, sender LIMIT ?",
                )
                .bind(after_at)
                .bind(before.as_millis())
                .bind(after_at)
                .bind(after_id)
                .bind(after_sender)
                .bind(i64::from(limit))
                .fetch_all(&self.pool)
                .await?)
            })
            .await?;
        rows.iter().map(order_row).collect()
    }
}
