//! [`RoomPins`]: one row per pin in `room_pins`, keyed by pin id. A create is a plain
//! `INSERT`, so a taken id fails on the primary key and writes nothing; the live pins are read
//! through the index on `ends_at`, which holds only a few rows past any instant.

use async_trait::async_trait;
use room_app::Error;
use room_app::ports::{MAX_LIVE_PINS, MAX_PIN_PAGE, PinnedList, RoomPin, RoomPins};
use room_domain::Timestamp;
use sqlx::sqlite::SqliteRow;

use crate::codec::{col, db, id_col, u32_col};
use crate::{Result, SqliteStore};

/// A pin from its row; a list or room id that does not decode is [`Error::Corrupt`].
fn pin(row: &SqliteRow) -> Result<RoomPin> {
    let pin_id: String = col(row, "pin_id")?;
    let tab: String = col(row, "tab")?;
    let scope: String = col(row, "scope")?;
    let list = PinnedList::from_parts(&tab, &scope).ok_or_else(|| {
        Error::corrupt(format!(
            "stored pin {pin_id}: no list of tab {tab:?} and scope {scope:?}"
        ))
    })?;
    Ok(RoomPin {
        room_id: id_col(row, "room_id")?,
        list,
        position: u32_col(row, "position")?,
        starts_at: Timestamp(col(row, "starts_at")?),
        ends_at: Timestamp(col(row, "ends_at")?),
        created_at: Timestamp(col(row, "created_at")?),
        pin_id,
    })
}

#[async_trait]
impl RoomPins for SqliteStore {
    async fn create(&self, pin: &RoomPin) -> Result<()> {
        self.execute(
            "INSERT INTO room_pins
                 (pin_id, room_id, tab, scope, position, starts_at, ends_at, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            (
                pin.pin_id.clone(),
                pin.room_id.to_string(),
                pin.list.tab(),
                pin.list.scope().to_owned(),
                pin.position,
                pin.starts_at.as_millis(),
                pin.ends_at.as_millis(),
                pin.created_at.as_millis(),
            ),
        )
        .await?;
        Ok(())
    }

    async fn get(&self, pin_id: &str) -> Result<Option<RoomPin>> {
        let row = sqlx::query(
            "SELECT pin_id, room_id, tab, scope, position, starts_at, ends_at, created_at
             FROM room_pins WHERE pin_id = ?1",
        )
        .bind(pin_id)
        .fetch_optional(&self.readers)
        .await
        .map_err(db)?;
        row.as_ref().map(pin).transpose()
    }

    async fn delete(&self, pin_id: &str) -> Result<bool> {
        let deleted = self
            .execute(
                "DELETE FROM room_pins WHERE pin_id = ?1",
                (pin_id.to_owned(),),
            )
            .await?;
        Ok(deleted > 0)
    }

    async fn list(&self, after: Option<String>, limit: u32) -> Result<Vec<RoomPin>> {
        let limit = i64::from(limit.min(MAX_PIN_PAGE));
        let rows =
            match after {
                Some(after) => sqlx::query(
                    "SELECT pin_id, room_id, tab, scope, position, starts_at, ends_at, created_at
                     FROM room_pins WHERE pin_id > ?1 ORDER BY pin_id LIMIT ?2",
                )
                .bind(after)
                .bind(limit)
                .fetch_all(&self.readers)
                .await,
                None => sqlx::query(
                    "SELECT pin_id, room_id, tab, scope, position, starts_at, ends_at, created_at
                     FROM room_pins ORDER BY pin_id LIMIT ?1",
                )
                .bind(limit)
                .fetch_all(&self.readers)
                .await,
            }
            .map_err(db)?;
        rows.iter().map(pin).collect()
    }

    async fn list_live(&self, now: Timestamp) -> Result<Vec<RoomPin>> {
        let rows = sqlx::query(
            "SELECT pin_id, room_id, tab, scope, position, starts_at, ends_at, created_at
             FROM room_pins WHERE ends_at > ?1 ORDER BY starts_at, pin_id LIMIT ?2",
        )
        .bind(now.as_millis())
        .bind(i64::from(MAX_LIVE_PINS))
        .fetch_all(&self.readers)
        .await
        .map_err(db)?;
        rows.iter().map(pin).collect()
    }
}

#[cfg(test)]
mod tests {
    use room_app::ports::{PinnedList, RoomPin, RoomPins};
    use room_domain::{RoomId, Timestamp};

    use crate::{Error, SqliteSettings, SqliteStore};

    #[tokio::test]
    async fn a_row_of_no_list_is_corrupt() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("room.db").display());
        let store = SqliteStore::open(&SqliteSettings::new(url)).await.unwrap();
        let pin = RoomPin {
            pin_id: "pin-1".to_owned(),
            room_id: RoomId::new("room-1").unwrap(),
            list: PinnedList::Hot,
            position: 3,
            starts_at: Timestamp(10),
            ends_at: Timestamp(20),
            created_at: Timestamp(5),
        };
        store.create(&pin).await.unwrap();
        assert_eq!(store.get("pin-1").await.unwrap(), Some(pin));
        for (tab, scope) in [("hot", "mena"), ("region", ""), ("top", "")] {
            store
                .execute(
                    "UPDATE room_pins SET tab = ?1, scope = ?2 WHERE pin_id = 'pin-1'",
                    (tab, scope),
                )
                .await
                .unwrap();
            let read = store.get("pin-1").await;
            assert!(
                matches!(read, Err(Error::Corrupt(_))),
                "{tab}/{scope}: {read:?}"
            );
            let live = store.list_live(Timestamp(0)).await;
            assert!(
                matches!(live, Err(Error::Corrupt(_))),
                "{tab}/{scope}: {live:?}"
            );
        }
    }
}
