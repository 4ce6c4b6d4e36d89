//! [`RoomDirectory`]: short ids (unique both ways) and the room summaries that commits write,
//! listed hottest first.

use async_trait::async_trait;
use room_app::ports::{RoomDirectory, RoomSummary, check_summaries_read};
use room_domain::RoomId;
use sqlx::mysql::MySqlRow;
use sqlx::{MySql, MySqlConnection, QueryBuilder};

use crate::codec::{TxError, col, id_col, is_duplicate_key, to_i64, u64_col};
use crate::{MySqlStore, Result};

/// A summary encoded for its table.
pub(crate) struct SummaryRow {
    room_id: String,
    owner: String,
    name: String,
    open: bool,
    heat: i64,
    online: u32,
    locked: bool,
    version: i64,
}

impl SummaryRow {
    pub(crate) fn new(summary: &RoomSummary) -> Result<Self> {
        Ok(SummaryRow {
            room_id: summary.room_id.to_string(),
            owner: summary.owner.to_string(),
            name: summary.name.clone(),
            open: summary.open,
            heat: summary.heat,
            online: summary.online,
            locked: summary.locked,
            version: to_i64(summary.version, "version")?,
        })
    }

    /// Writes the summary over the room's previous one. Runs inside a commit.
    pub(crate) async fn upsert(&self, conn: &mut MySqlConnection) -> Result<(), TxError> {
        sqlx::query(
            "INSERT INTO room_summaries (room_id, owner, name, open, heat, online, locked, version)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?)
             ON DUPLICATE KEY UPDATE owner = ?, name = ?, open = ?, heat = ?, online = ?,
                 locked = ?, version = ?",
        )
        .bind(&self.room_id)
        .bind(&self.owner)
        .bind(&self.name)
        .bind(self.open)
        .bind(self.heat)
        .bind(self.online)
        .bind(self.locked)
        .bind(self.version)
        .bind(&self.owner)
        .bind(&self.name)
        .bind(self.open)
        .bind(self.heat)
        .bind(self.online)
        .bind(self.locked)
        .bind(self.version)
        .execute(&mut *conn)
        .await?;
        Ok(())
    }
}

fn summary(row: &MySqlRow) -> Result<RoomSummary> {
    Ok(RoomSummary {
        room_id: id_col(row, "room_id")?,
        owner: id_col(row, "owner")?,
        name: col(row, "name")?,
        open: col(row, "open")?,
        heat: col(row, "heat")?,
        online: col(row, "online")?,
        locked: col(row, "locked")?,
        version: u64_col(row, "version")?,
    })
}

async fn reserve_once(store: &MySqlStore, room_id: &str, short_id: u32) -> Result<bool, TxError> {
    let mut conn = store.pool.acquire().await?;
    // A duplicate key on either unique key: the short id is taken, or the room has another.
    let inserted = sqlx::query("INSERT INTO room_short_ids (short_id, room_id) VALUES (?, ?)")
        .bind(short_id)
        .bind(room_id)
        .execute(&mut *conn)
        .await;
    match inserted {
        Ok(_) => {
            conn.release();
            return Ok(true);
        }
        Err(error) if is_duplicate_key(&error) => {}
        Err(error) => return Err(error.into()),
    }
    let owner: Option<String> =
        sqlx::query_scalar("SELECT room_id FROM room_short_ids WHERE short_id = ?")
            .bind(short_id)
            .fetch_optional(&mut *conn)
            .await?;
    Ok(owner.as_deref() == Some(room_id))
}

#[async_trait]
impl RoomDirectory for MySqlStore {
    async fn reserve_short_id(&self, room_id: &RoomId, short_id: u32) -> Result<bool> {
        let room_id = room_id.as_str();
        self.retrying("reserve_short_id", || reserve_once(self, room_id, short_id))
            .await
    }

    async fn get_short_id(&self, room_id: &RoomId) -> Result<Option<u32>> {
        let row = self
            .retrying("get_short_id", || async move {
                Ok(
                    sqlx::query("SELECT short_id FROM room_short_ids WHERE room_id = ?")
                        .bind(room_id.as_str())
                        .fetch_optional(&self.pool)
                        .await?,
                )
            })
            .await?;
        row.map(|row| col(&row, "short_id")).transpose()
    }

    async fn get_by_short_id(&self, short_id: u32) -> Result<Option<RoomId>> {
        let row = self
            .retrying("get_by_short_id", || async move {
                Ok(
                    sqlx::query("SELECT room_id FROM room_short_ids WHERE short_id = ?")
                        .bind(short_id)
                        .fetch_optional(&self.pool)
                        .await?,
                )
            })
            .await?;
        row.map(|row| id_col(&row, "room_id")).transpose()
    }

    async fn get_summary(&self, room_id: &RoomId) -> Result<Option<RoomSummary>> {
        let row = self
            .retrying("get_summary", || async move {
                Ok(sqlx::query(
                    "SELECT room_id, owner, name, open, heat, online, locked, version
                     FROM room_summaries WHERE room_id = ?",
                )
                .bind(room_id.as_str())
                .fetch_optional(&self.pool)
                .await?)
            })
            .await?;
        row.as_ref().map(summary).transpose()
    }

    async fn get_summaries(&self, room_ids: &[RoomId]) -> Result<Vec<RoomSummary>> {
        check_summaries_read(room_ids)?;
        if room_ids.is_empty() {
            return Ok(Vec::new());
        }
        let rows = self
            .retrying("get_summaries", || async move {
                let mut select = QueryBuilder::<MySql>::new(
                    "SELECT room_id, owner, name, open, heat, online, locked, version
                     FROM room_summaries WHERE room_id IN (",
                );
                let mut ids = select.separated(", ");
                for room_id in room_ids {
                    ids.push_bind(room_id.as_str());
                }
                select.push(")");
                Ok(select.build().fetch_all(&self.pool).await?)
            })
            .await?;
        rows.iter().map(summary).collect()
    }

    async fn list_open_by_heat(
        &self,
        cursor: Option<(i64, RoomId)>,
        limit: u32,
    ) -> Result<Vec<RoomSummary>> {
        // Hottest first, ties by room id: "after the cursor" is cooler, or as hot with a
        // greater id. Without a cursor there is no condition.
        let (heat, room_id) = match &cursor {
            Some((heat, room_id)) => (Some(*heat), Some(room_id.as_str())),
            None => (None, None),
        };
        let rows = self
            .retrying("list_open_rooms", || async move {
                Ok(sqlx::query(
                    "SELECT room_id, owner, name, open, heat, online, locked, version
                     FROM room_summaries
                     WHERE open = TRUE
                       AND (? IS NULL OR heat < ? OR (heat = ? AND room_id > ?))
                     ORDER BY heat DESC, room_id LIMIT ?",
                )
                .bind(heat)
                .bind(heat)
                .bind(heat)
                .bind(room_id)
                .bind(i64::from(limit))
                .fetch_all(&self.pool)
                .await?)
            })
            .await?;
        rows.iter().map(summary).collect()
    }
}
