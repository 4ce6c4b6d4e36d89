//! [`UserDirectory`]: one row per user in `user_profiles`, each field a nullable column. A
//! patch is one `INSERT ... ON CONFLICT DO UPDATE` whose `SET` writes only the fields the patch
//! changes, so patches of different fields at once all hold; a batch is one writer job (one
//! savepoint: all of it or none).

use async_trait::async_trait;
use room_app::ports::{
    Change, MAX_PROFILE_BATCH, ProfilePatch, UserDirectory, UserProfile, batch_too_large,
};
use room_domain::UserId;
use rusqlite::{Connection, OptionalExtension, params};
use sqlx::sqlite::SqliteRow;

use crate::codec::{col, db, id_col, sql};
use crate::{Result, SqliteStore};

const UPSERT: &str =
    "INSERT INTO user_profiles (user_id, nickname, avatar_url, region, country, agency)
     VALUES (?1, ?2, ?4, ?6, ?8, ?10)
     ON CONFLICT (user_id) DO UPDATE SET
         nickname = CASE WHEN ?3 THEN excluded.nickname ELSE nickname END,
         avatar_url = CASE WHEN ?5 THEN excluded.avatar_url ELSE avatar_url END,
         region = CASE WHEN ?7 THEN excluded.region ELSE region END,
         country = CASE WHEN ?9 THEN excluded.country ELSE country END,
         agency = CASE WHEN ?11 THEN excluded.agency ELSE agency END";

/// A patch's changes as the statement's parameters: per field, its new value (NULL when it
/// is kept or cleared) and whether it is written.
type Params = (
    String,
    Option<String>,
    bool,
    Option<String>,
    bool,
    Option<String>,
    bool,
    Option<String>,
    bool,
    Option<String>,
    bool,
);

fn change(change: &Change<String>) -> (Option<String>, bool) {
    (change.value().cloned(), change.writes())
}

fn patch_params(user_id: &UserId, patch: &ProfilePatch) -> Params {
    let (nickname, set_nickname) = change(&patch.nickname);
    let (avatar_url, set_avatar_url) = change(&patch.avatar_url);
    let (region, set_region) = change(&patch.region);
    let (country, set_country) = change(&patch.country);
    let (agency, set_agency) = change(&patch.agency);
    (
        user_id.to_string(),
        nickname,
        set_nickname,
        avatar_url,
        set_avatar_url,
        region,
        set_region,
        country,
        set_country,
        agency,
        set_agency,
    )
}

fn upsert(conn: &Connection, p: &Params) -> Result<()> {
    conn.prepare_cached(UPSERT)
        .and_then(|mut upsert| {
            upsert.execute(params![
                p.0, p.1, p.2, p.3, p.4, p.5, p.6, p.7, p.8, p.9, p.10
            ])
        })
        .map_err(sql)?;
    Ok(())
}

fn profile(row: &SqliteRow) -> Result<UserProfile> {
    Ok(UserProfile {
        user_id: id_col(row, "user_id")?,
        nickname: col(row, "nickname")?,
        avatar_url: col(row, "avatar_url")?,
        region: col(row, "region")?,
        country: col(row, "country")?,
        agency: col(row, "agency")?,
    })
}

#[async_trait]
impl UserDirectory for SqliteStore {
    async fn get_profile(&self, user_id: &UserId) -> Result<Option<UserProfile>> {
        let row = sqlx::query(
            "SELECT user_id, nickname, avatar_url, region, country, agency FROM user_profiles
             WHERE user_id = ?1",
        )
        .bind(user_id.as_str())
        .fetch_optional(&self.readers)
        .await
        .map_err(db)?;
        row.as_ref().map(profile).transpose()
    }

    async fn get_profiles(&self, user_ids: &[UserId]) -> Result<Vec<UserProfile>> {
        if user_ids.len() > MAX_PROFILE_BATCH {
            return Err(batch_too_large(user_ids.len()));
        }
        let mut ids: Vec<&str> = user_ids.iter().map(UserId::as_str).collect();
        ids.sort_unstable();
        ids.dedup();
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut select = sqlx::QueryBuilder::new(
            "SELECT user_id, nickname, avatar_url, region, country, agency FROM user_profiles
             WHERE user_id IN (",
        );
        let mut list = select.separated(", ");
        for id in ids {
            list.push_bind(id);
        }
        select.push(")");
        let rows = select.build().fetch_all(&self.readers).await.map_err(db)?;
        let mut profiles = rows.iter().map(profile).collect::<Result<Vec<_>>>()?;
        profiles.sort_by(|a, b| a.user_id.cmp(&b.user_id));
        Ok(profiles)
    }

    async fn upsert_profile(&self, user_id: &UserId, patch: &ProfilePatch) -> Result<UserProfile> {
        let params = patch_params(user_id, patch);
        let user_id = user_id.clone();
        self.write(move |conn| {
            upsert(conn, &params)?;
            let row = conn
                .prepare_cached(
                    "SELECT nickname, avatar_url, region, country, agency FROM user_profiles
                     WHERE user_id = ?1",
                )
                .and_then(|mut select| {
                    select
                        .query_row([user_id.as_str()], |row| {
                            Ok((
                                row.get(0)?,
                                row.get(1)?,
                                row.get(2)?,
                                row.get(3)?,
                                row.get(4)?,
                            ))
                        })
                        .optional()
                })
                .map_err(sql)?;
            let Some((nickname, avatar_url, region, country, agency)) = row else {
                return Err(room_app::Error::internal(
                    "a profile just written cannot be read back",
                ));
            };
            Ok(UserProfile {
                user_id,
                nickname,
                avatar_url,
                region,
                country,
                agency,
            })
        })
        .await
    }

    async fn upsert_profiles(&self, patches: &[(UserId, ProfilePatch)]) -> Result<()> {
        if patches.len() > MAX_PROFILE_BATCH {
            return Err(batch_too_large(patches.len()));
        }
        if patches.is_empty() {
            return Ok(());
        }
        let all: Vec<Params> = patches
            .iter()
            .map(|(user_id, patch)| patch_params(user_id, patch))
            .collect();
        // One job: one savepoint of the writer's transaction, so all of it or none.
        self.write(move |conn| all.iter().try_for_each(|params| upsert(conn, params)))
            .await
    }
}
