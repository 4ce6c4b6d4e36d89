//! RTC events ([`RtcEvents`]) over the in-memory store: a user who left the RTC room loses
//! their seat once per event, a definite refusal of the room is told from a failure, and rooms
//! are found by id or by short id (as a number or in digits) or told unknown.

use std::sync::Mutex;

use room_app::RoomService;
use room_app::rtc_events::{RtcEvent, RtcEventKind, RtcEvents, RtcOutcome, RtcRoom};
use room_domain::{CommandKind, RoomId, SeatIndex};

use crate::support::{World, cid, uid, user_actor};

/// A room made through the service (so it has a short id), with `owner` and `members` in it.
async fn room_with(service: &RoomService, owner: &str, members: &[&str]) -> (RoomId, u32) {
    let view = service
        .create_room(&user_actor(owner), "rtc".into(), None, "sg".into(), None)
        .await
        .expect("room created");
    for name in std::iter::once(&owner).chain(members) {
        service
            .join(&user_actor(name), &view.room_id, None, None)
            .await
            .expect("joined");
    }
    (view.room_id, view.short_id.expect("a short id"))
}

async fn take_seat(world: &World, room: &RoomId, name: &str, seat: u8) {
    world
        .service
        .command(
            &user_actor(name),
            room,
            CommandKind::TakeSeat {
                seat: SeatIndex(seat),
            },
            None,
        )
        .await
        .expect("seated");
}

fn event(kind: RtcEventKind, room: RtcRoom, user: &str) -> RtcEvent {
    RtcEvent {
        kind,
        room,
        user: uid(user),
        at: None,
    }
}

#[tokio::test]
async fn a_user_who_left_rtc_loses_their_seat_once_per_event() {
    let world = World::new().await;
    let (room, _) = room_with(&world.service, "owner", &["alice"]).await;
    take_seat(&world, &room, "alice", 1).await;
    let events = RtcEvents::new(world.service.clone());
    let left = || {
        event(
            RtcEventKind::UserLeft,
            RtcRoom::Text(room.to_string()),
            "alice",
        )
    };
    let named = Mutex::new(Vec::new());
    let name = |room_id: &RoomId| {
        named.lock().unwrap().push(room_id.clone());
        cid("sys-rtc-left-1")
    };

    assert_eq!(
        events.apply(left(), name).await.unwrap(),
        RtcOutcome::Applied
    );
    assert_eq!(world.state(&room).await.seat_of(&uid("alice")), None);
    assert_eq!(
        *named.lock().unwrap(),
        vec![room.clone()],
        "named in its room"
    );

    // A repeat of the same event is the same command: it cannot free the seat taken since.
    take_seat(&world, &room, "alice", 1).await;
    let again = events
        .apply(left(), |_: &RoomId| cid("sys-rtc-left-1"))
        .await
        .unwrap();
    assert_eq!(again, RtcOutcome::Applied);
    assert_eq!(
        world.state(&room).await.seat_of(&uid("alice")),
        Some(SeatIndex(1))
    );
}

#[tokio::test]
async fn a_mic_confirmed_for_someone_without_a_seat_is_refused_for_good() {
    let world = World::new().await;
    let (room, _) = room_with(&world.service, "owner", &["bob"]).await;
    let events = RtcEvents::new(world.service.clone());
    let published = event(
        RtcEventKind::AudioPublishStarted,
        RtcRoom::Text(room.to_string()),
        "bob",
    );
    let outcome = events
        .apply(published, |_: &RoomId| cid("sys-rtc-pub-1"))
        .await
        .unwrap();
    assert_eq!(outcome, RtcOutcome::Refused);
}

#[tokio::test]
async fn rooms_are_found_by_id_or_short_id_or_told_unknown() {
    let world = World::new().await;
    let (room, short_id) = room_with(&world.service, "owner", &["carol"]).await;
    let events = RtcEvents::new(world.service.clone());
    let unused_short_id: u32 = if short_id == 100_000 {
        100_001
    } else {
        100_000
    };
    let cases = [
        (RtcRoom::Text(room.to_string()), RtcOutcome::Applied),
        (RtcRoom::Number(u64::from(short_id)), RtcOutcome::Applied),
        (RtcRoom::Text(short_id.to_string()), RtcOutcome::Applied),
        (RtcRoom::Text("nowhere".into()), RtcOutcome::UnknownRoom),
        (RtcRoom::Text(" not an id ".into()), RtcOutcome::UnknownRoom),
        (
            RtcRoom::Number(u64::from(unused_short_id)),
            RtcOutcome::UnknownRoom,
        ),
        (RtcRoom::Number(u64::MAX), RtcOutcome::UnknownRoom),
    ];
    for (i, (named, expected)) in cases.into_iter().enumerate() {
        let found = Mutex::new(None);
        let outcome = events
            .apply(
                event(RtcEventKind::UserLeft, named.clone(), "carol"),
                |room_id: &RoomId| {
                    *found.lock().unwrap() = Some(room_id.clone());
                    cid(&format!("sys-rtc-find-{i}"))
                },
            )
            .await
            .unwrap();
        assert_eq!(outcome, expected, "{named:?}");
        let found = found.lock().unwrap().clone();
        match expected {
            RtcOutcome::Applied => assert_eq!(found.as_ref(), Some(&room), "{named:?}"),
            _ => assert_eq!(found, None, "{named:?}: no command named"),
        }
    }
}
