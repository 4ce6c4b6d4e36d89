//! System messages: one room, every open room of a region, every open room; each room shows
//! the message once, closed rooms are counted apart, and only a platform admin sends one.

use room_app::{Error, MessageReport, MessageTarget};
use room_domain::{CommandKind, Event, Field, Rejection, RoomId, UserActor};

use crate::support::{World, rid, user};

fn staff() -> UserActor {
    UserActor {
        user_id: room_domain::UserId::new("staff").unwrap(),
        vip_level: 0,
        platform_admin: true,
    }
}

/// The system messages in `room`'s log: (text, sender).
async fn messages(world: &World, room: &RoomId) -> Vec<(String, Option<String>)> {
    world
        .log(room)
        .await
        .into_iter()
        .filter_map(|stored| match stored.event {
            Event::RoomSystemMessage { text, by } => Some((text, by.map(|u| u.to_string()))),
            _ => None,
        })
        .collect()
}

/// Opens `room` in `region`, owned by `owner`.
async fn open_in(world: &World, room: &str, owner: &str, region: &str) -> RoomId {
    let room_id = rid(room);
    let create = CommandKind::CreateRoom {
        name: format!("room {room}"),
        seat_count: None,
        region: region.into(),
    };
    world.exec(&room_id, user(owner), create).await.unwrap();
    room_id
}

#[tokio::test]
async fn a_message_reaches_the_rooms_of_its_target_once_each() {
    let world = World::new().await;
    let sg1 = open_in(&world, "sg-1", "alice", "sg").await;
    let sg2 = open_in(&world, "sg-2", "bob", "sg").await;
    let us1 = open_in(&world, "us-1", "carol", "us").await;
    let closed = open_in(&world, "sg-closed", "dave", "sg").await;
    world
        .exec(&closed, user("dave"), CommandKind::CloseRoom)
        .await
        .unwrap();
    let service = &world.service;

    let report = service
        .send_system_message(
            &staff(),
            MessageTarget::Region("sg".into()),
            "Hello sg".into(),
            None,
        )
        .await
        .unwrap();
    assert_eq!(
        report,
        MessageReport {
            sent: 2,
            closed: 0,
            failed: 0
        }
    );
    for room in [&sg1, &sg2] {
        assert_eq!(
            messages(&world, room).await,
            [("Hello sg".to_owned(), Some("staff".to_owned()))]
        );
    }
    assert!(messages(&world, &us1).await.is_empty());
    assert!(messages(&world, &closed).await.is_empty());

    let report = service
        .send_system_message(&staff(), MessageTarget::All, "Hello all".into(), None)
        .await
        .unwrap();
    assert_eq!(report.sent, 3, "{report:?}");
    assert_eq!(messages(&world, &us1).await.len(), 1);

    let report = service
        .send_system_message(
            &staff(),
            MessageTarget::Room(us1.clone()),
            "Just you".into(),
            None,
        )
        .await
        .unwrap();
    assert_eq!(report.sent, 1);
    assert_eq!(
        messages(&world, &us1).await.last().unwrap().0,
        "Just you".to_owned()
    );
    let refused = service
        .send_system_message(&staff(), MessageTarget::Room(closed), "Hi".into(), None)
        .await;
    assert!(
        matches!(refused, Err(Error::Rejected(Rejection::RoomClosed))),
        "{refused:?}"
    );
}

#[tokio::test]
async fn a_repeat_under_one_key_is_shown_once_in_each_room() {
    let world = World::new().await;
    let rooms = [
        open_in(&world, "r-1", "alice", "sg").await,
        open_in(&world, "r-2", "bob", "sg").await,
    ];
    let key = room_app::IdempotencyKey::new("POST /v1/admin/system-messages", "notice-2026-12-05")
        .unwrap();
    for _ in 0..2 {
        let report = world
            .service
            .send_system_message(&staff(), MessageTarget::All, "Once".into(), Some(&key))
            .await
            .unwrap();
        assert_eq!(report.sent, 2);
    }
    for room in &rooms {
        assert_eq!(messages(&world, room).await.len(), 1, "{room}");
    }
}

#[tokio::test]
async fn only_a_platform_admin_sends_and_the_text_is_checked_before_any_room() {
    let world = World::new().await;
    let room = open_in(&world, "r-1", "alice", "sg").await;
    let owner = UserActor {
        user_id: room_domain::UserId::new("alice").unwrap(),
        vip_level: 0,
        platform_admin: false,
    };
    for target in [MessageTarget::Room(room.clone()), MessageTarget::All] {
        let refused = world
            .service
            .send_system_message(&owner, target, "Hi".into(), None)
            .await;
        assert!(
            matches!(refused, Err(Error::Rejected(Rejection::Forbidden))),
            "{refused:?}"
        );
    }
    for (text, rejection) in [
        (
            " \n".to_owned(),
            Rejection::FieldEmpty {
                field: Field::Message,
            },
        ),
        (
            "x".repeat(501),
            Rejection::FieldTooLong {
                field: Field::Message,
                max: 500,
            },
        ),
    ] {
        let refused = world
            .service
            .send_system_message(&staff(), MessageTarget::All, text, None)
            .await;
        match refused {
            Err(Error::Rejected(refusal)) => assert_eq!(refusal, rejection),
            other => panic!("{other:?}"),
        }
    }
    assert!(messages(&world, &room).await.is_empty());
}
