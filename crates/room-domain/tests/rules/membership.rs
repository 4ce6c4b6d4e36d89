//! Being in a room: joining (roles, VIP level, bans, the lock, the member limit), leaving and
//! the eviction of a member whose heartbeat stopped.

use room_domain::{
    CommandKind, Event, LeaveReason, MicChange, MicDownReason, PasswordHash, Rejection, Role,
    RoomRules, SeatSessionId,
};

use crate::fixture::{
    NOON, Room, downs, id, join, not_a_member, platform_admin, seat, system, user, vip,
};

// ---------------------------------------------------------------------------------------------
// Joining.
// ---------------------------------------------------------------------------------------------

#[test]
fn joining_records_role_and_vip_level_and_joining_twice_changes_nothing() {
    let mut room = Room::open();
    let events = room.join_as(&vip("carol", 3));
    assert_eq!(
        events,
        [Event::RoomUserJoined {
            user: id("carol"),
            role: Role::Member,
            vip_level: 3,
            joined_at: NOON,
            robot: false,
            nickname: None,
            avatar_url: None,
            entry_effect_id: None,
            vehicle_id: None,
        }]
    );
    let version = room.state.version;
    room.advance_secs(5);
    assert_eq!(room.join_as(&vip("carol", 3)), []);
    assert_eq!(room.state.version, version);
    assert_eq!(room.state.members["carol"].joined_at, NOON);
    assert_eq!(
        room.err(&system(), join(true)),
        Rejection::Forbidden,
        "the system is nobody to seat in a room"
    );
}

#[test]
fn a_locked_room_needs_the_password_except_for_owner_and_admins() {
    let mut room = Room::open();
    let events = room.ok(
        &user("owner"),
        CommandKind::SetLock {
            password_hash: Some(PasswordHash("salted-hash".into())),
        },
    );
    assert!(matches!(
        events.as_slice(),
        [Event::RoomLockChanged { locked: true, .. }]
    ));
    assert_eq!(
        room.err(&user("carol"), join(false)),
        Rejection::WrongPassword
    );
    room.ok(&user("carol"), join(true));

    // Owner and admins come back without it, with their role.
    for name in ["owner", "admin"] {
        room.ok(&user(name), CommandKind::Leave);
        room.join(name);
    }
    assert_eq!(room.state.members["owner"].role, Role::Owner);
    assert_eq!(room.state.members["admin"].role, Role::Admin);
    room.join_as(&platform_admin("staff"));

    // Unlocking lets everyone in.
    room.ok(
        &user("admin"),
        CommandKind::SetLock {
            password_hash: None,
        },
    );
    room.join("dave");
}

#[test]
fn a_password_checked_against_an_older_lock_lets_no_one_in() {
    let lock = |hash: &str| CommandKind::SetLock {
        password_hash: Some(PasswordHash(hash.into())),
    };
    let join_verified_against = |hash: &str| CommandKind::Join {
        password_verified: true,
        verified_lock: Some(PasswordHash(hash.into())),
    };
    let mut room = Room::open();
    room.ok(&user("owner"), lock("old-hash"));
    // The owner changes the password between carol's check and her join.
    room.ok(&user("owner"), lock("new-hash"));
    assert_eq!(
        room.err(&user("carol"), join_verified_against("old-hash")),
        Rejection::WrongPassword
    );
    room.ok(&user("carol"), join_verified_against("new-hash"));

    // Once the room is unlocked, a verdict about any lock lets in as no password does.
    room.ok(
        &user("owner"),
        CommandKind::SetLock {
            password_hash: None,
        },
    );
    room.ok(&user("dave"), join_verified_against("new-hash"));
}

#[test]
fn a_full_room_takes_no_one_else() {
    let mut room = Room::open_with(RoomRules {
        max_members: 5,
        ..RoomRules::default()
    });
    assert_eq!(room.state.members.len(), 5);
    assert_eq!(
        room.err(&user("carol"), join(true)),
        Rejection::RoomFull { max: 5 }
    );
    // A member joining again is still a no-op, not a refusal.
    assert_eq!(room.join_as(&user("alice")), []);
    room.ok(&user("bob"), CommandKind::Leave);
    room.join("carol");
}

// ---------------------------------------------------------------------------------------------
// Leaving and eviction.
// ---------------------------------------------------------------------------------------------

#[test]
fn leaving_the_room_frees_the_seat() {
    let mut room = Room::open();
    room.sit("alice", 4);
    let events = room.ok(&user("alice"), CommandKind::Leave);
    assert_eq!(
        events,
        [
            Event::RoomMicChanged {
                seat: seat(4),
                change: MicChange::Down {
                    user: id("alice"),
                    session: SeatSessionId(1),
                    reason: MicDownReason::LeftRoom,
                    robot: false,
                },
            },
            Event::RoomUserLeft {
                user: id("alice"),
                reason: LeaveReason::Left,
                robot: false,
            },
        ]
    );
    assert_eq!(room.occupant(4), None);
    assert!(!room.is_member("alice"));
    assert_eq!(
        room.err(&user("alice"), CommandKind::Leave),
        not_a_member("alice")
    );
    assert_eq!(
        room.err(&system(), CommandKind::Leave),
        Rejection::Forbidden
    );
}

#[test]
fn eviction_frees_the_seat_and_is_idempotent() {
    let mut room = Room::open();
    room.sit("alice", 4);
    let evict = || CommandKind::Evict {
        user: id("alice"),
        seen: None,
    };
    let events = room.ok(&system(), evict());
    assert_eq!(downs(&events), [(4, "alice", MicDownReason::LeftRoom)]);
    assert_eq!(
        events.last(),
        Some(&Event::RoomUserLeft {
            user: id("alice"),
            reason: LeaveReason::Evicted,
            robot: false,
        })
    );
    assert!(!room.is_member("alice"));
    assert_eq!(room.ok(&system(), evict()), []);
}

#[test]
fn an_eviction_keeps_a_member_who_joined_after_the_heartbeat_it_saw() {
    let mut room = Room::open();
    let seen = room.now;
    room.advance_secs(120);
    room.ok(&user("alice"), CommandKind::Leave);
    room.join("alice");
    let evict = |seen| CommandKind::Evict {
        user: id("alice"),
        seen: Some(seen),
    };
    // The heartbeat seen belongs to the membership before the rejoin.
    assert_eq!(room.ok(&system(), evict(seen)), []);
    assert!(room.is_member("alice"));
    // A heartbeat of this membership (from its join on) is one the eviction may act on.
    let events = room.ok(&system(), evict(room.now));
    assert_eq!(
        events.last(),
        Some(&Event::RoomUserLeft {
            user: id("alice"),
            reason: LeaveReason::Evicted,
            robot: false,
        })
    );
    assert!(!room.is_member("alice"));
}
