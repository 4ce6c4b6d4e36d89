//! [`RocketSettingsStore`]: a version is one row, inserted by one statement of the single
//! writer only when the newest stored version is the one before it (migration 0121).

use async_trait::async_trait;
use room_app::Error;
use room_app::ports::RocketSettingsStore;
use room_domain::RocketSettings;
use rusqlite::params;

use crate::codec::{col, db, from_json, sql, to_i64, to_json};
use crate::{Result, SqliteStore};

#[async_trait]
impl RocketSettingsStore for SqliteStore {
    async fn current_rocket(&self) -> Result<Option<RocketSettings>> {
        let row = sqlx::query("SELECT body FROM rocket_settings ORDER BY version DESC LIMIT 1")
            .fetch_optional(&self.readers)
            .await
            .map_err(db)?;
        row.map(|row| from_json(&col::<String>(&row, "body")?, "rocket settings"))
            .transpose()
    }

    async fn put_rocket(&self, settings: &RocketSettings) -> Result<()> {
        if settings.version == 0 {
            return Err(Error::Invalid("rocket settings version 0".into()));
        }
        let version = to_i64(settings.version, "rocket settings version")?;
        let body = to_json(settings)?;
        let inserted = self
            .write(move |conn| {
                let inserted = conn
                    .prepare_cached(
                        "INSERT INTO rocket_settings (version, body)
                         SELECT ?1, ?2 WHERE
                             COALESCE((SELECT MAX(version) FROM rocket_settings), 0) = ?1 - 1",
                    )
                    .and_then(|mut insert| insert.execute(params![version, body]))
                    .map_err(sql);
                match inserted {
                    Ok(rows) => Ok(rows > 0),
                    Err(Error::AlreadyExists(_)) => Ok(false),
                    Err(other) => Err(other),
                }
            })
            .await?;
        if inserted {
            Ok(())
        } else {
            Err(Error::Conflict(format!(
                "rocket settings version {version} does not follow the newest stored version"
            )))
        }
    }
}
