//! The schema as an explicit step: [`MySqlStore::migrate`] applies the migrations compiled
//! into this build (`migrations/mysql`, embedded by `sqlx::migrate!`), and
//! [`MySqlStore::open`] refuses a database whose schema is not exactly theirs, as
//! [`SchemaStatus`] describes it, read from sqlx's bookkeeping table `_sqlx_migrations`.
//!
//! The store's methods call down into this module, which connects through
//! [`connect`](crate::connect) and never uses the store itself.
//!
//! [`MySqlStore::migrate`]: crate::MySqlStore::migrate
//! [`MySqlStore::open`]: crate::MySqlStore::open

use crate::pool::Pool;
use room_app::Error;
use sqlx::migrate::{MigrateError, Migrator};
use sqlx::{AssertSqlSafe, MySqlConnection};

use crate::Result;
use crate::codec::db;
use crate::connect::{MySqlSettings, connect};

static MIGRATOR: Migrator = sqlx::migrate!("../../migrations/mysql");

/// The command that applies the migrations, named in the errors of a schema that is behind.
const MIGRATE_COMMAND: &str = "room-api migrate";

/// How long [`MySqlStore::migrate`](crate::MySqlStore::migrate) waits for another migration of the database to end.
const MIGRATE_LOCK_WAIT_SECS: u32 = 600;

/// How a database's schema compares with the migrations compiled into this build, from
/// [`MySqlStore::schema_status`](crate::MySqlStore::schema_status). Migration versions are the numbers that open the files'
/// names in `migrations/mysql` (`0002_wallet.sql` is version 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaStatus {
    /// The version the database is at: the newest migration of this build that is applied,
    /// successfully and unchanged, together with every older one. 0 for an empty database.
    pub applied: i64,
    /// The newest migration version this build knows.
    pub known: i64,
    /// Versions the database records that this build does not know: a newer build migrated
    /// it. Oldest first.
    pub unknown: Vec<i64>,
    /// Versions of this build that the database records as failed part way (a migration
    /// that broke off leaves its row with `success = false`). Oldest first.
    pub failed: Vec<i64>,
    /// Versions of this build that the database records with other contents (another
    /// checksum): their files were edited after they were applied. Oldest first.
    pub modified: Vec<i64>,
}

impl SchemaStatus {
    /// Compares `recorded` rows of `_sqlx_migrations` (version, success, checksum) with
    /// the `known` migrations (version, checksum).
    fn compare(known: &[(i64, &[u8])], recorded: &[(i64, bool, Vec<u8>)]) -> Self {
        let mut status = SchemaStatus {
            applied: 0,
            known: known.iter().map(|(version, _)| *version).max().unwrap_or(0),
            unknown: Vec::new(),
            failed: Vec::new(),
            modified: Vec::new(),
        };
        for (version, success, checksum) in recorded {
            match known.iter().find(|(v, _)| v == version) {
                None => status.unknown.push(*version),
                Some(_) if !success => status.failed.push(*version),
                Some((_, expected)) if expected != checksum => status.modified.push(*version),
                Some(_) => {}
            }
        }
        let mut known_versions: Vec<i64> = known.iter().map(|(version, _)| *version).collect();
        known_versions.sort_unstable();
        for version in known_versions {
            let in_place = recorded
                .iter()
                .any(|(v, success, _)| *v == version && *success)
                && !status.modified.contains(&version);
            if !in_place {
                break;
            }
            status.applied = version;
        }
        for versions in [
            &mut status.unknown,
            &mut status.failed,
            &mut status.modified,
        ] {
            versions.sort_unstable();
        }
        status
    }

    /// Whether a store of this build can run on the database: every migration it knows is
    /// applied, successfully and unchanged, and the database records no other.
    pub fn is_current(&self) -> bool {
        self.problem().is_none()
    }

    /// Why a store of this build cannot run on the database, if it cannot: the message
    /// [`MySqlStore::open`](crate::MySqlStore::open) fails with.
    pub fn problem(&self) -> Option<String> {
        self.damage().or_else(|| {
            (self.applied < self.known).then(|| {
                format!(
                    "the MySQL schema is behind this build: at version {} of {}; run `{MIGRATE_COMMAND}`",
                    self.applied, self.known
                )
            })
        })
    }

    /// What migrating cannot mend: a database ahead of this build, a migration that failed
    /// part way, or one applied with other contents.
    fn damage(&self) -> Option<String> {
        if !self.unknown.is_empty() {
            return Some(format!(
                "the MySQL schema is ahead of this build: the database has migration {} that \
                 this build does not know (it knows versions up to {}); run a build at least \
                 as new as the one that migrated it",
                list(&self.unknown),
                self.known
            ));
        }
        if !self.failed.is_empty() {
            return Some(format!(
                "MySQL schema migration {} failed part way (`_sqlx_migrations.success` is \
                 false): repair the schema by hand and delete that row, then run \
                 `{MIGRATE_COMMAND}`",
                list(&self.failed)
            ));
        }
        if !self.modified.is_empty() {
            return Some(format!(
                "MySQL schema migration {} was applied with other contents than this build's \
                 (its checksum differs): a migration file was edited after it was applied",
                list(&self.modified)
            ));
        }
        None
    }
}

fn list(versions: &[i64]) -> String {
    versions
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Fails with [`Error::Invalid`] when `conn` is on no database (the url names none).
async fn require_database(conn: &mut MySqlConnection) -> Result<()> {
    let database: Option<String> = sqlx::query_scalar("SELECT DATABASE()")
        .fetch_one(&mut *conn)
        .await
        .map_err(db)?;
    match database {
        Some(_) => Ok(()),
        None => Err(Error::Invalid("the MySQL url names no database".into())),
    }
}

/// The schema status of the database `conn` is on.
async fn read_status(conn: &mut MySqlConnection) -> Result<SchemaStatus> {
    require_database(conn).await?;
    let table = &*MIGRATOR.table_name;
    let has_table: bool = sqlx::query_scalar(
        "SELECT COUNT(*) > 0 FROM information_schema.tables
         WHERE table_schema = DATABASE() AND table_name = ?",
    )
    .bind(table)
    .fetch_one(&mut *conn)
    .await
    .map_err(db)?;
    let recorded: Vec<(i64, bool, Vec<u8>)> = if has_table {
        sqlx::query_as(AssertSqlSafe(format!(
            "SELECT version, success, checksum FROM {table} ORDER BY version"
        )))
        .fetch_all(&mut *conn)
        .await
        .map_err(db)?
    } else {
        Vec::new()
    };
    let known: Vec<(i64, &[u8])> = MIGRATOR
        .iter()
        .filter(|m| m.migration_type.is_up_migration())
        .map(|m| (m.version, &*m.checksum))
        .collect();
    Ok(SchemaStatus::compare(&known, &recorded))
}

/// Fails with [`Error::Invalid`] unless the database `pool` is on has exactly this build's
/// schema.
pub(crate) async fn check(pool: &Pool) -> Result<()> {
    let mut conn = pool.acquire().await.map_err(db)?;
    match read_status(&mut conn).await?.problem() {
        Some(problem) => Err(Error::Invalid(problem)),
        None => Ok(()),
    }
}

fn migrate_error(error: MigrateError) -> Error {
    match error {
        MigrateError::Execute(error) => db(error),
        MigrateError::ExecuteMigration(error, version) => Error::internal(format!(
            "MySQL schema migration {version} failed: {error}; the schema may be partly \
             changed: repair it by hand"
        )),
        other => Error::Invalid(format!("migrating the MySQL schema: {other}")),
    }
}

/// Migrates the database of `conn` while holding a named lock of that database on the
/// session, so that several `migrate` at once apply each migration once. The migrator's own
/// lock cannot be relied on: it asks for `GET_LOCK(name, -1)`, whose negative timeout means
/// "wait forever" to MySQL but is an error to MariaDB, which answers NULL at once, and the
/// migrator ignores the answer.
async fn migrate_on(conn: &mut MySqlConnection) -> Result<()> {
    require_database(conn).await?;
    // Lock names hold at most 64 characters, database names as many: hash them.
    let locked: Option<i64> =
        sqlx::query_scalar("SELECT GET_LOCK(SHA1(CONCAT('room-service migrate ', DATABASE())), ?)")
            .bind(MIGRATE_LOCK_WAIT_SECS)
            .fetch_one(&mut *conn)
            .await
            .map_err(db)?;
    match locked {
        Some(1) => {}
        Some(_) => {
            return Err(Error::Unavailable(format!(
                "another migration of this MySQL database has run for over \
                 {MIGRATE_LOCK_WAIT_SECS} s"
            )));
        }
        None => {
            return Err(Error::unavailable(
                "the MySQL server could not take the migration lock",
            ));
        }
    }
    let migrated = async {
        // Under the lock, what another `migrate` did is visible.
        if let Some(damage) = read_status(conn).await?.damage() {
            return Err(Error::Invalid(damage));
        }
        MIGRATOR.run(&mut *conn).await.map_err(migrate_error)
    }
    .await;
    // Closing the connection would release the lock too; this says when.
    let _ = sqlx::query("SELECT RELEASE_LOCK(SHA1(CONCAT('room-service migrate ', DATABASE())))")
        .execute(&mut *conn)
        .await;
    migrated
}

/// Migrates the database in `settings` on a connection of its own: what
/// [`MySqlStore::migrate`](crate::MySqlStore::migrate) does.
pub(crate) async fn migrate(settings: &MySqlSettings) -> Result<()> {
    let pool = connect(settings, 1).await?;
    let migrated = async {
        let mut conn = pool.acquire().await.map_err(db)?;
        migrate_on(&mut conn).await
    }
    .await;
    pool.close().await;
    migrated
}

/// The schema status of the database in `settings`, read on a connection of its own: what
/// [`MySqlStore::schema_status`](crate::MySqlStore::schema_status) answers.
pub(crate) async fn status(settings: &MySqlSettings) -> Result<SchemaStatus> {
    let pool = connect(settings, 1).await?;
    let status = async {
        let mut conn = pool.acquire().await.map_err(db)?;
        read_status(&mut conn).await
    }
    .await;
    pool.close().await;
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: &[u8] = b"one";
    const TWO: &[u8] = b"two";
    const KNOWN: [(i64, &[u8]); 2] = [(1, ONE), (2, TWO)];

    fn row(version: i64, success: bool, checksum: &[u8]) -> (i64, bool, Vec<u8>) {
        (version, success, checksum.to_vec())
    }

    #[test]
    fn an_empty_database_is_behind_at_version_zero() {
        let status = SchemaStatus::compare(&KNOWN, &[]);
        assert_eq!((status.applied, status.known), (0, 2));
        assert!(!status.is_current());
        let problem = status.problem().unwrap();
        assert!(problem.contains("behind"), "{problem}");
        assert!(problem.contains("at version 0 of 2"), "{problem}");
        assert!(problem.contains("run `room-api migrate`"), "{problem}");
    }

    #[test]
    fn a_database_with_every_migration_is_current() {
        let status = SchemaStatus::compare(&KNOWN, &[row(1, true, ONE), row(2, true, TWO)]);
        assert_eq!((status.applied, status.known), (2, 2));
        assert!(status.is_current(), "{:?}", status.problem());
    }

    #[test]
    fn a_missing_newest_or_middle_migration_is_behind() {
        let status = SchemaStatus::compare(&KNOWN, &[row(1, true, ONE)]);
        assert!(status.problem().unwrap().contains("at version 1 of 2"));
        let status = SchemaStatus::compare(&KNOWN, &[row(2, true, TWO)]);
        assert!(status.problem().unwrap().contains("at version 0 of 2"));
    }

    #[test]
    fn an_unknown_failed_or_edited_migration_is_refused_even_by_migrate() {
        let ahead = SchemaStatus::compare(
            &KNOWN,
            &[row(1, true, ONE), row(2, true, TWO), row(3, true, b"three")],
        );
        assert_eq!(ahead.unknown, [3]);
        let problem = ahead.damage().unwrap();
        assert!(
            problem.contains("ahead") && problem.contains('3'),
            "{problem}"
        );

        let failed = SchemaStatus::compare(&KNOWN, &[row(1, true, ONE), row(2, false, TWO)]);
        assert_eq!(
            (failed.failed.as_slice(), failed.applied),
            ([2].as_slice(), 1)
        );
        assert!(failed.damage().unwrap().contains("failed part way"));

        let edited = SchemaStatus::compare(&KNOWN, &[row(1, true, b"old"), row(2, true, TWO)]);
        assert_eq!(
            (edited.modified.as_slice(), edited.applied),
            ([1].as_slice(), 0)
        );
        assert!(edited.damage().unwrap().contains("checksum differs"));
    }
}
