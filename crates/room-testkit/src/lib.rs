//! What the workspace's tests share, in one dev-only crate instead of files included by
//! path: a [`ManualClock`] that moves only when told to (or with tokio's paused time), and,
//! behind features, the real services of the tests — throwaway MariaDB databases ([`mysql`],
//! feature `mysql`), per-test Redis key prefixes ([`redis`], feature `redis`) — and the
//! helpers of the tests that run the service's binaries as processes ([`process`], feature
//! `process`).
//!
//! Real services are found through `ROOM_TEST_MYSQL_URL` and `ROOM_TEST_REDIS_URL`; a test
//! whose service is unset skips, unless `ROOM_TEST_REQUIRE_SERVICES=1` makes that a failure
//! (see [`room_app::testkit::service_url`]).
//!
//! `room-app`'s unit tests must not use this crate: they would see a second copy of
//! `room-app`, whose [`Clock`](room_app::ports::Clock) is another trait.

mod clock;
#[cfg(feature = "mysql")]
pub mod mysql;
#[cfg(feature = "process")]
pub mod process;
#[cfg(feature = "redis")]
pub mod redis;

pub use clock::ManualClock;
