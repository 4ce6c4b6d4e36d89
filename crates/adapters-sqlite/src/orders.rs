//! [`GiftOrders`]: the gift saga's orders, keyed by sender and order id. The fields that
//! queries read (room, status, creation time, the room's refusal) are columns; the rest of
//! the order is a compact body ([`room_app::stored`]) without them.

use async_trait::async_trait;
use room_app::Error;
use room_app::ports::{GiftOrders, OrderCursor};
use room_app::stored;
use room_domain::{GiftOrder, OrderId, OrderStatus, Timestamp, UserId};
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;
use sqlx::sqlite::SqliteRow;

use crate::codec::{col, db, sql};
use crate::{Result, SqliteStore};

/// Stores a new order, unless its sender stored one with its id.
pub(crate) const CREATE: &str =
    "INSERT INTO gift_orders (order_id, room_id, sender, status, created_at, body, rejection)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (sender, order_id) DO NOTHING";

/// One order, by sender (`?1`) and order id (`?2`), its columns in [`order_from`]'s order.
const SELECT_ORDER: &str =
    "SELECT order_id, room_id, sender, status, created_at, rejection, body FROM gift_orders
     WHERE sender = ?1 AND order_id = ?2";

/// The fields of an order that its row has in columns, left out of its body.
const ORDER_COLUMNS: &[&str] = &[
    "order_id",
    "room_id",
    "sender",
    "status",
    "created_at",
    "rejection",
];

/// Replaces an order that awaits its room, by that room only ([`OrderRow::replace_applied`]).
pub(crate) const REPLACE_APPLIED: &str = "UPDATE gift_orders
     SET room_id = ?1, status = ?3, created_at = ?4, body = ?5, rejection = ?7
     WHERE sender = ?2 AND order_id = ?6 AND room_id = ?1
       AND (status = 'PENDING' OR (status = 'DEBITED' AND rejection IS NULL))";

/// Replaces an order, in the status `?7` if it is not NULL ([`OrderRow::replace`]).
pub(crate) const REPLACE: &str = "UPDATE gift_orders
     SET room_id = ?1, status = ?3, created_at = ?4, body = ?5, rejection = ?8
     WHERE sender = ?2 AND order_id = ?6 AND (?7 IS NULL OR status = ?7)";

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

    /// Replaces the stored order as a commit applies it, if it still awaits its room
    /// (`GiftOrder::awaits_room`: PENDING, or DEBITED with no refusal recorded):
    /// [`Error::NotFound`] when it is not stored, [`Error::OrderSettled`] when another drive
    /// settled it.
    pub(crate) fn replace_applied(&self, conn: &Connection) -> Result<()> {
        let updated = conn
            .prepare_cached(REPLACE_APPLIED)
            .and_then(|mut update| {
                update.execute(params![
                    self.room_id,
                    self.sender,
                    self.status,
                    self.created_at,
                    self.body,
                    self.order_id,
                    self.rejection,
                ])
            })
            .map_err(sql)?;
        if updated > 0 {
            return Ok(());
        }
        let order_id = || OrderId::new(&self.order_id).map_err(Error::corrupt);
        match stored_status(conn, &self.sender, &self.order_id, Some(&self.room_id))? {
            Some(_) => Err(Error::OrderSettled(order_id()?)),
            None => Err(Error::NotFound(format!("order {}", self.order_id))),
        }
    }

    /// Replaces the stored order if it exists and its status is `expected` (any status
    /// without `expected`); returns whether it did.
    pub(crate) fn replace(&self, conn: &Connection, expected: Option<&str>) -> Result<bool> {
        let updated = conn
            .prepare_cached(REPLACE)
            .and_then(|mut update| {
                update.execute(params![
                    self.room_id,
                    self.sender,
                    self.status,
                    self.created_at,
                    self.body,
                    self.order_id,
                    expected,
                    self.rejection
                ])
            })
            .map_err(sql)?;
        Ok(updated > 0)
    }
}

/// An order from its columns and body.
#[allow(clippy::too_many_arguments)]
fn order_from(
    order_id: String,
    room_id: String,
    sender: String,
    status: String,
    created_at: i64,
    rejection: Option<&[u8]>,
    body: &[u8],
) -> Result<GiftOrder> {
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

/// An order from a row of the readers that selected [`SELECT_ORDER`]'s columns.
fn order_row(row: &SqliteRow) -> Result<GiftOrder> {
    order_from(
        col(row, "order_id")?,
        col(row, "room_id")?,
        col(row, "sender")?,
        col(row, "status")?,
        col(row, "created_at")?,
        col(row, "rejection")?,
        col(row, "body")?,
    )
}

/// The stored order's status, if it is stored (for `room`, when one is given).
fn stored_status(
    conn: &Connection,
    sender: &str,
    order_id: &str,
    room: Option<&str>,
) -> Result<Option<String>> {
    conn.prepare_cached(
        "SELECT status FROM gift_orders
         WHERE sender = ?1 AND order_id = ?2 AND (?3 IS NULL OR room_id = ?3)",
    )
    .and_then(|mut select| {
        select
            .query_row(params![sender, order_id, room], |row| row.get(0))
            .optional()
    })
    .map_err(sql)
}

/// The stored order, if it is stored, read by the writer.
fn stored_order(conn: &Connection, sender: &str, order_id: &str) -> Result<Option<GiftOrder>> {
    let columns = conn
        .prepare_cached(SELECT_ORDER)
        .and_then(|mut select| {
            select
                .query_row([sender, order_id], |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, String>(1)?,
                        row.get::<_, String>(2)?,
                        row.get::<_, String>(3)?,
                        row.get::<_, i64>(4)?,
                        row.get::<_, Option<Vec<u8>>>(5)?,
                        row.get::<_, Vec<u8>>(6)?,
                    ))
                })
                .optional()
        })
        .map_err(sql)?;
    columns
        .map(
            |(order_id, room_id, sender, status, created_at, rejection, body)| {
                order_from(
                    order_id,
                    room_id,
                    sender,
                    status,
                    created_at,
                    rejection.as_deref(),
                    &body,
                )
            },
        )
        .transpose()
}

fn create_or_get(conn: &Connection, row: &OrderRow, order: GiftOrder) -> Result<(GiftOrder, bool)> {
    let inserted = conn
        .prepare_cached(CREATE)
        .and_then(|mut insert| {
            insert.execute(params![
                row.order_id,
                row.room_id,
                row.sender,
                row.status,
                row.created_at,
                row.body,
                row.rejection
            ])
        })
        .map_err(sql)?;
    if inserted > 0 {
        return Ok((order, true));
    }
    let stored = stored_order(conn, &row.sender, &row.order_id)?
        .ok_or_else(|| Error::corrupt(format!("order {} vanished", row.order_id)))?;
    Ok((stored, false))
}

fn update(conn: &Connection, row: &OrderRow, expected: OrderStatus) -> Result<()> {
    if row.replace(conn, Some(expected.as_str()))? {
        return Ok(());
    }
    Err(
        match stored_status(conn, &row.sender, &row.order_id, None)? {
            None => Error::NotFound(format!("order {}", row.order_id)),
            Some(status) => Error::Conflict(format!(
                "order {} is {status}, not {}",
                row.order_id,
                expected.as_str()
            )),
        },
    )
}

#[async_trait]
impl GiftOrders for SqliteStore {
    async fn create_or_get(&self, order: &GiftOrder) -> Result<(GiftOrder, bool)> {
        let row = OrderRow::new(order)?;
        let order = order.clone();
        self.write(move |conn| create_or_get(conn, &row, order))
            .await
    }

    async fn get(&self, sender: &UserId, order_id: &OrderId) -> Result<Option<GiftOrder>> {
        let row = sqlx::query(SELECT_ORDER)
            .bind(sender.as_str())
            .bind(order_id.as_str())
            .fetch_optional(&self.readers)
            .await
            .map_err(db)?;
        row.as_ref().map(order_row).transpose()
    }

    async fn update(&self, order: &GiftOrder, expected: OrderStatus) -> Result<()> {
        let row = OrderRow::new(order)?;
        self.write(move |conn| update(conn, &row, expected)).await
    }

    async fn list_unfinished(
        &self,
        before: Timestamp,
        after: Option<OrderCursor>,
        limit: u32,
    ) -> Result<Vec<GiftOrder>> {
        // The status condition is the partial index's, word for word, so the index serves it;
        // the row-value comparison lets the index start right after the cursor. Without a
        // cursor, start before every order: ids are never empty.
        let (after_at, after_id, after_sender) =
            after.map_or((i64::MIN, String::new(), String::new()), |cursor| {
                (
                    cursor.created_at.as_millis(),
                    cursor.order_id.to_string(),
                    cursor.sender.to_string(),
                )
            });
        let rows = sqlx::query(
            "SELECT order_id, room_id, sender, status, created_at, rejection, body FROM gift_orders
             WHERE status <> 'COMPLETED' AND status <> 'FAILED' AND status <> 'COMPENSATED'
               AND created_at < ?1
               AND (created_at, order_id, sender) > (?2, ?3, ?4)
             ORDER BY created_at, order_id, sender LIMIT ?5",
        )
        .bind(before.as_millis())
        .bind(after_at)
        .bind(after_id)
        .bind(after_sender)
        .bind(i64::from(limit))
        .fetch_all(&self.readers)
        .await
        .map_err(db)?;
        rows.iter().map(order_row).collect()
    }
}
