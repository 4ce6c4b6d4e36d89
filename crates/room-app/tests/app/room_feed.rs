//! A member's feed of a room's display events ([`RoomFeed`]) over the in-memory store:
//! outsiders refused, what a reconnecting watcher is sent of what it missed (the events in
//! order, nothing, or a resync when it missed too many), and which events end a watch.

use std::sync::Arc;

use room_app::room_feed::{CatchUp, RoomFeed, ends_watch};
use room_app::{BroadcastMessenger, Error};
use room_domain::{CommandKind, Event, Rejection, RoomId};

use crate::support::{World, uid, user, user_actor};

fn feed(world: &World, replay_max: u64) -> RoomFeed {
    RoomFeed::new(
        world.service.clone(),
        Arc::new(BroadcastMessenger::new(64)),
        replay_max,
    )
}

/// A room where `owner` and alice are, and bob came and went: five events.
async fn busy_room(world: &World) -> RoomId {
    let room = world.open_room("feed", "owner", &["alice"]).await;
    world.join(&room, "bob").await;
    world
        .exec(&room, user("bob"), CommandKind::Leave)
        .await
        .expect("bob left");
    room
}

#[tokio::test]
async fn only_members_may_watch() {
    let world = World::new().await;
    let room = busy_room(&world).await;
    let feed = feed(&world, 100);
    for answer in [
        feed.member_version(&room, &uid("bob")).await,
        feed.open(&room, &uid("bob"), None)
            .await
            .map(|opened| opened.version),
    ] {
        assert!(
            matches!(answer, Err(Error::Rejected(Rejection::NotAMember { ref user })) if *user == uid("bob")),
            "{answer:?}"
        );
    }
    let version = feed
        .member_version(&room, &uid("alice"))
        .await
        .expect("a member");
    assert_eq!(version, world.state(&room).await.version);
}

#[tokio::test]
async fn a_watch_without_a_last_event_gets_no_catch_up() {
    let world = World::new().await;
    let room = busy_room(&world).await;
    let opened = feed(&world, 100)
        .open(&room, &uid("alice"), None)
        .await
        .expect("opened");
    assert_eq!(opened.version, world.state(&room).await.version);
    assert_eq!(opened.catch_up, None);
    assert_eq!(opened.skip_through, 0);
}

#[tokio::test]
async fn a_reconnect_gets_what_it_missed_in_order_or_a_resync() {
    let world = World::new().await;
    let room = busy_room(&world).await;
    let version = world.state(&room).await.version;
    assert!(version >= 4, "version {version}");
    let seen = version - 3;

    let opened = feed(&world, 100)
        .open(&room, &uid("alice"), Some(seen))
        .await
        .expect("opened");
    assert_eq!(opened.skip_through, version);
    let Some(CatchUp::Missed(missed)) = opened.catch_up else {
        panic!("expected the missed events, got {:?}", opened.catch_up);
    };
    let seqs: Vec<u64> = missed.iter().map(|message| message.envelope.seq).collect();
    assert_eq!(seqs, (seen + 1..=version).collect::<Vec<_>>());

    // Up to date: nothing missed.
    let opened = feed(&world, 100)
        .open(&room, &uid("alice"), Some(version))
        .await
        .expect("opened");
    assert_eq!(opened.catch_up, Some(CatchUp::Missed(Vec::new())));

    // More missed than may be replayed: read the room again.
    let opened = feed(&world, 2)
        .open(&room, &uid("alice"), Some(seen))
        .await
        .expect("opened");
    assert_eq!(opened.catch_up, Some(CatchUp::Resync));
    assert_eq!(opened.skip_through, version);
}

#[tokio::test]
async fn a_watch_ends_when_its_watcher_leaves_or_is_kicked_or_the_room_closes() {
    let world = World::new().await;
    let room = world.open_room("ends", "owner", &["alice", "bob"]).await;
    world
        .exec(&room, user("alice"), CommandKind::Leave)
        .await
        .expect("alice left");
    world
        .service
        .command(
            &user_actor("owner"),
            &room,
            CommandKind::Kick {
                user: uid("bob"),
                ban_seconds: None,
            },
            None,
        )
        .await
        .expect("bob kicked");
    world
        .service
        .close_room(&user_actor("owner"), &room, None)
        .await
        .expect("closed");
    let log = world.log(&room).await;
    let find = |pick: fn(&Event) -> bool| {
        log.iter()
            .map(|stored| &stored.event)
            .find(|event| pick(event))
            .expect("the event is in the log")
            .clone()
    };
    let left = find(|event| matches!(event, Event::RoomUserLeft { .. }));
    let kicked = find(|event| matches!(event, Event::RoomUserKicked { .. }));
    let joined = find(|event| matches!(event, Event::RoomUserJoined { .. }));
    let closed = find(|event| matches!(event, Event::RoomClosed { .. }));

    assert!(ends_watch(&left, &uid("alice")));
    assert!(!ends_watch(&left, &uid("bob")), "another's leave");
    assert!(ends_watch(&kicked, &uid("bob")));
    assert!(!ends_watch(&kicked, &uid("alice")), "another's kick");
    assert!(
        ends_watch(&closed, &uid("carol")),
        "a closed room ends every watch"
    );
    assert!(!ends_watch(&joined, &uid("owner")));
}
