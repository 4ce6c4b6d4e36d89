//! [`KnownRooms`]: the rooms a node found created, so that requests for rooms other nodes
//! run are checked without a read.

use std::collections::HashSet;
use std::sync::Mutex;

use room_domain::RoomId;

/// The most rooms a node remembers as created ([`KnownRooms`]).
pub const KNOWN_ROOMS_REMEMBERED: usize = 65_536;

/// Rooms this node found in the directory: a node that does not run a room (it forwards the
/// room's requests to its owner) checks each request's room without a read. A created room
/// keeps its short id for good, so a remembered room never has to be forgotten. Only rooms
/// that exist are remembered, at most [`KNOWN_ROOMS_REMEMBERED`]; past that the memory starts
/// over.
#[derive(Debug, Default)]
pub struct KnownRooms(Mutex<HashSet<RoomId>>);

impl KnownRooms {
    /// Whether `room_id` was remembered.
    pub fn contains(&self, room_id: &RoomId) -> bool {
        self.lock().contains(room_id)
    }

    /// Remembers `room_id` as created.
    pub fn remember(&self, room_id: &RoomId) {
        let mut rooms = self.lock();
        if rooms.len() >= KNOWN_ROOMS_REMEMBERED {
            rooms.clear();
        }
        rooms.insert(room_id.clone());
    }

    /// How many rooms are remembered.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<RoomId>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_rooms_stay_within_their_bound() {
        let known = KnownRooms::default();
        let room = |i: usize| RoomId::new(format!("room-{i}")).unwrap();
        for i in 0..KNOWN_ROOMS_REMEMBERED {
            known.remember(&room(i));
        }
        assert_eq!(known.len(), KNOWN_ROOMS_REMEMBERED);
        assert!(known.contains(&room(0)));
        known.remember(&room(KNOWN_ROOMS_REMEMBERED));
        assert_eq!(known.len(), 1, "full: the memory starts over");
        assert!(known.contains(&room(KNOWN_ROOMS_REMEMBERED)));
        assert!(!known.contains(&room(0)));
    }
}
