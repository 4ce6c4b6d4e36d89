//! Pins ([`RoomPins`]): rooms a platform admin places at a position of one room list for a
//! time window.

use std::sync::Arc;

use async_trait::async_trait;
use room_domain::{RoomId, Timestamp};
use serde::{Deserialize, Serialize};

use crate::error::Result;

/// The deepest position a pin may take (positions count from 1).
pub const MAX_PIN_POSITION: u32 = 100;

/// The most pins [`RoomPins::list_live`] returns: the lists show at most this many pins at
/// once, those that start first.
pub const MAX_LIVE_PINS: u32 = 1_000;

/// The most pins one call of [`RoomPins::list`] returns, whatever it asks.
pub const MAX_PIN_PAGE: u32 = 200;

/// The longest pin id, in bytes.
pub const MAX_PIN_ID_BYTES: usize = 64;

/// The list a pin shows in: one tab and its scope.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum PinnedList {
    /// The `hot` tab of the whole app.
    Hot,
    /// The `new` tab of the whole app.
    New,
    /// The `region` tab of one region.
    Region(String),
    /// The `country` tab of one country.
    Country(String),
}

impl PinnedList {
    /// The tab's name in the API (`hot`, `new`, `region`, `country`).
    pub fn tab(&self) -> &'static str {
        match self {
            PinnedList::Hot => "hot",
            PinnedList::New => "new",
            PinnedList::Region(_) => "region",
            PinnedList::Country(_) => "country",
        }
    }

    /// The scope: the region or country, empty for the whole app.
    pub fn scope(&self) -> &str {
        match self {
            PinnedList::Hot | PinnedList::New => "",
            PinnedList::Region(scope) | PinnedList::Country(scope) => scope,
        }
    }

    /// The list of a tab and scope as [`PinnedList::tab`] and [`PinnedList::scope`] name
    /// them; `None` for an unknown tab, a scope given to a tab of the whole app, or none
    /// given to a tab that needs one.
    pub fn from_parts(tab: &str, scope: &str) -> Option<PinnedList> {
        match (tab, scope.is_empty()) {
            ("hot", true) => Some(PinnedList::Hot),
            ("new", true) => Some(PinnedList::New),
            ("region", false) => Some(PinnedList::Region(scope.to_owned())),
            ("country", false) => Some(PinnedList::Country(scope.to_owned())),
            _ => None,
        }
    }
}

/// A room pinned into one list at a position while its window is open.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoomPin {
    /// The pin's id (at most [`MAX_PIN_ID_BYTES`] bytes).
    pub pin_id: String,
    /// The pinned room.
    pub room_id: RoomId,
    /// The list it shows in.
    pub list: PinnedList,
    /// Its position in the list, from 1 (at most [`MAX_PIN_POSITION`]).
    pub position: u32,
    /// When it starts showing.
    pub starts_at: Timestamp,
    /// When it stops showing (after `starts_at`).
    pub ends_at: Timestamp,
    /// When it was made.
    pub created_at: Timestamp,
}

impl RoomPin {
    /// Whether the pin shows at `now`: its window is open (`starts_at <= now < ends_at`).
    pub fn shows_at(&self, now: Timestamp) -> bool {
        self.starts_at <= now && now < self.ends_at
    }
}

/// The pins platform admins make.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait RoomPins: Send + Sync {
    /// Stores a pin; a pin of the same id:
    /// [`Error::AlreadyExists`](crate::Error::AlreadyExists), and nothing written.
    async fn create(&self, pin: &RoomPin) -> Result<()>;
    /// The pin of this id.
    async fn get(&self, pin_id: &str) -> Result<Option<RoomPin>>;
    /// Deletes a pin; answers whether there was one.
    async fn delete(&self, pin_id: &str) -> Result<bool>;
    /// Every pin, ended ones too, in pin id order after `after` (from the first without it),
    /// at most `limit` (and at most [`MAX_PIN_PAGE`]).
    async fn list(&self, after: Option<String>, limit: u32) -> Result<Vec<RoomPin>>;
    /// The pins whose window has not ended at `now` (`ends_at > now`, started or not),
    /// earliest start first (ties by pin id), at most [`MAX_LIVE_PINS`].
    async fn list_live(&self, now: Timestamp) -> Result<Vec<RoomPin>>;
}

/// Shared handle to [`RoomPins`].
pub type RoomPinsRef = Arc<dyn RoomPins>;
