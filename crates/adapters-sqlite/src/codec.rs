//! The boundary between SQLite and the ports: driver errors (of the reader pool, sqlx, and of
//! the writer's connection, rusqlite) become port errors, domain values
//! become JSON text and integers, and stored text and integers become domain values again (or
//! [`Error::Corrupt`]).

use room_app::Error;
use serde::Serialize;
use serde::de::DeserializeOwned;
use sqlx::Row;
use sqlx::error::ErrorKind;
use sqlx::sqlite::SqliteRow;

use crate::Result;

// Primary result codes (the low byte of an extended code).
const SQLITE_CORRUPT: i32 = 11;
const SQLITE_NOTADB: i32 = 26;

/// Translates a driver error: a unique or primary key violation is
/// [`Error::AlreadyExists`], another constraint violation is [`Error::Invalid`] (the adapter
/// let a bad value through), a damaged file or an undecodable column is [`Error::Corrupt`],
/// and everything else (busy, locked, I/O, a full disk, a closed pool) is
/// [`Error::Unavailable`].
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
                _ if matches!(primary, Some(SQLITE_CORRUPT | SQLITE_NOTADB)) => {
                    Error::corrupt(e.message())
                }
                _ => Error::unavailable(format!("sqlite: {}", e.message())),
            }
        }
        sqlx::Error::ColumnDecode { .. }
        | sqlx::Error::Decode(_)
        | sqlx::Error::ColumnNotFound(_)
        | sqlx::Error::ColumnIndexOutOfBounds { .. }
        | sqlx::Error::TypeNotFound { .. } => Error::corrupt(error),
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
                _ => Error::unavailable(format!("sqlite: {text}")),
            }
        }
        rusqlite::Error::FromSqlConversionFailure(..)
        | rusqlite::Error::IntegralValueOutOfRange(..)
        | rusqlite::Error::InvalidColumnType(..)
        | rusqlite::Error::InvalidColumnIndex(_)
        | rusqlite::Error::InvalidColumnName(_) => Error::corrupt(error),
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

/// A validated id from a text column; an invalid id is [`Error::Corrupt`].
pub(crate) fn id_col<T>(row: &SqliteRow, name: &str) -> Result<T>
where
    T: for<'a> TryFrom<&'a str, Error = room_domain::IdError>,
{
    let text: &str = row.try_get(name).map_err(db)?;
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
    let value: i64 = col(row, name)?;
    u32::try_from(value)
        .map_err(|_| Error::corrupt(format!("stored {name} {value} is out of range")))
}
