//! Pins of the room lists, as platform admins make them: a room placed at a position of one
//! list (a tab and its scope) for a time window. The lists place them at read time
//! ([`Ranking::page`](super::Ranking::page)).

use room_domain::{Field, RoomId, Timestamp};

use super::RoomLists;
use crate::error::{Error, Result};
use crate::ports::{Change, MAX_PIN_PAGE, MAX_PIN_POSITION, PinnedList, ProfilePatch, RoomPin};

/// A pin as an admin asks for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPin {
    /// The room.
    pub room_id: RoomId,
    /// The list.
    pub list: PinnedList,
    /// The position, from 1.
    pub position: u32,
    /// When it starts showing (now without it).
    pub starts_at: Option<Timestamp>,
    /// When it stops showing.
    pub ends_at: Timestamp,
}

/// Why a pin breaks a rule at `now`, if it does: the field and what is wrong. The region of
/// a `region` pin follows the rooms' region rule, the country of a `country` pin the
/// profiles' country rule; the position is 1 to [`MAX_PIN_POSITION`]; the window ends after it
/// starts, and in the future.
pub fn pin_problem(pin: &NewPin, now: Timestamp) -> Option<(&'static str, String)> {
    match &pin.list {
        PinnedList::Region(region) => {
            if Field::Region.check(region).is_err() || region.trim().is_empty() {
                return Some((
                    "region",
                    format!("{region:?} is not a region: 1 to 32 characters"),
                ));
            }
        }
        PinnedList::Country(country) => {
            let patch = ProfilePatch {
                country: Change::Set(country.clone()),
                ..ProfilePatch::default()
            };
            if let Some(problem) = patch.problem() {
                return Some(problem);
            }
        }
        PinnedList::Hot | PinnedList::New => {}
    }
    if !(1..=MAX_PIN_POSITION).contains(&pin.position) {
        return Some((
            "position",
            format!(
                "position {} is outside 1..={MAX_PIN_POSITION}",
                pin.position
            ),
        ));
    }
    let starts_at = pin.starts_at.unwrap_or(now);
    if pin.ends_at <= starts_at {
        return Some(("ends_at_ms", "the pin must end after it starts".to_owned()));
    }
    if pin.ends_at <= now {
        return Some((
            "ends_at_ms",
            "the pin's window has ended already".to_owned(),
        ));
    }
    None
}

impl RoomLists {
    /// Makes a pin: it shows from its start (at once when it has started) on every node
    /// within one refresh. A room never created:
    /// [`Rejection::RoomNotFound`](room_domain::Rejection::RoomNotFound); a pin that breaks a
    /// rule ([`pin_problem`]): [`Error::Invalid`].
    pub async fn create_pin(&self, pin: NewPin) -> Result<RoomPin> {
        let now = self.deps.clock.now();
        if let Some((field, problem)) = pin_problem(&pin, now) {
            return Err(Error::Invalid(format!("{field}: {problem}")));
        }
        if self
            .deps
            .directory
            .get_summary(&pin.room_id)
            .await?
            .is_none()
        {
            return Err(Error::Rejected(room_domain::Rejection::RoomNotFound));
        }
        let stored = RoomPin {
            // Pin ids sort by creation: the admins' list reads in the order pins were made.
            pin_id: format!(
                "p{:013}-{:08x}",
                now.0.max(0),
                self.deps.ids.random() as u32
            ),
            room_id: pin.room_id,
            list: pin.list,
            position: pin.position,
            starts_at: pin.starts_at.unwrap_or(now),
            ends_at: pin.ends_at,
            created_at: now,
        };
        self.deps.pins.create(&stored).await?;
        metrics::counter!("room_lists_pins_created_total").increment(1);
        Ok(stored)
    }

    /// Deletes a pin: it vanishes from every node's lists within one refresh. Answers
    /// whether there was one.
    pub async fn delete_pin(&self, pin_id: &str) -> Result<bool> {
        self.deps.pins.delete(pin_id).await
    }

    /// The pins, ended ones too, in the order they were made, after `after`, at most `limit`
    /// (and at most [`MAX_PIN_PAGE`]).
    pub async fn list_pins(&self, after: Option<String>, limit: u32) -> Result<Vec<RoomPin>> {
        self.deps.pins.list(after, limit.min(MAX_PIN_PAGE)).await
    }
}
