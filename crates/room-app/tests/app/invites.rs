//! Invites, seats reserved for VIP, VIP-exclusive backgrounds and big-gift broadcasts,
//! through the service's use cases: an invite reaches the invitee's own feed (and nobody
//! else's) and holds its seat until it expires on the clock; a banned user cannot be invited;
//! a reserved seat refuses members without seat priority; an exclusive background is refused
//! before any part of the patch is applied; a big gift shows once in each other room of its
//! region, within the budget, and never when stale.

use std::time::Duration;

use room_app::broadcast::{BroadcastConfig, GiftBroadcaster};
use room_app::consumers::FactHandler;
use room_app::ports::VipGrants;
use room_app::{Error, RoomPatch};
use room_domain::{
    CommandKind, Event, EventEnvelope, GiftId, GiftSent, OrderId, Rejection, RoomId, SeatIndex,
    VipPrivileges,
};

use crate::support::{T0, World, rid, uid, user, user_actor as actor};

const GOLD: &str = "https://cdn.example.com/bg/gold.png";

fn rejected<T: std::fmt::Debug>(result: Result<T, Error>) -> Rejection {
    match result {
        Err(Error::Rejected(rejection)) => rejection,
        other => panic!("expected a rejection, got {other:?}"),
    }
}

/// Level 1 gives nothing; level 2 seat priority and the gold background.
async fn with_levels(world: &World) {
    world
        .store
        .put_vip_levels(
            0,
            &[
                VipPrivileges::default(),
                VipPrivileges {
                    seat_priority: true,
                    backgrounds: vec![GOLD.into()],
                    ..VipPrivileges::default()
                },
            ],
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn an_invite_reaches_the_invitee_alone_and_holds_its_seat_until_it_expires() {
    let world = World::new().await;
    let room = world.open_room("inv", "owner", &["alice", "carol"]).await;
    let mut carol = world.messenger.subscribe_user(&uid("carol"));
    let mut alice = world.messenger.subscribe_user(&uid("alice"));
    assert_eq!(world.messenger.user_channel_count(), 2);

    let invite = world
        .service
        .invite(
            &actor("owner"),
            &room,
            uid("carol"),
            Some(SeatIndex(2)),
            None,
        )
        .await
        .unwrap();
    let ttl = room_domain::RoomRules::default().invite_ttl_secs;
    assert_eq!(invite.expires_at, T0.plus_secs(ttl));
    let shown = tokio::time::timeout(Duration::from_secs(5), carol.recv())
        .await
        .expect("the invitee's feed shows the invite")
        .unwrap();
    assert!(matches!(
        shown.envelope.event,
        Event::RoomUserInvited { ref user, seat: Some(SeatIndex(2)), .. } if *user == uid("carol")
    ));
    assert!(
        tokio::time::timeout(Duration::from_millis(100), alice.recv())
            .await
            .is_err(),
        "nobody else's feed shows it"
    );
    drop(alice);
    assert_eq!(world.messenger.user_channel_count(), 1);

    let seat_view = |view: room_app::RoomView| view.seats[2].clone();
    let alice = actor("alice");
    let alice_takes_seat_2 = || {
        world.service.command(
            &alice,
            &room,
            CommandKind::TakeSeat { seat: SeatIndex(2) },
            None,
        )
    };
    let held = seat_view(world.service.get_room(&room).await.unwrap());
    assert_eq!(held.held_for, Some(uid("carol")));
    assert_eq!(
        rejected(alice_takes_seat_2().await),
        Rejection::SeatHeld { seat: SeatIndex(2) }
    );
    // At the expiry the hold is gone, in the view and for the room.
    world.clock.set(invite.expires_at);
    let released = seat_view(world.service.get_room(&room).await.unwrap());
    assert_eq!((released.held_for, released.held_until), (None, None));
    alice_takes_seat_2()
        .await
        .expect("the released seat is anyone's");
}

#[tokio::test]
async fn an_invitee_banned_from_the_room_is_refused_and_only_moderators_invite() {
    let world = World::new().await;
    let room = world.open_room("inv-ban", "owner", &["bob"]).await;
    world
        .service
        .command(
            &actor("owner"),
            &room,
            CommandKind::Kick {
                user: uid("bob"),
                ban_seconds: Some(600),
            },
            None,
        )
        .await
        .unwrap();
    assert!(matches!(
        rejected(
            world
                .service
                .invite(&actor("owner"), &room, uid("bob"), None, None)
                .await
        ),
        Rejection::Banned { .. }
    ));
    world.join(&room, "alice").await;
    assert_eq!(
        rejected(
            world
                .service
                .invite(&actor("alice"), &room, uid("carol"), None, None)
                .await
        ),
        Rejection::Forbidden
    );
}

#[tokio::test]
async fn a_seat_reserved_for_vip_takes_the_level_from_the_grants() {
    let world = World::new().await;
    with_levels(&world).await;
    let room = world
        .open_room("inv-vip", "owner", &["plain", "vera"])
        .await;
    world
        .store
        .grant_vip(&uid("vera"), 2, T0.plus_secs(60))
        .await
        .unwrap();
    world
        .service
        .command(
            &actor("owner"),
            &room,
            CommandKind::SetSeatVip {
                seat: SeatIndex(1),
                vip_only: true,
            },
            None,
        )
        .await
        .unwrap();
    let take = CommandKind::TakeSeat { seat: SeatIndex(1) };
    assert_eq!(
        rejected(
            world
                .service
                .command(&actor("plain"), &room, take.clone(), None)
                .await
        ),
        Rejection::VipSeat { seat: SeatIndex(1) }
    );
    world
        .service
        .command(&actor("vera"), &room, take.clone(), None)
        .await
        .expect("seat priority takes a VIP seat");
    assert!(world.service.get_room(&room).await.unwrap().seats[1].vip_only);
    // After the grant's expiry the privilege is gone at once.
    world
        .service
        .command(
            &actor("vera"),
            &room,
            CommandKind::LeaveSeat { seat: SeatIndex(1) },
            None,
        )
        .await
        .unwrap();
    world.clock.set(T0.plus_secs(60));
    assert_eq!(
        rejected(
            world
                .service
                .command(&actor("vera"), &room, take, None)
                .await
        ),
        Rejection::VipSeat { seat: SeatIndex(1) }
    );
}

#[tokio::test]
async fn an_exclusive_background_needs_its_level_and_refuses_the_whole_patch() {
    let world = World::new().await;
    with_levels(&world).await;
    let room = world.open_room("inv-bg", "owner", &[]).await;
    let patch = || RoomPatch {
        name: Some("Renamed".into()),
        background_url: Some(GOLD.into()),
        ..RoomPatch::default()
    };
    assert_eq!(
        rejected(
            world
                .service
                .update_room(&actor("owner"), &room, patch(), None)
                .await
        ),
        Rejection::VipBackground
    );
    // A bad URL is refused before any part of the patch too.
    let bad = RoomPatch {
        name: Some("Renamed".into()),
        background_url: Some("ftp://cdn.example.com/bg.png".into()),
        ..RoomPatch::default()
    };
    assert!(matches!(
        rejected(
            world
                .service
                .update_room(&actor("owner"), &room, bad, None)
                .await
        ),
        Rejection::InvalidUrl { .. }
    ));
    let view = world.service.get_room(&room).await.unwrap();
    assert_ne!(view.name, "Renamed", "nothing of the patch was applied");
    assert_eq!(view.background_url, None);
    // Any other background needs no level.
    world
        .service
        .update_room(
            &actor("owner"),
            &room,
            RoomPatch {
                background_url: Some("https://cdn.example.com/bg/plain.png".into()),
                ..RoomPatch::default()
            },
            None,
        )
        .await
        .expect("a background no level lists");
    world
        .store
        .grant_vip(&uid("owner"), 2, T0.plus_secs(3_600))
        .await
        .unwrap();
    // Granted beside the service: it counts once the cached absence is older than its TTL.
    world.clock.set(T0.plus_secs(60));
    let view = world
        .service
        .update_room(&actor("owner"), &room, patch(), None)
        .await
        .expect("level 2 lists it");
    assert_eq!(view.background_url.as_deref(), Some(GOLD));
    assert_eq!(view.name, "Renamed");
    // After the grant ends, the background the room shows may be sent again unchanged.
    world.clock.set(T0.plus_secs(3_600));
    world
        .service
        .update_room(&actor("owner"), &room, patch(), None)
        .await
        .expect("the background shown already stays");
}

/// Opens `room` in `region`.
async fn open_in(world: &World, room: &str, region: &str) -> RoomId {
    let room_id = rid(room);
    let create = CommandKind::CreateRoom {
        name: format!("room {room}"),
        seat_count: None,
        region: region.into(),
    };
    world
        .exec(&room_id, user(&format!("{room}-owner")), create)
        .await
        .unwrap();
    room_id
}

fn gift_fact(room: &RoomId, seq: u64, value: i64, at: room_domain::Timestamp) -> EventEnvelope {
    let event = Event::RoomGiftSent(GiftSent {
        order_id: OrderId::new(format!("order-{seq}")).unwrap(),
        sender: uid("whale"),
        recipients: vec![uid("star")],
        gift_id: GiftId::new("castle").unwrap(),
        count: 1,
        unit_price: room_domain::Coins(value),
        total_value: room_domain::Coins(value),
        heat_added: value,
        fuel_added: value,
        lucky: None,
        robot: false,
        billing_version: None,
        sender_nickname: Some("Whale".into()),
        sender_avatar_url: None,
    });
    EventEnvelope::new(room.clone(), seq, at, &event)
}

async fn broadcasts(world: &World, room: &RoomId) -> usize {
    world
        .log(room)
        .await
        .iter()
        .filter(|stored| matches!(stored.event, Event::RoomGiftBroadcast(_)))
        .count()
}

#[tokio::test]
async fn a_big_gift_shows_once_in_each_other_room_of_its_region_within_the_budget() {
    let world = World::new().await;
    let origin = open_in(&world, "sg-1", "sg").await;
    let sg2 = open_in(&world, "sg-2", "sg").await;
    let sg3 = open_in(&world, "sg-3", "sg").await;
    let empty = open_in(&world, "sg-empty", "sg").await;
    let us1 = open_in(&world, "us-1", "us").await;
    for room in [&origin, &sg2, &sg3, &us1] {
        world.join(room, &format!("{room}-listener")).await;
    }
    let broadcaster = GiftBroadcaster::new(
        world.service.clone(),
        BroadcastConfig {
            min_value: 10_000,
            max_rooms: 50,
            scan_rooms: 100,
            per_minute: 2,
            max_age: Duration::from_secs(60),
        },
    );

    // A small gift is not broadcast.
    broadcaster
        .handle(&gift_fact(&origin, 10, 9_999, T0))
        .await
        .unwrap();
    // A big one shows once in each other room of the region, even when handed over twice.
    let big = gift_fact(&origin, 11, 10_000, T0);
    broadcaster.handle(&big).await.unwrap();
    broadcaster.handle(&big).await.unwrap();
    let counts = [
        broadcasts(&world, &origin).await,
        broadcasts(&world, &sg2).await,
        broadcasts(&world, &sg3).await,
        broadcasts(&world, &empty).await,
        broadcasts(&world, &us1).await,
    ];
    assert_eq!(counts, [0, 1, 1, 0, 0], "nobody is in sg-empty");
    let shown = world
        .log(&sg2)
        .await
        .into_iter()
        .find_map(|stored| match stored.event {
            Event::RoomGiftBroadcast(broadcast) => Some(broadcast),
            _ => None,
        })
        .unwrap();
    assert_eq!(shown.from_room, origin);
    assert_eq!(shown.sender_nickname.as_deref(), Some("Whale"));

    // The repeat took the budget's second token: a third big gift in the minute is dropped.
    broadcaster
        .handle(&gift_fact(&origin, 12, 50_000, T0))
        .await
        .unwrap();
    assert_eq!(broadcasts(&world, &sg2).await, 1, "over the budget");
    // Half a minute refills one token; a stale gift still shows nowhere.
    world.clock.set(T0.plus_secs(90));
    broadcaster
        .handle(&gift_fact(&origin, 13, 50_000, T0))
        .await
        .unwrap();
    assert_eq!(broadcasts(&world, &sg2).await, 1, "stale");
    broadcaster
        .handle(&gift_fact(&origin, 14, 50_000, T0.plus_secs(89)))
        .await
        .unwrap();
    assert_eq!(broadcasts(&world, &sg2).await, 2);
    assert_eq!(broadcasts(&world, &us1).await, 0);
}
