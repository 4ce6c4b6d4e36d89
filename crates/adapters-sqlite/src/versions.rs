//! Tables of versions (the billing policy's, the rocket's levels, the leaderboards' reward
//! tables): a row (version, body) per version, never changed once written; the newest is
//! current. A version is inserted by one statement of the single writer only when the newest
//! stored one is the version before it.

use room_app::Error;
use rusqlite::params;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::codec::{col, db, from_json, sql, to_i64, to_json};
use crate::{Result, SqliteStore};

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

    /// Inserts version `?1` with body `?2` if the newest stored version is `?1 - 1`.
    fn put(self) -> &'static str {
        match self {
            Versions::Billing => {
                "INSERT INTO billing_policies (version, body) SELECT ?1, ?2
                 WHERE COALESCE((SELECT MAX(version) FROM billing_policies), 0) = ?1 - 1"
            }
            Versions::Rocket => {
                "INSERT INTO rocket_settings (version, body) SELECT ?1, ?2
                 WHERE COALESCE((SELECT MAX(version) FROM rocket_settings), 0) = ?1 - 1"
            }
            Versions::BoardRewards => {
                "INSERT INTO board_reward_tables (version, body) SELECT ?1, ?2
                 WHERE COALESCE((SELECT MAX(version) FROM board_reward_tables), 0) = ?1 - 1"
            }
        }
    }
}

impl SqliteStore {
    /// The newest version stored in `table`, or `None` before any.
    pub(crate) async fn newest_version<T: DeserializeOwned>(
        &self,
        table: Versions,
    ) -> Result<Option<T>> {
        let row = sqlx::query(table.newest())
            .fetch_optional(&self.readers)
            .await
            .map_err(db)?;
        row.map(|row| from_json(&col::<String>(&row, "body")?, table.what()))
            .transpose()
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
        let inserted = self
            .write(move |conn| {
                let inserted = conn
                    .prepare_cached(table.put())
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
                "{} version {version} does not follow the newest stored version",
                table.what()
            )))
        }
    }
}
