//! Presence eviction against heartbeats and rejoins that come between the listing of stale
//! members and their eviction.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use room_app::ports::{Clock, Presence, StaleCursor, StaleMember};
use room_app::{LocalPresence, Result, workers};
use room_domain::{RoomId, Timestamp, UserId};

use crate::support::{World, uid, user_actor};

const TIMEOUT: Duration = Duration::from_secs(90);

/// [`LocalPresence`] whose next listing of stale members can be one taken earlier: what a
/// pass sees when members act between its listing and its evictions.
#[derive(Default)]
struct EarlierListing {
    inner: LocalPresence,
    next_listing: Mutex<Option<Vec<StaleMember>>>,
}

#[async_trait]
impl Presence for EarlierListing {
    async fn restore(&self, room: &RoomId, user: &UserId, now: Timestamp) -> Result<()> {
        self.inner.restore(room, user, now).await
    }
    async fn remove(&self, room: &RoomId, user: &UserId) -> Result<()> {
        self.inner.remove(room, user).await
    }
    async fn remove_if_seen(&self, room: &RoomId, user: &UserId, seen: Timestamp) -> Result<bool> {
        self.inner.remove_if_seen(room, user, seen).await
    }
    async fn compare_and_set(
        &self,
        user: &UserId,
        expected: Option<RoomId>,
        next: Option<RoomId>,
        now: Timestamp,
    ) -> Result<Option<RoomId>> {
        self.inner.compare_and_set(user, expected, next, now).await
    }
    async fn get_current_room(&self, user: &UserId) -> Result<Option<RoomId>> {
        self.inner.get_current_room(user).await
    }
    async fn list_stale(
        &self,
        before: Timestamp,
        after: Option<StaleCursor>,
        limit: u32,
    ) -> Result<Vec<StaleMember>> {
        if after.is_none()
            && let Some(listing) = self.next_listing.lock().unwrap().take()
        {
            return Ok(listing);
        }
        self.inner.list_stale(before, after, limit).await
    }
}

/// A world where bob has joined room `r1` and then gone quiet for longer than the timeout,
/// and the listing of stale members taken at that moment.
async fn bob_gone_quiet() -> (World, Arc<EarlierListing>, RoomId, Vec<StaleMember>) {
    let presence = Arc::new(EarlierListing::default());
    let world = World::builder().presence(presence.clone()).build().await;
    let alice = user_actor("alice");
    let room = world
        .service
        .create_room(&alice, "room".into(), None, "sg".into(), None)
        .await
        .unwrap()
        .room_id;
    world.service.join(&alice, &room, None, None).await.unwrap();
    world
        .service
        .join(&user_actor("bob"), &room, None, None)
        .await
        .unwrap();
    world.clock.advance_secs(100);
    world
        .service
        .heartbeat(&alice, &room)
        .await
        .expect("alice is still there");
    let cutoff = Timestamp(Clock::now(&*world.clock).0 - TIMEOUT.as_millis() as i64);
    let listing = presence.inner.list_stale(cutoff, None, 100).await.unwrap();
    assert_eq!(listing.len(), 1, "{listing:?}");
    assert_eq!(listing[0].user, uid("bob"));
    (world, presence, room, listing)
}

async fn is_member(world: &World, room: &RoomId, name: &str) -> bool {
    world.state(room).await.members.contains_key(&uid(name))
}

#[tokio::test]
async fn a_heartbeat_between_the_listing_and_the_eviction_keeps_the_member() {
    let (world, presence, room, listing) = bob_gone_quiet().await;
    let bob = user_actor("bob");
    world.service.heartbeat(&bob, &room).await.unwrap();

    *presence.next_listing.lock().unwrap() = Some(listing);
    let evicted = workers::evict_stale_members(&world.service, TIMEOUT, 100)
        .await
        .unwrap();
    assert_eq!(evicted, 0);
    assert!(is_member(&world, &room, "bob").await);
    assert_eq!(
        world.service.current_room(&uid("bob")).await.unwrap(),
        Some(room.clone())
    );

    // Without the heartbeat, the next pass (later on) evicts him.
    world.clock.advance_secs(100);
    world
        .service
        .heartbeat(&user_actor("alice"), &room)
        .await
        .unwrap();
    let evicted = workers::evict_stale_members(&world.service, TIMEOUT, 100)
        .await
        .unwrap();
    assert_eq!(evicted, 1);
    assert!(!is_member(&world, &room, "bob").await);
    assert_eq!(world.service.current_room(&uid("bob")).await.unwrap(), None);
}

#[tokio::test]
async fn a_rejoin_between_the_listing_and_the_eviction_keeps_the_member() {
    let (world, presence, room, listing) = bob_gone_quiet().await;
    let bob = user_actor("bob");
    world.service.leave(&bob, &room, None).await.unwrap();
    world.clock.advance_secs(1);
    world.service.join(&bob, &room, None, None).await.unwrap();

    *presence.next_listing.lock().unwrap() = Some(listing);
    let evicted = workers::evict_stale_members(&world.service, TIMEOUT, 100)
        .await
        .unwrap();
    assert_eq!(evicted, 0);
    assert!(is_member(&world, &room, "bob").await);
}

#[tokio::test]
async fn a_rejoin_after_presence_let_go_still_keeps_the_member() {
    // The room itself checks the heartbeat the eviction saw against the membership: a rejoin
    // that lands between presence letting go and the room's eviction is kept too.
    let (world, _presence, room, listing) = bob_gone_quiet().await;
    let stale = &listing[0];
    assert!(
        world
            .service
            .ports()
            .presence
            .remove_if_seen(&stale.room_id, &stale.user, stale.seen)
            .await
            .unwrap()
    );
    let bob = user_actor("bob");
    world.service.leave(&bob, &room, None).await.unwrap();
    world.clock.advance_secs(1);
    world.service.join(&bob, &room, None, None).await.unwrap();
    let reply = world
        .service
        .system_command(
            &room,
            room_domain::CommandKind::Evict {
                user: uid("bob"),
                seen: Some(stale.seen),
            },
        )
        .await
        .unwrap();
    assert!(reply.events.is_empty(), "{:?}", reply.events);
    assert!(is_member(&world, &room, "bob").await);
}
