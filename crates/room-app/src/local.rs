//! In-process adapters for the embedded single-node mode: a lease this node always holds, a
//! presence table in memory, a broadcast messenger that feeds the SSE stream, the system clock
//! and random ids.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use room_domain::{Event, RoomId, Timestamp, UserId};
use tokio::sync::broadcast;

use crate::error::Result;
use crate::ports::{
    Clock, DisplayMessage, IdGen, Lease, LeaseHolder, Messenger, MessengerRef, Presence,
    StaleCursor, StaleMember,
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

    async fn join_group(&self, _group: &str) -> Result<Vec<String>> {
        Ok(Vec::new())
    }

    async fn leave_group(&self, _group: &str) -> Result<()> {
        Ok(())
    }

    /// One node: its in-process locks serialize what the lock is for.
    async fn try_lock(&self, _name: &str) -> Result<Option<String>> {
        Ok(Some(String::new()))
    }

    async fn unlock(&self, _name: &str, _token: &str) -> Result<()> {
        Ok(())
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

    async fn compare_and_set(
        &self,
        user: &UserId,
        expected: Option<RoomId>,
        next: Option<RoomId>,
        now: Timestamp,
    ) -> Result<Option<RoomId>> {
        let mut users = self.lock();
        let current = users.get(user).map(|(room, _)| room.clone());
        if current == expected {
            match next {
                Some(room) => users.insert(user.clone(), (room, now)),
                None => users.remove(user),
            };
        }
        Ok(current)
    }

    async fn get_current_room(&self, user: &UserId) -> Result<Option<RoomId>> {
        Ok(self.lock().get(user).map(|(room, _)| room.clone()))
    }

    async fn list_stale(
        &self,
        before: Timestamp,
        after: Option<StaleCursor>,
        limit: u32,
    ) -> Result<Vec<StaleMember>> {
        let mut stale: Vec<StaleMember> = self
            .lock()
            .iter()
            .filter(|(_, (_, seen))| *seen < before)
            .filter(|(user, (_, seen))| {
                after.as_ref().is_none_or(|(after_seen, after_user)| {
                    (*seen, *user) > (*after_seen, after_user)
                })
            })
            .map(|(user, (room, seen))| StaleMember {
                room_id: room.clone(),
                user: user.clone(),
                seen: *seen,
            })
            .collect();
        stale.sort_by(|a, b| (a.seen, &a.user).cmp(&(b.seen, &b.user)));
        stale.truncate(limit as usize);
        Ok(stale)
    }
}

/// Display events on an in-process broadcast channel per room: the embedded stand-in for IM,
/// read by the API's Server-Sent Events stream. Rooms nobody watches cost nothing: a room's
/// channel is made by its first [`RoomWatch`] and dropped with its last.
///
/// The events addressed to one user (an invite: [`addressee`]) also go to that user's
/// channel, read by the user's own stream ([`BroadcastMessenger::subscribe_user`]), made and
/// dropped the same way.
#[derive(Debug)]
pub struct BroadcastMessenger {
    rooms: Arc<Mutex<Channels<RoomId>>>,
    users: Arc<Mutex<Channels<UserId>>>,
    capacity: usize,
}

type Channels<K> = HashMap<K, broadcast::Sender<DisplayMessage>>;

fn lock_channels<K>(channels: &Mutex<Channels<K>>) -> std::sync::MutexGuard<'_, Channels<K>> {
    channels.lock().unwrap_or_else(|e| e.into_inner())
}

/// The user a display event is addressed to, beside its room: the invitee of an invite.
pub fn addressee(event: &Event) -> Option<&UserId> {
    match event {
        Event::RoomUserInvited { user, .. } => Some(user),
        _ => None,
    }
}

impl BroadcastMessenger {
    /// A messenger keeping up to `capacity` undelivered messages per watcher (a slower watcher
    /// skips ahead).
    pub fn new(capacity: usize) -> Self {
        BroadcastMessenger {
            rooms: Arc::new(Mutex::new(HashMap::new())),
            users: Arc::new(Mutex::new(HashMap::new())),
            capacity,
        }
    }

    /// Watches a room's display events from now on, until the [`RoomWatch`] is dropped.
    pub fn subscribe(&self, room_id: &RoomId) -> RoomWatch {
        Watch::open(&self.rooms, room_id, self.capacity)
    }

    /// Watches the display events addressed to `user` ([`addressee`]), from any room, from
    /// now on, until the [`UserWatch`] is dropped.
    pub fn subscribe_user(&self, user: &UserId) -> UserWatch {
        Watch::open(&self.users, user, self.capacity)
    }

    /// How many rooms have a channel, that is at least one watcher.
    pub fn channel_count(&self) -> usize {
        lock_channels(&self.rooms).len()
    }

    /// How many users have a channel, that is at least one stream.
    pub fn user_channel_count(&self) -> usize {
        lock_channels(&self.users).len()
    }
}

/// Hands every commit's display events to several messengers in turn (the node's event
/// streams and Tencent IM, say). Each one is best effort on its own; none can fail another.
pub struct FanOutMessenger {
    targets: Vec<MessengerRef>,
}

impl FanOutMessenger {
    /// A messenger publishing to each of `targets`, in order.
    pub fn new(targets: Vec<MessengerRef>) -> Self {
        FanOutMessenger { targets }
    }
}

#[async_trait]
impl Messenger for FanOutMessenger {
    async fn publish(&self, room_id: &RoomId, messages: Vec<DisplayMessage>) {
        if let Some((last, first)) = self.targets.split_last() {
            for target in first {
                target.publish(room_id, messages.clone()).await;
            }
            last.publish(room_id, messages).await;
        }
    }
}

/// One watcher of a room's display events ([`BroadcastMessenger::subscribe`]). Dropping the
/// last watcher of a room drops the room's channel and its buffer.
pub type RoomWatch = Watch<RoomId>;

/// One watcher of the display events addressed to a user
/// ([`BroadcastMessenger::subscribe_user`]).
pub type UserWatch = Watch<UserId>;

/// One watcher of a channel of display events, keyed by room or user. Dropping the last
/// watcher of a key drops its channel and its buffer.
#[derive(Debug)]
pub struct Watch<K: Eq + std::hash::Hash + Clone> {
    receiver: broadcast::Receiver<DisplayMessage>,
    key: K,
    channels: Arc<Mutex<Channels<K>>>,
}

impl<K: Eq + std::hash::Hash + Clone> Watch<K> {
    fn open(channels: &Arc<Mutex<Channels<K>>>, key: &K, capacity: usize) -> Self {
        let receiver = lock_channels(channels)
            .entry(key.clone())
            .or_insert_with(|| broadcast::channel(capacity).0)
            .subscribe();
        Watch {
            receiver,
            key: key.clone(),
            channels: channels.clone(),
        }
    }

    /// The next message; see [`broadcast::Receiver::recv`] (a watcher that fell behind learns
    /// how many messages it missed).
    pub async fn recv(&mut self) -> Result<DisplayMessage, broadcast::error::RecvError> {
        self.receiver.recv().await
    }
}

impl<K: Eq + std::hash::Hash + Clone> Drop for Watch<K> {
    fn drop(&mut self) {
        // Under the lock no one subscribes in between: a count of one is this watcher alone.
        let mut channels = lock_channels(&self.channels);
        if channels
            .get(&self.key)
            .is_some_and(|sender| sender.receiver_count() <= 1)
        {
            channels.remove(&self.key);
        }
    }
}

#[async_trait]
impl Messenger for BroadcastMessenger {
    async fn publish(&self, room_id: &RoomId, messages: Vec<DisplayMessage>) {
        {
            let users = lock_channels(&self.users);
            if !users.is_empty() {
                for message in &messages {
                    if let Some(sender) =
                        addressee(&message.envelope.event).and_then(|user| users.get(user))
                    {
                        let _ = sender.send(message.clone());
                    }
                }
            }
        }
        let rooms = lock_channels(&self.rooms);
        let Some(sender) = rooms.get(room_id) else {
            return;
        };
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_room_has_a_channel_while_it_has_a_watcher() {
        let messenger = BroadcastMessenger::new(4);
        let (room, other) = (RoomId::new("r1").unwrap(), RoomId::new("r2").unwrap());
        let first = messenger.subscribe(&room);
        let second = messenger.subscribe(&room);
        let third = messenger.subscribe(&other);
        assert_eq!(messenger.channel_count(), 2);
        drop(first);
        assert_eq!(messenger.channel_count(), 2);
        drop(second);
        assert_eq!(messenger.channel_count(), 1);
        drop(third);
        assert_eq!(messenger.channel_count(), 0);
        // A new watcher gets a new channel.
        let _again = messenger.subscribe(&room);
        assert_eq!(messenger.channel_count(), 1);
    }
}
