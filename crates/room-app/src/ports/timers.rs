//! Durable timers ([`Timers`]): armed in a room's commit, fired by the timer worker as a
//! system command to the room.

use std::sync::Arc;

use async_trait::async_trait;
use room_domain::{CommandKind, RoomId, Timestamp};
use serde::{Deserialize, Serialize};

use crate::error::Result;

/// A durable timer: at `due_at`, `command` is sent to the room as the system.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timer {
    /// Deterministic id (`"{room}:launch:{rocket}"`), so re-arming replaces.
    pub timer_id: String,
    /// The room.
    pub room_id: RoomId,
    /// When it fires.
    pub due_at: Timestamp,
    /// What it sends.
    pub command: CommandKind,
}

/// Where a page of [`Timers::list_due`] ended: the due time and id of its last timer.
pub type TimerCursor = (Timestamp, String);

impl Timer {
    /// The cursor of a page that ends with this timer.
    pub fn cursor(&self) -> TimerCursor {
        (self.due_at, self.timer_id.clone())
    }
}

/// Durable timers, armed in commits.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait Timers: Send + Sync {
    /// Timers due at or before `now`, earliest first (ties by timer id), at most `limit`;
    /// with `after` (the due time and id of the last timer of the page before), only those
    /// that come after it in that order, so that a pass pages past timers it could not fire.
    async fn list_due(
        &self,
        now: Timestamp,
        after: Option<TimerCursor>,
        limit: u32,
    ) -> Result<Vec<Timer>>;
    /// Removes a fired timer, if its `due_at` is still the one given (a re-armed timer stays).
    async fn delete(&self, timer_id: &str, due_at: Timestamp) -> Result<()>;
}

/// Shared handle to [`Timers`].
pub type TimersRef = Arc<dyn Timers>;
