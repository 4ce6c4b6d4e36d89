//! Tables of versions (the billing policy's, the rocket's levels, the leaderboards' reward
//! tables): a row (version, body) per version, never changed once written; the newest is
//! current. A version is inserted by one `INSERT ... SELECT` only when the newest stored
//! version is the one before it, and the primary key refuses a second row of one version: of
//! two nodes that put one version at once, one wins.

use room_app::Error;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::codec::{TxError, from_json, is_duplicate_key, to_i64, to_json};
use crate::{MySqlStore, Result};

/// Which table of versions.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Versions {
    /// `billing_policies` (migration 0040).
    Billing,
    /// `rocket_settings` (migration 0121).
    Rocket,
    /// `board_reward_tables` (migration 0131).
    BoardRewards,
}

impl Versions {
    fn what(self) -> &'static str {
        match self {
            Versions::Billing => "billing policy",
            Versions::Rocket => "rocket settings",
            Versions::BoardRewards => "board reward tables",
        }
    }

    fn newest(self) -> &'static str {
        match self {
            Versions::Billing => "SELECT body FROM billing_policies ORDER BY version DESC LIMIT 1",
            Versions::Rocket => "SELECT body FROM rocket_settings ORDER BY version DESC LIMIT 1",
            Versions::BoardRewards => {
                "SELECT body FROM board_reward_tables ORDER BY version DESC LIMIT 1"
            }
        }
    }

    /// Inserts version `?` with body `?` if the newest stored version is the third `?`.
    fn put(self) -> &'static str {
        match self {
            Versions::Billing => {
                "INSERT INTO billing_policies (version, body) SELECT ?, ? FROM DUAL
                 WHERE (SELECT COALESCE(MAX(version), 0) FROM billing_policies) = ?"
            }
            Versions::Rocket => {
                "INSERT INTO rocket_settings (version, body) SELECT ?, ? FROM DUAL
                 WHERE (SELECT COALESCE(MAX(version), 0) FROM rocket_settings) = ?"
            }
            Versions::BoardRewards => {
                "INSERT INTO board_reward_tables (version, body) SELECT ?, ? FROM DUAL
                 WHERE (SELECT COALESCE(MAX(version), 0) FROM board_reward_tables) = ?"
            }
        }
    }
}

impl MySqlStore {
    /// The newest version stored in `table`, or `None` before any.
    pub(crate) async fn newest_version<T: DeserializeOwned>(
        &self,
        table: Versions,
    ) -> Result<Option<T>> {
        let body: Option<String> = self
            .retrying("newest_version", || async move {
                Ok(sqlx::query_scalar::<_, String>(table.newest())
                    .fetch_optional(&self.pool)
                    .await?)
            })
            .await?;
        body.map(|body| from_json(&body, table.what())).transpose()
    }

    /// Stores `value` as `version` of `table` if the newest stored version is the one before
    /// (none, for version 1); [`Error::Conflict`] otherwise, [`Error::Invalid`] for version 0.
    pub(crate) async fn put_version<T: Serialize>(
        &self,
        table: Versions,
        version: u64,
        value: &T,
    ) -> Result<()> {
        if version == 0 {
            return Err(Error::Invalid(format!("{} version 0", table.what())));
        }
        let version = to_i64(version, table.what())?;
        let body = to_json(value)?;
        let body = body.as_str();
        let inserted = self
            .retrying("put_version", || async move {
                let inserted = sqlx::query(table.put())
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
                "{} version {version} does not follow the newest stored version",
                table.what()
            )))
        }
    }
}
