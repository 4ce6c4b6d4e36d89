//! The two read-write connections of a store, opened with rusqlite: the writer's (the only
//! one that writes, see [`crate::writer`]) and the checkpointer's (see [`crate::checkpoint`]).
//! Both sync what they write (`synchronous=FULL`); the pool of read-only connections is
//! opened with sqlx by the store itself.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::Result;
use crate::codec::sql;

/// A read-write connection of its own thread (the writer's, the checkpointer's), with
/// `synchronous=FULL`: the writer syncs the log at each commit, a checkpoint syncs the
/// database file, so what was acknowledged stays on disk.
pub(crate) fn open_read_write(path: &Path, busy_timeout: Duration) -> Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(sql)?;
    conn.busy_timeout(busy_timeout).map_err(sql)?;
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(sql)?;
    Ok(conn)
}

/// The writer's connection: the only one that writes. `wal_limit` is the size in bytes its
/// first commit after the log started over cuts the log file back to.
pub(crate) fn open_writer(
    path: &Path,
    busy_timeout: Duration,
    wal_limit: i64,
) -> Result<Connection> {
    let conn = open_read_write(path, busy_timeout)?;
    conn.pragma_update(None, "foreign_keys", "ON")
        .map_err(sql)?;
    // 8 MiB of page cache (negative: in KiB): the writer touches the same hot pages (cells,
    // accounts, the ends of the logs) again and again; without it, each is read back through
    // the kernel. Not more: a commit after a b-tree split scans the whole cache (SQLite parks
    // pages at a page number past the end while it rebalances, then truncates them away), and
    // with 64 MiB that scan was 7 % of the service's CPU in the hot-room benchmark.
    conn.pragma_update(None, "cache_size", -8_192)
        .map_err(sql)?;
    // Checkpoints run on their own thread (see `checkpoint`), never inside a commit.
    conn.pragma_update(None, "wal_autocheckpoint", 0)
        .map_err(sql)?;
    // SQLite reuses the log file from its start once a checkpoint copied it, and keeps the
    // file at the largest size it ever reached; with a limit, the first commit into a
    // started-over log cuts the file back to it.
    conn.pragma_update(None, "journal_size_limit", wal_limit)
        .map_err(sql)?;
    // Each job's savepoint journals the pages it changes. Past 64 KiB in one savepoint (a
    // b-tree split can do it) SQLite spills that journal to a temporary file and keeps writing
    // it there for the rest of the transaction: a pwrite per page, about 6 % of the service's
    // CPU in the spread benchmark. In memory it is a copy; a savepoint holds a few pages.
    conn.pragma_update(None, "temp_store", "MEMORY")
        .map_err(sql)?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(conn)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_writer_syncs_every_commit_and_checks_foreign_keys() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.db");
        Connection::open(&path)
            .unwrap()
            .pragma_update(None, "journal_mode", "WAL")
            .unwrap();
        let conn = open_writer(&path, Duration::from_secs(1), 1 << 20).unwrap();
        let pragma = |name: &str| -> String {
            conn.pragma_query_value(None, name, |row| row.get::<_, rusqlite::types::Value>(0))
                .map(|value| match value {
                    rusqlite::types::Value::Integer(i) => i.to_string(),
                    rusqlite::types::Value::Text(t) => t,
                    other => format!("{other:?}"),
                })
                .unwrap()
        };
        assert_eq!(pragma("journal_mode"), "wal");
        assert_eq!(pragma("synchronous"), "2", "FULL");
        assert_eq!(pragma("foreign_keys"), "1");
        assert_eq!(pragma("cache_size"), "-8192");
        assert_eq!(pragma("temp_store"), "2", "MEMORY");
        assert_eq!(pragma("journal_size_limit"), "1048576");
    }
}
