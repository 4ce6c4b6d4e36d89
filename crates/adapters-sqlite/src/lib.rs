//! SQLite storage for the room service: [`SqliteStore`] implements every storage port of
//! `room-app` (the cell log with its epoch fence, snapshots, outbox, gift orders, the wallet
//! ledger, the gift catalog, timers, payouts, the room directory, the robot room
//! configurations, the user directory, the leaderboards with their rewards, and the outbox
//! positions of in-process consumers) on one database file, for the embedded single-node
//! deployment.
//!
//! The file runs in WAL mode with `synchronous=FULL`: an acknowledged write survives a power
//! loss. Throughput comes from batching instead: every write is a job for ONE writer thread,
//! which runs all queued jobs (up to [`SqliteSettings::max_jobs_per_transaction`]) in one
//! transaction, each job in its own savepoint so that a failing job rolls back alone, then
//! commits once and answers every caller. The writer calls SQLite in-process (rusqlite), so a
//! statement costs microseconds rather than a round trip to a driver thread. Reads use a pool
//! of read-only sqlx connections, which WAL lets run beside the writer.
//! [`SqliteStore::write_stats`] and the metrics `room_sqlite_write_jobs_per_transaction`
//! (histogram) and `room_sqlite_write_transactions_total` show how well writes are batched.
//!
//! The schema lives in `migrations/sqlite` at the workspace root and is applied on
//! [`SqliteStore::open`] (with `sqlx::migrate!`).

mod billing;
mod board_rewards;
mod boards;
mod catalog;
mod cells;
mod checkpoint;
mod claims;
mod codec;
mod connection;
mod directory;
mod follows;
mod keyed;
mod orders;
mod outbox;
mod payouts;
mod pins;
#[cfg(test)]
mod plans;
mod positions;
mod robots;
mod rocket;
mod scanner;
mod store;
mod tallies;
mod timers;
mod users;
mod versions;
mod vip;
mod wallet;
mod writer;

pub use store::{SqliteSettings, SqliteStore};
pub use writer::WriteStats;

/// The errors of this crate are the ports' errors.
pub use room_app::Error;

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
