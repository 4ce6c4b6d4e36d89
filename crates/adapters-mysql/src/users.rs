//! [`UserDirectory`]: one row per user in `user_profiles`, each field a nullable column. A
//! patch is one `INSERT ... ON DUPLICATE KEY UPDATE` whose assignments write only the fields
//! the patch changes (the others assign the column to itself), so patches of different fields
//! at once all hold; a batch is one transaction.

use async_trait::async_trait;
use room_app::Error;
use room_app::ports::{
    Change, MAX_PROFILE_BATCH, ProfilePatch, UserDirectory, UserProfile, batch_too_large,
};
use room_domain::UserId;
use sqlx::MySqlConnection;
use sqlx::mysql::MySqlRow;

use crate::codec::{TxError, col, id_col};
use crate::{MySqlStore, Result};

const SELECT: &str =
    "SELECT user_id, nickname, avatar_url, region, country, agency FROM user_profiles";

const SELECT_ONE: &str = "SELECT user_id, nickname, avatar_url, region, country, agency
     FROM user_profiles WHERE user_id = ?";

fn profile(row: &MySqlRow) -> Result<UserProfile> {
    Ok(UserProfile {
        user_id: id_col(row, "user_id")?,
        nickname: col(row, "nickname")?,
        avatar_url: col(row, "avatar_url")?,
        region: col(row, "region")?,
        country: col(row, "country")?,
        agency: col(row, "agency")?,
    })
}

/// Applies `patch` to the row of `user_id`, creating it if absent.
async fn upsert(
    conn: &mut MySqlConnection,
    user_id: &UserId,
    patch: &ProfilePatch,
) -> Result<(), TxError> {
    let fields: [&Change<String>; 5] = [
        &patch.nickname,
        &patch.avatar_url,
        &patch.region,
        &patch.country,
        &patch.agency,
    ];
    let mut query = sqlx::query(
        "INSERT INTO user_profiles (user_id, nickname, avatar_url, region, country, agency)
         VALUES (?, ?, ?, ?, ?, ?)
         ON DUPLICATE KEY UPDATE nickname = IF(?, ?, nickname),
             avatar_url = IF(?, ?, avatar_url), region = IF(?, ?, region),
             country = IF(?, ?, country), agency = IF(?, ?, agency)",
    )
    .bind(user_id.as_str());
    for field in fields {
        query = query.bind(field.value().map(String::as_str));
    }
    for field in fields {
        query = query
            .bind(field.writes())
            .bind(field.value().map(String::as_str));
    }
    query.execute(conn).await?;
    Ok(())
}

#[async_trait]
impl UserDirectory for MySqlStore {
    async fn get_profile(&self, user_id: &UserId) -> Result<Option<UserProfile>> {
        let row = self
            .retrying("get_profile", || async move {
                Ok(sqlx::query(SELECT_ONE)
                    .bind(user_id.as_str())
                    .fetch_optional(&self.pool)
                    .await?)
            })
            .await?;
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
        let ids = &ids;
        let rows = self
            .retrying("get_profiles", || async move {
                let mut select = sqlx::QueryBuilder::new(SELECT);
                select.push(" WHERE user_id IN (");
                let mut list = select.separated(", ");
                for id in ids {
                    list.push_bind(*id);
                }
                select.push(")");
                Ok(select.build().fetch_all(&self.pool).await?)
            })
            .await?;
        let mut profiles = rows.iter().map(profile).collect::<Result<Vec<_>>>()?;
        profiles.sort_by(|a, b| a.user_id.cmp(&b.user_id));
        Ok(profiles)
    }

    async fn upsert_profile(&self, user_id: &UserId, patch: &ProfilePatch) -> Result<UserProfile> {
        let row = self
            .retrying("upsert_profile", || async move {
                let mut tx = self.pool.begin().await?;
                upsert(&mut tx, user_id, patch).await?;
                let row = sqlx::query(SELECT_ONE)
                    .bind(user_id.as_str())
                    .fetch_optional(&mut *tx)
                    .await?;
                tx.commit().await?;
                Ok(row)
            })
            .await?;
        match row {
            Some(row) => profile(&row),
            None => Err(Error::internal(
                "a profile just written cannot be read back",
            )),
        }
    }

    async fn upsert_profiles(&self, patches: &[(UserId, ProfilePatch)]) -> Result<()> {
        if patches.len() > MAX_PROFILE_BATCH {
            return Err(batch_too_large(patches.len()));
        }
        if patches.is_empty() {
            return Ok(());
        }
        self.retrying("upsert_profiles", || async move {
            let mut tx = self.pool.begin().await?;
            for (user_id, patch) in patches {
                upsert(&mut tx, user_id, patch).await?;
            }
            tx.commit().await?;
            Ok(())
        })
        .await
    }
}
