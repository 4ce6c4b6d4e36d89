//! The mic seats: taking, moving, locking, leaving and emptying seats, the publish deadline and
//! the RTC vendor's word on it, and seat mutes.

use room_domain::{
    CommandKind, Event, MicChange, MicDownReason, Rejection, SeatSessionId, Timestamp,
};

use crate::fixture::{
    NOON, Room, cannot_moderate, downs, id, lock_seat, mute_seat, not_a_member, platform_admin,
    remove_from_seat, seat, system, types, user,
};

// ---------------------------------------------------------------------------------------------
// Seats.
// ---------------------------------------------------------------------------------------------

#[test]
fn taking_a_seat_opens_a_session_with_a_publish_deadline() {
    let mut room = Room::open();
    let events = room.sit("alice", 2);
    assert_eq!(
        events,
        [Event::RoomMicChanged {
            seat: seat(2),
            change: MicChange::Up {
                user: id("alice"),
                session: SeatSessionId(1),
                since: NOON,
                publish_deadline: NOON.plus_secs(room.rules.mic_publish_timeout_secs),
                robot: false,
                nickname: None,
                avatar_url: None,
            },
        }]
    );
    assert_eq!(room.occupant(2), Some("alice"));
    assert_eq!(room.state.next_seat_session, SeatSessionId(2));
}

#[test]
fn taking_another_seat_moves_the_user() {
    let mut room = Room::open();
    room.sit("alice", 0);
    let events = room.sit("alice", 5);
    assert_eq!(
        events,
        [
            Event::RoomMicChanged {
                seat: seat(0),
                change: MicChange::Down {
                    user: id("alice"),
                    session: SeatSessionId(1),
                    reason: MicDownReason::Moved,
                    robot: false,
                },
            },
            Event::RoomMicChanged {
                seat: seat(5),
                change: MicChange::Up {
                    user: id("alice"),
                    session: SeatSessionId(2),
                    since: NOON,
                    publish_deadline: NOON.plus_secs(30),
                    robot: false,
                    nickname: None,
                    avatar_url: None,
                },
            },
        ]
    );
    assert_eq!(room.occupant(0), None);
    assert_eq!(room.occupant(5), Some("alice"));
    assert_eq!(room.state.seat_of(&id("alice")), Some(seat(5)));
}

#[test]
fn taking_ones_own_seat_again_changes_nothing() {
    let mut room = Room::open();
    room.sit("alice", 1);
    assert_eq!(room.sit("alice", 1), []);
    assert_eq!(room.session(1), SeatSessionId(1));
}

#[test]
fn an_occupied_seat_cannot_be_taken() {
    let mut room = Room::open();
    room.sit("alice", 1);
    room.sit("bob", 2);
    assert_eq!(
        room.err(&user("bob"), CommandKind::TakeSeat { seat: seat(1) }),
        Rejection::SeatOccupied { seat: seat(1) }
    );
    // Even the owner does not take an occupied seat.
    assert_eq!(
        room.err(&user("owner"), CommandKind::TakeSeat { seat: seat(1) }),
        Rejection::SeatOccupied { seat: seat(1) }
    );
    assert_eq!(room.occupant(1), Some("alice"));
    assert_eq!(room.occupant(2), Some("bob"));
}

#[test]
fn seats_beyond_the_seat_count_do_not_exist() {
    let mut room = Room::open();
    assert_eq!(room.state.seats.len(), 8);
    let invalid = Rejection::InvalidSeat {
        seat: seat(8),
        seat_count: 8,
    };
    for kind in [
        CommandKind::TakeSeat { seat: seat(8) },
        CommandKind::LeaveSeat { seat: seat(8) },
        mute_seat(8, true),
    ] {
        assert_eq!(room.err(&user("alice"), kind), invalid);
    }
    assert_eq!(room.err(&user("admin"), lock_seat(8, true)), invalid);
    assert_eq!(room.err(&user("admin"), remove_from_seat(8)), invalid);
    assert_eq!(
        room.err(
            &system(),
            CommandKind::MicPublishTimeout {
                seat: seat(8),
                session: SeatSessionId(1),
            }
        ),
        invalid
    );
}

#[test]
fn only_members_take_seats() {
    let mut room = Room::open();
    assert_eq!(
        room.err(&user("carol"), CommandKind::TakeSeat { seat: seat(0) }),
        not_a_member("carol")
    );
    assert_eq!(
        room.err(&system(), CommandKind::TakeSeat { seat: seat(0) }),
        Rejection::Forbidden
    );
    // The owner, too, must be present.
    room.ok(&user("owner"), CommandKind::Leave);
    assert_eq!(
        room.err(&user("owner"), CommandKind::TakeSeat { seat: seat(0) }),
        not_a_member("owner")
    );
}

#[test]
fn locked_seats_cannot_be_taken() {
    let mut room = Room::open();
    room.sit("alice", 0);
    let events = room.ok(&user("admin"), lock_seat(5, true));
    assert_eq!(
        events,
        [Event::RoomMicSeatLocked {
            seat: seat(5),
            locked: true,
            by: Some(id("admin")),
        }]
    );
    assert_eq!(room.ok(&user("admin"), lock_seat(5, true)), []);
    assert_eq!(
        room.err(&user("bob"), CommandKind::TakeSeat { seat: seat(5) }),
        Rejection::SeatLocked { seat: seat(5) }
    );
    // A refused move leaves the user where they were.
    assert_eq!(
        room.err(&user("alice"), CommandKind::TakeSeat { seat: seat(5) }),
        Rejection::SeatLocked { seat: seat(5) }
    );
    assert_eq!(room.occupant(0), Some("alice"));

    room.ok(&user("admin"), lock_seat(5, false));
    let events = room.sit("alice", 5);
    assert_eq!(downs(&events), [(0, "alice", MicDownReason::Moved)]);
    assert_eq!(room.occupant(5), Some("alice"));
}

#[test]
fn locking_an_occupied_seat_removes_its_occupant() {
    let mut room = Room::open();
    room.sit("alice", 2);
    let events = room.ok(&user("admin"), lock_seat(2, true));
    assert_eq!(types(&events), ["RoomMicChanged", "RoomMicSeatLocked"]);
    assert_eq!(downs(&events), [(2, "alice", MicDownReason::SeatLocked)]);
    assert_eq!(room.occupant(2), None);
    assert!(room.state.seats[2].locked);
    assert!(room.is_member("alice"));
}

#[test]
fn only_the_holder_leaves_a_seat() {
    let mut room = Room::open();
    room.sit("alice", 1);
    let not_on_seat = Rejection::NotOnSeat { user: id("bob") };
    assert_eq!(
        room.err(&user("bob"), CommandKind::LeaveSeat { seat: seat(1) }),
        not_on_seat
    );
    assert_eq!(
        room.err(&user("bob"), CommandKind::LeaveSeat { seat: seat(2) }),
        not_on_seat
    );
    let events = room.ok(&user("alice"), CommandKind::LeaveSeat { seat: seat(1) });
    assert_eq!(downs(&events), [(1, "alice", MicDownReason::Left)]);
    assert_eq!(room.occupant(1), None);
}

#[test]
fn moderators_remove_users_from_seats_but_not_from_empty_ones() {
    let mut room = Room::open();
    room.sit("alice", 1);
    let events = room.ok(&user("admin"), remove_from_seat(1));
    assert_eq!(downs(&events), [(1, "alice", MicDownReason::Removed)]);
    assert!(room.is_member("alice"));
    assert_eq!(
        room.err(&user("admin"), remove_from_seat(1)),
        Rejection::SeatEmpty { seat: seat(1) }
    );
}

#[test]
fn rtc_leave_frees_the_seat_but_keeps_the_member() {
    let mut room = Room::open();
    room.sit("alice", 4);
    let left = || CommandKind::RtcUserLeft {
        user: id("alice"),
        at: None,
    };
    let events = room.ok(&system(), left());
    assert_eq!(downs(&events), [(4, "alice", MicDownReason::RtcLeft)]);
    assert!(room.is_member("alice"));
    assert_eq!(room.ok(&system(), left()), []);
}

#[test]
fn rtc_events_from_before_the_seat_session_change_nothing() {
    let mut room = Room::open();
    room.sit("alice", 4);
    let since = room.state.seats[4]
        .occupant
        .as_ref()
        .expect("alice sits")
        .since;
    let left = |ms: i64| CommandKind::RtcUserLeft {
        user: id("alice"),
        at: Some(Timestamp(ms)),
    };
    let confirm = |ms: i64| CommandKind::ConfirmMicPublish {
        user: id("alice"),
        at: Some(Timestamp(ms)),
    };
    let earlier = since.0 - room_domain::RTC_CLOCK_SKEW_MS - 1;
    // About an earlier seat session (replayed, or late): nothing changes.
    assert_eq!(room.ok(&system(), confirm(earlier)), []);
    assert_eq!(room.ok(&system(), left(earlier)), []);
    let occupant = room.state.seats[4]
        .occupant
        .as_ref()
        .expect("alice still sits");
    assert!(occupant.publish_deadline.is_some());
    // Within the vendor's allowed clock lag, the event is about this session.
    let lagging = since.0 - room_domain::RTC_CLOCK_SKEW_MS;
    assert_eq!(room.ok(&system(), confirm(lagging)).len(), 1);
    let events = room.ok(&system(), left(lagging));
    assert_eq!(downs(&events), [(4, "alice", MicDownReason::RtcLeft)]);
}

// ---------------------------------------------------------------------------------------------
// Mic publishing.
// ---------------------------------------------------------------------------------------------

#[test]
fn the_publish_timeout_frees_the_seat_at_its_deadline_not_before() {
    let mut room = Room::open();
    room.sit("alice", 2);
    let session = room.session(2);
    let timeout = || CommandKind::MicPublishTimeout {
        seat: seat(2),
        session,
    };
    let deadline = NOON.plus_secs(room.rules.mic_publish_timeout_secs);

    // Early (a clock behind the timer's): not stale, still to come.
    room.now = Timestamp(deadline.0 - 1);
    assert_eq!(
        room.err(&system(), timeout()),
        Rejection::PublishDeadlineAhead { deadline }
    );
    assert_eq!(room.occupant(2), Some("alice"));

    room.now = deadline;
    let events = room.ok(&system(), timeout());
    assert_eq!(
        downs(&events),
        [(2, "alice", MicDownReason::PublishTimeout)]
    );
    assert_eq!(room.occupant(2), None);
    // The timer fires once; a second delivery finds nothing to do.
    assert_eq!(room.err(&system(), timeout()), Rejection::StaleTimer);
}

#[test]
fn the_publish_timeout_of_an_earlier_session_is_stale() {
    let mut room = Room::open();
    room.sit("alice", 2);
    let first = room.session(2);
    room.ok(&user("alice"), CommandKind::LeaveSeat { seat: seat(2) });
    room.sit("bob", 2);
    let second = room.session(2);
    assert_ne!(first, second);

    room.advance_secs(60);
    assert_eq!(
        room.err(
            &system(),
            CommandKind::MicPublishTimeout {
                seat: seat(2),
                session: first,
            }
        ),
        Rejection::StaleTimer
    );
    assert_eq!(room.occupant(2), Some("bob"));
    let events = room.ok(
        &system(),
        CommandKind::MicPublishTimeout {
            seat: seat(2),
            session: second,
        },
    );
    assert_eq!(downs(&events), [(2, "bob", MicDownReason::PublishTimeout)]);
}

#[test]
fn confirming_the_publish_clears_the_deadline_once() {
    let mut room = Room::open();
    room.sit("alice", 2);
    let session = room.session(2);
    let confirm = || CommandKind::ConfirmMicPublish {
        user: id("alice"),
        at: None,
    };

    let events = room.ok(&system(), confirm());
    assert_eq!(
        events,
        [Event::RoomMicChanged {
            seat: seat(2),
            change: MicChange::Published {
                user: id("alice"),
                session,
                robot: false,
            },
        }]
    );
    let occupant = room.state.seats[2].occupant.as_ref().expect("alice sits");
    assert_eq!(occupant.publish_deadline, None);
    assert_eq!(room.ok(&system(), confirm()), []);

    room.advance_secs(600);
    assert_eq!(
        room.err(
            &system(),
            CommandKind::MicPublishTimeout {
                seat: seat(2),
                session,
            }
        ),
        Rejection::StaleTimer
    );
    assert_eq!(room.occupant(2), Some("alice"));
    assert_eq!(
        room.err(
            &system(),
            CommandKind::ConfirmMicPublish {
                user: id("bob"),
                at: None
            }
        ),
        Rejection::NotOnSeat { user: id("bob") }
    );
}

// ---------------------------------------------------------------------------------------------
// Seat mutes.
// ---------------------------------------------------------------------------------------------

#[test]
fn the_holder_mutes_and_unmutes_their_own_seat() {
    let mut room = Room::open();
    room.sit("alice", 1);
    let events = room.ok(&user("alice"), mute_seat(1, true));
    assert_eq!(
        events,
        [Event::RoomMicChanged {
            seat: seat(1),
            change: MicChange::Muted {
                muted: true,
                by_moderator: false,
                by: Some(id("alice")),
            },
        }]
    );
    assert!(room.state.seats[1].muted && !room.state.seats[1].muted_by_moderator);
    room.ok(&user("alice"), mute_seat(1, false));
    assert!(!room.state.seats[1].muted);
    assert_eq!(room.ok(&user("alice"), mute_seat(1, false)), []);
}

#[test]
fn a_moderator_mute_binds_the_holder_until_a_moderator_lifts_it() {
    let mut room = Room::open();
    room.sit("alice", 1);
    let events = room.ok(&user("admin"), mute_seat(1, true));
    assert!(matches!(
        events.as_slice(),
        [Event::RoomMicChanged {
            change: MicChange::Muted {
                muted: true,
                by_moderator: true,
                ..
            },
            ..
        }]
    ));
    assert_eq!(
        room.err(&user("alice"), mute_seat(1, false)),
        Rejection::SeatMutedByModerator { seat: seat(1) }
    );
    // Muting it again is no change, and does not loosen the moderator's mute.
    assert_eq!(room.ok(&user("alice"), mute_seat(1, true)), []);
    assert!(room.state.seats[1].muted_by_moderator);

    room.ok(&user("admin2"), mute_seat(1, false));
    assert!(!room.state.seats[1].muted && !room.state.seats[1].muted_by_moderator);
    room.ok(&user("alice"), mute_seat(1, true));
    room.ok(&user("alice"), mute_seat(1, false));
}

#[test]
fn an_admin_on_a_seat_does_not_lift_the_owners_mute() {
    let mut room = Room::open();
    room.sit("admin", 2);
    room.ok(&user("owner"), mute_seat(2, true));
    assert_eq!(
        room.err(&user("admin"), mute_seat(2, false)),
        Rejection::SeatMutedByModerator { seat: seat(2) }
    );
    // Nor does a fellow admin, who may not moderate admins.
    assert_eq!(
        room.err(&user("admin2"), mute_seat(2, false)),
        cannot_moderate("admin")
    );
    // Nor by leaving the seat and unmuting it empty.
    room.ok(&user("admin"), CommandKind::LeaveSeat { seat: seat(2) });
    assert_eq!(
        room.err(&user("admin"), mute_seat(2, false)),
        Rejection::SeatMutedByModerator { seat: seat(2) }
    );
    room.ok(&user("owner"), mute_seat(2, false));
    assert!(!room.state.seats[2].muted);

    // An admin's own mute of an empty seat is theirs to lift, seated or not.
    room.ok(&user("admin"), mute_seat(4, true));
    room.sit("admin", 4);
    room.ok(&user("admin"), mute_seat(4, false));
    assert!(!room.state.seats[4].muted);

    // A platform admin's mute binds admins like the owner's.
    room.ok(&platform_admin("ops"), mute_seat(5, true));
    assert_eq!(
        room.err(&user("admin"), mute_seat(5, false)),
        Rejection::SeatMutedByModerator { seat: seat(5) }
    );
    room.ok(&user("owner"), mute_seat(5, false));

    // So does a mute whose muter is unknown (a snapshot from before muters were kept).
    room.ok(&user("admin2"), mute_seat(6, true));
    room.state.seats[6].muted_by = None;
    assert_eq!(
        room.err(&user("admin"), mute_seat(6, false)),
        Rejection::SeatMutedByModerator { seat: seat(6) }
    );
    room.ok(&platform_admin("ops"), mute_seat(6, false));
}

#[test]
fn a_moderator_mute_of_a_seat_its_holder_muted_still_binds_the_holder() {
    let mut room = Room::open();
    room.sit("alice", 1);
    room.ok(&user("alice"), mute_seat(1, true));
    let events = room.ok(&user("admin"), mute_seat(1, true));
    assert_eq!(events.len(), 1, "the moderator's mute must be recorded");
    assert!(room.state.seats[1].muted_by_moderator);
    assert_eq!(
        room.err(&user("alice"), mute_seat(1, false)),
        Rejection::SeatMutedByModerator { seat: seat(1) }
    );
    // A second moderator mute is no change.
    assert_eq!(room.ok(&user("admin2"), mute_seat(1, true)), []);
}

#[test]
fn members_cannot_mute_seats_of_others() {
    let mut room = Room::open();
    room.sit("alice", 1);
    assert_eq!(
        room.err(&user("bob"), mute_seat(1, true)),
        Rejection::Forbidden
    );
    assert_eq!(
        room.err(&user("bob"), mute_seat(2, true)),
        Rejection::Forbidden
    );
    assert!(!room.state.seats[1].muted);
}
