//! Wrong room passwords, counted per user and room, so that a short password cannot be
//! guessed by brute force: [`PasswordAttempts`].
//!
//! There is no limit per room across users: anyone could then shut a room's password
//! holders out with a few accounts, which is worse in a social app than the guesses that
//! many accounts add (5 a minute each). Kept in the process's memory: a restart forgets the
//! counts, and each node of a cluster counts its own.

use std::collections::HashMap;
use std::sync::Mutex;

use room_domain::{RoomId, Timestamp, UserId};

use crate::{Error, Result};

/// Wrong passwords a user may give for one room within [`PASSWORD_WINDOW_MS`]; past them,
/// that user's joins of that room are refused until the window ends.
pub const MAX_WRONG_PASSWORDS: u32 = 5;

/// The window of [`MAX_WRONG_PASSWORDS`], from the first wrong password in it.
pub const PASSWORD_WINDOW_MS: i64 = 60_000;

/// The most (user, room) pairs tracked at once. Past it, the ended windows are
/// dropped; if that is not enough, new attempts are refused until windows end (a flood of
/// made-up pairs must grow neither memory nor the number of guesses).
const MAX_TRACKED: usize = 100_000;

/// A count of wrong passwords, and when its window began.
#[derive(Debug, Clone, Copy)]
struct Window {
    count: u32,
    since: Timestamp,
}

impl Window {
    fn ends(&self) -> Timestamp {
        Timestamp(self.since.0 + PASSWORD_WINDOW_MS)
    }
}

/// An attempt [`PasswordAttempts::check`] counted as wrong, to take back with
/// [`PasswordAttempts::uncount`] if the room answers otherwise.
#[derive(Debug, Clone)]
#[must_use]
pub struct Counted {
    user: UserId,
    room: RoomId,
    since: Timestamp,
}

/// The counts of wrong passwords.
#[derive(Debug, Default)]
pub struct PasswordAttempts {
    pairs: Mutex<HashMap<(UserId, RoomId), Window>>,
}

impl PasswordAttempts {
    /// Refuses a join of `room` by `user` (who needs its password) while the user has given
    /// [`MAX_WRONG_PASSWORDS`] wrong ones within the window, whatever the password now (a
    /// right one let through would tell a guesser it is right). Otherwise, if `counts`,
    /// counts the attempt as wrong before the room decides, so that guesses sent at once
    /// cannot all pass the check first.
    pub fn check(
        &self,
        user: &UserId,
        room: &RoomId,
        now: Timestamp,
        counts: bool,
    ) -> Result<Option<Counted>> {
        let mut pairs = self.pairs.lock().unwrap_or_else(|e| e.into_inner());
        let key = (user.clone(), room.clone());
        let refused = |window: Window| {
            metrics::counter!("room_join_password_lockouts_total").increment(1);
            Err(Error::TooManyAttempts {
                retry_at: window.ends(),
            })
        };
        if let Some(window) = pairs.get_mut(&key) {
            if now >= window.ends() {
                *window = Window {
                    count: 0,
                    since: now,
                };
            }
            if window.count >= MAX_WRONG_PASSWORDS {
                return refused(*window);
            }
        }
        if !counts {
            return Ok(None);
        }
        let fresh = Window {
            count: 0,
            since: now,
        };
        if !pairs.contains_key(&key) && pairs.len() >= MAX_TRACKED {
            pairs.retain(|_, window| now < window.ends());
            if pairs.len() >= MAX_TRACKED {
                return refused(fresh);
            }
        }
        let window = pairs.entry(key).or_insert(fresh);
        window.count += 1;
        Ok(Some(Counted {
            user: user.clone(),
            room: room.clone(),
            since: window.since,
        }))
    }

    /// Takes back an attempt counted as wrong that the room let in or refused for another
    /// reason; a window that has begun since keeps its count.
    pub fn uncount(&self, counted: Counted) {
        let mut pairs = self.pairs.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(window) = pairs
            .get_mut(&(counted.user, counted.room))
            .filter(|w| w.since == counted.since)
        {
            window.count = window.count.saturating_sub(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(user: &str, room: &str) -> (UserId, RoomId) {
        (UserId::new(user).unwrap(), RoomId::new(room).unwrap())
    }

    #[test]
    fn a_user_is_locked_out_of_one_room_until_the_window_ends() {
        let attempts = PasswordAttempts::default();
        let (bob, r1) = ids("bob", "r1");
        let (_, r2) = ids("bob", "r2");
        let t0 = Timestamp(1_000_000);
        for _ in 0..MAX_WRONG_PASSWORDS {
            assert!(attempts.check(&bob, &r1, t0, true).unwrap().is_some());
        }
        let refused = attempts.check(&bob, &r1, t0, false).unwrap_err();
        assert!(matches!(
            refused,
            Error::TooManyAttempts { retry_at } if retry_at == Timestamp(t0.0 + PASSWORD_WINDOW_MS)
        ));
        // Another room is another count.
        assert!(attempts.check(&bob, &r2, t0, true).is_ok());
        // The window ends.
        let later = Timestamp(t0.0 + PASSWORD_WINDOW_MS);
        assert!(attempts.check(&bob, &r1, later, true).is_ok());
    }

    #[test]
    fn an_attempt_taken_back_frees_its_place_in_its_own_window_only() {
        let attempts = PasswordAttempts::default();
        let (bob, r1) = ids("bob", "r1");
        let t0 = Timestamp(0);
        for _ in 0..MAX_WRONG_PASSWORDS - 1 {
            let _ = attempts.check(&bob, &r1, t0, true).unwrap();
        }
        let last = attempts.check(&bob, &r1, t0, true).unwrap().unwrap();
        attempts.uncount(last);
        let again = attempts.check(&bob, &r1, t0, true).unwrap().unwrap();
        // The window ends and a new one fills up; the old attempt taken back late does not
        // lower the new count.
        let later = Timestamp(PASSWORD_WINDOW_MS);
        for _ in 0..MAX_WRONG_PASSWORDS {
            let _ = attempts.check(&bob, &r1, later, true).unwrap();
        }
        attempts.uncount(again);
        assert!(attempts.check(&bob, &r1, later, false).is_err());
    }
}
