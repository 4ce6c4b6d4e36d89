//! MySQL / MariaDB storage for the room service, for deployments where many nodes share one
//! database: [`MySqlStore`] implements every storage port of `room-app` (the cell log with its
//! epoch fence, snapshots, the outbox, gift orders, the gift catalog, timers, payouts, the
//! room directory, the wallet, the robot room configurations, the user directory, the
//! outbox positions of in-process consumers, the leaderboards and their rewards) with the sqlx
//! MySQL driver. It runs on MariaDB 10.11 and MySQL 8.
//!
//! Each group commit is one InnoDB transaction whose first statement locks the room's cell row
//! (`SELECT ... FOR UPDATE`) and checks the epoch and version the batch carries; when they do
//! not hold, the transaction writes nothing and the commit answers
//! [`Error::NotOwner`] or [`Error::Conflict`], as every store of the port does. A transaction
//! chosen as a deadlock victim or timed out waiting for a row lock is run again, a bounded
//! number of times ([`MySqlSettings::lock_attempts`]), then reported as retryable
//! [`Error::Unavailable`]. Driver errors become port errors at this boundary: a duplicate key
//! is [`Error::AlreadyExists`], a lost connection or a read-only server is
//! [`Error::Unavailable`].
//!
//! The wallet keeps a ledger of accounts and entries: every operation is one transaction,
//! idempotent by its op id per kind, and a balance cannot go below zero by the debit's guarded
//! `UPDATE` and by a `CHECK (balance >= 0)` on the accounts table.
//!
//! The schema lives in `migrations/mysql` at the workspace root, compiled into the crate by
//! `sqlx::migrate!`. Migrating is a step of its own: [`MySqlStore::migrate`] applies what the
//! database lacks (`room-api migrate`), and [`MySqlStore::open`] refuses a database whose
//! schema is behind or ahead of this build ([`SchemaStatus`]) instead of changing it.

mod accounts;
mod billing;
mod board_rewards;
mod boards;
mod catalog;
mod cells;
mod claims;
mod codec;
mod connect;
mod directory;
mod follows;
mod keyed;
mod orders;
mod outbox;
mod payouts;
mod pins;
mod pool;
mod positions;
mod robots;
mod rocket;
mod schema;
mod store;
mod tallies;
mod timers;
mod users;
mod versions;
mod vip;
mod wallet;

pub use connect::MySqlSettings;
pub use schema::SchemaStatus;
pub use store::{BACKGROUND_CONNECTIONS, MySqlStore};

/// The errors of this crate are the ports' errors.
pub use room_app::Error;

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
