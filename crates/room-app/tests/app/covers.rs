//! Covers, one open room at a time: a cover another open room shows is refused, a closed
//! room's cover and one a room changed away from are free at once, a refused change lets its
//! claim go, and a claim left behind by a node that stopped is taken over after the grace.

use room_app::ports::{Clock, RoomDirectory};
use room_app::{COVER_CLAIM_GRACE, Error, IdempotencyKey, RoomPatch};
use room_domain::{RoomId, UserActor};

use crate::support::{World, uid};

fn actor(name: &str) -> UserActor {
    UserActor {
        user_id: uid(name),
        vip_level: 0,
        platform_admin: false,
    }
}

fn cover(url: &str) -> RoomPatch {
    RoomPatch {
        cover_url: Some(url.to_owned()),
        ..RoomPatch::default()
    }
}

async fn set_cover(world: &World, room: &RoomId, owner: &str, url: &str) -> Result<(), Error> {
    world
        .service
        .update_room(&actor(owner), room, cover(url), None)
        .await
        .map(|_| ())
}

async fn shown(world: &World, room: &RoomId) -> Option<String> {
    world
        .store
        .get_summary(room)
        .await
        .unwrap()
        .and_then(|summary| summary.cover_url)
}

const SUNSET: &str = "https://cdn.example.com/covers/sunset.png";
const DAWN: &str = "https://cdn.example.com/covers/dawn.png";

#[tokio::test]
async fn a_cover_shows_in_one_open_room_at_a_time() {
    let world = World::new().await;
    let a = world.open_room("cover-a", "alice", &[]).await;
    let b = world.open_room("cover-b", "bob", &[]).await;
    set_cover(&world, &a, "alice", SUNSET).await.unwrap();
    assert!(matches!(
        set_cover(&world, &b, "bob", SUNSET).await,
        Err(Error::CoverInUse(_))
    ));
    assert_eq!(shown(&world, &b).await, None, "nothing changed");
    // Setting one's own cover again is no conflict.
    set_cover(&world, &a, "alice", SUNSET).await.unwrap();

    // Changed away from: free at once.
    set_cover(&world, &a, "alice", DAWN).await.unwrap();
    set_cover(&world, &b, "bob", SUNSET).await.unwrap();
    assert_eq!(shown(&world, &b).await.as_deref(), Some(SUNSET));
    // Cleared: free at once too.
    set_cover(&world, &a, "alice", "").await.unwrap();
    let c = world.open_room("cover-c", "carol", &[]).await;
    set_cover(&world, &c, "carol", DAWN).await.unwrap();

    // A closed room's cover is free at once.
    world
        .service
        .close_room(&actor("carol"), &c, None)
        .await
        .unwrap();
    set_cover(&world, &a, "alice", DAWN).await.unwrap();
    assert_eq!(shown(&world, &a).await.as_deref(), Some(DAWN));
}

#[tokio::test]
async fn a_refused_change_lets_its_claim_go() {
    let world = World::new().await;
    let a = world.open_room("cover-a", "alice", &["mallory"]).await;
    let b = world.open_room("cover-b", "bob", &[]).await;
    // Not a moderator: the room refuses, and the cover stays free.
    assert!(matches!(
        set_cover(&world, &a, "mallory", SUNSET).await,
        Err(Error::Rejected(_))
    ));
    set_cover(&world, &b, "bob", SUNSET).await.unwrap();
    // A bad URL is refused before anything is claimed.
    assert!(matches!(
        set_cover(&world, &a, "alice", "ftp://cdn.example.com/x.png").await,
        Err(Error::Rejected(_))
    ));
}

#[tokio::test]
async fn a_claim_left_behind_is_taken_over_after_the_grace() {
    let world = World::new().await;
    let a = world.open_room("cover-a", "alice", &[]).await;
    let b = world.open_room("cover-b", "bob", &[]).await;
    // A node claimed the cover for room a and stopped before the room showed it.
    world
        .store
        .claim_cover(SUNSET, &a, world.clock.now())
        .await
        .unwrap();
    world.clock.advance(COVER_CLAIM_GRACE / 2);
    assert!(
        matches!(
            set_cover(&world, &b, "bob", SUNSET).await,
            Err(Error::CoverInUse(_))
        ),
        "within the grace, room a may be committing it"
    );
    world.clock.advance(COVER_CLAIM_GRACE / 2);
    set_cover(&world, &b, "bob", SUNSET).await.unwrap();
    assert_eq!(shown(&world, &b).await.as_deref(), Some(SUNSET));
    // Room a's late change now finds the cover taken.
    assert!(matches!(
        set_cover(&world, &a, "alice", SUNSET).await,
        Err(Error::CoverInUse(_))
    ));
}

/// A repeat of a keyed change is answered from the room's log; what it lets go is decided by
/// what the room shows, so the cover a later change set keeps its claim.
#[tokio::test]
async fn a_repeated_keyed_change_lets_go_nothing_the_room_shows() {
    let world = World::new().await;
    let a = world.open_room("cover-a", "alice", &[]).await;
    let b = world.open_room("cover-b", "bob", &[]).await;
    let first = IdempotencyKey::new("PATCH /v1/rooms/{room_id}", "first").unwrap();
    let second = IdempotencyKey::new("PATCH /v1/rooms/{room_id}", "second").unwrap();
    let owner = actor("alice");
    world
        .service
        .update_room(&owner, &a, cover(SUNSET), Some(&first))
        .await
        .unwrap();
    world
        .service
        .update_room(&owner, &a, cover(DAWN), Some(&second))
        .await
        .unwrap();
    // The first change again, late: the room answers it from its log and still shows dawn.
    world
        .service
        .update_room(&owner, &a, cover(SUNSET), Some(&first))
        .await
        .unwrap();
    assert_eq!(shown(&world, &a).await.as_deref(), Some(DAWN));
    assert!(
        matches!(
            set_cover(&world, &b, "bob", DAWN).await,
            Err(Error::CoverInUse(_))
        ),
        "the cover room a shows is still claimed"
    );
    set_cover(&world, &b, "bob", SUNSET).await.unwrap();
}

/// The room's own answer comes before the cover's: a member who may not change the profile
/// is refused as such, and a closed room as closed, even when the cover is in use.
#[tokio::test]
async fn the_rooms_refusal_comes_before_the_covers() {
    let world = World::new().await;
    let a = world.open_room("cover-a", "alice", &["mallory"]).await;
    let b = world.open_room("cover-b", "bob", &[]).await;
    set_cover(&world, &b, "bob", SUNSET).await.unwrap();
    assert!(matches!(
        set_cover(&world, &a, "mallory", SUNSET).await,
        Err(Error::Rejected(room_domain::Rejection::Forbidden))
    ));
    world
        .service
        .close_room(&actor("alice"), &a, None)
        .await
        .unwrap();
    assert!(matches!(
        set_cover(&world, &a, "alice", SUNSET).await,
        Err(Error::Rejected(room_domain::Rejection::RoomClosed))
    ));
}
