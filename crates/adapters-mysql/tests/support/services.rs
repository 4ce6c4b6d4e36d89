//! Finding the real services a test runs against (MySQL now; Redis and Kafka later).
//!
//! A service's address comes from an environment variable (`ROOM_TEST_MYSQL_URL`, ...). When
//! it is unset the test says it skipped and passes, so that `cargo test` works on a machine
//! without the services; with `ROOM_TEST_REQUIRE_SERVICES=1` (CI) an unset variable or an
//! unreachable service fails the test instead, so that a service test never passes silently.

#![allow(dead_code)]

use std::fmt::Display;

/// The variable that turns a missing service into a failure.
pub const REQUIRE_SERVICES: &str = "ROOM_TEST_REQUIRE_SERVICES";

/// Whether missing services fail tests (`ROOM_TEST_REQUIRE_SERVICES=1`).
pub fn required() -> bool {
    std::env::var(REQUIRE_SERVICES).is_ok_and(|value| value.trim() == "1")
}

/// The address of the service in `var`, or `None` after saying that `test` skipped.
///
/// # Panics
/// When `var` is unset or empty and services are [`required`].
pub fn address(var: &str, test: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(value) if !value.trim().is_empty() => Some(value.trim().to_owned()),
        _ => {
            assert!(
                !required(),
                "{test}: {var} is not set, and {REQUIRE_SERVICES}=1 requires the service"
            );
            eprintln!("skipped {test}: {var} is not set");
            None
        }
    }
}

/// Handles a service that is configured but does not answer: `None` after saying that `test`
/// skipped.
///
/// # Panics
/// When services are [`required`].
pub fn unreachable<T>(var: &str, test: &str, cause: impl Display) -> Option<T> {
    assert!(
        !required(),
        "{test}: the service in {var} is unreachable ({cause}), and {REQUIRE_SERVICES}=1 \
         requires it"
    );
    eprintln!("skipped {test}: the service in {var} is unreachable: {cause}");
    None
}
