//! [`RoomDirectory`]: short ids (unique both ways) and the room summaries that commits write,
//! listed hottest first.

use async_trait::async_trait;
use room_app::ports::{RoomDirectory, RoomSummary, check_summaries_read};
use room_domain::RoomId;
use rusqlite::{Connection, OptionalExtension, params};
use sqlx::sqlite::SqliteRow;
use sqlx::{QueryBuilder, Sqlite};

use crate::codec::{col, db, id_col, sql, to_i64, u32_col, u64_col};
use crate::{Result, SqliteStore};

/// A summary encoded for its table.
pub(crate) struct SummaryRow {
    room_id: String,
    owner: String,
    name: String,
    open: bool,
    heat: i64,
    online: i64,
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
            online: i64::from(summary.online),
            locked: summary.locked,
            version: to_i64(summary.version, "version")?,
        })
    }
}

impl SummaryRow {
    /// Writes the summary over the room's previous one. Runs inside a commit.
    pub(crate) fn upsert(&self, conn: &Connection) -> Result<()> {
        conn.prepare_cached(
            "INSERT INTO room_summaries (room_id, owner, name, open, heat, online, locked, version)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
             ON CONFLICT (room_id) DO UPDATE SET owner = excluded.owner, name = excluded.name,
                 open = excluded.open, heat = excluded.heat, online = excluded.online,
                 locked = excluded.locked, version = excluded.version",
        )
        .and_then(|mut upsert| {
            upsert.execute(params![
                self.room_id,
                self.owner,
                self.name,
                self.open,
                self.heat,
                self.online,
                self.locked,
                self.version
            ])
        })
        .map_err(sql)?;
        Ok(())
    }
}

fn summary(row: &SqliteRow) -> Result<RoomSummary> {
    Ok(RoomSummary {
        room_id: id_col(row, "room_id")?,
        owner: id_col(row, "owner")?,
        name: col(row, "name")?,
        open: col(row, "open")?,
        heat: col(row, "heat")?,
        online: u32_col(row, "online")?,
        locked: col(row, "locked")?,
        version: u64_col(row, "version")?,
    })
}

fn reserve_short_id(conn: &Connection, room_id: &str, short_id: i64) -> Result<bool> {
    // DO NOTHING covers both unique keys: the short id is taken, or the room has another.
    let inserted = conn
        .prepare_cached(
            "INSERT INTO room_short_ids (short_id, room_id) VALUES (?1, ?2)
             ON CONFLICT DO NOTHING",
        )
        .and_then(|mut insert| insert.execute(params![short_id, room_id]))
        .map_err(sql)?;
    if inserted > 0 {
        return Ok(true);
    }
    let owner: Option<String> = conn
        .prepare_cached("SELECT room_id FROM room_short_ids WHERE short_id = ?1")
        .and_then(|mut select| select.query_row([short_id], |row| row.get(0)).optional())
        .map_err(sql)?;
    Ok(owner.as_deref() == Some(room_id))
}

#[async_trait]
impl RoomDirectory for SqliteStore {
    async fn reserve_short_id(&self, room_id: &RoomId, short_id: u32) -> Result<bool> {
        let room_id = room_id.to_string();
        self.write(move |conn| reserve_short_id(conn, &room_id, i64::from(short_id)))
            .await
    }

    async fn get_short_id(&self, room_id: &RoomId) -> Result<Option<u32>> {
        let row = sqlx::query("SELECT short_id FROM room_short_ids WHERE room_id = ?1")
            .bind(room_id.as_str())
            .fetch_optional(&self.readers)
            .await
            .map_err(db)?;
        row.map(|row| u32_col(&row, "short_id")).transpose()
    }

    async fn get_by_short_id(&self, short_id: u32) -> Result<Option<RoomId>> {
        let row = sqlx::query("SELECT room_id FROM room_short_ids WHERE short_id = ?1")
            .bind(i64::from(short_id))
            .fetch_optional(&self.readers)
            .await
            .map_err(db)?;
        row.map(|row| id_col(&row, "room_id")).transpose()
    }

    async fn get_summary(&self, room_id: &RoomId) -> Result<Option<RoomSummary>> {
        let row = sqlx::query(
            "SELECT room_id, owner, name, open, heat, online, locked, version
             FROM room_summaries WHERE room_id = ?1",
        )
        .bind(room_id.as_str())
        .fetch_optional(&self.readers)
        .await
        .map_err(db)?;
        row.as_ref().map(summary).transpose()
    }

    async fn get_summaries(&self, room_ids: &[RoomId]) -> Result<Vec<RoomSummary>> {
        check_summaries_read(room_ids)?;
        if room_ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut select = QueryBuilder::<Sqlite>::new(
            "SELECT room_id, owner, name, open, heat, online, locked, version
             FROM room_summaries WHERE room_id IN (",
        );
        let mut ids = select.separated(", ");
        for room_id in room_ids {
            ids.push_bind(room_id.as_str());
        }
        select.push(")");
        let rows = select.build().fetch_all(&self.readers).await.map_err(db)?;
        rows.iter().map(summary).collect()
    }

    async fn list_open_by_heat(
        &self,
        cursor: Option<(i64, RoomId)>,
        limit: u32,
    ) -> Result<Vec<RoomSummary>> {
        // Hottest first, ties by room id: "after the cursor" is cooler, or as hot with a
        // greater id. Without a cursor, a heat above every heat and no id stand in for it.
        let (heat, room_id) = match &cursor {
            Some((heat, room_id)) => (Some(*heat), Some(room_id.as_str())),
            None => (None, None),
        };
        let rows = sqlx::query(
            "SELECT room_id, owner, name, open, heat, online, locked, version
             FROM room_summaries
             WHERE open = 1
               AND (?1 IS NULL OR heat < ?1 OR (heat = ?1 AND room_id > ?2))
             ORDER BY heat DESC, room_id LIMIT ?3",
        )
        .bind(heat)
        .bind(room_id)
        .bind(i64::from(limit))
        .fetch_all(&self.readers)
        .await
        .map_err(db)?;
        rows.iter().map(summary).collect()
    }
}
