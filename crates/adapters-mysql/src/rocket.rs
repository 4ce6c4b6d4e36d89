//! [`RocketSettingsStore`]: a version is one row, inserted by one `INSERT ... SELECT` only
//! when the newest stored version is the one before it; the primary key refuses a second row
//! of one version, so of two nodes that put one version at once, one wins (migration 0121).

use async_trait::async_trait;
use room_app::Error;
use room_app::ports::RocketSettingsStore;
use room_domain::RocketSettings;

use crate::codec::{TxError, from_json, is_duplicate_key, to_i64, to_json};
use crate::{MySqlStore, Result};

#[async_trait]
impl RocketSettingsStore for MySqlStore {
    async fn current_rocket(&self) -> Result<Option<RocketSettings>> {
        let body: Option<String> = self
            .retrying("current_rocket", || async move {
                Ok(sqlx::query_scalar::<_, String>(
                    "SELECT body FROM rocket_settings ORDER BY version DESC LIMIT 1",
                )
                .fetch_optional(&self.pool)
                .await?)
            })
            .await?;
        body.map(|body| from_json(&body, "rocket settings"))
            .transpose()
    }

    async fn put_rocket(&self, settings: &RocketSettings) -> Result<()> {
        if settings.version == 0 {
            return Err(Error::Invalid("rocket settings version 0".into()));
        }
        let version = to_i64(settings.version, "rocket settings version")?;
        let body = to_json(settings)?;
        let body = body.as_str();
        let inserted = self
            .retrying("put_rocket", || async move {
                let inserted = sqlx::query(
                    "INSERT INTO rocket_settings (version, body)
                     SELECT ?, ? FROM DUAL
                     WHERE (SELECT COALESCE(MAX(version), 0) FROM rocket_settings) = ?",
                )
                .bind(version)
                .bind(body)
                .bind(version - 1)
                .execute(&self.pool)
                .await;
                match inserted {
                    Ok(done) => Ok(done.rows_affected() > 0),
                    Err(error) if is_duplicate_key(&error) => Ok(false),
                    Err(error) => Err(TxError::from(error)),
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
