//! Moderation: kicks and bans and chat mutes (and the VIP shields from admins), and
//! appointing admins.

use room_domain::{
    CommandKind, Event, MicDownReason, Rejection, Role, RoomRules, Timestamp, VipPrivileges,
    VipStanding,
};

use crate::fixture::{
    NOON, Room, cannot_moderate, chat_mute, downs, id, join, kick, not_a_member, platform_admin,
    set_admin, types, user, vip,
};

// ---------------------------------------------------------------------------------------------
// VIP protection.
// ---------------------------------------------------------------------------------------------

#[test]
fn vip_level_protects_from_kicks_by_admins_but_not_by_the_owner() {
    let mut room = Room::open();
    assert_eq!(room.rules.vip_kick_protection_level, Some(5));
    room.join_as(&vip("vera", 5));
    room.join_as(&vip("victor", 4));
    room.join_as(&vip("vivian", 9));

    assert_eq!(
        room.err(&user("admin"), kick("vera")),
        Rejection::VipProtected {
            target: id("vera"),
            vip_level: 5
        }
    );
    assert_eq!(
        room.err(
            &user("admin"),
            CommandKind::Kick {
                user: id("vivian"),
                ban_seconds: Some(60),
            }
        ),
        Rejection::VipProtected {
            target: id("vivian"),
            vip_level: 9
        }
    );
    // Below the level there is no protection.
    room.ok(&user("admin"), kick("victor"));
    // The protection is against kicks only.
    room.ok(&user("admin"), chat_mute("vera", 60));
    // The owner and platform admins kick VIPs.
    room.ok(&user("owner"), kick("vera"));
    room.join_as(&platform_admin("staff"));
    room.ok(&platform_admin("staff"), kick("vivian"));
    assert!(!room.is_member("vera") && !room.is_member("vivian"));
}

#[test]
fn vip_protection_level_is_configurable_and_can_be_off() {
    let mut room = Room::open_with(RoomRules {
        vip_kick_protection_level: Some(3),
        ..RoomRules::default()
    });
    room.join_as(&vip("vera", 3));
    assert!(matches!(
        room.err(&user("admin"), kick("vera")),
        Rejection::VipProtected { vip_level: 3, .. }
    ));

    let mut room = Room::open_with(RoomRules {
        vip_kick_protection_level: None,
        ..RoomRules::default()
    });
    room.join_as(&vip("vera", u8::MAX));
    room.ok(&user("admin"), kick("vera"));
    assert!(!room.is_member("vera"));
}

fn standing(level: u8, kick_shield: bool, mute_shield: bool) -> VipStanding {
    VipStanding {
        level,
        privileges: VipPrivileges {
            kick_shield,
            mute_shield,
            ..VipPrivileges::default()
        },
    }
}

#[test]
fn the_looked_up_standing_decides_the_kick_shield_not_the_level_at_join() {
    let mut room = Room::open();
    // Joined with level 9 (above the rules' fallback), but the service says: no shield now
    // (the grant expired, or the level has no kick shield).
    room.join_as(&vip("vera", 9));
    room.run_vip(&user("admin"), kick("vera"), standing(0, false, false))
        .expect("no shield: the admin kicks");
    assert!(!room.is_member("vera"));

    // Joined with level 0, but the service says level 2 with a kick shield.
    room.join("vic");
    assert_eq!(
        room.run_vip(&user("admin"), kick("vic"), standing(2, true, false))
            .unwrap_err(),
        Rejection::VipProtected {
            target: id("vic"),
            vip_level: 2
        }
    );
    // A ban of a user who is not in the room is shielded too.
    assert!(matches!(
        room.run_vip(
            &user("admin"),
            CommandKind::Kick {
                user: id("absent"),
                ban_seconds: Some(60),
            },
            standing(2, true, false),
        ),
        Err(Rejection::VipProtected { vip_level: 2, .. })
    ));
    // The owner kicks a shielded member.
    room.run_vip(&user("owner"), kick("vic"), standing(2, true, false))
        .expect("the owner is not held back by the shield");
}

#[test]
fn the_mute_shield_holds_against_room_admins_only() {
    let mut room = Room::open();
    room.join("vera");
    let shielded = standing(4, false, true);
    assert_eq!(
        room.run_vip(&user("admin"), chat_mute("vera", 60), shielded.clone())
            .unwrap_err(),
        Rejection::VipProtected {
            target: id("vera"),
            vip_level: 4
        }
    );
    // A kick shield alone does not hold off a mute, and no standing means no mute shield.
    room.run_vip(
        &user("admin"),
        chat_mute("vera", 60),
        standing(4, true, false),
    )
    .expect("no mute shield");
    room.ok(&user("admin"), chat_mute("vera", 0));
    room.ok(&user("admin"), chat_mute("vera", 60));
    // Unmuting is never shielded.
    room.run_vip(&user("admin"), chat_mute("vera", 0), shielded.clone())
        .expect("an admin may unmute a shielded member");
    // The owner and platform admins mute a shielded member.
    room.run_vip(&user("owner"), chat_mute("vera", 60), shielded.clone())
        .expect("the owner mutes");
    room.join_as(&platform_admin("staff"));
    room.run_vip(&platform_admin("staff"), chat_mute("vera", 120), shielded)
        .expect("a platform admin mutes");
}

#[test]
fn a_join_carries_the_entry_effect_and_vehicle_of_the_standing() {
    let mut room = Room::open();
    let standing = VipStanding {
        level: 3,
        privileges: VipPrivileges {
            entry_effect_id: Some("fx-3".into()),
            vehicle_id: Some("car-3".into()),
            ..VipPrivileges::default()
        },
    };
    let events = room
        .run_vip(&vip("vera", 3), join(false), standing.clone())
        .unwrap();
    match &events[..] {
        [
            Event::RoomUserJoined {
                vip_level,
                entry_effect_id,
                vehicle_id,
                ..
            },
        ] => {
            assert_eq!(*vip_level, 3);
            assert_eq!(entry_effect_id.as_deref(), Some("fx-3"));
            assert_eq!(vehicle_id.as_deref(), Some("car-3"));
        }
        other => panic!("{other:?}"),
    }
    // A robot shows none, whatever it is sent with.
    let events = room
        .run_vip(&crate::fixture::robot("robot-1"), join(false), standing)
        .unwrap();
    assert!(matches!(
        &events[..],
        [Event::RoomUserJoined {
            entry_effect_id: None,
            vehicle_id: None,
            ..
        }]
    ));
}

// ---------------------------------------------------------------------------------------------
// Kicks and bans.
// ---------------------------------------------------------------------------------------------

#[test]
fn a_banned_user_cannot_join_until_the_ban_ends() {
    let mut room = Room::open();
    let events = room.ok(
        &user("admin"),
        CommandKind::Kick {
            user: id("bob"),
            ban_seconds: Some(60),
        },
    );
    let until = NOON.plus_secs(60);
    assert_eq!(
        events,
        [Event::RoomUserKicked {
            user: id("bob"),
            by: Some(id("admin")),
            ban_until: Some(until),
            robot: false,
        }]
    );

    room.now = Timestamp(until.0 - 1);
    let banned = Rejection::Banned {
        user: id("bob"),
        until,
    };
    assert_eq!(room.err(&user("bob"), join(false)), banned);
    // The password does not help against a ban.
    assert_eq!(room.err(&user("bob"), join(true)), banned);

    room.now = until;
    room.join("bob");
    assert!(room.is_member("bob"));
    assert!(!room.state.bans.contains_key("bob"));
}

#[test]
fn a_kick_without_a_ban_lets_the_user_back_at_once() {
    let mut room = Room::open();
    room.ok(&user("admin"), kick("bob"));
    assert!(!room.is_member("bob"));
    room.join("bob");
    assert!(room.is_member("bob"));
}

#[test]
fn kicking_someone_absent_needs_a_ban() {
    let mut room = Room::open();
    assert_eq!(
        room.err(&user("admin"), kick("carol")),
        not_a_member("carol")
    );
    // A ban may be set ahead of a visit.
    room.ok(
        &user("admin"),
        CommandKind::Kick {
            user: id("carol"),
            ban_seconds: Some(600),
        },
    );
    assert!(matches!(
        room.err(&user("carol"), join(false)),
        Rejection::Banned { .. }
    ));
}

#[test]
fn unban_lifts_a_ban_and_needs_one() {
    let mut room = Room::open();
    room.ok(
        &user("admin"),
        CommandKind::Kick {
            user: id("bob"),
            ban_seconds: Some(3600),
        },
    );
    let unban = || CommandKind::Unban { user: id("bob") };
    assert_eq!(room.err(&user("alice"), unban()), Rejection::Forbidden);
    let events = room.ok(&user("admin2"), unban());
    assert_eq!(
        events,
        [Event::RoomUserUnbanned {
            user: id("bob"),
            by: Some(id("admin2")),
        }]
    );
    room.join("bob");
    assert_eq!(
        room.err(&user("admin"), unban()),
        Rejection::NotBanned { user: id("bob") }
    );

    // A ban that ran out is no ban.
    room.ok(
        &user("admin"),
        CommandKind::Kick {
            user: id("alice"),
            ban_seconds: Some(10),
        },
    );
    room.advance_secs(10);
    assert_eq!(
        room.err(&user("admin"), CommandKind::Unban { user: id("alice") }),
        Rejection::NotBanned { user: id("alice") }
    );
}

#[test]
fn a_ban_ends_an_admins_role_and_nobody_lifts_their_own_ban() {
    let mut room = Room::open();
    let ban = |name: &str| CommandKind::Kick {
        user: id(name),
        ban_seconds: Some(86_400),
    };
    // A kick without a ban leaves the role: the admin may come back.
    room.ok(&user("owner"), kick("admin2"));
    assert!(room.state.admins.contains(&id("admin2")));
    room.join("admin2");

    let events = room.ok(&user("owner"), ban("admin"));
    assert_eq!(types(&events), ["RoomUserKicked", "RoomAdminChanged"]);
    assert!(!room.state.admins.contains(&id("admin")));
    // Banned and no admin: no unban of their own, no moderation from outside.
    let unban = |name: &str| CommandKind::Unban { user: id(name) };
    assert_eq!(
        room.err(&user("admin"), unban("admin")),
        Rejection::Forbidden
    );
    assert_eq!(room.err(&user("admin"), kick("bob")), Rejection::Forbidden);

    // A moderator never lifts a ban of their own, whatever their standing.
    room.ok(&user("owner"), ban("bob"));
    assert_eq!(room.err(&user("bob"), unban("bob")), Rejection::Forbidden);
    // (A role kept through a ban, as a room banned before bans ended roles holds it.)
    room.state.admins.insert(id("bob"));
    assert_eq!(room.err(&user("bob"), unban("bob")), cannot_moderate("bob"));
    room.state.admins.remove(&id("bob"));
    room.ok(&user("admin2"), unban("admin"));
}

#[test]
fn a_kick_takes_the_user_off_their_seat_first() {
    let mut room = Room::open();
    room.sit("bob", 2);
    let events = room.ok(&user("admin"), kick("bob"));
    assert_eq!(types(&events), ["RoomMicChanged", "RoomUserKicked"]);
    assert_eq!(downs(&events), [(2, "bob", MicDownReason::Kicked)]);
    assert_eq!(room.occupant(2), None);
}

// ---------------------------------------------------------------------------------------------
// Chat mutes.
// ---------------------------------------------------------------------------------------------

#[test]
fn chat_mute_lasts_its_time_and_zero_unmutes() {
    let mut room = Room::open();
    let events = room.ok(&user("admin"), chat_mute("bob", 60));
    assert_eq!(
        events,
        [Event::RoomUserMuted {
            user: id("bob"),
            until: Some(NOON.plus_secs(60)),
            by: Some(id("admin")),
        }]
    );
    assert_eq!(
        room.state.chat_mute_of(&id("bob"), NOON.plus_secs(59)),
        Some(NOON.plus_secs(60))
    );
    assert_eq!(
        room.state.chat_mute_of(&id("bob"), NOON.plus_secs(60)),
        None
    );

    let events = room.ok(&user("admin"), chat_mute("bob", 0));
    assert!(matches!(
        events.as_slice(),
        [Event::RoomUserMuted { until: None, .. }]
    ));
    assert_eq!(room.state.chat_mute_of(&id("bob"), NOON), None);
    // Unmuting someone who is not muted changes nothing.
    assert_eq!(room.ok(&user("admin"), chat_mute("bob", 0)), []);
}

#[test]
fn chat_mute_needs_a_member() {
    let mut room = Room::open();
    assert_eq!(
        room.err(&user("admin"), chat_mute("carol", 60)),
        not_a_member("carol")
    );
}

// ---------------------------------------------------------------------------------------------
// Admins.
// ---------------------------------------------------------------------------------------------

#[test]
fn only_the_owner_appoints_and_dismisses_admins() {
    let mut room = Room::open();
    assert_eq!(
        room.err(&user("admin"), set_admin("alice", true)),
        Rejection::Forbidden
    );
    assert_eq!(
        room.err(&user("alice"), set_admin("alice", true)),
        Rejection::Forbidden
    );
    let events = room.ok(&user("owner"), set_admin("alice", true));
    assert_eq!(
        events,
        [Event::RoomAdminChanged {
            user: id("alice"),
            admin: true,
            by: Some(id("owner")),
        }]
    );
    assert_eq!(room.state.members["alice"].role, Role::Admin);
    assert_eq!(room.ok(&user("owner"), set_admin("alice", true)), []);
    room.ok(&user("alice"), kick("bob"));

    // A dismissed admin is a member again and moderates no one.
    room.ok(&user("owner"), set_admin("alice", false));
    assert_eq!(room.state.members["alice"].role, Role::Member);
    assert_eq!(
        room.err(&user("alice"), chat_mute("admin", 60)),
        Rejection::Forbidden
    );
    assert_eq!(room.ok(&user("owner"), set_admin("alice", false)), []);
}

#[test]
fn admins_are_appointed_from_members_up_to_the_limit() {
    let mut room = Room::open_with(RoomRules {
        max_admins: 2,
        ..RoomRules::default()
    });
    assert_eq!(room.state.admins.len(), 2);
    assert_eq!(
        room.err(&user("owner"), set_admin("alice", true)),
        Rejection::TooManyAdmins { max: 2 }
    );
    assert_eq!(
        room.err(&user("owner"), set_admin("carol", true)),
        not_a_member("carol")
    );
    room.ok(&user("owner"), set_admin("admin2", false));
    room.ok(&user("owner"), set_admin("alice", true));
    assert_eq!(
        room.state
            .admins
            .iter()
            .map(|u| u.as_str())
            .collect::<Vec<_>>(),
        ["admin", "alice"]
    );
}
