//! The statements a gift runs on every write open no temporary b-tree: SQLite builds one for
//! an IN list of three or more values (in a statement, a CHECK or a partial index's
//! condition) and for an INSERT ... SELECT into a table with a trigger, and opens, zeroes and
//! closes it again on every run of the statement.

use rusqlite::Connection;
use tempfile::TempDir;

use crate::{SqliteSettings, SqliteStore};

/// A database migrated by [`SqliteStore::open`], as the service migrates it, read through a
/// connection of its own (the store is dropped: it holds the file while it is open).
fn migrated() -> (TempDir, Connection) {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("room.db");
    let settings = SqliteSettings::new(format!("sqlite://{}", path.display()));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    drop(runtime.block_on(SqliteStore::open(&settings)).unwrap());
    let conn = Connection::open(&path).unwrap();
    (dir, conn)
}

/// The plan SQLite picks for `statement`, one line per step, with every parameter 0: what
/// the adapters' tests check their reads and writes against.
pub(crate) fn query_plan(conn: &Connection, statement: &str) -> Vec<String> {
    let mut explain = conn
        .prepare(&format!("EXPLAIN QUERY PLAN {statement}"))
        .unwrap();
    let zeros = vec![0_i64; explain.parameter_count()];
    explain
        .query_map(rusqlite::params_from_iter(zeros), |row| row.get(3))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

/// The opcodes of `statement`'s program.
fn opcodes(conn: &Connection, statement: &str) -> Vec<String> {
    // Unbound parameters are NULL: EXPLAIN lists the program without running it.
    let mut explain = conn.prepare(&format!("EXPLAIN {statement}")).unwrap();
    let mut rows = explain.raw_query();
    let mut program = Vec::new();
    while let Some(row) = rows.next().unwrap() {
        program.push(row.get::<_, String>(1).unwrap());
    }
    program
}

#[test]
fn a_gifts_writes_open_no_temporary_table() {
    let (_dir, conn) = migrated();
    let statements = [
        ("create an order", crate::orders::CREATE),
        ("replace an order", crate::orders::REPLACE),
        ("apply an order", crate::orders::REPLACE_APPLIED),
        ("record a wallet entry", crate::wallet::RECORD),
        ("void a debit", crate::wallet::VOID_DEBIT),
    ];
    for (what, statement) in statements {
        let program = opcodes(&conn, statement);
        assert!(
            program.iter().any(|op| op == "Insert" || op == "IdxInsert"),
            "{what}: {program:?}"
        );
        assert!(
            !program.iter().any(|op| op == "OpenEphemeral"),
            "{what} opens a temporary table: {program:?}"
        );
    }
}

/// The check fails where it should: the form the wallet wrote before (INSERT ... SELECT)
/// opens one.
#[test]
fn an_insert_of_a_select_into_the_ledger_opens_a_temporary_table() {
    let (_dir, conn) = migrated();
    let program = opcodes(
        &conn,
        "INSERT INTO wallet_entries (op_id, kind, state, user_id, amount, balance_after)
         SELECT ?1, 'debit', 'done', ?2, ?3, ?4",
    );
    assert!(
        program.iter().any(|op| op == "OpenEphemeral"),
        "{program:?}"
    );
}
