//! [`RoomDirectory`]: short ids (unique both ways), the room summaries that commits write,
//! listed hottest first and scanned open room by open room, and cover claims (unique by
//! cover).

use async_trait::async_trait;
use room_app::ports::{
    CoverHolder, MAX_OPEN_SCAN, OpenRoom, RoomDirectory, RoomSummary, check_summaries_read,
};
use room_domain::{RoomId, Timestamp};
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
    region: String,
    cover_url: Option<String>,
    seats_taken: u32,
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
            online: summary.online,
            locked: summary.locked,
            version: to_i64(summary.version, "version")?,
            region: summary.region.clone(),
            cover_url: summary.cover_url.clone(),
            seats_taken: summary.seats_taken,
            created_at: summary.created_at.as_millis(),
            recent_heat_milli: summary.recent_heat_milli,
            recent_heat_at: summary.recent_heat_at.as_millis(),
        })
    }

    /// Writes the summary over the room's previous one. Runs inside a commit.
    pub(crate) async fn upsert(&self, conn: &mut MySqlConnection) -> Result<(), TxError> {
        sqlx::query(
            "INSERT INTO room_summaries (room_id, owner, name, open, heat, online, locked, version,
                 region, cover_url, seats_taken, created_at, recent_heat_milli, recent_heat_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
             ON DUPLICATE KEY UPDATE owner = ?, name = ?, open = ?, heat = ?, online = ?,
                 locked = ?, version = ?, region = ?, cover_url = ?, seats_taken = ?,
                 created_at = ?, recent_heat_milli = ?, recent_heat_at = ?",
        )
        .bind(&self.room_id)
        .bind(&self.owner)
        .bind(&self.name)
        .bind(self.open)
        .bind(self.heat)
        .bind(self.online)
        .bind(self.locked)
        .bind(self.version)
        .bind(&self.region)
        .bind(&self.cover_url)
        .bind(self.seats_taken)
        .bind(self.created_at)
        .bind(self.recent_heat_milli)
        .bind(self.recent_heat_at)
        .bind(&self.owner)
        .bind(&self.name)
        .bind(self.open)
        .bind(self.heat)
        .bind(self.online)
        .bind(self.locked)
        .bind(self.version)
        .bind(&self.region)
        .bind(&self.cover_url)
        .bind(self.seats_taken)
        .bind(self.created_at)
        .bind(self.recent_heat_milli)
        .bind(self.recent_heat_at)
        .execute(&mut *conn)
        .await?;
        Ok(())
    }
}

/// The columns [`summary`] reads, of `room_summaries AS s`, as a literal for `concat!`.
macro_rules! summary_columns {
    () => {
        "s.room_id, s.owner, s.name, s.open, s.heat, s.online, s.locked, s.version, s.region,
         s.cover_url, s.seats_taken, s.created_at, s.recent_heat_milli, s.recent_heat_at"
    };
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
        region: col(row, "region")?,
        cover_url: col(row, "cover_url")?,
        seats_taken: col(row, "seats_taken")?,
        created_at: Timestamp(col(row, "created_at")?),
        recent_heat_milli: col(row, "recent_heat_milli")?,
        recent_heat_at: Timestamp(col(row, "recent_heat_at")?),
    })
}

/// Open rooms with their short ids, in room id order, after a room id, at most a page:
/// [`RoomDirectory::scan_open`]. The rows come off `room_summaries_open_by_id` (open,
/// room_id) in order, so the scan reads no closed room and stops at the limit; the index hint
/// keeps the planner off the primary key, whose walk would read every closed room.
const SCAN_OPEN: &str = concat!(
    "SELECT ",
    summary_columns!(),
    ", i.short_id
     FROM room_summaries AS s FORCE INDEX (room_summaries_open_by_id)
     LEFT JOIN room_short_ids AS i ON i.room_id = s.room_id
     WHERE s.open = TRUE AND s.room_id > ?
     ORDER BY s.room_id LIMIT ?"
);

fn open_room(row: &MySqlRow) -> Result<OpenRoom> {
    Ok(OpenRoom {
        summary: summary(row)?,
        short_id: col(row, "short_id")?,
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
                Ok(sqlx::query(concat!(
                    "SELECT ",
                    summary_columns!(),
                    " FROM room_summaries AS s WHERE s.room_id = ?"
                ))
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
                let mut select = QueryBuilder::<MySql>::new(concat!(
                    "SELECT ",
                    summary_columns!(),
                    " FROM room_summaries AS s WHERE s.room_id IN ("
                ));
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
                Ok(sqlx::query(concat!(
                    "SELECT ",
                    summary_columns!(),
                    " FROM room_summaries AS s
                     WHERE s.open = TRUE
                       AND (? IS NULL OR s.heat < ? OR (s.heat = ? AND s.room_id > ?))
                     ORDER BY s.heat DESC, s.room_id LIMIT ?"
                ))
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

    async fn scan_open(&self, after: Option<RoomId>, limit: u32) -> Result<Vec<OpenRoom>> {
        // Room ids are never empty, so "after the empty id" is from the first, and the
        // condition stays a plain range.
        let after = after.as_ref().map_or("", RoomId::as_str);
        let limit = limit.min(MAX_OPEN_SCAN);
        let rows = self
            .retrying("scan_open_rooms", || async move {
                Ok(sqlx::query(SCAN_OPEN)
                    .bind(after)
                    .bind(limit)
                    .fetch_all(&self.pool)
                    .await?)
            })
            .await?;
        rows.iter().map(open_room).collect()
    }

    async fn claim_cover(
        &self,
        cover_url: &str,
        room_id: &RoomId,
        now: Timestamp,
    ) -> Result<CoverHolder> {
        self.retrying("claim_cover", || {
            claim_cover_once(self, cover_url, room_id, now)
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
            .retrying("take_over_cover", || async move {
                Ok(sqlx::query(
                    "UPDATE room_covers SET room_id = ?, claimed_at = ?
                     WHERE cover_url = ? AND room_id = ? AND claimed_at = ?",
                )
                .bind(to.as_str())
                .bind(now.as_millis())
                .bind(cover_url.as_bytes())
                .bind(from.room_id.as_str())
                .bind(from.claimed_at.as_millis())
                .execute(&self.pool)
                .await?)
            })
            .await?;
        Ok(moved.rows_affected() == 1)
    }

    async fn get_cover(&self, cover_url: &str) -> Result<Option<CoverHolder>> {
        let row = self
            .retrying("get_cover", || async move {
                Ok(
                    sqlx::query("SELECT room_id, claimed_at FROM room_covers WHERE cover_url = ?")
                        .bind(cover_url.as_bytes())
                        .fetch_optional(&self.pool)
                        .await?,
                )
            })
            .await?;
        row.as_ref().map(cover_holder).transpose()
    }

    async fn release_cover(&self, cover_url: &str, claim: &CoverHolder) -> Result<()> {
        self.retrying("release_cover", || async move {
            Ok(sqlx::query(
                "DELETE FROM room_covers WHERE cover_url = ? AND room_id = ? AND claimed_at = ?",
            )
            .bind(cover_url.as_bytes())
            .bind(claim.room_id.as_str())
            .bind(claim.claimed_at.as_millis())
            .execute(&self.pool)
            .await?)
        })
        .await?;
        Ok(())
    }
}

/// A row of `room_covers` (its `room_id` and `claimed_at`).
fn cover_holder(row: &MySqlRow) -> Result<CoverHolder> {
    Ok(CoverHolder {
        room_id: id_col(row, "room_id")?,
        claimed_at: Timestamp(col(row, "claimed_at")?),
    })
}

/// One try of [`RoomDirectory::claim_cover`]: the insert the cover's key decides (a no-op
/// update when the cover is held), then the holder. A claim let go between the two is
/// claimed again.
async fn claim_cover_once(
    store: &MySqlStore,
    cover_url: &str,
    room_id: &RoomId,
    now: Timestamp,
) -> Result<CoverHolder, TxError> {
    let mut conn = store.pool.acquire().await?;
    for _ in 0..3 {
        sqlx::query(
            "INSERT INTO room_covers (cover_url, room_id, claimed_at) VALUES (?, ?, ?)
             ON DUPLICATE KEY UPDATE cover_url = cover_url",
        )
        .bind(cover_url.as_bytes())
        .bind(room_id.as_str())
        .bind(now.as_millis())
        .execute(&mut *conn)
        .await?;
        let holder = sqlx::query("SELECT room_id, claimed_at FROM room_covers WHERE cover_url = ?")
            .bind(cover_url.as_bytes())
            .fetch_optional(&mut *conn)
            .await?;
        if let Some(row) = holder {
            conn.release();
            return Ok(cover_holder(&row)?);
        }
    }
    Err(TxError::Port(room_app::Error::Unavailable(
        "the cover was let go at each of three claims".into(),
    )))
}

#[cfg(test)]
mod tests {
    use room_testkit::mysql as test_server;
    use sqlx::{AssertSqlSafe, Executor};

    use super::*;
    use crate::MySqlSettings;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_scan_of_open_rooms_reads_them_through_their_index() {
        let Some(server) = test_server::MySqlServer::from_env("directory::scan_plan").await else {
            return;
        };
        let database = server.database().await;
        let settings = MySqlSettings::new(database.url.clone());
        MySqlStore::migrate(&settings).await.unwrap();
        let mut conn = database.connect().await;
        // Many rooms, most of them closed, some with short ids, and the statistics a
        // long-running database has, so that the planner weighs the indexes against real
        // tables.
        let summaries = (0..4_000)
            .map(|i| {
                format!(
                    "('room-{i}', 'owner', 'r', {}, {i}, 0, FALSE, 1)",
                    i % 20 == 0
                )
            })
            .collect::<Vec<_>>()
            .join(", ");
        let short_ids = (0..4_000)
            .step_by(3)
            .map(|i| format!("({i}, 'room-{i}')"))
            .collect::<Vec<_>>()
            .join(", ");
        for statement in [
            format!(
                "INSERT INTO room_summaries (room_id, owner, name, open, heat, online, locked,
                     version)
                 VALUES {summaries}"
            ),
            format!("INSERT INTO room_short_ids (short_id, room_id) VALUES {short_ids}"),
            "ANALYZE TABLE room_summaries, room_short_ids".to_owned(),
        ] {
            conn.execute(AssertSqlSafe(statement)).await.unwrap();
        }
        let plan: String = sqlx::query_scalar(AssertSqlSafe(format!(
            "EXPLAIN FORMAT=JSON {}",
            SCAN_OPEN
                .replacen('?', "'room-100'", 1)
                .replacen('?', "100", 1)
        )))
        .fetch_one(&mut conn)
        .await
        .unwrap();
        assert!(
            plan.contains(r#""key": "room_summaries_open_by_id""#),
            "the open rooms' index serves the scan\n{plan}"
        );
        assert!(
            !plan.contains(r#""access_type": "ALL""#),
            "no table is scanned whole\n{plan}"
        );
        assert!(
            !plan.contains("filesort"),
            "the rows come in index order, unsorted, so the scan stops at its page\n{plan}"
        );
    }
}
