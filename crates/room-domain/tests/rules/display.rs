//! The display fields a command carries (`Command::display`) reach the display event it
//! produces, and nothing else: the state keeps none of them.

use room_domain::{
    Actor, Command, CommandId, CommandKind, Ctx, Event, MicChange, UserDisplay, decide, evolve,
};

use crate::fixture::{Room, gift, id, seat, system, user};

fn carol() -> UserDisplay {
    UserDisplay {
        nickname: Some("Carol ✨".into()),
        avatar_url: Some("https://cdn.example/a/carol.png".into()),
    }
}

/// Decides `kind` by `actor` with `display`, applies the events, and answers them.
fn shown(room: &mut Room, actor: &Actor, kind: CommandKind, display: UserDisplay) -> Vec<Event> {
    let command =
        Command::new(CommandId::new("cmd-shown").unwrap(), kind).with_display(Some(display));
    let ctx = Ctx {
        now: room.now,
        actor,
        random: room.random,
        rules: &room.rules,
    };
    let events = decide(&room.state, &command, &ctx).expect("accepted");
    for event in &events {
        evolve(&mut room.state, event);
    }
    events
}

#[test]
fn a_join_carries_the_joiner_display() {
    let mut room = Room::open();
    let before = room.state.clone();
    let events = shown(
        &mut room,
        &user("carol"),
        CommandKind::Join {
            password_verified: false,
            verified_lock: None,
        },
        carol(),
    );
    match events.as_slice() {
        [
            Event::RoomUserJoined {
                user,
                nickname,
                avatar_url,
                ..
            },
        ] => {
            assert_eq!(user, &id("carol"));
            assert_eq!(nickname.as_deref(), Some("Carol ✨"));
            assert_eq!(
                avatar_url.as_deref(),
                Some("https://cdn.example/a/carol.png")
            );
        }
        other => panic!("{other:?}"),
    }
    // The state is what a join without display fields makes.
    let mut plain = Room {
        state: before,
        rules: room.rules.clone(),
        now: room.now,
        random: room.random,
    };
    plain.join("carol");
    assert_eq!(plain.state, room.state);
}

#[test]
fn a_seat_carries_the_holder_display() {
    let mut room = Room::open();
    let events = shown(
        &mut room,
        &user("alice"),
        CommandKind::TakeSeat { seat: seat(1) },
        UserDisplay {
            nickname: Some("Alice".into()),
            avatar_url: None,
        },
    );
    match events.as_slice() {
        [
            Event::RoomMicChanged {
                change:
                    MicChange::Up {
                        user,
                        nickname,
                        avatar_url,
                        ..
                    },
                ..
            },
        ] => {
            assert_eq!(user, &id("alice"));
            assert_eq!(nickname.as_deref(), Some("Alice"));
            assert_eq!(avatar_url, &None);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_gift_carries_the_sender_display() {
    let mut room = Room::open();
    let events = shown(
        &mut room,
        &system(),
        CommandKind::ApplyGift(gift("alice", &["bob"], 10, 1)),
        carol(),
    );
    let Some(Event::RoomGiftSent(sent)) = events.first() else {
        panic!("{events:?}");
    };
    assert_eq!(sent.sender_nickname.as_deref(), Some("Carol ✨"));
    assert_eq!(
        sent.sender_avatar_url.as_deref(),
        Some("https://cdn.example/a/carol.png")
    );
    // Without display fields the gift carries none.
    let plain = room.ok(
        &system(),
        CommandKind::ApplyGift({
            let mut again = gift("alice", &["bob"], 10, 1);
            again.order_id = room_domain::OrderId::new("order-2").unwrap();
            again
        }),
    );
    let Some(Event::RoomGiftSent(sent)) = plain.first() else {
        panic!("{plain:?}");
    };
    assert_eq!(
        (&sent.sender_nickname, &sent.sender_avatar_url),
        (&None, &None)
    );
}
