//! The room itself: its lifecycle (creation, closing) and the validation of its name, seat
//! count, region, profile texts and images.

use room_domain::{
    CommandKind, Event, Field, MicDownReason, Rejection, Role, RoomResource, RoomRules, RoomStatus,
};

use crate::fixture::{NOON, Room, downs, every_command_kind, id, platform_admin, system, user};

// ---------------------------------------------------------------------------------------------
// Room lifecycle.
// ---------------------------------------------------------------------------------------------

#[test]
fn an_absent_room_only_takes_create_room() {
    let room = Room::absent(RoomRules::default());
    for kind in every_command_kind() {
        let shown = format!("{kind:?}");
        let answer = room.ask(&user("owner"), kind);
        if shown.starts_with("CreateRoom") {
            assert!(answer.is_ok(), "{answer:?}");
        } else {
            assert_eq!(answer, Err(Rejection::RoomNotFound), "{shown}");
        }
    }
}

#[test]
fn creating_a_room_makes_the_actor_its_owner() {
    let mut room = Room::absent(RoomRules::default());
    let create = || CommandKind::CreateRoom {
        name: "  Night talk  ".into(),
        seat_count: Some(12),
        region: "sg".into(),
    };
    assert_eq!(room.err(&system(), create()), Rejection::Forbidden);
    let events = room.ok(&user("owner"), create());
    assert_eq!(
        events,
        [Event::RoomCreated {
            owner: id("owner"),
            name: "Night talk".into(),
            seat_count: 12,
            region: "sg".into(),
            created_at: NOON,
        }]
    );
    assert_eq!(room.state.status, RoomStatus::Open);
    assert_eq!(room.state.seats.len(), 12);
    assert_eq!(room.state.role_of(&id("owner")), Role::Owner);
    assert_eq!(
        room.err(&user("alice"), create()),
        Rejection::RoomAlreadyExists
    );
}

#[test]
fn only_the_owner_platform_admins_and_the_system_close_a_room() {
    for closer in [user("owner"), platform_admin("staff"), system()] {
        let mut room = Room::open();
        assert_eq!(
            room.err(&user("admin"), CommandKind::CloseRoom),
            Rejection::Forbidden
        );
        room.sit("alice", 0);
        room.sit("owner", 3);
        let events = room.ok(&closer, CommandKind::CloseRoom);
        assert_eq!(
            downs(&events),
            [
                (0, "alice", MicDownReason::RoomClosed),
                (3, "owner", MicDownReason::RoomClosed),
            ]
        );
        assert_eq!(
            events.last(),
            Some(&Event::RoomClosed {
                by: closer.user_id().cloned(),
            })
        );
        assert_eq!(room.state.status, RoomStatus::Closed);
        assert!(room.state.members.is_empty());
    }
}

#[test]
fn a_closed_room_accepts_nothing() {
    let mut room = Room::open();
    room.ok(&user("owner"), CommandKind::CloseRoom);
    let actors = [
        user("owner"),
        user("admin"),
        user("alice"),
        platform_admin("staff"),
        system(),
    ];
    for actor in &actors {
        for kind in every_command_kind() {
            let shown = format!("{kind:?}");
            let expected = if shown.starts_with("CreateRoom") {
                Rejection::RoomAlreadyExists
            } else {
                Rejection::RoomClosed
            };
            assert_eq!(room.err(actor, kind), expected, "{shown} by {actor:?}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Field validation.
// ---------------------------------------------------------------------------------------------

fn create(name: &str, seat_count: Option<u8>, region: &str) -> CommandKind {
    CommandKind::CreateRoom {
        name: name.into(),
        seat_count,
        region: region.into(),
    }
}

#[test]
fn create_room_validates_name_seat_count_and_region() {
    let room = Room::absent(RoomRules::default());
    let owner = user("owner");
    let name_too_long = Err(Rejection::FieldTooLong {
        field: Field::Name,
        max: 30,
    });
    for name in ["", "   "] {
        assert_eq!(
            room.ask(&owner, create(name, None, "")),
            Err(Rejection::FieldEmpty { field: Field::Name })
        );
    }
    assert_eq!(
        room.ask(&owner, create(&"n".repeat(31), None, "")),
        name_too_long
    );
    assert!(room.ask(&owner, create(&"n".repeat(30), None, "")).is_ok());
    // Characters count, not bytes.
    assert!(room.ask(&owner, create(&"é".repeat(30), None, "")).is_ok());
    assert_eq!(
        room.ask(&owner, create(&"é".repeat(31), None, "")),
        name_too_long
    );

    for seat_count in [0, 21] {
        assert_eq!(
            room.ask(&owner, create("Room", Some(seat_count), "")),
            Err(Rejection::InvalidSeatCount { seat_count })
        );
    }
    assert!(room.ask(&owner, create("Room", Some(1), "")).is_ok());
    assert!(room.ask(&owner, create("Room", Some(20), "")).is_ok());

    assert_eq!(
        room.ask(&owner, create("Room", None, &"r".repeat(33))),
        Err(Rejection::FieldTooLong {
            field: Field::Region,
            max: 32
        })
    );
    assert!(
        room.ask(&owner, create("Room", None, &"r".repeat(32)))
            .is_ok()
    );
}

#[test]
fn texts_refuse_control_and_bidirectional_override_characters() {
    let room = Room::absent(RoomRules::default());
    let owner = user("owner");
    let refused = |field, character| {
        Err(Rejection::FieldInvalidCharacter {
            field,
            character: u32::from(character),
        })
    };
    for c in [
        '\0', '\n', '\u{7}', '\u{7F}', '\u{85}', '\u{202E}', '\u{2066}',
    ] {
        let name = format!("Night{c}talk");
        assert_eq!(
            room.ask(&owner, create(&name, None, "")),
            refused(Field::Name, c)
        );
        assert_eq!(
            room.ask(&owner, create("Room", None, &format!("eu{c}"))),
            refused(Field::Region, c)
        );
    }
    // Other scripts, emoji (with their joiners) and right-to-left letters are text.
    for name in ["夜聊", "لیلة", "שיחה", "👩‍👩‍👧 talk"] {
        assert!(room.ask(&owner, create(name, None, "")).is_ok(), "{name}");
    }

    let mut room = Room::open();
    let admin = user("admin");
    let notice = |text: &str| CommandKind::UpdateProfile {
        name: None,
        notice: Some(text.into()),
        cover_url: None,
    };
    // A notice may break lines; nothing else.
    room.ok(&admin, notice("Rules:\r\n1. be kind\n2.\tno spam"));
    assert_eq!(
        room.err(&admin, notice("bell\u{7}")),
        Rejection::FieldInvalidCharacter {
            field: Field::Notice,
            character: 7
        }
    );
    assert_eq!(
        room.err(
            &admin,
            CommandKind::ChangeBackground {
                background_url: Some("https://img.example/\u{202E}gnp.exe".into()),
            }
        ),
        Rejection::InvalidUrl {
            field: Field::BackgroundUrl
        }
    );
}

#[test]
fn image_urls_are_plain_absolute_web_addresses() {
    let mut room = Room::open();
    let admin = user("admin");
    let cover = |url: &str| CommandKind::UpdateProfile {
        name: None,
        notice: None,
        cover_url: Some(url.into()),
    };
    let background = |url: &str| CommandKind::ChangeBackground {
        background_url: Some(url.into()),
    };
    for url in [
        "javascript:alert(1)",
        "data:image/png;base64,AAAA",
        "ftp://img.example/a.png",
        "img.example/a.png",
        "https://user@img.example/a.png",
        " https://img.example/a.png",
    ] {
        assert_eq!(
            room.err(&admin, cover(url)),
            Rejection::InvalidUrl {
                field: Field::CoverUrl
            },
            "{url}"
        );
        assert_eq!(
            room.err(&admin, background(url)),
            Rejection::InvalidUrl {
                field: Field::BackgroundUrl
            },
            "{url}"
        );
    }
    // Kept as sent, up to 2,048 bytes.
    let longest = format!("https://img.example/{}", "c".repeat(2048 - 20));
    let events = room.ok(&admin, background(&longest));
    assert_eq!(
        events,
        [Event::RoomBackgroundChanged {
            background_url: Some(longest.clone()),
            by: Some(id("admin")),
        }]
    );
    assert_eq!(
        room.err(&admin, background(&format!("{longest}c"))),
        Rejection::InvalidUrl {
            field: Field::BackgroundUrl
        }
    );
}

#[test]
fn profile_updates_validate_their_fields() {
    let mut room = Room::open();
    let admin = user("admin");
    let update = |name: Option<&str>, notice: Option<&str>, cover: Option<&str>| {
        CommandKind::UpdateProfile {
            name: name.map(Into::into),
            notice: notice.map(Into::into),
            cover_url: cover.map(Into::into),
        }
    };
    assert_eq!(
        room.err(&admin, update(Some(" "), None, None)),
        Rejection::FieldEmpty { field: Field::Name }
    );
    assert_eq!(
        room.err(&admin, update(Some(&"n".repeat(31)), None, None)),
        Rejection::FieldTooLong {
            field: Field::Name,
            max: 30
        }
    );
    assert_eq!(
        room.err(&admin, update(None, Some(&"x".repeat(501)), None)),
        Rejection::FieldTooLong {
            field: Field::Notice,
            max: 500
        }
    );
    let long_url = format!("https://img.example/{}", "c".repeat(2048));
    assert_eq!(
        room.err(&admin, update(None, None, Some(&long_url))),
        Rejection::InvalidUrl {
            field: Field::CoverUrl
        }
    );
    assert_eq!(
        room.err(
            &admin,
            CommandKind::ChangeBackground {
                background_url: Some(long_url.clone()),
            }
        ),
        Rejection::InvalidUrl {
            field: Field::BackgroundUrl
        }
    );

    let notice = "n".repeat(500);
    let events = room.ok(
        &admin,
        update(
            Some("Late talk"),
            Some(&notice),
            Some("https://img.example/c.png"),
        ),
    );
    assert_eq!(
        events,
        [Event::RoomProfileUpdated {
            name: "Late talk".into(),
            notice: notice.clone(),
            cover_url: Some("https://img.example/c.png".into()),
            by: Some(id("admin")),
        }]
    );
    assert_eq!(
        room.ok(&admin, update(Some("Late talk"), Some(&notice), None)),
        []
    );
    // An empty cover URL removes the cover.
    room.ok(&admin, update(None, None, Some("")));
    assert_eq!(room.state.profile.cover_url, None);
    assert_eq!(room.state.profile.notice, notice);
}

// ---------------------------------------------------------------------------------------------
// Resource revoke.
// ---------------------------------------------------------------------------------------------

fn revoke(resources: &[RoomResource], reason: &str) -> CommandKind {
    CommandKind::RevokeResources {
        resources: resources.to_vec(),
        reason: reason.into(),
    }
}

#[test]
fn a_platform_admin_resets_resources_to_their_defaults_with_a_reason() {
    let mut room = Room::open();
    let owner = user("owner");
    room.ok(
        &owner,
        CommandKind::UpdateProfile {
            name: Some("Buy cheap coins".into()),
            notice: Some("dm me".into()),
            cover_url: Some("https://img.example/ad.png".into()),
        },
    );
    room.ok(
        &owner,
        CommandKind::ChangeBackground {
            background_url: Some("https://img.example/ad-bg.png".into()),
        },
    );
    let events = room.ok(
        &platform_admin("staff"),
        revoke(
            &[RoomResource::Name, RoomResource::Cover],
            "  Advertising. ",
        ),
    );
    assert_eq!(
        events,
        [Event::RoomResourcesRevoked {
            resources: vec![RoomResource::Name, RoomResource::Cover],
            name: Some("Voice room".into()),
            reason: "Advertising.".into(),
            by: Some(id("staff")),
        }]
    );
    assert_eq!(room.state.profile.name, "Voice room");
    assert_eq!(room.state.profile.cover_url, None);
    // What was not revoked stays.
    assert_eq!(room.state.profile.notice, "dm me");
    assert_eq!(
        room.state.profile.background_url.as_deref(),
        Some("https://img.example/ad-bg.png")
    );
    room.ok(
        &platform_admin("staff"),
        revoke(&[RoomResource::Background, RoomResource::Notice], "Spam"),
    );
    assert_eq!(room.state.profile.notice, "");
    assert_eq!(room.state.profile.background_url, None);
    assert_eq!(room.state.profile.name, "Voice room");
    // The name comes from the rules.
    let mut other = Room::open_with(RoomRules {
        default_room_name: "Room".into(),
        ..RoomRules::default()
    });
    other.ok(&platform_admin("staff"), revoke(&[RoomResource::Name], "x"));
    assert_eq!(other.state.profile.name, "Room");
}

#[test]
fn only_a_platform_admin_revokes_and_only_with_a_reason_and_distinct_resources() {
    let mut room = Room::open();
    for who in ["owner", "admin", "alice"] {
        assert_eq!(
            room.err(&user(who), revoke(&[RoomResource::Name], "spam")),
            Rejection::Forbidden,
            "{who}"
        );
    }
    assert_eq!(
        room.err(&system(), revoke(&[RoomResource::Name], "spam")),
        Rejection::Forbidden
    );
    let staff = platform_admin("staff");
    assert_eq!(
        room.err(&staff, revoke(&[], "spam")),
        Rejection::InvalidResources
    );
    assert_eq!(
        room.err(
            &staff,
            revoke(&[RoomResource::Name, RoomResource::Name], "spam")
        ),
        Rejection::InvalidResources
    );
    assert_eq!(
        room.err(&staff, revoke(&[RoomResource::Name], " \t")),
        Rejection::FieldEmpty {
            field: Field::Reason
        }
    );
    assert_eq!(
        room.err(&staff, revoke(&[RoomResource::Name], &"x".repeat(201))),
        Rejection::FieldTooLong {
            field: Field::Reason,
            max: 200
        }
    );
    assert!(
        room.ask(&staff, revoke(&[RoomResource::Name], &"x".repeat(200)))
            .is_ok()
    );
    assert_eq!(
        room.err(&staff, revoke(&[RoomResource::Name], "a\u{202E}b")),
        Rejection::FieldInvalidCharacter {
            field: Field::Reason,
            character: 0x202E
        }
    );
}

#[test]
fn a_default_room_name_that_breaks_the_name_rule_is_refused() {
    for name in ["", " Room", &"n".repeat(31), "a\u{0007}b"] {
        let rules = RoomRules {
            default_room_name: name.to_owned(),
            ..RoomRules::default()
        };
        assert!(rules.validate().is_err(), "{name:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// System messages.
// ---------------------------------------------------------------------------------------------

#[test]
fn the_platform_speaks_to_a_room_with_a_system_message() {
    let mut room = Room::open();
    let message = |text: &str| CommandKind::SystemMessage { text: text.into() };
    let version = room.state.version;
    let events = room.ok(
        &platform_admin("staff"),
        message("Maintenance at 02:00.\nBack soon."),
    );
    assert_eq!(
        events,
        [Event::RoomSystemMessage {
            text: "Maintenance at 02:00.\nBack soon.".into(),
            by: Some(id("staff")),
        }]
    );
    assert_eq!(room.state.version, version + 1);
    assert_eq!(
        room.ok(&system(), message("Hi")),
        [Event::RoomSystemMessage {
            text: "Hi".into(),
            by: None,
        }]
    );
    for who in ["owner", "admin", "alice"] {
        assert_eq!(room.err(&user(who), message("Hi")), Rejection::Forbidden);
    }
    let staff = platform_admin("staff");
    assert_eq!(
        room.err(&staff, message(" \n ")),
        Rejection::FieldEmpty {
            field: Field::Message
        }
    );
    assert_eq!(
        room.err(&staff, message(&"x".repeat(501))),
        Rejection::FieldTooLong {
            field: Field::Message,
            max: 500
        }
    );
    assert_eq!(
        room.err(&staff, message("a\u{0007}b")),
        Rejection::FieldInvalidCharacter {
            field: Field::Message,
            character: 7
        }
    );
}
