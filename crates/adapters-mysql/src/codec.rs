//! The boundary between MySQL and the ports: driver errors become port errors, domain values
//! become JSON text and integers, and stored text and integers become domain values again (or
//! [`Error::Corrupt`]).

use room_app::Error;
use serde::Serialize;
use serde::de::DeserializeOwned;
use sqlx::Row;
use sqlx::error::{DatabaseError, ErrorKind};
use sqlx::mysql::{MySqlDatabaseError, MySqlRow};

use crate::Result;

/// Server error numbers the adapter tells apart (see the MySQL and MariaDB error references).
pub(crate) mod number {
    /// `ER_LOCK_WAIT_TIMEOUT`: a row lock was not granted within `innodb_lock_wait_timeout`.
    pub(crate) const LOCK_WAIT_TIMEOUT: u16 = 1205;
    /// `ER_LOCK_DEADLOCK`: the transaction was chosen as a deadlock victim and rolled back.
    pub(crate) const LOCK_DEADLOCK: u16 = 1213;
    /// `ER_OPTION_PREVENTS_STATEMENT`: the server runs with `--read-only` (a replica, or a
    /// primary being switched over).
    pub(crate) const OPTION_PREVENTS_STATEMENT: u16 = 1290;
    /// `ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION`.
    pub(crate) const READ_ONLY_TRANSACTION: u16 = 1792;
    /// `ER_READ_ONLY_MODE` (MySQL: the instance is in `super_read_only` mode).
    pub(crate) const READ_ONLY_MODE: u16 = 1836;
    /// `ER_NET_PACKET_TOO_LARGE`: a statement over `max_allowed_packet`.
    pub(crate) const NET_PACKET_TOO_LARGE: u16 = 1153;
    /// `ER_PARSE_ERROR`.
    pub(crate) const PARSE_ERROR: u16 = 1064;
    /// `ER_BAD_FIELD_ERROR`: an unknown column.
    pub(crate) const BAD_FIELD: u16 = 1054;
    /// `ER_NO_SUCH_TABLE`.
    pub(crate) const NO_SUCH_TABLE: u16 = 1146;
    /// `ER_WARN_DATA_OUT_OF_RANGE`: a number its column cannot hold (strict mode).
    pub(crate) const DATA_OUT_OF_RANGE: u16 = 1264;
    /// `ER_TRUNCATED_WRONG_VALUE`.
    pub(crate) const TRUNCATED_WRONG_VALUE: u16 = 1292;
    /// `ER_TRUNCATED_WRONG_VALUE_FOR_FIELD`: a value of the wrong type or encoding.
    pub(crate) const WRONG_VALUE_FOR_FIELD: u16 = 1366;
    /// `ER_DATA_TOO_LONG`: a string longer than its column (strict mode).
    pub(crate) const DATA_TOO_LONG: u16 = 1406;
    /// `ER_DATA_OUT_OF_RANGE`: arithmetic past its type (`BIGINT value is out of range`).
    pub(crate) const ARITHMETIC_OUT_OF_RANGE: u16 = 1690;
}

/// The server's error behind a driver error, if the server answered with one.
fn server_error(error: &sqlx::Error) -> Option<&MySqlDatabaseError> {
    match error {
        sqlx::Error::Database(e) => e.try_downcast_ref::<MySqlDatabaseError>(),
        _ => None,
    }
}

/// Whether the server rolled the statement or the transaction back because of row locks
/// (a deadlock or a lock wait timeout): running the transaction again can succeed.
pub(crate) fn is_lock_failure(error: &sqlx::Error) -> bool {
    server_error(error).is_some_and(|e| {
        matches!(
            e.number(),
            number::LOCK_DEADLOCK | number::LOCK_WAIT_TIMEOUT
        )
    })
}

/// Whether the server refused a statement whose arithmetic passed its type (a sum past
/// `BIGINT`): the statement did nothing, and running it again fails the same way.
pub(crate) fn is_arithmetic_overflow(error: &sqlx::Error) -> bool {
    server_error(error).is_some_and(|e| e.number() == number::ARITHMETIC_OUT_OF_RANGE)
}

/// A stored unsigned `INT`; a negative value is [`Error::Corrupt`].
pub(crate) fn stored_u32(value: i32, name: &str) -> Result<u32> {
    u32::try_from(value).map_err(|_| Error::corrupt(format!("stored {name} {value} is negative")))
}

/// Whether the server refused a row because its key is taken.
pub(crate) fn is_duplicate_key(error: &sqlx::Error) -> bool {
    server_error(error)
        .is_some_and(|e| matches!(DatabaseError::kind(e), ErrorKind::UniqueViolation))
}

/// Translates a driver error: a duplicate key is [`Error::AlreadyExists`]; another constraint
/// violation (check, not null, foreign key) is [`Error::Invalid`]. A request the server can
/// never run (a value too long or out of range for its column, a statement over
/// `max_allowed_packet`, a statement or table it does not know) is [`Error::Internal`]: the
/// adapter let a bad value or statement through, and a retry would fail the same way. An
/// undecodable column is [`Error::Corrupt`]. Everything else is [`Error::Unavailable`]: lost
/// connections, a read-only server (`--read-only`, a read-only transaction), deadlocks and
/// lock wait timeouts that outlasted the adapter's own retries, a server shutting down, a
/// full pool, and server errors this adapter does not know.
pub(crate) fn db(error: sqlx::Error) -> Error {
    if let Some(e) = server_error(&error) {
        return match DatabaseError::kind(e) {
            ErrorKind::UniqueViolation => Error::AlreadyExists(e.message().to_owned()),
            ErrorKind::ForeignKeyViolation
            | ErrorKind::NotNullViolation
            | ErrorKind::CheckViolation => Error::Invalid(e.message().to_owned()),
            _ => match e.number() {
                number::DATA_TOO_LONG
                | number::DATA_OUT_OF_RANGE
                | number::WRONG_VALUE_FOR_FIELD
                | number::TRUNCATED_WRONG_VALUE
                | number::NET_PACKET_TOO_LARGE
                | number::PARSE_ERROR
                | number::BAD_FIELD
                | number::NO_SUCH_TABLE => Error::internal(format!("mysql: {e}")),
                number::LOCK_DEADLOCK | number::LOCK_WAIT_TIMEOUT => {
                    Error::unavailable(format!("mysql: {e} (the transaction is safe to retry)"))
                }
                number::OPTION_PREVENTS_STATEMENT
                | number::READ_ONLY_TRANSACTION
                | number::READ_ONLY_MODE => {
                    Error::unavailable(format!("mysql: the server is read-only: {e}"))
                }
                // Too many connections, a shutdown, a killed query or connection, and codes
                // this adapter does not know: a retry may get past them.
                _ => Error::unavailable(format!("mysql: {e}")),
            },
        };
    }
    match &error {
        sqlx::Error::ColumnDecode { .. }
        | sqlx::Error::Decode(_)
        | sqlx::Error::ColumnNotFound(_)
        | sqlx::Error::ColumnIndexOutOfBounds { .. }
        | sqlx::Error::TypeNotFound { .. } => Error::corrupt(error),
        sqlx::Error::Encode(_) | sqlx::Error::InvalidArgument(_) => {
            Error::internal(format!("mysql: {error}"))
        }
        // I/O, TLS, protocol (a connection cut mid-packet), a closed or exhausted pool.
        _ => Error::unavailable(format!("mysql: {error}")),
    }
}

/// What one attempt of a transaction failed with: a driver error, which
/// [`MySqlStore::retrying`](crate::MySqlStore) may run again when it is a lock failure, or a
/// port error decided by the adapter (a fenced epoch, a missing order), final.
#[derive(Debug)]
pub(crate) enum TxError {
    /// The driver failed.
    Db(sqlx::Error),
    /// The adapter decided.
    Port(Error),
}

impl From<sqlx::Error> for TxError {
    fn from(error: sqlx::Error) -> Self {
        TxError::Db(error)
    }
}

impl From<Error> for TxError {
    fn from(error: Error) -> Self {
        TxError::Port(error)
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
pub(crate) fn col<'r, T>(row: &'r MySqlRow, name: &str) -> Result<T>
where
    T: sqlx::Decode<'r, sqlx::MySql> + sqlx::Type<sqlx::MySql>,
{
    row.try_get(name).map_err(db)
}

/// A JSON column of `row`, decoded into a domain value.
pub(crate) fn json_col<T: DeserializeOwned>(row: &MySqlRow, name: &str) -> Result<T> {
    let text: &str = row.try_get(name).map_err(db)?;
    from_json(text, name)
}

/// A body column of `row` ([`room_app::stored`]: compact, or JSON text stored before it),
/// decoded into a domain value.
pub(crate) fn body_col<T: DeserializeOwned>(row: &MySqlRow, name: &str) -> Result<T> {
    let bytes: &[u8] = row.try_get(name).map_err(db)?;
    room_app::stored::decode(bytes, name)
}

/// A validated id from a text column; an invalid id is [`Error::Corrupt`].
pub(crate) fn id_col<T>(row: &MySqlRow, name: &str) -> Result<T>
where
    T: for<'a> TryFrom<&'a str, Error = room_domain::IdError>,
{
    let text: &str = row.try_get(name).map_err(db)?;
    T::try_from(text).map_err(|e| Error::corrupt(format!("stored {name}: {e}")))
}

/// An unsigned counter (seq, version, epoch) as a signed `BIGINT`.
pub(crate) fn to_i64(value: u64, what: &str) -> Result<i64> {
    i64::try_from(value).map_err(|_| Error::Invalid(format!("{what} {value} is too large")))
}

/// An unsigned counter from a signed column; a negative value is [`Error::Corrupt`].
pub(crate) fn u64_col(row: &MySqlRow, name: &str) -> Result<u64> {
    stored_u64(col(row, name)?, name)
}

/// An unsigned counter from a stored signed value; a negative value is [`Error::Corrupt`].
pub(crate) fn stored_u64(value: i64, name: &str) -> Result<u64> {
    u64::try_from(value).map_err(|_| Error::corrupt(format!("stored {name} {value} is negative")))
}

#[cfg(test)]
mod tests;
