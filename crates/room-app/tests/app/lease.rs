//! The lease conformance suite against the in-memory lease table every other backend is
//! compared with.

use std::time::Duration;

use room_app::testkit::{self, InMemoryLeases};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn in_memory_leases_pass_the_lease_suite() {
    testkit::lease_suite(|ttl: Duration| async move { InMemoryLeases::new(ttl) }).await;
}
