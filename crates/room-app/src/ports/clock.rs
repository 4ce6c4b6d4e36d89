//! Time ([`Clock`]) and ids and random values ([`IdGen`]): what the domain may not fetch
//! itself, given to it through ports so that tests can fix them.

use std::sync::Arc;

use room_domain::Timestamp;

/// The time.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
pub trait Clock: Send + Sync {
    /// Now.
    fn now(&self) -> Timestamp;
}

/// Ids and random values.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
pub trait IdGen: Send + Sync {
    /// A new unique id (for commands that have no client-chosen id).
    fn next_id(&self) -> String;
    /// A uniformly random value.
    fn random(&self) -> u64;
}

/// Shared handle to a [`Clock`].
pub type ClockRef = Arc<dyn Clock>;
/// Shared handle to an [`IdGen`].
pub type IdGenRef = Arc<dyn IdGen>;
