//! Who may do what: roles rank owner over admin over member, nobody moderates the owner or
//! themselves, admins do not moderate admins, and the system's commands are the system's alone.

use room_domain::{CommandKind, MicDownReason, PasswordHash, Rejection, RocketId, Role};

use crate::fixture::{
    NOON, Room, cannot_moderate, chat_mute, downs, id, kick, lock_seat, mute_seat, platform_admin,
    remove_from_seat, seat, set_admin, system, user,
};

// ---------------------------------------------------------------------------------------------
// Roles: owner > admin > member.
// ---------------------------------------------------------------------------------------------

#[test]
fn roles_rank_owner_over_admin_over_member() {
    let mut room = Room::open();
    assert_eq!(room.state.members["owner"].role, Role::Owner);
    assert_eq!(room.state.members["admin"].role, Role::Admin);
    assert_eq!(room.state.members["alice"].role, Role::Member);

    // A member moderates nobody, an admin moderates members, the owner moderates admins.
    assert_eq!(room.err(&user("alice"), kick("bob")), Rejection::Forbidden);
    room.ok(&user("admin"), kick("bob"));
    assert_eq!(
        room.err(&user("admin"), kick("admin2")),
        cannot_moderate("admin2")
    );
    room.ok(&user("owner"), kick("admin2"));
    assert_eq!(
        room.err(&user("admin"), kick("owner")),
        cannot_moderate("owner")
    );
    assert!(!room.is_member("bob") && !room.is_member("admin2"));
}

#[test]
fn members_may_not_use_moderator_commands() {
    let mut room = Room::open();
    room.sit("bob", 1);
    let alice = user("alice");
    let moderator_only = [
        CommandKind::UpdateProfile {
            name: Some("Mine now".into()),
            notice: None,
            cover_url: None,
        },
        CommandKind::ChangeBackground {
            background_url: Some("https://img.example/bg.png".into()),
        },
        CommandKind::SetChatEnabled { enabled: false },
        CommandKind::SetLock {
            password_hash: Some(PasswordHash("salted".into())),
        },
        CommandKind::CloseRoom,
        lock_seat(2, true),
        mute_seat(1, true),
        mute_seat(2, true),
        remove_from_seat(1),
        kick("bob"),
        CommandKind::Kick {
            user: id("bob"),
            ban_seconds: Some(60),
        },
        CommandKind::Unban { user: id("bob") },
        chat_mute("bob", 60),
        set_admin("bob", true),
    ];
    for kind in moderator_only {
        let shown = format!("{kind:?}");
        assert_eq!(room.err(&alice, kind), Rejection::Forbidden, "{shown}");
    }
}

#[test]
fn admins_cannot_moderate_the_owner() {
    let mut room = Room::open();
    room.sit("owner", 0);
    let admin = user("admin");
    for kind in [
        kick("owner"),
        CommandKind::Kick {
            user: id("owner"),
            ban_seconds: Some(3600),
        },
        chat_mute("owner", 60),
        remove_from_seat(0),
        mute_seat(0, true),
        lock_seat(0, true),
    ] {
        assert_eq!(room.err(&admin, kind), cannot_moderate("owner"));
    }
    assert_eq!(room.occupant(0), Some("owner"));
}

#[test]
fn admins_cannot_moderate_other_admins() {
    let mut room = Room::open();
    room.sit("admin2", 3);
    let admin = user("admin");
    for kind in [
        kick("admin2"),
        chat_mute("admin2", 60),
        remove_from_seat(3),
        mute_seat(3, true),
        lock_seat(3, true),
    ] {
        assert_eq!(room.err(&admin, kind), cannot_moderate("admin2"));
    }
    assert_eq!(room.occupant(3), Some("admin2"));
}

#[test]
fn the_owner_moderates_admins() {
    let mut room = Room::open();
    room.sit("admin", 3);
    let owner = user("owner");
    room.ok(&owner, chat_mute("admin", 60));
    assert_eq!(
        room.state.chat_mute_of(&id("admin"), room.now),
        Some(room.now.plus_secs(60))
    );
    room.ok(&owner, mute_seat(3, true));
    assert!(room.state.seats[3].muted_by_moderator);
    let events = room.ok(&owner, remove_from_seat(3));
    assert_eq!(downs(&events), [(3, "admin", MicDownReason::Removed)]);
    room.ok(&owner, kick("admin"));
    assert!(!room.is_member("admin"));
}

#[test]
fn platform_admins_moderate_admins_but_not_the_owner() {
    let mut room = Room::open();
    let staff = platform_admin("staff");
    room.join_as(&staff);
    assert_eq!(room.err(&staff, kick("owner")), cannot_moderate("owner"));
    room.ok(&staff, kick("admin"));
    room.ok(&staff, set_admin("alice", true));
    assert_eq!(room.state.members["alice"].role, Role::Admin);
}

#[test]
fn nobody_moderates_themselves() {
    let mut room = Room::open();
    room.sit("owner", 0);
    room.sit("admin", 1);
    let owner = user("owner");
    let admin = user("admin");
    assert_eq!(room.err(&owner, kick("owner")), cannot_moderate("owner"));
    assert_eq!(
        room.err(&owner, chat_mute("owner", 60)),
        cannot_moderate("owner")
    );
    assert_eq!(
        room.err(&owner, remove_from_seat(0)),
        cannot_moderate("owner")
    );
    assert_eq!(
        room.err(&owner, set_admin("owner", true)),
        cannot_moderate("owner")
    );
    assert_eq!(room.err(&admin, kick("admin")), cannot_moderate("admin"));
    assert_eq!(
        room.err(&admin, chat_mute("admin", 60)),
        cannot_moderate("admin")
    );
    assert_eq!(
        room.err(&admin, remove_from_seat(1)),
        cannot_moderate("admin")
    );
    let staff = platform_admin("staff");
    room.join_as(&staff);
    assert_eq!(room.err(&staff, kick("staff")), cannot_moderate("staff"));

    // Acting on one's own seat is not moderation: muting it or locking it is allowed.
    let events = room.ok(&admin, mute_seat(1, true));
    assert!(!room.state.seats[1].muted_by_moderator, "{events:?}");
    let events = room.ok(&admin, lock_seat(1, true));
    assert_eq!(downs(&events), [(1, "admin", MicDownReason::SeatLocked)]);
}

// ---------------------------------------------------------------------------------------------
// System-only commands.
// ---------------------------------------------------------------------------------------------

#[test]
fn system_commands_are_forbidden_to_users() {
    let mut room = Room::open();
    room.sit("alice", 0);
    let session = room.session(0);
    let system_only = || {
        [
            CommandKind::Evict {
                user: id("alice"),
                seen: None,
            },
            CommandKind::ConfirmMicPublish {
                user: id("alice"),
                at: None,
            },
            CommandKind::MicPublishTimeout {
                seat: seat(0),
                session,
            },
            CommandKind::RtcUserLeft {
                user: id("alice"),
                at: None,
            },
            CommandKind::LaunchRocket {
                rocket_id: RocketId(1),
                level: 1,
                scheduled_at: NOON,
            },
            CommandKind::ResetRocket,
        ]
    };
    room.advance_secs(60);
    for actor in [
        user("owner"),
        user("admin"),
        user("alice"),
        platform_admin("staff"),
    ] {
        for kind in system_only() {
            let shown = format!("{kind:?}");
            assert_eq!(
                room.err(&actor, kind),
                Rejection::Forbidden,
                "{shown} by {actor:?}"
            );
        }
    }
    // The same commands are the system's to give.
    assert!(room.ask(&system(), system_only()[2].clone()).is_ok());
    assert!(room.ask(&system(), system_only()[0].clone()).is_ok());
}
