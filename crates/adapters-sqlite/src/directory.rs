//! [`RoomDirectory`]: short ids (unique both ways), the room summaries that commits write,
//! listed hottest first and scanned open room by open room, and cover claims (unique by
//! cover).

use async_trait::async_trait;
use room_app::ports::{
    CoverHolder, MAX_OPEN_SCAN, OpenRoom, RoomDirectory, RoomSummary, check_summaries_read,
};
use room_domain::{RoomId, Timestamp};
use rusqlite::{Connection, OptionalExtension, params};
use sqlx::sqlite::SqliteRow;
use sqlx::{QueryBuilder, Sqlite};

use crate::codec::{
    col, db, id_col, sql, stored_id, stored_u32, stored_u64, to_i64, u32_col, u64_col,
};
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

/// A row of [`SCAN_OPEN`], read by the scanner's rusqlite connection: by position, in the
/// order of [`summary_columns`] and then the short id.
fn open_room(row: &rusqlite::Row<'_>) -> Result<OpenRoom> {
    fn id<T>(row: &rusqlite::Row<'_>, index: usize, name: &str) -> Result<T>
    where
        T: for<'a> TryFrom<&'a str, Error = room_domain::IdError>,
    {
        let text = row
            .get_ref(index)
            .and_then(|v| Ok(v.as_str()?))
            .map_err(sql)?;
        stored_id(text, name)
    }
    fn int(row: &rusqlite::Row<'_>, index: usize) -> Result<i64> {
        row.get(index).map_err(sql)
    }
    fn small(row: &rusqlite::Row<'_>, index: usize, name: &str) -> Result<u32> {
        stored_u32(int(row, index)?, name)
    }
    let short_id: Option<i64> = row.get(14).map_err(sql)?;
    Ok(OpenRoom {
        summary: RoomSummary {
            room_id: id(row, 0, "room_id")?,
            owner: id(row, 1, "owner")?,
            name: row.get(2).map_err(sql)?,
            open: row.get(3).map_err(sql)?,
            heat: int(row, 4)?,
            online: small(row, 5, "online")?,
            locked: row.get(6).map_err(sql)?,
            version: stored_u64(int(row, 7)?, "version")?,
            region: row.get(8).map_err(sql)?,
            cover_url: row.get(9).map_err(sql)?,
            seats_taken: small(row, 10, "seats_taken")?,
            created_at: Timestamp(int(row, 11)?),
            recent_heat_milli: int(row, 12)?,
            recent_heat_at: Timestamp(int(row, 13)?),
        },
        short_id: short_id
            .map(|value| stored_u32(value, "short_id"))
            .transpose()?,
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
        let after = after.map_or_else(String::new, |room| room.to_string());
        let limit = i64::from(limit.min(MAX_OPEN_SCAN));
        self.scanner
            .scan(move |conn| {
                let mut scan = conn.prepare_cached(SCAN_OPEN).map_err(sql)?;
                let mut rows = scan.query(params![after, limit]).map_err(sql)?;
                let mut rooms = Vec::new();
                while let Some(row) = rows.next().map_err(sql)? {
                    rooms.push(open_room(row)?);
                }
                Ok(rooms)
            })
            .await
    }

    async fn claim_cover(
        &self,
        cover_url: &str,
        room_id: &RoomId,
        now: Timestamp,
    ) -> Result<CoverHolder> {
        let (cover_url, room_id) = (cover_url.to_owned(), room_id.to_string());
        // One job of the single writer: the insert and the read of the holder see one state.
        self.write(move |conn| {
            conn.prepare_cached(
                "INSERT INTO room_covers (cover_url, room_id, claimed_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (cover_url) DO NOTHING",
            )
            .and_then(|mut insert| insert.execute(params![cover_url, room_id, now.as_millis()]))
            .map_err(sql)?;
            let (holder, claimed_at): (String, i64) = conn
                .prepare_cached("SELECT room_id, claimed_at FROM room_covers WHERE cover_url = ?1")
                .and_then(|mut select| {
                    select.query_row([&cover_url], |row| Ok((row.get(0)?, row.get(1)?)))
                })
                .map_err(sql)?;
            Ok(CoverHolder {
                room_id: stored_id(&holder, "room_id")?,
                claimed_at: Timestamp(claimed_at),
            })
        })
        .await
    }

    async fn take_over_cover(
        &self,
        cover_url: &str,
        from: &CoverHolder,
        to: &RoomId,
        now: Timestamp,
    ) -> Result<bool> {
        let moved = self
            .execute(
                "UPDATE room_covers SET room_id = ?1, claimed_at = ?2
                 WHERE cover_url = ?3 AND room_id = ?4 AND claimed_at = ?5",
                (
                    to.to_string(),
                    now.as_millis(),
                    cover_url.to_owned(),
                    from.room_id.to_string(),
                    from.claimed_at.as_millis(),
                ),
            )
            .await?;
        Ok(moved == 1)
    }

    async fn get_cover(&self, cover_url: &str) -> Result<Option<CoverHolder>> {
        let row = sqlx::query("SELECT room_id, claimed_at FROM room_covers WHERE cover_url = ?1")
            .bind(cover_url)
            .fetch_optional(&self.readers)
            .await
            .map_err(db)?;
        row.map(|row| {
            Ok(CoverHolder {
                room_id: id_col(&row, "room_id")?,
                claimed_at: Timestamp(col(&row, "claimed_at")?),
            })
        })
        .transpose()
    }

    async fn release_cover(&self, cover_url: &str, claim: &CoverHolder) -> Result<()> {
        self.execute(
            "DELETE FROM room_covers WHERE cover_url = ?1 AND room_id = ?2 AND claimed_at = ?3",
            (
                cover_url.to_owned(),
                claim.room_id.to_string(),
                claim.claimed_at.as_millis(),
            ),
        )
        .await?;
        Ok(())
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
