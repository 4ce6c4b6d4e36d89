//! Wrong room passwords ([`PasswordAttempts`]), counted so that a short password cannot be
//! guessed by brute force.

use std::sync::Arc;

use async_trait::async_trait;
use room_domain::{RoomId, Timestamp, UserId};

use crate::error::Result;

/// A join [`PasswordAttempts::check`] counted as a wrong password, to take back with
/// [`PasswordAttempts::uncount`] if the room answers otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub struct Counted {
    /// Who gave the password.
    pub user: UserId,
    /// The room it was for.
    pub room: RoomId,
    /// When the window the attempt was counted in began: its first wrong password.
    pub since: Timestamp,
}

/// Wrong room passwords, counted per user and room, so that a short password cannot be
/// guessed by brute force: past [`MAX_WRONG_PASSWORDS`](crate::MAX_WRONG_PASSWORDS) wrong
/// ones within [`PASSWORD_WINDOW_MS`](crate::PASSWORD_WINDOW_MS) of the first, that user's
/// joins of that room are refused until the window ends. Windows follow the `now` callers
/// give, not the backend's clock.
///
/// There is no limit per room across users: anyone could then shut a room's password holders
/// out with a few accounts, which is worse in a social app than the guesses that many
/// accounts add (5 a minute each).
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait PasswordAttempts: Send + Sync {
    /// Refuses a join of `room` by `user` (who needs its password) with
    /// [`Error::TooManyAttempts`](crate::Error::TooManyAttempts) (`retry_at`: when the window
    /// ends) while the user has given
    /// [`MAX_WRONG_PASSWORDS`](crate::MAX_WRONG_PASSWORDS) wrong ones within the window,
    /// whatever the password now (a right one let through would tell a guesser it is right).
    /// Otherwise, if `counts`, counts the attempt as wrong before the room decides, so that
    /// guesses sent at once cannot all pass the check first, and returns it as [`Counted`];
    /// the first wrong password after a window ended begins a new one.
    async fn check(
        &self,
        user: &UserId,
        room: &RoomId,
        now: Timestamp,
        counts: bool,
    ) -> Result<Option<Counted>>;
    /// Takes back an attempt counted as wrong that the room let in or refused for another
    /// reason; a window that has begun since keeps its count.
    async fn uncount(&self, counted: Counted) -> Result<()>;
}

/// Shared handle to [`PasswordAttempts`].
pub type PasswordAttemptsRef = Arc<dyn PasswordAttempts>;
