//! The conformance suites that every adapter of a storage port runs, and the in-memory store
//! they are first checked against (feature `testkit`).
//!
//! A backend's test calls each suite with a factory of fresh, empty instances:
//! `testkit::cell_store_suite(|| async { Arc::new(MyStore::new().await) }).await`.
//! Run the suites on a multi-threaded runtime: some checks race spawned tasks against each
//! other.

mod suites;

pub use crate::memory::InMemoryStore;
pub use suites::{
    cell_store_suite, gift_catalog_suite, gift_orders_suite, outbox_suite, payouts_suite,
    room_directory_suite, snapshot_store_suite, timers_suite, wallet_suite,
};
