//! [`RoomDirectory`]: short ids (unique both ways) and the room summaries that commits write,
//! listed hottest first and scanned open room by open room.

use async_trait::async_trait;
use room_app::ports::{MAX_OPEN_SCAN, OpenRoom, RoomDirectory, RoomSummary, check_summaries_read};
use room_domain::{RoomId, Timestamp};
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
    region: String,
    cover_url: Option<String>,
    seats_taken: i64,
    created_at: i64,
    recent_heat_milli: i64,
    recent_heat_at: i64,
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
            region: summary.region.clone(),
            cover_url: summary.cover_url.clone(),
            seats_taken: i64::from(summary.seats_taken),
            created_at: summary.created_at.as_millis(),
            recent_heat_milli: summary.recent_heat_milli,
            recent_heat_at: summary.recent_heat_at.as_millis(),
        })
    }
}

impl SummaryRow {
    /// Writes the summary over the room's previous one. Runs inside a commit.
    pub(crate) fn upsert(&self, conn: &Connection) -> Result<()> {
        conn.prepare_cached(
            "INSERT INTO room_summaries (room_id, owner, name, open, heat, online, locked, version,
                 region, cover_url, seats_taken, created_at, recent_heat_milli, recent_heat_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
             ON CONFLICT (room_id) DO UPDATE SET owner = excluded.owner, name = excluded.name,
                 open = excluded.open, heat = excluded.heat, online = excluded.online,
                 locked = excluded.locked, version = excluded.version,
                 region = excluded.region, cover_url = excluded.cover_url,
                 seats_taken = excluded.seats_taken, created_at = excluded.created_at,
                 recent_heat_milli = excluded.recent_heat_milli,
                 recent_heat_at = excluded.recent_heat_at",
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
                self.version,
                self.region,
                self.cover_url,
                self.seats_taken,
                self.created_at,
                self.recent_heat_milli,
                self.recent_heat_at
            ])
        })
        .map_err(sql)?;
        Ok(())
    }
}

/// The columns [`summary`] reads, as a literal for `concat!`.
macro_rules! summary_columns {
    () => {
        "room_id, owner, name, open, heat, online, locked, version, region, cover_url,
         seats_taken, created_at, recent_heat_milli, recent_heat_at"
    };
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
        region: col(row, "region")?,
        cover_url: col(row, "cover_url")?,
        seats_taken: u32_col(row, "seats_taken")?,
        created_at: Timestamp(col(row, "created_at")?),
        recent_heat_milli: col(row, "recent_heat_milli")?,
        recent_heat_at: Timestamp(col(row, "recent_heat_at")?),
    })
}

/// Open rooms with their short ids, in room id order, after a room id (?1), at most a page
/// (?2): [`RoomDirectory::scan_open`]. The partial index `room_summaries_open_by_id` holds
/// the open rooms only, in this order, so closed rooms cost nothing and the scan stops at the
/// limit; USING leaves `room_id` unqualified, the summary's.
const SCAN_OPEN: &str = concat!(
    "SELECT ",
    summary_columns!(),
    ", short_id
     FROM room_summaries LEFT JOIN room_short_ids USING (room_id)
     WHERE open = 1 AND room_id > ?1
     ORDER BY room_id LIMIT ?2"
);

fn open_room(row: &SqliteRow) -> Result<OpenRoom> {
    let short_id: Option<i64> = col(row, "short_id")?;
    Ok(OpenRoom {
        summary: summary(row)?,
        short_id: short_id.map(|_| u32_col(row, "short_id")).transpose()?,
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
        let row = sqlx::query(concat!(
            "SELECT ",
            summary_columns!(),
            " FROM room_summaries WHERE room_id = ?1"
        ))
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
        let mut select = QueryBuilder::<Sqlite>::new(concat!(
            "SELECT ",
            summary_columns!(),
            " FROM room_summaries WHERE room_id IN ("
        ));
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
        let rows = sqlx::query(concat!(
            "SELECT ",
            summary_columns!(),
            " FROM room_summaries
             WHERE open = 1
               AND (?1 IS NULL OR heat < ?1 OR (heat = ?1 AND room_id > ?2))
             ORDER BY heat DESC, room_id LIMIT ?3"
        ))
        .bind(heat)
        .bind(room_id)
        .bind(i64::from(limit))
        .fetch_all(&self.readers)
        .await
        .map_err(db)?;
        rows.iter().map(summary).collect()
    }

    async fn scan_open(&self, after: Option<RoomId>, limit: u32) -> Result<Vec<OpenRoom>> {
        // Room ids are never empty, so "after the empty id" is from the first.
        let rows = sqlx::query(SCAN_OPEN)
            .bind(after.as_ref().map_or("", RoomId::as_str))
            .bind(i64::from(limit.min(MAX_OPEN_SCAN)))
            .fetch_all(&self.readers)
            .await
            .map_err(db)?;
        rows.iter().map(open_room).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SqliteSettings;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_scan_of_open_rooms_reads_them_through_their_index() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("room.db");
        let url = format!("sqlite://{}", path.display());
        let store = SqliteStore::open(&SqliteSettings::new(url)).await.unwrap();
        store.close().await;
        // Many rooms, most of them closed, some with short ids, and the statistics a
        // long-running database has, so that the planner weighs the indexes against real
        // tables.
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 3999)
             INSERT INTO room_summaries (room_id, owner, name, open, heat, online, locked, version)
                 SELECT 'room-' || i, 'owner', 'r', i % 20 = 0, i, 0, 0, 1 FROM n;
             INSERT INTO room_short_ids (short_id, room_id)
                 SELECT rowid, room_id FROM room_summaries WHERE rowid % 3 = 0;
             ANALYZE;",
        )
        .unwrap();
        let mut explain = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {SCAN_OPEN}"))
            .unwrap();
        let steps: Vec<String> = explain
            .query_map(params!["", 100], |row| row.get(3))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert!(
            steps.iter().all(|step| !step.starts_with("SCAN")),
            "no table is scanned whole: {steps:#?}"
        );
        assert!(
            steps.iter().all(|step| !step.contains("TEMP B-TREE")),
            "the rows come in index order, unsorted: {steps:#?}"
        );
        assert!(
            steps
                .iter()
                .any(|step| step.contains("room_summaries_open_by_id")),
            "the open rooms' index serves the scan: {steps:#?}"
        );
    }
}
