//! In-process adapters for the embedded single-node mode: a lease this node always holds, a
//! presence table in memory, a broadcast messenger that feeds the SSE stream, the system clock
//! and random ids.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use room_domain::{RoomId, Timestamp, UserId};
use tokio::sync::broadcast;

use crate::Result;
use crate::ports::{
    Clock, DisplayMessage, IdGen, Lease, LeaseHolder, Messenger, Presence, StaleMember,
};

/// The lease of a single node: it owns every room. The epoch check in storage still fences a
/// second process that opens the same database.
#[derive(Debug, Default, Clone, Copy)]
pub struct LocalLease;

#[async_trait]
impl Lease for LocalLease {
    async fn acquire(&self, _room_id: &RoomId) -> Result<bool> {
        Ok(true)
    }
    async fn renew(&self, _room_id: &RoomId) -> Result<bool> {
        Ok(true)
    }
    async fn renew_all(&self, rooms: &[RoomId]) -> Result<Vec<bool>> {
        Ok(vec![true; rooms.len()])
    }
    async fn release(&self, _room_id: &RoomId) -> Result<()> {
        Ok(())
    }
    /// No other node exists to hold it: a room is always this node's to take.
    async fn get_holder(&self, _room_id: &RoomId) -> Result<Option<LeaseHolder>> {
        Ok(None)
    }
}

/// Heartbeats in memory. After a restart the table starts empty; a room loaded from storage
/// restores its members ([`Presence::restore`]), who then count as present until the eviction
/// threshold passes without a heartbeat.
#[derive(Debug, Default)]
pub struct LocalPresence {
    users: Mutex<HashMap<UserId, (RoomId, Timestamp)>>,
}

impl LocalPresence {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<UserId, (RoomId, Timestamp)>> {
        self.users.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[async_trait]
impl Presence for LocalPresence {
    async fn heartbeat(
        &self,
        room_id: &RoomId,
        user: &UserId,
        now: Timestamp,
    ) -> Result<Option<RoomId>> {
        let previous = self.lock().insert(user.clone(), (room_id.clone(), now));
        Ok(previous
            .map(|(room, _)| room)
            .filter(|room| room != room_id))
    }

    async fn restore(&self, room_id: &RoomId, user: &UserId, now: Timestamp) -> Result<()> {
        self.lock()
            .entry(user.clone())
            .or_insert_with(|| (room_id.clone(), now));
        Ok(())
    }

    async fn remove(&self, room_id: &RoomId, user: &UserId) -> Result<()> {
        let mut users = self.lock();
        if users.get(user).is_some_and(|(room, _)| room == room_id) {
            users.remove(user);
        }
        Ok(())
    }

    async fn remove_if_seen(
        &self,
        room_id: &RoomId,
        user: &UserId,
        seen: Timestamp,
    ) -> Result<bool> {
        let mut users = self.lock();
        let unchanged = users.get(user) == Some(&(room_id.clone(), seen));
        if unchanged {
            users.remove(user);
        }
        Ok(unchanged)
    }

    async fn get_current_room(&self, user: &UserId) -> Result<Option<RoomId>> {
        Ok(self.lock().get(user).map(|(room, _)| room.clone()))
    }

    async fn list_stale(&self, before: Timestamp, limit: u32) -> Result<Vec<StaleMember>> {
        Ok(self
            .lock()
            .iter()
            .filter(|(_, (_, seen))| *seen < before)
            .take(limit as usize)
            .map(|(user, (room, seen))| StaleMember {
                room_id: room.clone(),
                user: user.clone(),
                seen: *seen,
            })
            .collect())
    }
}

/// Display events on an in-process broadcast channel per room: the embedded stand-in for IM,
/// read by the API's Server-Sent Events stream. Rooms nobody watches cost nothing.
#[derive(Debug)]
pub struct BroadcastMessenger {
    rooms: Mutex<HashMap<RoomId, broadcast::Sender<DisplayMessage>>>,
    capacity: usize,
}

impl BroadcastMessenger {
    /// A messenger keeping up to `capacity` undelivered messages per watcher (a slower watcher
    /// skips ahead).
    pub fn new(capacity: usize) -> Self {
        BroadcastMessenger {
            rooms: Mutex::new(HashMap::new()),
            capacity,
        }
    }

    /// Watches a room's display events from now on.
    pub fn subscribe(&self, room_id: &RoomId) -> broadcast::Receiver<DisplayMessage> {
        let mut rooms = self.rooms.lock().unwrap_or_else(|e| e.into_inner());
        rooms
            .entry(room_id.clone())
            .or_insert_with(|| broadcast::channel(self.capacity).0)
            .subscribe()
    }
}

#[async_trait]
impl Messenger for BroadcastMessenger {
    async fn publish(&self, room_id: &RoomId, messages: Vec<DisplayMessage>) {
        let mut rooms = self.rooms.lock().unwrap_or_else(|e| e.into_inner());
        let Some(sender) = rooms.get(room_id) else {
            return;
        };
        if sender.receiver_count() == 0 {
            rooms.remove(room_id);
            return;
        }
        for message in messages {
            let _ = sender.send(message);
        }
    }
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or_default();
        Timestamp(i64::try_from(millis).unwrap_or(i64::MAX))
    }
}

/// Random ids from the standard library's randomly seeded hasher, plus a counter so ids of one
/// process never repeat.
#[derive(Debug, Default)]
pub struct RandomIds {
    counter: AtomicU64,
}

impl RandomIds {
    /// A new generator.
    pub fn new() -> Self {
        Self::default()
    }
}

impl IdGen for RandomIds {
    fn next_id(&self) -> String {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        format!("{:016x}{:08x}", self.random(), n as u32)
    }

    fn random(&self) -> u64 {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u64(n);
        hasher.finish()
    }
}
