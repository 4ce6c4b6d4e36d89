//! Invites (to the room past its password, to a seat held for the invitee) and seats reserved
//! for VIP.

use room_domain::{
    CommandKind, Event, PasswordHash, Rejection, RoomRules, SeatIndex, VipPrivileges, VipStanding,
};

use crate::fixture::{Room, id, join, seat, user};

fn invite(name: &str, index: Option<u8>) -> CommandKind {
    CommandKind::Invite {
        user: id(name),
        seat: index.map(SeatIndex),
    }
}

fn take(index: u8) -> CommandKind {
    CommandKind::TakeSeat { seat: seat(index) }
}

fn priority() -> VipStanding {
    VipStanding {
        level: 4,
        privileges: VipPrivileges {
            seat_priority: true,
            ..VipPrivileges::default()
        },
    }
}

#[test]
fn an_invited_seat_is_held_for_the_invitee_until_the_invite_expires() {
    let mut room = Room::open();
    room.join("carol");
    let ttl = room.rules.invite_ttl_secs;
    let events = room.ok(&user("admin"), invite("carol", Some(3)));
    assert_eq!(
        events,
        [Event::RoomUserInvited {
            user: id("carol"),
            seat: Some(seat(3)),
            invited_at: room.now,
            expires_at: room.now.plus_secs(ttl),
            by: Some(id("admin")),
        }]
    );
    assert_eq!(
        room.err(&user("alice"), take(3)),
        Rejection::SeatHeld { seat: seat(3) }
    );
    // Another seat is free for anyone.
    room.sit("alice", 4);
    // The invitee takes it, and the hold is gone with it.
    room.sit("carol", 3);
    assert_eq!(room.state.seats[3].hold, None);
}

#[test]
fn a_held_seat_is_released_when_the_invite_expires() {
    let mut room = Room::open();
    room.ok(&user("owner"), invite("carol", Some(2)));
    room.advance_secs(room.rules.invite_ttl_secs - 1);
    assert_eq!(
        room.err(&user("alice"), take(2)),
        Rejection::SeatHeld { seat: seat(2) }
    );
    room.advance_secs(1);
    room.sit("alice", 2);
}

#[test]
fn an_invite_lets_the_invitee_past_the_password_while_it_lasts() {
    let mut room = Room::open();
    room.ok(
        &user("owner"),
        CommandKind::SetLock {
            password_hash: Some(PasswordHash("argon2id$salt$hash".into())),
        },
    );
    assert_eq!(
        room.err(&user("carol"), join(false)),
        Rejection::WrongPassword
    );
    room.ok(&user("admin"), invite("carol", None));
    room.ok(&user("owner"), invite("dave", None));
    room.ok(&user("carol"), join(false));
    room.advance_secs(room.rules.invite_ttl_secs);
    assert_eq!(
        room.err(&user("dave"), join(false)),
        Rejection::WrongPassword
    );
}

#[test]
fn an_invite_is_refused_to_a_banned_user_and_to_a_taken_or_locked_seat() {
    let mut room = Room::open();
    room.ok(
        &user("owner"),
        CommandKind::Kick {
            user: id("bob"),
            ban_seconds: Some(600),
        },
    );
    assert!(matches!(
        room.err(&user("admin"), invite("bob", None)),
        Rejection::Banned { .. }
    ));
    room.sit("alice", 1);
    assert_eq!(
        room.err(&user("admin"), invite("carol", Some(1))),
        Rejection::SeatOccupied { seat: seat(1) }
    );
    room.ok(
        &user("owner"),
        CommandKind::LockSeat {
            seat: seat(2),
            locked: true,
        },
    );
    assert_eq!(
        room.err(&user("admin"), invite("carol", Some(2))),
        Rejection::SeatLocked { seat: seat(2) }
    );
    room.ok(&user("admin"), invite("carol", Some(3)));
    assert_eq!(
        room.err(&user("admin"), invite("dave", Some(3))),
        Rejection::SeatHeld { seat: seat(3) }
    );
    assert!(matches!(
        room.err(&user("admin"), invite("carol", Some(99))),
        Rejection::InvalidSeat { .. }
    ));
}

#[test]
fn only_moderators_invite() {
    let mut room = Room::open();
    assert_eq!(
        room.err(&user("alice"), invite("carol", None)),
        Rejection::Forbidden
    );
    assert_eq!(
        room.err(&user("alice"), invite("carol", Some(1))),
        Rejection::Forbidden
    );
}

#[test]
fn a_room_holds_at_most_max_invites_open_ones() {
    let mut room = Room::open_with(RoomRules {
        max_invites: 2,
        ..RoomRules::default()
    });
    room.ok(&user("admin"), invite("u1", None));
    room.ok(&user("admin"), invite("u2", None));
    // Inviting one of them again replaces their invite.
    room.ok(&user("admin"), invite("u2", Some(0)));
    assert_eq!(
        room.err(&user("admin"), invite("u3", None)),
        Rejection::TooManyInvites { max: 2 }
    );
    // Expired invites make room, and are dropped with the next one.
    room.advance_secs(room.rules.invite_ttl_secs);
    room.ok(&user("admin"), invite("u3", None));
    assert_eq!(room.state.invites.len(), 1);
}

#[test]
fn a_seat_reserved_for_vip_refuses_others() {
    let mut room = Room::open();
    room.join("carol");
    room.sit("alice", 2);
    let events = room.ok(
        &user("admin"),
        CommandKind::SetSeatVip {
            seat: seat(2),
            vip_only: true,
        },
    );
    assert_eq!(
        events,
        [Event::RoomMicSeatVip {
            seat: seat(2),
            vip_only: true,
            by: Some(id("admin")),
        }]
    );
    // Its holder stays.
    assert_eq!(room.occupant(2), Some("alice"));
    room.ok(&user("alice"), CommandKind::LeaveSeat { seat: seat(2) });
    assert_eq!(
        room.err(&user("bob"), take(2)),
        Rejection::VipSeat { seat: seat(2) }
    );
    let no_priority = VipStanding {
        level: 2,
        privileges: VipPrivileges {
            kick_shield: true,
            ..VipPrivileges::default()
        },
    };
    assert_eq!(
        room.run_vip(&user("bob"), take(2), no_priority),
        Err(Rejection::VipSeat { seat: seat(2) })
    );
    room.run_vip(&user("carol"), take(2), priority()).unwrap();
    assert_eq!(room.occupant(2), Some("carol"));
    assert_eq!(
        room.err(
            &user("alice"),
            CommandKind::SetSeatVip {
                seat: seat(3),
                vip_only: true
            }
        ),
        Rejection::Forbidden
    );
    room.ok(
        &user("owner"),
        CommandKind::SetSeatVip {
            seat: seat(2),
            vip_only: false,
        },
    );
    room.sit("bob", 2 + 1);
}

#[test]
fn a_new_invite_a_seat_taken_or_a_ban_releases_the_seat_held_for_the_user() {
    let mut room = Room::open();
    room.join("carol");
    room.ok(&user("admin"), invite("carol", Some(1)));
    room.ok(&user("admin"), invite("carol", Some(2)));
    assert_eq!(
        room.state.seats[1].hold, None,
        "the new invite replaced the old"
    );
    room.sit("alice", 1);
    // Taking another seat lets go of the held one.
    room.sit("carol", 3);
    assert_eq!(room.state.seats[2].hold, None);
    room.sit("bob", 2);
    // A ban ends the invite and its hold.
    room.ok(&user("owner"), invite("dave", Some(4)));
    room.ok(
        &user("owner"),
        CommandKind::Kick {
            user: id("dave"),
            ban_seconds: Some(60),
        },
    );
    assert_eq!(room.state.seats[4].hold, None);
    assert!(!room.state.invites.contains_key(&id("dave")));
}

#[test]
fn an_invitee_takes_the_seat_held_for_them_though_it_is_reserved_for_vip() {
    let mut room = Room::open();
    room.join("carol");
    room.ok(
        &user("owner"),
        CommandKind::SetSeatVip {
            seat: seat(2),
            vip_only: true,
        },
    );
    room.ok(&user("owner"), invite("carol", Some(2)));
    room.sit("carol", 2);
    assert_eq!(room.occupant(2), Some("carol"));
}

#[test]
fn an_invitee_who_left_comes_back_without_the_password_while_the_invite_lasts() {
    let mut room = Room::open();
    room.ok(
        &user("owner"),
        CommandKind::SetLock {
            password_hash: Some(PasswordHash("argon2id$salt$hash".into())),
        },
    );
    room.ok(&user("admin"), invite("carol", None));
    room.ok(&user("carol"), join(false));
    room.ok(&user("carol"), CommandKind::Leave);
    room.ok(&user("carol"), join(false));
    room.ok(&user("carol"), CommandKind::Leave);
    room.advance_secs(room.rules.invite_ttl_secs);
    assert_eq!(
        room.err(&user("carol"), join(false)),
        Rejection::WrongPassword
    );
}

#[test]
fn a_kick_ends_the_invite_and_an_invite_to_ones_own_seat_holds_nothing() {
    let mut room = Room::open();
    room.ok(
        &user("owner"),
        CommandKind::SetLock {
            password_hash: Some(PasswordHash("argon2id$salt$hash".into())),
        },
    );
    room.ok(&user("admin"), invite("carol", Some(3)));
    room.ok(&user("carol"), join(false));
    room.ok(
        &user("owner"),
        CommandKind::Kick {
            user: id("carol"),
            ban_seconds: None,
        },
    );
    assert_eq!(room.state.seats[3].hold, None, "a kick frees the held seat");
    assert_eq!(
        room.err(&user("carol"), join(false)),
        Rejection::WrongPassword,
        "a kick ends the invite"
    );
    room.sit("alice", 4);
    let events = room.ok(&user("admin"), invite("alice", Some(4)));
    assert!(matches!(
        events.as_slice(),
        [Event::RoomUserInvited { seat: None, .. }]
    ));
    assert_eq!(room.state.seats[4].hold, None);
}
