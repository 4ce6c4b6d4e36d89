//! The boundary between SQLite and the ports: driver errors (of the reader pool, sqlx, and of
//! the writer's connection, rusqlite) become port errors, domain values become compact
//! bodies ([`room_app::stored`]), JSON text and integers, and stored bodies, text and integers
//! become domain values again (or [`Error::Corrupt`]).

use room_app::Error;
// Primary result codes, compared with the low byte of the extended code sqlx reports.
use rusqlite::ffi::{SQLITE_CORRUPT, SQLITE_MISMATCH, SQLITE_NOTADB, SQLITE_RANGE, SQLITE_TOOBIG};
use serde::Serialize;
use serde::de::DeserializeOwned;
use sqlx::Row;
use sqlx::error::ErrorKind;
use sqlx::sqlite::SqliteRow;

use crate::Result;

/// Translates a driver error: a unique or primary key violation is
/// [`Error::AlreadyExists`]; another constraint violation is [`Error::Invalid`]. A request
/// SQLite can never run (a string or blob over its size limit, a value of the wrong type for
/// its column, a bad parameter or statement) is [`Error::Internal`]: the adapter let a bad
/// value or statement through, and a retry would fail the same way. A damaged file or an
/// undecodable column is [`Error::Corrupt`], and everything else (busy, locked, I/O, a full
/// disk, a closed pool) is [`Error::Unavailable`].
pub(crate) fn db(error: sqlx::Error) -> Error {
    match &error {
        sqlx::Error::Database(e) => {
            let primary = e
                .code()
                .and_then(|code| code.parse::<i32>().ok())
                .map(|code| code & 0xff);
            match e.kind() {
                ErrorKind::UniqueViolation => Error::AlreadyExists(e.message().to_owned()),
                ErrorKind::ForeignKeyViolation
                | ErrorKind::NotNullViolation
                | ErrorKind::CheckViolation => Error::Invalid(e.message().to_owned()),
                _ => match primary {
                    Some(SQLITE_CORRUPT | SQLITE_NOTADB) => Error::corrupt(e.message()),
                    Some(SQLITE_TOOBIG | SQLITE_MISMATCH | SQLITE_RANGE) => {
                        Error::internal(format!("sqlite: {}", e.message()))
                    }
                    _ => Error::unavailable(format!("sqlite: {}", e.message())),
                },
            }
        }
        sqlx::Error::ColumnDecode { .. }
        | sqlx::Error::Decode(_)
        | sqlx::Error::ColumnNotFound(_)
        | sqlx::Error::ColumnIndexOutOfBounds { .. }
        | sqlx::Error::TypeNotFound { .. } => Error::corrupt(error),
        // A value that does not encode, a bad argument; for SQLite, `Protocol` is a statement
        // that cannot be prepared or bound (a NUL byte, a parameter name it does not support).
        sqlx::Error::Encode(_) | sqlx::Error::InvalidArgument(_) | sqlx::Error::Protocol(_) => {
            Error::internal(format!("sqlite: {error}"))
        }
        _ => Error::unavailable(format!("sqlite: {error}")),
    }
}

/// Translates an error of the writer's connection like [`db`] does the pool's.
pub(crate) fn sql(error: rusqlite::Error) -> Error {
    use rusqlite::ErrorCode;
    use rusqlite::ffi::{SQLITE_CONSTRAINT_PRIMARYKEY, SQLITE_CONSTRAINT_UNIQUE};
    match &error {
        rusqlite::Error::SqliteFailure(failure, message) => {
            let text = message.clone().unwrap_or_else(|| failure.to_string());
            match (failure.code, failure.extended_code) {
                (_, SQLITE_CONSTRAINT_UNIQUE | SQLITE_CONSTRAINT_PRIMARYKEY) => {
                    Error::AlreadyExists(text)
                }
                (ErrorCode::ConstraintViolation, _) => Error::Invalid(text),
                (ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase, _) => Error::corrupt(text),
                (
                    ErrorCode::TooBig | ErrorCode::TypeMismatch | ErrorCode::ParameterOutOfRange,
                    _,
                ) => Error::internal(format!("sqlite: {text}")),
                _ => Error::unavailable(format!("sqlite: {text}")),
            }
        }
        rusqlite::Error::FromSqlConversionFailure(..)
        | rusqlite::Error::IntegralValueOutOfRange(..)
        | rusqlite::Error::Utf8Error(..)
        | rusqlite::Error::InvalidColumnType(..)
        | rusqlite::Error::InvalidColumnIndex(_)
        | rusqlite::Error::InvalidColumnName(_) => Error::corrupt(error),
        rusqlite::Error::ToSqlConversionFailure(_)
        | rusqlite::Error::InvalidQuery
        | rusqlite::Error::InvalidParameterCount(..)
        | rusqlite::Error::InvalidParameterName(_)
        | rusqlite::Error::MultipleStatement
        | rusqlite::Error::ExecuteReturnedResults
        | rusqlite::Error::NulError(_) => Error::internal(format!("sqlite: {error}")),
        _ => Error::unavailable(format!("sqlite: {error}")),
    }
}

/// A value as JSON text.
pub(crate) fn to_json<T: Serialize + ?Sized>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|e| Error::Invalid(format!("cannot encode: {e}")))
}

/// A value from stored JSON text; bad JSON is [`Error::Corrupt`].
pub(crate) fn from_json<T: DeserializeOwned>(text: &str, what: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| Error::corrupt(format!("stored {what}: {e}")))
}

/// A column of `row`, decoded; a missing or mistyped column is [`Error::Corrupt`].
pub(crate) fn col<'r, T>(row: &'r SqliteRow, name: &str) -> Result<T>
where
    T: sqlx::Decode<'r, sqlx::Sqlite> + sqlx::Type<sqlx::Sqlite>,
{
    row.try_get(name).map_err(db)
}

/// A JSON column of `row`, decoded into a domain value.
pub(crate) fn json_col<T: DeserializeOwned>(row: &SqliteRow, name: &str) -> Result<T> {
    let text: &str = row.try_get(name).map_err(db)?;
    from_json(text, name)
}

/// A body column of `row` ([`room_app::stored`]: compact, or JSON text stored before it),
/// decoded into a domain value.
pub(crate) fn body_col<T: DeserializeOwned>(row: &SqliteRow, name: &str) -> Result<T> {
    let bytes: &[u8] = row.try_get(name).map_err(db)?;
    room_app::stored::decode(bytes, name)
}

/// A validated id from a text column; an invalid id is [`Error::Corrupt`].
pub(crate) fn id_col<T>(row: &SqliteRow, name: &str) -> Result<T>
where
    T: for<'a> TryFrom<&'a str, Error = room_domain::IdError>,
{
    stored_id(row.try_get(name).map_err(db)?, name)
}

/// A validated id from stored text; an invalid id is [`Error::Corrupt`].
pub(crate) fn stored_id<T>(text: &str, name: &str) -> Result<T>
where
    T: for<'a> TryFrom<&'a str, Error = room_domain::IdError>,
{
    T::try_from(text).map_err(|e| Error::corrupt(format!("stored {name}: {e}")))
}

/// An unsigned counter (seq, version, epoch) as SQLite's signed integer.
pub(crate) fn to_i64(value: u64, what: &str) -> Result<i64> {
    i64::try_from(value).map_err(|_| Error::Invalid(format!("{what} {value} is too large")))
}

/// An unsigned counter from a signed column; a negative value is [`Error::Corrupt`].
pub(crate) fn u64_col(row: &SqliteRow, name: &str) -> Result<u64> {
    stored_u64(col(row, name)?, name)
}

/// An unsigned counter from a stored signed value; a negative value is [`Error::Corrupt`].
pub(crate) fn stored_u64(value: i64, name: &str) -> Result<u64> {
    u64::try_from(value).map_err(|_| Error::corrupt(format!("stored {name} {value} is negative")))
}

/// A `u32` from a signed column; a value out of range is [`Error::Corrupt`].
pub(crate) fn u32_col(row: &SqliteRow, name: &str) -> Result<u32> {
    stored_u32(col(row, name)?, name)
}

/// A `u32` from a stored signed value; a value out of range is [`Error::Corrupt`].
pub(crate) fn stored_u32(value: i64, name: &str) -> Result<u32> {
    u32::try_from(value)
        .map_err(|_| Error::corrupt(format!("stored {name} {value} is out of range")))
}

#[cfg(test)]
mod tests {
    use rusqlite::Connection;
    use rusqlite::ffi::{SQLITE_BUSY, SQLITE_FULL, SQLITE_IOERR, SQLITE_LOCKED};
    use sqlx::Connection as _;
    use sqlx::sqlite::SqliteConnection;

    use super::*;

    /// More than SQLite's default `SQLITE_MAX_LENGTH` (10^9 bytes): `zeroblob` refuses it with
    /// `SQLITE_TOOBIG` before allocating anything.
    const TOO_BIG: i64 = 2_000_000_000;

    fn failure(code: i32) -> rusqlite::Error {
        rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None)
    }

    fn is_internal(error: &Error) -> bool {
        matches!(error, Error::Internal(_))
    }

    #[test]
    fn values_sqlite_can_never_store_are_internal_errors_on_the_writer() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB)")
            .unwrap();

        let too_big = conn
            .execute("INSERT INTO t (body) VALUES (zeroblob(?1))", [TOO_BIG])
            .unwrap_err();
        assert_eq!(
            too_big.sqlite_error_code(),
            Some(rusqlite::ErrorCode::TooBig)
        );
        let error = sql(too_big);
        assert!(is_internal(&error), "{error:?}");
        assert!(!error.is_retryable());

        let mismatch = conn
            .execute("INSERT INTO t (id) VALUES ('not a number')", [])
            .unwrap_err();
        assert_eq!(
            mismatch.sqlite_error_code(),
            Some(rusqlite::ErrorCode::TypeMismatch)
        );
        assert!(is_internal(&sql(mismatch)));

        let count = conn.execute("SELECT ?1", [1, 2]).unwrap_err();
        assert!(
            matches!(count, rusqlite::Error::InvalidParameterCount(2, 1)),
            "{count:?}"
        );
        assert!(is_internal(&sql(count)));

        let several = conn.prepare("SELECT 1; SELECT 2").unwrap_err();
        assert!(matches!(several, rusqlite::Error::MultipleStatement));
        assert!(is_internal(&sql(several)));

        for error in [
            failure(SQLITE_RANGE),
            rusqlite::Error::InvalidQuery,
            rusqlite::Error::ToSqlConversionFailure("out of range".into()),
        ] {
            assert!(is_internal(&sql(error)));
        }
    }

    #[test]
    fn only_transient_failures_of_the_writer_are_retryable() {
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("busy.db");
        let holder = Connection::open(&path).unwrap();
        holder.execute_batch("BEGIN IMMEDIATE").unwrap();
        let other = Connection::open(&path).unwrap();
        other.busy_timeout(std::time::Duration::ZERO).unwrap();
        let busy = other.execute_batch("BEGIN IMMEDIATE").unwrap_err();
        assert_eq!(
            busy.sqlite_error_code(),
            Some(rusqlite::ErrorCode::DatabaseBusy)
        );
        let error = sql(busy);
        assert!(matches!(error, Error::Unavailable(_)), "{error:?}");

        for code in [SQLITE_BUSY, SQLITE_LOCKED, SQLITE_IOERR, SQLITE_FULL] {
            let error = sql(failure(code));
            assert!(error.is_retryable(), "{code}: {error:?}");
        }
        for code in [SQLITE_CORRUPT, SQLITE_NOTADB] {
            assert!(matches!(sql(failure(code)), Error::Corrupt(_)), "{code}");
        }
    }

    #[tokio::test]
    async fn values_sqlite_can_never_store_are_internal_errors_on_the_readers() {
        let mut conn = SqliteConnection::connect("sqlite::memory:").await.unwrap();
        sqlx::query("CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB)")
            .execute(&mut conn)
            .await
            .unwrap();

        let too_big = sqlx::query("SELECT zeroblob(?1)")
            .bind(TOO_BIG)
            .fetch_one(&mut conn)
            .await
            .unwrap_err();
        let code = too_big
            .as_database_error()
            .and_then(|e| e.code())
            .map(|code| code.into_owned());
        assert_eq!(code, Some(SQLITE_TOOBIG.to_string()), "{too_big:?}");
        let error = db(too_big);
        assert!(is_internal(&error), "{error:?}");
        assert!(!error.is_retryable());

        let mismatch = sqlx::query("INSERT INTO t (id) VALUES ('not a number')")
            .execute(&mut conn)
            .await
            .unwrap_err();
        assert!(is_internal(&db(mismatch)));

        let named = sqlx::query("SELECT @x")
            .bind(1)
            .fetch_one(&mut conn)
            .await
            .unwrap_err();
        assert!(matches!(named, sqlx::Error::Protocol(_)), "{named:?}");
        assert!(is_internal(&db(named)));

        for error in [
            sqlx::Error::Encode("cannot encode".into()),
            sqlx::Error::InvalidArgument("bad argument".into()),
        ] {
            assert!(is_internal(&db(error)));
        }
        for error in [sqlx::Error::PoolClosed, sqlx::Error::PoolTimedOut] {
            assert!(db(error).is_retryable());
        }
        let error = db(sqlx::Error::Decode("bad column".into()));
        assert!(matches!(error, Error::Corrupt(_)), "{error:?}");
    }
}
