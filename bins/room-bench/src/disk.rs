//! Bytes on disk per gift: what a server's database holds, per table, before and after a run,
//! and the growth divided by the gifts the run completed.
//!
//! SQLite: the database file and its write-ahead log, and the pages each table and index
//! uses, from SQLite's own page statistics (`dbstat`; free pages of the file count for no
//! table). MySQL: `data_length` and `index_length` of each table in `information_schema`,
//! after `ANALYZE TABLE` has brought InnoDB's statistics up to date (whole 16 KiB pages, so
//! a short run's figure is coarse).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use sqlx::{AssertSqlSafe, Connection, MySqlConnection, Row, SqliteConnection};

use crate::report::report;

/// Where a server keeps its data.
#[derive(Debug, Clone)]
pub enum Database {
    /// A SQLite file.
    Sqlite(PathBuf),
    /// A MySQL database, by its URL.
    MySql(String),
}

/// The bytes of one table: its rows and its secondary indexes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableBytes {
    /// The table itself (InnoDB: the clustered index, rows included).
    pub data: u64,
    /// Its other indexes.
    pub index: u64,
}

/// A database's size at one moment.
#[derive(Debug, Clone, Default)]
pub struct DiskSample {
    /// The bytes on disk: the files' sizes (SQLite: database and log), or the tables' data
    /// and indexes (MySQL).
    pub files: u64,
    /// The bytes the tables and indexes use, by table.
    pub tables: BTreeMap<String, TableBytes>,
}

impl DiskSample {
    /// The bytes every table and index uses.
    pub fn used(&self) -> u64 {
        self.tables.values().map(|t| t.data + t.index).sum()
    }
}

/// The tables whose rows a gift keeps for good: the order, its wallet entries, and the
/// income its value paid (entries and balances).
pub const KEPT_FOR_GOOD: &[&str] = &[
    "gift_orders",
    "wallet_entries",
    "income_gifts",
    "income_credits",
    "income_sequence",
    "income_accounts",
];

/// The bytes a gift may cost while the log is retained, and kept for good.
pub const TARGET_RETAINED: f64 = 1_000.0;
/// See [`TARGET_RETAINED`].
pub const TARGET_KEPT: f64 = 250.0;

impl Database {
    /// The database of a server started with `env` in the temporary directory `dir`.
    pub fn of(env: &[(String, String)], dir: &Path) -> Database {
        match env.iter().find(|(key, _)| key == "ROOM__STORAGE__URL") {
            Some((_, url)) if url.starts_with("mysql:") => Database::MySql(url.clone()),
            _ => Database::Sqlite(dir.join("room.db")),
        }
    }

    /// The files' sizes only (cheap: no page is read), with no tables.
    pub async fn files(&self) -> Result<u64> {
        match self {
            Database::Sqlite(path) => Ok(sqlite_files(path)),
            Database::MySql(_) => Ok(self.sample().await?.files),
        }
    }

    /// The bytes the database's tables and indexes use now, without reading them: SQLite's
    /// pages in use (`page_count - freelist_count`), or MySQL's data and index lengths.
    pub async fn used(&self) -> Result<u64> {
        match self {
            Database::Sqlite(path) => {
                let options = sqlx::sqlite::SqliteConnectOptions::new()
                    .filename(path)
                    .read_only(true);
                let mut conn = SqliteConnection::connect_with(&options).await?;
                let pages: i64 = sqlx::query_scalar("PRAGMA page_count")
                    .fetch_one(&mut conn)
                    .await?;
                let free: i64 = sqlx::query_scalar("PRAGMA freelist_count")
                    .fetch_one(&mut conn)
                    .await?;
                let size: i64 = sqlx::query_scalar("PRAGMA page_size")
                    .fetch_one(&mut conn)
                    .await?;
                let _ = conn.close().await;
                Ok(((pages - free).max(0) * size) as u64)
            }
            Database::MySql(_) => Ok(self.sample().await?.used()),
        }
    }

    /// The sizes now, per table.
    pub async fn sample(&self) -> Result<DiskSample> {
        match self {
            Database::Sqlite(path) => sqlite_sample(path).await,
            Database::MySql(url) => mysql_sample(url).await,
        }
    }
}

fn sqlite_files(path: &Path) -> u64 {
    let size = |suffix: &str| {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        std::fs::metadata(Path::new(&name)).map_or(0, |m| m.len())
    };
    size("") + size("-wal")
}

async fn sqlite_sample(path: &Path) -> Result<DiskSample> {
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(path)
        .read_only(true);
    let mut conn = SqliteConnection::connect_with(&options)
        .await
        .with_context(|| format!("opening {}", path.display()))?;
    // One row per b-tree; an index counts for its table (`sqlite_schema` names it), the
    // schema's own b-tree for itself.
    let rows = sqlx::query(
        "SELECT s.name AS name, COALESCE(m.tbl_name, s.name) AS tbl,
                COALESCE(m.type, 'table') AS kind, s.pgsize AS bytes
         FROM dbstat AS s LEFT JOIN sqlite_schema AS m ON m.name = s.name
         WHERE s.aggregate = TRUE",
    )
    .fetch_all(&mut conn)
    .await
    .context("reading dbstat")?;
    let mut tables: BTreeMap<String, TableBytes> = BTreeMap::new();
    for row in rows {
        let table: String = row.try_get("tbl")?;
        let kind: String = row.try_get("kind")?;
        let bytes: i64 = row.try_get("bytes")?;
        let entry = tables.entry(table).or_default();
        if kind == "index" {
            entry.index += bytes as u64;
        } else {
            entry.data += bytes as u64;
        }
    }
    let _ = conn.close().await;
    Ok(DiskSample {
        files: sqlite_files(path),
        tables,
    })
}

async fn mysql_sample(url: &str) -> Result<DiskSample> {
    let mut conn = MySqlConnection::connect(url).await?;
    let names: Vec<String> = sqlx::query_scalar(
        "SELECT CAST(table_name AS CHAR) FROM information_schema.tables
         WHERE table_schema = DATABASE() AND engine = 'InnoDB'",
    )
    .fetch_all(&mut conn)
    .await?;
    if !names.is_empty() {
        let list = names
            .iter()
            .map(|name| format!("`{name}`"))
            .collect::<Vec<_>>()
            .join(", ");
        // Brings data_length and index_length up to date; its result rows are not needed.
        sqlx::raw_sql(AssertSqlSafe(format!("ANALYZE TABLE {list}")))
            .execute(&mut conn)
            .await?;
    }
    let rows = sqlx::query(
        "SELECT CAST(table_name AS CHAR) AS name, CAST(data_length AS SIGNED) AS data,
                CAST(index_length AS SIGNED) AS idx
         FROM information_schema.tables WHERE table_schema = DATABASE()",
    )
    .fetch_all(&mut conn)
    .await?;
    let mut tables = BTreeMap::new();
    for row in rows {
        let name: String = row.try_get("name")?;
        let data: i64 = row.try_get("data")?;
        let index: i64 = row.try_get("idx")?;
        tables.insert(
            name,
            TableBytes {
                data: data.max(0) as u64,
                index: index.max(0) as u64,
            },
        );
    }
    let _ = conn.close().await;
    let sample = DiskSample { files: 0, tables };
    Ok(DiskSample {
        files: sample.used(),
        ..sample
    })
}

/// Bytes per gift between two samples: the tables' growth over `gifts`, per table, then the
/// totals; returns (retained, kept for good) per gift.
pub fn report_per_gift(before: &DiskSample, after: &DiskSample, gifts: u64) -> (f64, f64) {
    let gifts = gifts.max(1) as f64;
    let grown = |name: &str| {
        let old = before.tables.get(name).copied().unwrap_or_default();
        let new = after.tables.get(name).copied().unwrap_or_default();
        (
            new.data as f64 - old.data as f64,
            new.index as f64 - old.index as f64,
        )
    };
    let mut total = 0.0;
    let mut kept = 0.0;
    for name in after.tables.keys() {
        let (data, index) = grown(name);
        if data == 0.0 && index == 0.0 {
            continue;
        }
        let per_gift = (data + index) / gifts;
        total += per_gift;
        if KEPT_FOR_GOOD.contains(&name.as_str()) {
            kept += per_gift;
        }
        report(
            &format!("  bytes per gift: {name}"),
            &format!("{per_gift:.0} (of which indexes {:.0})", index / gifts),
        );
    }
    let files = (after.files as f64 - before.files as f64) / gifts;
    report(
        "bytes per gift: tables and indexes",
        &format!(
            "{total:.0} (target {TARGET_RETAINED:.0}); kept for good (orders, wallet and income ledgers) {kept:.0} (target {TARGET_KEPT:.0}); files grew {files:.0}; {gifts:.0} gifts"
        ),
    );
    (total, kept)
}
