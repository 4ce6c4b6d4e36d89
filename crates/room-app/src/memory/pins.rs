//! [`RoomPins`] of the [`InMemoryStore`]: pins by pin id, so that pages come in pin id order;
//! the live ones are picked and sorted by start on each call.

use std::collections::btree_map::Entry;
use std::ops::Bound;

use async_trait::async_trait;
use room_domain::Timestamp;

use super::InMemoryStore;
use crate::error::{Error, Result};
use crate::ports::{MAX_LIVE_PINS, MAX_PIN_PAGE, RoomPin, RoomPins};

#[async_trait]
impl RoomPins for InMemoryStore {
    async fn create(&self, pin: &RoomPin) -> Result<()> {
        match self.lock().pins.entry(pin.pin_id.clone()) {
            Entry::Occupied(_) => Err(Error::AlreadyExists(format!("pin {}", pin.pin_id))),
            Entry::Vacant(slot) => {
                slot.insert(pin.clone());
                Ok(())
            }
        }
    }

    async fn get(&self, pin_id: &str) -> Result<Option<RoomPin>> {
        Ok(self.lock().pins.get(pin_id).cloned())
    }

    async fn delete(&self, pin_id: &str) -> Result<bool> {
        Ok(self.lock().pins.remove(pin_id).is_some())
    }

    async fn list(&self, after: Option<String>, limit: u32) -> Result<Vec<RoomPin>> {
        let from = match &after {
            Some(after) => Bound::Excluded(after.as_str()),
            None => Bound::Unbounded,
        };
        Ok(self
            .lock()
            .pins
            .range::<str, _>((from, Bound::Unbounded))
            .take(limit.min(MAX_PIN_PAGE) as usize)
            .map(|(_, pin)| pin.clone())
            .collect())
    }

    async fn list_live(&self, now: Timestamp) -> Result<Vec<RoomPin>> {
        let mut live: Vec<RoomPin> = self
            .lock()
            .pins
            .values()
            .filter(|pin| pin.ends_at > now)
            .cloned()
            .collect();
        live.sort_by(|a, b| (a.starts_at, &a.pin_id).cmp(&(b.starts_at, &b.pin_id)));
        live.truncate(MAX_LIVE_PINS as usize);
        Ok(live)
    }
}
