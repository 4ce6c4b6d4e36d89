//! [`RoomPins`], with the semantics of the SQLite store's: one row per pin in `room_pins`,
//! keyed by pin id. A create is a plain `INSERT`, so a taken id fails on the primary key and
//! writes nothing; the live pins are read through the index on `ends_at`, which holds only a
//! few rows past any instant.

use async_trait::async_trait;
use room_app::Error;
use room_app::ports::{MAX_LIVE_PINS, MAX_PIN_PAGE, PinnedList, RoomPin, RoomPins};
use room_domain::Timestamp;
use sqlx::mysql::MySqlRow;

use crate::codec::{col, id_col};
use crate::{MySqlStore, Result};

/// A pin from its row; a list or room id that does not decode is [`Error::Corrupt`].
fn pin(row: &MySqlRow) -> Result<RoomPin> {
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
        position: col(row, "position")?,
        starts_at: Timestamp(col(row, "starts_at")?),
        ends_at: Timestamp(col(row, "ends_at")?),
        created_at: Timestamp(col(row, "created_at")?),
        pin_id,
    })
}

#[async_trait]
impl RoomPins for MySqlStore {
    async fn create(&self, pin: &RoomPin) -> Result<()> {
        self.retrying("create_room_pin", || async move {
            sqlx::query(
                "INSERT INTO room_pins
                     (pin_id, room_id, tab, scope, position, starts_at, ends_at, created_at)
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(pin.pin_id.as_str())
            .bind(pin.room_id.as_str())
            .bind(pin.list.tab())
            .bind(pin.list.scope())
            .bind(pin.position)
            .bind(pin.starts_at.as_millis())
            .bind(pin.ends_at.as_millis())
            .bind(pin.created_at.as_millis())
            .execute(&self.pool)
            .await?;
            Ok(())
        })
        .await
    }

    async fn get(&self, pin_id: &str) -> Result<Option<RoomPin>> {
        let row = self
            .retrying("get_room_pin", || async move {
                Ok(sqlx::query(
                    "SELECT pin_id, room_id, tab, scope, position, starts_at, ends_at, created_at
                     FROM room_pins WHERE pin_id = ?",
                )
                .bind(pin_id)
                .fetch_optional(&self.pool)
                .await?)
            })
            .await?;
        row.as_ref().map(pin).transpose()
    }

    async fn delete(&self, pin_id: &str) -> Result<bool> {
        self.retrying("delete_room_pin", || async move {
            let deleted = sqlx::query("DELETE FROM room_pins WHERE pin_id = ?")
                .bind(pin_id)
                .execute(&self.pool)
                .await?;
            Ok(deleted.rows_affected() > 0)
        })
        .await
    }

    async fn list(&self, after: Option<String>, limit: u32) -> Result<Vec<RoomPin>> {
        let limit = i64::from(limit.min(MAX_PIN_PAGE));
        let after = after.as_deref();
        let rows = self
            .retrying("list_room_pins", || async move {
                Ok(match after {
                    Some(after) => {
                        sqlx::query(
                            "SELECT pin_id, room_id, tab, scope, position, starts_at, ends_at,
                                    created_at
                             FROM room_pins WHERE pin_id > ? ORDER BY pin_id LIMIT ?",
                        )
                        .bind(after)
                        .bind(limit)
                        .fetch_all(&self.pool)
                        .await?
                    }
                    None => {
                        sqlx::query(
                            "SELECT pin_id, room_id, tab, scope, position, starts_at, ends_at,
                                    created_at
                             FROM room_pins ORDER BY pin_id LIMIT ?",
                        )
                        .bind(limit)
                        .fetch_all(&self.pool)
                        .await?
                    }
                })
            })
            .await?;
        rows.iter().map(pin).collect()
    }

    async fn list_live(&self, now: Timestamp) -> Result<Vec<RoomPin>> {
        let rows = self
            .retrying("list_live_room_pins", || async move {
                Ok(sqlx::query(
                    "SELECT pin_id, room_id, tab, scope, position, starts_at, ends_at, created_at
                     FROM room_pins WHERE ends_at > ? ORDER BY starts_at, pin_id LIMIT ?",
                )
                .bind(now.as_millis())
                .bind(i64::from(MAX_LIVE_PINS))
                .fetch_all(&self.pool)
                .await?)
            })
            .await?;
        rows.iter().map(pin).collect()
    }
}

#[cfg(test)]
mod tests {
    use room_domain::RoomId;
    use room_testkit::mysql as test_server;

    use super::*;
    use crate::MySqlSettings;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_row_of_no_list_is_corrupt() {
        let Some(server) = test_server::MySqlServer::from_env("pins::corrupt_rows").await else {
            return;
        };
        let database = server.database().await;
        let settings = MySqlSettings::new(database.url.clone());
        MySqlStore::migrate(&settings).await.unwrap();
        let store = MySqlStore::open(&settings).await.unwrap();
        let made = RoomPin {
            pin_id: "pin-1".to_owned(),
            room_id: RoomId::new("room-1").unwrap(),
            list: PinnedList::Hot,
            position: 3,
            starts_at: Timestamp(10),
            ends_at: Timestamp(20),
            created_at: Timestamp(5),
        };
        store.create(&made).await.unwrap();
        assert_eq!(store.get("pin-1").await.unwrap(), Some(made));
        for (tab, scope) in [("hot", "mena"), ("region", ""), ("top", "")] {
            sqlx::query("UPDATE room_pins SET tab = ?, scope = ? WHERE pin_id = 'pin-1'")
                .bind(tab)
                .bind(scope)
                .execute(&store.pool)
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
