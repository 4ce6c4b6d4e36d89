//! [`LocalPasswordAttempts`]: the [`PasswordAttempts`] port in the process's memory, for the
//! embedded single-node mode. A restart forgets the counts, and each process counts its own:
//! nodes of a cluster share theirs through a backend instead (Redis, in `adapters-redis`).

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use room_domain::{RoomId, Timestamp, UserId};

use crate::error::{Error, Result};
use crate::ports::{Counted, PasswordAttempts};

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

/// The counts of wrong passwords in memory, at most 100,000 (user, room) pairs at once.
#[derive(Debug, Default)]
pub struct LocalPasswordAttempts {
    pairs: Mutex<HashMap<(UserId, RoomId), Window>>,
}

impl LocalPasswordAttempts {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    fn check_now(
        &self,
        user: &UserId,
        room: &RoomId,
        now: Timestamp,
        counts: bool,
    ) -> Result<Option<Counted>> {
        let mut pairs = self.pairs.lock().unwrap_or_else(|e| e.into_inner());
        let key = (user.clone(), room.clone());
        let fresh = Window {
            count: 0,
            since: now,
        };
        let current = pairs.get(&key).copied().filter(|w| now < w.ends());
        if let Some(window) = current
            && window.count >= MAX_WRONG_PASSWORDS
        {
            return Err(Error::TooManyAttempts {
                retry_at: window.ends(),
            });
        }
        if !counts {
            return Ok(None);
        }
        if !pairs.contains_key(&key) && pairs.len() >= MAX_TRACKED {
            pairs.retain(|_, window| now < window.ends());
            if pairs.len() >= MAX_TRACKED {
                return Err(Error::TooManyAttempts {
                    retry_at: fresh.ends(),
                });
            }
        }
        let mut window = current.unwrap_or(fresh);
        window.count += 1;
        pairs.insert(key, window);
        Ok(Some(Counted {
            user: user.clone(),
            room: room.clone(),
            since: window.since,
        }))
    }
}

#[async_trait]
impl PasswordAttempts for LocalPasswordAttempts {
    async fn check(
        &self,
        user: &UserId,
        room: &RoomId,
        now: Timestamp,
        counts: bool,
    ) -> Result<Option<Counted>> {
        self.check_now(user, room, now, counts)
    }

    async fn uncount(&self, counted: Counted) -> Result<()> {
        let mut pairs = self.pairs.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(window) = pairs
            .get_mut(&(counted.user, counted.room))
            .filter(|w| w.since == counted.since)
        {
            window.count = window.count.saturating_sub(1);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_table_refuses_new_pairs_until_windows_end() {
        let attempts = LocalPasswordAttempts::new();
        let room = RoomId::new("r1").unwrap();
        let t0 = Timestamp(0);
        for i in 0..MAX_TRACKED {
            let user = UserId::new(format!("u{i}")).unwrap();
            assert!(
                attempts
                    .check_now(&user, &room, t0, true)
                    .unwrap()
                    .is_some()
            );
        }
        let newcomer = UserId::new("newcomer").unwrap();
        let refused = attempts.check_now(&newcomer, &room, Timestamp(1), true);
        assert!(
            matches!(refused, Err(Error::TooManyAttempts { retry_at }) if retry_at == Timestamp(1 + PASSWORD_WINDOW_MS)),
            "{refused:?}"
        );
        // A tracked pair still counts; a check that does not count is not refused.
        let known = UserId::new("u7").unwrap();
        assert!(
            attempts
                .check_now(&known, &room, Timestamp(1), true)
                .is_ok()
        );
        assert!(
            attempts
                .check_now(&newcomer, &room, Timestamp(1), false)
                .is_ok()
        );
        // Once the windows end, they make room.
        let later = Timestamp(PASSWORD_WINDOW_MS);
        assert!(
            attempts
                .check_now(&newcomer, &room, later, true)
                .unwrap()
                .is_some()
        );
        assert_eq!(attempts.pairs.lock().unwrap().len(), 1);
    }
}
