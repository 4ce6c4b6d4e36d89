//! In-memory fakes of every storage port, and the conformance suites that every adapter runs
//! (feature `testkit`).
//!
//! A backend's test calls each suite with a factory of fresh, empty instances:
//! `testkit::cell_store_suite(|| async { Arc::new(MyStore::new().await) }).await`.

mod memory;

pub use memory::InMemoryStore;
