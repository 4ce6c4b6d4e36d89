//! The rules of a room: every rejection `decide` gives and every authorization rule, driven
//! through `decide` + `evolve` with the room's invariants checked after each accepted command.

mod fixture {
    //! A room driven through `decide` and `evolve`, and small builders for commands.

    use room_domain::{
        Actor, ApplyGift, Coins, Command, CommandId, CommandKind, Ctx, Event, GiftId, GiftSnapshot,
        MicChange, MicDownReason, OrderId, Rejection, RobotGift, RocketId, RoomId, RoomRules,
        RoomState, SeatIndex, SeatSessionId, Timestamp, UserActor, UserId, decide, evolve,
    };

    /// Wednesday 2025-11-26, 12:00 UTC: far from any day or week boundary between UTC-8 and
    /// UTC+8.
    pub const NOON: Timestamp = Timestamp(1_764_158_400_000);

    pub fn id(name: &str) -> UserId {
        UserId::new(name).expect("a valid user id")
    }

    /// An ordinary user with VIP level 0.
    pub fn user(name: &str) -> Actor {
        Actor::user(id(name))
    }

    pub fn vip(name: &str, vip_level: u8) -> Actor {
        Actor::User(UserActor {
            user_id: id(name),
            vip_level,
            platform_admin: false,
        })
    }

    pub fn platform_admin(name: &str) -> Actor {
        Actor::User(UserActor {
            user_id: id(name),
            vip_level: 0,
            platform_admin: true,
        })
    }

    pub fn system() -> Actor {
        Actor::System
    }

    pub fn robot(name: &str) -> Actor {
        Actor::Robot(id(name))
    }

    /// A free robot gift of `count` roses worth `price` each, with as much heat and fuel.
    pub fn robot_gift(recipients: &[&str], price: i64, count: u32) -> RobotGift {
        RobotGift {
            gift: GiftSnapshot {
                gift_id: GiftId::new("rose").expect("a valid gift id"),
                price: Coins(price),
                heat: price,
                fuel: price,
                lucky: false,
            },
            count,
            recipients: recipients.iter().map(|name| id(name)).collect(),
        }
    }

    pub fn seat(index: u8) -> SeatIndex {
        SeatIndex(index)
    }

    /// One room, the rules it runs under, and the time and random input of the next command.
    pub struct Room {
        pub state: RoomState,
        pub rules: RoomRules,
        pub now: Timestamp,
        pub random: u64,
    }

    impl Room {
        /// A room that was never created.
        pub fn absent(rules: RoomRules) -> Room {
            Room {
                state: RoomState::new(RoomId::new("room-1").expect("a valid room id")),
                rules,
                now: NOON,
                random: 0,
            }
        }

        /// [`Room::open_with`] the default rules.
        pub fn open() -> Room {
            Room::open_with(RoomRules::default())
        }

        /// An open room of 8 seats created by `owner`, with `admin` and `admin2` appointed and
        /// `alice` and `bob` as plain members; all five are present.
        pub fn open_with(rules: RoomRules) -> Room {
            let mut room = Room::absent(rules);
            room.ok(
                &user("owner"),
                CommandKind::CreateRoom {
                    name: "Night talk".into(),
                    seat_count: None,
                    region: "sg".into(),
                },
            );
            for name in ["owner", "admin", "admin2", "alice", "bob"] {
                room.join(name);
            }
            for name in ["admin", "admin2"] {
                room.ok(
                    &user("owner"),
                    CommandKind::SetAdmin {
                        user: id(name),
                        admin: true,
                    },
                );
            }
            room
        }

        /// What `decide` answers, without applying anything.
        pub fn ask(&self, actor: &Actor, kind: CommandKind) -> Result<Vec<Event>, Rejection> {
            let command = Command::new(CommandId::new("cmd-1").expect("a valid id"), kind);
            let ctx = Ctx {
                now: self.now,
                actor,
                random: self.random,
                rules: &self.rules,
            };
            decide(&self.state, &command, &ctx)
        }

        /// Decides, applies the events of an accepted command and checks the invariants.
        #[track_caller]
        pub fn run(&mut self, actor: &Actor, kind: CommandKind) -> Result<Vec<Event>, Rejection> {
            let result = self.ask(actor, kind);
            if let Ok(events) = &result {
                for event in events {
                    evolve(&mut self.state, event);
                }
                if let Err(violation) = self.state.check_invariants(self.now) {
                    panic!("invariant broken after {events:?}: {violation}");
                }
            }
            result
        }

        /// Runs a command that must be accepted and returns its events.
        #[track_caller]
        pub fn ok(&mut self, actor: &Actor, kind: CommandKind) -> Vec<Event> {
            let shown = format!("{kind:?}");
            match self.run(actor, kind) {
                Ok(events) => events,
                Err(rejection) => panic!("{shown} by {actor:?} was rejected: {rejection:?}"),
            }
        }

        /// Runs a command that must be rejected and returns the rejection.
        #[track_caller]
        pub fn err(&mut self, actor: &Actor, kind: CommandKind) -> Rejection {
            let shown = format!("{kind:?}");
            match self.run(actor, kind) {
                Ok(events) => panic!("{shown} by {actor:?} was accepted: {events:?}"),
                Err(rejection) => rejection,
            }
        }

        #[track_caller]
        pub fn join(&mut self, name: &str) {
            self.join_as(&user(name));
        }

        #[track_caller]
        pub fn join_as(&mut self, actor: &Actor) -> Vec<Event> {
            self.ok(
                actor,
                CommandKind::Join {
                    password_verified: false,
                    verified_lock: None,
                },
            )
        }

        #[track_caller]
        pub fn sit(&mut self, name: &str, index: u8) -> Vec<Event> {
            self.ok(&user(name), CommandKind::TakeSeat { seat: seat(index) })
        }

        /// Applies a gift as the gift saga does: as the system.
        #[track_caller]
        pub fn give(&mut self, gift: ApplyGift) -> Vec<Event> {
            self.ok(&system(), CommandKind::ApplyGift(gift))
        }

        pub fn advance_secs(&mut self, secs: u32) {
            self.now = self.now.plus_secs(secs);
        }

        /// Who sits on seat `index`.
        pub fn occupant(&self, index: u8) -> Option<&str> {
            let occupant = self.state.seat(seat(index))?.occupant.as_ref()?;
            Some(occupant.user.as_str())
        }

        /// The session of whoever sits on seat `index`.
        #[track_caller]
        pub fn session(&self, index: u8) -> SeatSessionId {
            self.state.seats[usize::from(index)]
                .occupant
                .as_ref()
                .expect("an occupied seat")
                .session
        }

        pub fn is_member(&self, name: &str) -> bool {
            self.state.members.contains_key(name)
        }
    }

    /// `count` roses of `price` coins (heat and fuel equal to the price per unit) from `sender`
    /// to each of `recipients`.
    pub fn gift(sender: &str, recipients: &[&str], price: i64, count: u32) -> ApplyGift {
        ApplyGift {
            order_id: OrderId::new("order-1").expect("a valid order id"),
            sender: id(sender),
            recipients: recipients.iter().map(|name| id(name)).collect(),
            gift: GiftSnapshot {
                gift_id: GiftId::new("rose").expect("a valid gift id"),
                price: Coins(price),
                heat: price,
                fuel: price,
                lucky: false,
            },
            count,
            lucky_draw: 0,
        }
    }

    /// The seat, user and reason of every `Down` among `events`, in order.
    pub fn downs(events: &[Event]) -> Vec<(u8, &str, MicDownReason)> {
        events
            .iter()
            .filter_map(|event| match event {
                Event::RoomMicChanged {
                    seat,
                    change: MicChange::Down { user, reason, .. },
                } => Some((seat.0, user.as_str(), *reason)),
                _ => None,
            })
            .collect()
    }

    /// The type names of `events`, in order.
    pub fn types(events: &[Event]) -> Vec<&'static str> {
        events.iter().map(Event::type_name).collect()
    }

    /// One command of every kind (the match below fails to compile when a kind is added).
    pub fn every_command_kind() -> Vec<CommandKind> {
        let kinds = vec![
            CommandKind::CreateRoom {
                name: "Again".into(),
                seat_count: None,
                region: String::new(),
            },
            CommandKind::UpdateProfile {
                name: Some("Renamed".into()),
                notice: None,
                cover_url: None,
            },
            CommandKind::ChangeBackground {
                background_url: Some("https://img.example/bg.png".into()),
            },
            CommandKind::SetChatEnabled { enabled: false },
            CommandKind::SetLock {
                password_hash: None,
            },
            CommandKind::CloseRoom,
            CommandKind::Join {
                password_verified: true,
                verified_lock: None,
            },
            CommandKind::Leave,
            CommandKind::Evict {
                user: id("alice"),
                seen: None,
            },
            CommandKind::TakeSeat { seat: seat(0) },
            CommandKind::LeaveSeat { seat: seat(0) },
            CommandKind::LockSeat {
                seat: seat(0),
                locked: true,
            },
            CommandKind::MuteSeat {
                seat: seat(0),
                muted: true,
            },
            CommandKind::RemoveFromSeat { seat: seat(0) },
            CommandKind::ConfirmMicPublish {
                user: id("alice"),
                at: None,
            },
            CommandKind::MicPublishTimeout {
                seat: seat(0),
                session: SeatSessionId(1),
            },
            CommandKind::RtcUserLeft {
                user: id("alice"),
                at: None,
            },
            CommandKind::Kick {
                user: id("alice"),
                ban_seconds: None,
            },
            CommandKind::Unban { user: id("alice") },
            CommandKind::ChatMute {
                user: id("alice"),
                seconds: 60,
            },
            CommandKind::SetAdmin {
                user: id("alice"),
                admin: true,
            },
            CommandKind::ApplyGift(gift("alice", &["bob"], 10, 1)),
            CommandKind::LaunchRocket {
                rocket_id: RocketId(1),
                level: 1,
                scheduled_at: NOON,
            },
            CommandKind::ResetRocket,
            CommandKind::RobotGift(robot_gift(&["bob"], 10, 1)),
        ];
        for kind in &kinds {
            match kind {
                CommandKind::CreateRoom { .. }
                | CommandKind::UpdateProfile { .. }
                | CommandKind::ChangeBackground { .. }
                | CommandKind::SetChatEnabled { .. }
                | CommandKind::SetLock { .. }
                | CommandKind::CloseRoom
                | CommandKind::Join { .. }
                | CommandKind::Leave
                | CommandKind::Evict { .. }
                | CommandKind::TakeSeat { .. }
                | CommandKind::LeaveSeat { .. }
                | CommandKind::LockSeat { .. }
                | CommandKind::MuteSeat { .. }
                | CommandKind::RemoveFromSeat { .. }
                | CommandKind::ConfirmMicPublish { .. }
                | CommandKind::MicPublishTimeout { .. }
                | CommandKind::RtcUserLeft { .. }
                | CommandKind::Kick { .. }
                | CommandKind::Unban { .. }
                | CommandKind::ChatMute { .. }
                | CommandKind::SetAdmin { .. }
                | CommandKind::ApplyGift(_)
                | CommandKind::LaunchRocket { .. }
                | CommandKind::ResetRocket
                | CommandKind::RobotGift(_) => {}
            }
        }
        kinds
    }
}

use std::collections::BTreeSet;

use fixture::{
    NOON, Room, downs, every_command_kind, gift, id, platform_admin, robot, robot_gift, seat,
    system, types, user, vip,
};
use room_domain::{
    Coins, CommandKind, DayKey, Event, Field, GiftId, GiftSent, ImPriority, LAUNCH_WAIT_MS,
    LeaveReason, LuckyEntry, LuckyOutcome, LuckyTable, MicChange, MicDownReason, OrderId,
    PasswordHash, Rejection, RejectionKind, RocketId, RocketLevel, RocketStatus, Role, RoomRules,
    RoomStatus, SeatSessionId, Timestamp,
};

fn kick(name: &str) -> CommandKind {
    CommandKind::Kick {
        user: id(name),
        ban_seconds: None,
    }
}

fn chat_mute(name: &str, seconds: u32) -> CommandKind {
    CommandKind::ChatMute {
        user: id(name),
        seconds,
    }
}

fn mute_seat(index: u8, muted: bool) -> CommandKind {
    CommandKind::MuteSeat {
        seat: seat(index),
        muted,
    }
}

fn lock_seat(index: u8, locked: bool) -> CommandKind {
    CommandKind::LockSeat {
        seat: seat(index),
        locked,
    }
}

fn remove_from_seat(index: u8) -> CommandKind {
    CommandKind::RemoveFromSeat { seat: seat(index) }
}

fn set_admin(name: &str, admin: bool) -> CommandKind {
    CommandKind::SetAdmin {
        user: id(name),
        admin,
    }
}

fn join(password_verified: bool) -> CommandKind {
    CommandKind::Join {
        password_verified,
        verified_lock: None,
    }
}

fn cannot_moderate(name: &str) -> Rejection {
    Rejection::CannotModerate { target: id(name) }
}

fn not_a_member(name: &str) -> Rejection {
    Rejection::NotAMember { user: id(name) }
}

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
        Rejection::FieldInvalidCharacter {
            field: Field::BackgroundUrl,
            character: 0x202E
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
    let long_url = format!("https://img.example/{}", "c".repeat(500));
    assert_eq!(
        room.err(&admin, update(None, None, Some(&long_url))),
        Rejection::FieldTooLong {
            field: Field::CoverUrl,
            max: 512
        }
    );
    assert_eq!(
        room.err(
            &admin,
            CommandKind::ChangeBackground {
                background_url: Some(long_url.clone()),
            }
        ),
        Rejection::FieldTooLong {
            field: Field::BackgroundUrl,
            max: 512
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
// Gifts: validation.
// ---------------------------------------------------------------------------------------------

#[test]
fn gift_counts_must_be_within_limits() {
    let room = Room::open();
    let max = room.rules.max_gift_count;
    for count in [0, max + 1] {
        assert_eq!(
            room.ask(
                &system(),
                CommandKind::ApplyGift(gift("alice", &["bob"], 1, count))
            ),
            Err(Rejection::InvalidGiftCount { count, max })
        );
    }
    assert!(
        room.ask(
            &system(),
            CommandKind::ApplyGift(gift("alice", &["bob"], 1, max))
        )
        .is_ok()
    );

    let room = Room::open_with(RoomRules {
        max_gift_count: 10,
        ..RoomRules::default()
    });
    assert_eq!(
        room.ask(
            &system(),
            CommandKind::ApplyGift(gift("alice", &["bob"], 1, 11))
        ),
        Err(Rejection::InvalidGiftCount { count: 11, max: 10 })
    );
}

#[test]
fn recipients_must_be_one_to_the_limit_and_distinct() {
    let room = Room::open();
    assert_eq!(
        room.ask(&system(), CommandKind::ApplyGift(gift("alice", &[], 1, 1))),
        Err(Rejection::InvalidRecipientCount { count: 0, max: 20 })
    );
    let names: Vec<String> = (0..21).map(|i| format!("fan{i}")).collect();
    let many: Vec<&str> = names.iter().map(String::as_str).collect();
    assert_eq!(
        room.ask(
            &system(),
            CommandKind::ApplyGift(gift("alice", &many, 1, 1))
        ),
        Err(Rejection::InvalidRecipientCount { count: 21, max: 20 })
    );
    assert_eq!(
        room.ask(
            &system(),
            CommandKind::ApplyGift(gift("alice", &["bob", "owner", "bob"], 1, 1))
        ),
        Err(Rejection::DuplicateRecipient { user: id("bob") })
    );
}

#[test]
fn a_sender_cannot_be_a_recipient_of_their_own_gift() {
    let room = Room::open();
    for recipients in [&["alice"][..], &["bob", "alice"][..]] {
        let to_self = gift("alice", recipients, 10, 1);
        // The saga's pre-check, before anything is debited...
        assert_eq!(
            to_self.check_shape(&room.rules),
            Err(Rejection::SelfGift),
            "{recipients:?}"
        );
        // ...and the room itself, whoever applies it.
        for actor in [system(), user("alice")] {
            assert_eq!(
                room.ask(&actor, CommandKind::ApplyGift(to_self.clone())),
                Err(Rejection::SelfGift),
                "{recipients:?}"
            );
        }
    }
    assert_eq!(Rejection::SelfGift.code(), "SELF_GIFT");
    assert_eq!(Rejection::SelfGift.kind(), RejectionKind::Rule);
}

#[test]
fn sender_and_recipients_must_be_members() {
    let room = Room::open();
    assert_eq!(
        room.ask(
            &system(),
            CommandKind::ApplyGift(gift("carol", &["bob"], 1, 1))
        ),
        Err(not_a_member("carol"))
    );
    assert_eq!(
        room.ask(
            &system(),
            CommandKind::ApplyGift(gift("alice", &["bob", "carol"], 1, 1))
        ),
        Err(not_a_member("carol"))
    );
}

#[test]
fn a_gift_with_a_negative_price_heat_or_fuel_is_invalid() {
    let room = Room::open();
    let mut negative_price = gift("alice", &["bob"], 10, 1);
    negative_price.gift.price = Coins(-1);
    let mut negative_heat = gift("alice", &["bob"], 10, 1);
    negative_heat.gift.heat = -1;
    let mut negative_fuel = gift("alice", &["bob"], 10, 1);
    negative_fuel.gift.fuel = -1;
    for bad in [negative_price, negative_heat, negative_fuel] {
        assert_eq!(
            room.ask(&system(), CommandKind::ApplyGift(bad)),
            Err(Rejection::InvalidGift)
        );
    }
}

#[test]
fn amounts_that_do_not_fit_are_refused() {
    let room = Room::open();
    let overflows = [
        gift("alice", &["bob"], i64::MAX, 2),
        gift("alice", &["bob", "owner"], i64::MAX / 2 + 1, 1),
        {
            let mut hot = gift("alice", &["bob"], 1, 2);
            hot.gift.heat = i64::MAX;
            hot
        },
        {
            let mut fuelled = gift("alice", &["bob"], 1, 2);
            fuelled.gift.fuel = i64::MAX;
            fuelled
        },
    ];
    for bad in overflows {
        assert_eq!(
            room.ask(&system(), CommandKind::ApplyGift(bad)),
            Err(Rejection::AmountOverflow)
        );
    }
    // The largest order that fits is fine.
    assert!(
        room.ask(
            &system(),
            CommandKind::ApplyGift(gift("alice", &["bob"], i64::MAX, 1))
        )
        .is_ok()
    );
}

#[test]
fn a_user_applies_only_their_own_gifts() {
    let mut room = Room::open();
    let as_bob = || CommandKind::ApplyGift(gift("bob", &["alice"], 10, 1));
    assert_eq!(room.err(&user("alice"), as_bob()), Rejection::Forbidden);
    assert_eq!(room.err(&user("owner"), as_bob()), Rejection::Forbidden);
    assert_eq!(
        room.err(&platform_admin("staff"), as_bob()),
        Rejection::Forbidden
    );
    room.ok(&user("bob"), as_bob());
    room.ok(&system(), as_bob());
}

// ---------------------------------------------------------------------------------------------
// Gifts: effects on heat, contribution and the rocket.
// ---------------------------------------------------------------------------------------------

/// Three rocket levels small enough to reach with a few gifts.
fn small_rocket_rules() -> RoomRules {
    let rules = RoomRules {
        rocket_levels: vec![
            RocketLevel {
                fuel: 100,
                countdown_secs: 60,
                reward_pool: Coins(1_000),
                winners: 3,
            },
            RocketLevel {
                fuel: 300,
                countdown_secs: 60,
                reward_pool: Coins(500),
                winners: 10,
            },
            RocketLevel {
                fuel: 600,
                countdown_secs: 90,
                reward_pool: Coins(7),
                winners: 2,
            },
        ],
        ..RoomRules::default()
    };
    rules.validate().expect("valid rules");
    rules
}

#[test]
fn a_gift_adds_heat_contribution_and_fuel_by_its_value() {
    let mut room = Room::open_with(small_rocket_rules());
    let today = NOON.day_key(0);
    let mut rose = gift("alice", &["bob", "owner"], 2, 3);
    rose.gift.heat = 5;
    rose.gift.fuel = 1;
    let events = room.give(rose);
    assert_eq!(
        types(&events),
        [
            "RoomGiftSent",
            "RoomHeatChanged",
            "RoomRankChanged",
            // The room's first gift finds the rocket of an earlier day.
            "RoomRocketReset",
            "RoomRocketFuelChanged",
        ]
    );
    let Event::RoomGiftSent(sent) = &events[0] else {
        panic!("{events:?}");
    };
    assert_eq!(sent.total_value, Coins(12));
    assert_eq!(sent.value_per_recipient(), Coins(6));
    assert_eq!((sent.heat_added, sent.fuel_added), (30, 6));
    assert_eq!(sent.lucky, None);
    assert_eq!(
        events[1],
        Event::RoomHeatChanged {
            heat: 30,
            delta: 30
        }
    );
    assert_eq!(
        events[2],
        Event::RoomRankChanged {
            user: id("alice"),
            day_key: today,
            week_key: today.week(),
            day_total: Coins(12),
            week_total: Coins(12),
        }
    );
    assert_eq!(
        events[4],
        Event::RoomRocketFuelChanged {
            level: 1,
            fuel: 6,
            threshold: 100
        }
    );

    let events = room.give(gift("alice", &["bob"], 7, 1));
    assert!(!types(&events).contains(&"RoomRocketReset"));
    assert_eq!(room.state.heat, 37);
    assert_eq!(room.state.day_contribution(&id("alice"), today), Coins(19));
    assert_eq!(
        room.state.week_contribution(&id("alice"), today.week()),
        Coins(19)
    );
    assert_eq!(room.state.day_contribution(&id("bob"), today), Coins::ZERO);
    assert_eq!(room.state.rocket.fuel, 13);
    assert_eq!(room.state.rocket.level, 1);
}

#[test]
fn reaching_the_threshold_ignites_the_rocket() {
    let mut room = Room::open_with(small_rocket_rules());
    room.give(gift("alice", &["bob"], 60, 1));
    room.advance_secs(5);
    let events = room.give(gift("alice", &["bob"], 30, 2));
    let now = room.now;
    assert_eq!(
        events[events.len() - 2..],
        [
            // Fuel stops at the threshold.
            Event::RoomRocketFuelChanged {
                level: 1,
                fuel: 100,
                threshold: 100
            },
            Event::RoomRocketIgnited {
                rocket_id: RocketId(1),
                level: 1,
                ignited_at: now,
                launch_at: now.plus_secs(60),
            },
        ]
    );
    assert_eq!(
        room.state.rocket.status,
        RocketStatus::Ignited {
            rocket_id: RocketId(1),
            ignited_at: now,
            launch_at: now.plus_secs(60),
        }
    );

    // A counting-down rocket takes no fuel, but the gift still counts for heat and rank.
    let events = room.give(gift("alice", &["bob"], 50, 1));
    assert_eq!(
        types(&events),
        ["RoomGiftSent", "RoomHeatChanged", "RoomRankChanged"]
    );
    assert_eq!(room.state.rocket.fuel, 100);
}

#[test]
fn a_gift_just_below_the_threshold_does_not_ignite() {
    let mut room = Room::open_with(small_rocket_rules());
    let events = room.give(gift("alice", &["bob"], 99, 1));
    assert!(!types(&events).contains(&"RoomRocketIgnited"));
    assert_eq!(room.state.rocket.status, RocketStatus::Idle);
    let events = room.give(gift("alice", &["bob"], 1, 1));
    assert!(types(&events).contains(&"RoomRocketIgnited"));
}

/// The instant day `day` begins in the zone of `rules`, and the last millisecond before it.
fn around_midnight(rules: &RoomRules, day: DayKey) -> (Timestamp, Timestamp) {
    let midnight = day.start(rules.day_utc_offset_secs);
    (Timestamp(midnight.0 - 1), midnight)
}

#[test]
fn a_gift_on_a_new_local_day_resets_the_rocket_and_the_day_rank() {
    let rules = RoomRules {
        day_utc_offset_secs: 8 * 3600,
        ..small_rocket_rules()
    };
    let today = NOON.day_key(rules.day_utc_offset_secs);
    let tomorrow = DayKey(today.0 + 1);
    let (before, after) = around_midnight(&rules, tomorrow);
    // Both instants fall on the same UTC day: only the offset puts a boundary between them.
    assert_eq!(before.day_key(0), after.day_key(0));
    assert_eq!(today.week(), tomorrow.week());

    let mut room = Room::open_with(rules);
    room.now = before;
    room.give(gift("alice", &["bob"], 40, 1));
    assert_eq!(room.state.rocket.fuel, 40);

    room.now = after;
    let events = room.give(gift("alice", &["bob"], 25, 1));
    let reset = events
        .iter()
        .position(|e| *e == Event::RoomRocketReset { day_key: tomorrow })
        .expect("a reset");
    let fuel = events
        .iter()
        .position(|e| matches!(e, Event::RoomRocketFuelChanged { .. }))
        .expect("fuel");
    assert!(reset < fuel, "the reset comes first: {events:?}");
    assert_eq!(room.state.rocket.fuel, 25);
    assert_eq!(room.state.rocket.day_key, tomorrow);
    assert_eq!(
        room.state.day_contribution(&id("alice"), tomorrow),
        Coins(25)
    );
    assert_eq!(
        room.state.week_contribution(&id("alice"), tomorrow.week()),
        Coins(65)
    );
}

#[test]
fn without_an_offset_the_same_instants_are_one_day() {
    let offset_rules = RoomRules {
        day_utc_offset_secs: 8 * 3600,
        ..RoomRules::default()
    };
    let (before, after) = around_midnight(&offset_rules, DayKey(NOON.day_key(8 * 3600).0 + 1));
    let mut room = Room::open_with(small_rocket_rules());
    room.now = before;
    room.give(gift("alice", &["bob"], 40, 1));
    room.now = after;
    let events = room.give(gift("alice", &["bob"], 25, 1));
    assert!(!types(&events).contains(&"RoomRocketReset"));
    assert_eq!(room.state.rocket.fuel, 65);
    assert_eq!(
        room.state.day_contribution(&id("alice"), after.day_key(0)),
        Coins(65)
    );
}

#[test]
fn the_week_rank_resets_on_monday() {
    let rules = small_rocket_rules();
    // NOON is a Wednesday: the Monday after is five days later.
    let monday = DayKey(NOON.day_key(0).0 + 5);
    let (sunday_night, monday_midnight) = around_midnight(&rules, monday);
    assert_ne!(sunday_night.day_key(0).week(), monday.week());

    let mut room = Room::open_with(rules);
    room.give(gift("alice", &["bob"], 10, 1));
    room.now = sunday_night;
    room.give(gift("alice", &["bob"], 20, 1));
    assert_eq!(
        room.state
            .week_contribution(&id("alice"), sunday_night.day_key(0).week()),
        Coins(30)
    );
    room.now = monday_midnight;
    let events = room.give(gift("alice", &["bob"], 5, 1));
    assert!(events.contains(&Event::RoomRankChanged {
        user: id("alice"),
        day_key: monday,
        week_key: monday.week(),
        day_total: Coins(5),
        week_total: Coins(5),
    }));
}

#[test]
fn reset_rocket_acts_once_per_day() {
    let mut room = Room::open_with(small_rocket_rules());
    room.give(gift("alice", &["bob"], 40, 1));
    assert_eq!(room.ok(&system(), CommandKind::ResetRocket), []);
    let tomorrow = DayKey(NOON.day_key(0).0 + 1);
    room.now = tomorrow.start(0);
    assert_eq!(
        room.ok(&system(), CommandKind::ResetRocket),
        [Event::RoomRocketReset { day_key: tomorrow }]
    );
    assert_eq!(room.state.rocket.fuel, 0);
    assert_eq!(room.ok(&system(), CommandKind::ResetRocket), []);
}

// ---------------------------------------------------------------------------------------------
// Rocket launches.
// ---------------------------------------------------------------------------------------------

/// Fills the current level with one gift from alice and returns the ignition.
fn ignite(room: &mut Room) -> (RocketId, u32, Timestamp) {
    let level = room.state.rocket.level;
    let needed = room.rules.rocket_level(level).expect("a level").fuel - room.state.rocket.fuel;
    room.give(gift("alice", &["owner"], needed, 1));
    match room.state.rocket.status {
        RocketStatus::Ignited {
            rocket_id,
            launch_at,
            ..
        } => (rocket_id, level, launch_at),
        status => panic!("not ignited: {status:?}"),
    }
}

fn launch(rocket_id: RocketId, level: u32, scheduled_at: Timestamp) -> CommandKind {
    CommandKind::LaunchRocket {
        rocket_id,
        level,
        scheduled_at,
    }
}

/// The rewards of a launch event.
fn rewards(events: &[Event]) -> Vec<(String, i64)> {
    match events {
        [Event::RoomRocketLaunched { rewards, .. }] => rewards
            .iter()
            .map(|r| (r.user.to_string(), r.coins.0))
            .collect(),
        _ => panic!("not a launch: {events:?}"),
    }
}

#[test]
fn a_rocket_launches_at_its_time_not_before() {
    let mut room = Room::open_with(small_rocket_rules());
    let (rocket_id, level, launch_at) = ignite(&mut room);
    assert_eq!(launch_at, NOON.plus_secs(60));

    room.now = Timestamp(launch_at.0 - 1);
    assert_eq!(
        room.err(&system(), launch(rocket_id, level, launch_at)),
        Rejection::RocketNotReady { launch_at }
    );
    room.now = launch_at;
    let events = room.ok(&system(), launch(rocket_id, level, launch_at));
    assert!(matches!(
        events.as_slice(),
        [Event::RoomRocketLaunched {
            rocket_id: RocketId(1),
            level: 1,
            next_level: Some(2),
            ..
        }]
    ));
    // Launched once: the same timer again is stale.
    assert_eq!(
        room.err(&system(), launch(rocket_id, level, launch_at)),
        Rejection::StaleTimer
    );
}

#[test]
fn a_launch_for_another_rocket_level_or_time_is_stale() {
    let mut room = Room::open_with(small_rocket_rules());
    assert_eq!(
        room.err(&system(), launch(RocketId(1), 1, NOON)),
        Rejection::StaleTimer,
        "nothing is ignited"
    );
    let (rocket_id, level, launch_at) = ignite(&mut room);
    room.now = launch_at.plus_secs(1);
    for stale in [
        launch(RocketId(rocket_id.0 + 1), level, launch_at),
        launch(rocket_id, level + 1, launch_at),
        launch(rocket_id, level, NOON),
        launch(rocket_id, level, launch_at.plus_secs(1)),
    ] {
        assert_eq!(room.err(&system(), stale), Rejection::StaleTimer);
    }
    room.ok(&system(), launch(rocket_id, level, launch_at));
}

#[test]
fn a_rocket_ignited_before_midnight_launches_after_it_then_resets() {
    let rules = small_rocket_rules();
    let tomorrow = DayKey(NOON.day_key(0).0 + 1);
    let mut room = Room::open_with(rules);
    // Ignited 30 s before midnight: the 60 s countdown ends on the next day.
    room.now = Timestamp(tomorrow.start(0).0 - 30_000);
    let (rocket_id, level, launch_at) = ignite(&mut room);
    assert_eq!(launch_at.day_key(0), tomorrow);
    let ignited = room.state.rocket.clone();

    // Midnight's reset waits for the launch: the people who fuelled it are owed it.
    room.now = tomorrow.start(0);
    assert_eq!(room.ok(&system(), CommandKind::ResetRocket), Vec::new());
    // So does a gift of the new day, which adds no fuel to an ignited rocket.
    let events = room.give(gift("alice", &["bob"], 10, 1));
    assert!(
        !events.iter().any(|e| matches!(
            e,
            Event::RoomRocketReset { .. } | Event::RoomRocketFuelChanged { .. }
        )),
        "{events:?}"
    );
    assert_eq!(room.state.rocket, ignited);

    // The launch pays its rewards, then the new day's reset comes.
    room.now = launch_at;
    let events = room.ok(&system(), launch(rocket_id, level, launch_at));
    assert!(matches!(
        events.as_slice(),
        [
            Event::RoomRocketLaunched { rewards, .. },
            Event::RoomRocketReset { day_key },
        ] if !rewards.is_empty() && *day_key == tomorrow
    ));
    assert_eq!(room.state.rocket.status, RocketStatus::Idle);
    assert_eq!(
        (
            room.state.rocket.level,
            room.state.rocket.fuel,
            room.state.rocket.day_key
        ),
        (1, 0, tomorrow)
    );
    // The timer again is stale; the next gift fuels the new day's rocket without a reset.
    assert_eq!(
        room.err(&system(), launch(rocket_id, level, launch_at)),
        Rejection::StaleTimer
    );
    let events = room.give(gift("alice", &["bob"], 10, 1));
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::RoomRocketReset { .. }))
    );
    assert_eq!((room.state.rocket.level, room.state.rocket.fuel), (1, 10));
}

#[test]
fn a_level_the_rules_no_longer_have_launches_without_rewards() {
    let mut room = Room::open_with(small_rocket_rules());
    let (rocket_id, level, launch_at) = ignite(&mut room);
    // The operator changed the rules while level 1 was counting down.
    room.rules.rocket_levels.clear();
    room.now = launch_at;
    let events = room.ok(&system(), launch(rocket_id, level, launch_at));
    assert_eq!(
        events,
        [Event::RoomRocketLaunched {
            rocket_id,
            level,
            rewards: Vec::new(),
            next_level: None,
        }]
    );
    assert!(!matches!(
        room.state.rocket.status,
        RocketStatus::Ignited { .. }
    ));
}

#[test]
fn a_launch_overdue_by_a_day_is_waited_for_no_more() {
    let mut room = Room::open_with(small_rocket_rules());
    let (_, _, launch_at) = ignite(&mut room);
    // Its timer was lost: a day after the launch time, the day's reset goes ahead.
    room.now = Timestamp(launch_at.0 + LAUNCH_WAIT_MS - 1);
    assert_eq!(room.ok(&system(), CommandKind::ResetRocket), Vec::new());
    assert!(matches!(
        room.state.rocket.status,
        RocketStatus::Ignited { .. }
    ));
    room.now = Timestamp(launch_at.0 + LAUNCH_WAIT_MS);
    let today = room.now.day_key(0);
    assert_eq!(
        room.ok(&system(), CommandKind::ResetRocket),
        [Event::RoomRocketReset { day_key: today }]
    );
    assert_eq!(room.state.rocket.status, RocketStatus::Idle);
    // A gift fuels the new day's rocket.
    room.give(gift("alice", &["bob"], 10, 1));
    assert_eq!((room.state.rocket.level, room.state.rocket.fuel), (1, 10));
}

#[test]
fn launch_rewards_add_up_to_the_pool_among_distinct_members() {
    let mut room = Room::open_with(small_rocket_rules());
    let (rocket_id, level, launch_at) = ignite(&mut room);
    room.now = launch_at;
    let mut winner_sets = BTreeSet::new();
    for random in 0..40 {
        room.random = random;
        let events = room
            .ask(&system(), launch(rocket_id, level, launch_at))
            .expect("launches");
        let rewards = rewards(&events);
        assert_eq!(rewards.len(), 3, "level 1 has 3 winners");
        assert_eq!(rewards.iter().map(|(_, c)| c).sum::<i64>(), 1_000);
        let mut amounts: Vec<i64> = rewards.iter().map(|(_, c)| *c).collect();
        amounts.sort_unstable();
        assert_eq!(amounts, [333, 333, 334]);
        let winners: BTreeSet<String> = rewards.into_iter().map(|(user, _)| user).collect();
        assert_eq!(winners.len(), 3, "winners are distinct");
        assert!(winners.iter().all(|w| room.is_member(w)));
        winner_sets.insert(winners);
    }
    // The random input chooses the winners.
    assert!(winner_sets.len() > 1);
}

#[test]
fn fewer_members_than_winners_all_win_and_an_empty_room_wins_nothing() {
    let mut room = Room::open_with(small_rocket_rules());
    let (rocket_id, level, launch_at) = ignite(&mut room);
    room.now = launch_at;
    room.ok(&system(), launch(rocket_id, level, launch_at));

    // Level 2 has 10 winners; the room has 5 members, and one leaves before the launch.
    let (rocket_id, level, launch_at) = ignite(&mut room);
    assert_eq!((rocket_id, level), (RocketId(2), 2));
    room.ok(&user("bob"), CommandKind::Leave);
    room.now = launch_at;
    let events = room.ok(&system(), launch(rocket_id, level, launch_at));
    let mut won = rewards(&events);
    won.sort();
    assert_eq!(
        won,
        [
            ("admin".to_owned(), 125),
            ("admin2".to_owned(), 125),
            ("alice".to_owned(), 125),
            ("owner".to_owned(), 125),
        ]
    );

    let (rocket_id, level, launch_at) = ignite(&mut room);
    for name in ["owner", "admin", "admin2", "alice"] {
        room.ok(&user(name), CommandKind::Leave);
    }
    room.now = launch_at;
    let events = room.ok(&system(), launch(rocket_id, level, launch_at));
    assert_eq!(rewards(&events), []);
    assert!(matches!(
        events.as_slice(),
        [Event::RoomRocketLaunched {
            next_level: None,
            ..
        }]
    ));
}

#[test]
fn the_rocket_climbs_its_levels_and_stops_after_the_top_one() {
    let mut room = Room::open_with(small_rocket_rules());
    for expected_level in 1..=3 {
        let (rocket_id, level, launch_at) = ignite(&mut room);
        assert_eq!(level, expected_level);
        assert_eq!(rocket_id, RocketId(u64::from(expected_level)));
        room.now = launch_at;
        room.random = u64::from(expected_level);
        let events = room.ok(&system(), launch(rocket_id, level, launch_at));
        let next = (expected_level < 3).then_some(expected_level + 1);
        assert!(matches!(
            events.as_slice(),
            [Event::RoomRocketLaunched { next_level, .. }] if *next_level == next
        ));
        if let Some(next) = next {
            assert_eq!(room.state.rocket.level, next);
            assert_eq!(room.state.rocket.fuel, 0);
            assert_eq!(room.state.rocket.status, RocketStatus::Idle);
        } else {
            // 7 coins among 2 winners: nothing is lost to rounding.
            let mut amounts: Vec<i64> = rewards(&events).into_iter().map(|(_, c)| c).collect();
            amounts.sort_unstable();
            assert_eq!(amounts, [3, 4]);
        }
    }
    assert_eq!(
        room.state.rocket.status,
        RocketStatus::Launched {
            rocket_id: RocketId(3)
        }
    );
    // A launched rocket takes no more fuel today.
    let events = room.give(gift("alice", &["bob"], 1_000, 1));
    assert!(!types(&events).contains(&"RoomRocketFuelChanged"));
    assert!(matches!(
        room.state.rocket.status,
        RocketStatus::Launched { .. }
    ));
    // The next day starts over at level 1.
    room.now = DayKey(room.now.day_key(0).0 + 1).start(0);
    room.ok(&system(), CommandKind::ResetRocket);
    assert_eq!(room.state.rocket.status, RocketStatus::Idle);
    assert_eq!(room.state.rocket.level, 1);
    let (rocket_id, _, _) = ignite(&mut room);
    assert_eq!(rocket_id, RocketId(4), "rocket ids are never reused");
}

// ---------------------------------------------------------------------------------------------
// Lucky gifts.
// ---------------------------------------------------------------------------------------------

fn lucky(sender: &str, recipients: &[&str], price: i64, count: u32, draw: u64) -> CommandKind {
    let mut order = gift(sender, recipients, price, count);
    order.gift.lucky = true;
    order.lucky_draw = draw;
    CommandKind::ApplyGift(order)
}

fn lucky_outcome(events: &[Event]) -> Option<LuckyOutcome> {
    match events.first() {
        Some(Event::RoomGiftSent(sent)) => sent.lucky,
        _ => panic!("not a gift: {events:?}"),
    }
}

#[test]
fn a_lucky_gift_wins_its_value_times_the_drawn_multiplier() {
    let table = LuckyTable {
        entries: vec![
            LuckyEntry {
                multiplier: 0,
                weight: 1,
            },
            LuckyEntry {
                multiplier: 3,
                weight: 2,
            },
        ],
        expected_return_bp: 20_000,
    };
    table.validate().expect("a valid table");
    let room = Room::open_with(RoomRules {
        lucky: table,
        ..RoomRules::default()
    });
    // 10 coins × 2 units × 2 recipients = 40 coins.
    for (draw, multiplier) in [(0, 0), (1, 3), (2, 3), (3, 0), (5, 3)] {
        let events = room
            .ask(&system(), lucky("alice", &["bob", "owner"], 10, 2, draw))
            .expect("applies");
        assert_eq!(
            lucky_outcome(&events),
            Some(LuckyOutcome {
                multiplier,
                reward: Coins(40 * i64::from(multiplier)),
            }),
            "draw {draw}"
        );
    }
}

#[test]
fn lucky_draws_follow_the_configured_table() {
    let room = Room::open();
    for draw in [
        0,
        6_906,
        6_907,
        8_907,
        9_700,
        9_900,
        9_960,
        9_990,
        9_999,
        u64::MAX,
    ] {
        let events = room
            .ask(&system(), lucky("alice", &["bob"], 7, 3, draw))
            .expect("applies");
        let multiplier = room.rules.lucky.draw(draw);
        assert_eq!(
            lucky_outcome(&events),
            Some(LuckyOutcome {
                multiplier,
                reward: Coins(21 * i64::from(multiplier)),
            })
        );
    }
    assert_eq!(room.rules.lucky.draw(9_999), 500);
    let events = room
        .ask(&system(), lucky("alice", &["bob"], 7, 3, 9_999))
        .expect("applies");
    assert_eq!(
        lucky_outcome(&events).map(|l| l.reward),
        Some(Coins(10_500))
    );

    // An ordinary gift draws nothing, whatever its draw input.
    let mut plain = gift("alice", &["bob"], 7, 3);
    plain.lucky_draw = 9_999;
    let events = room
        .ask(&system(), CommandKind::ApplyGift(plain))
        .expect("applies");
    assert_eq!(lucky_outcome(&events), None);
}

#[test]
fn a_lucky_reward_that_overflows_is_refused() {
    let room = Room::open();
    let big = i64::MAX / 2;
    assert_eq!(room.rules.lucky.draw(6_907), 1);
    assert!(
        room.ask(&system(), lucky("alice", &["bob"], big, 1, 6_907))
            .is_ok()
    );
    assert_eq!(
        room.ask(&system(), lucky("alice", &["bob"], big, 1, 9_999)),
        Err(Rejection::AmountOverflow)
    );
}

// ---------------------------------------------------------------------------------------------
// Rejection codes.
// ---------------------------------------------------------------------------------------------

fn one_of_each_rejection() -> Vec<Rejection> {
    let user = id("alice");
    vec![
        Rejection::RoomNotFound,
        Rejection::RoomAlreadyExists,
        Rejection::RoomClosed,
        Rejection::RoomFull { max: 1 },
        Rejection::Forbidden,
        Rejection::NotAMember { user: user.clone() },
        Rejection::Banned {
            user: user.clone(),
            until: NOON,
        },
        Rejection::WrongPassword,
        Rejection::CannotModerate {
            target: user.clone(),
        },
        Rejection::VipProtected {
            target: user.clone(),
            vip_level: 5,
        },
        Rejection::NotBanned { user: user.clone() },
        Rejection::TooManyAdmins { max: 1 },
        Rejection::InvalidSeat {
            seat: seat(9),
            seat_count: 8,
        },
        Rejection::SeatOccupied { seat: seat(0) },
        Rejection::SeatLocked { seat: seat(0) },
        Rejection::SeatEmpty { seat: seat(0) },
        Rejection::NotOnSeat { user: user.clone() },
        Rejection::SeatMutedByModerator { seat: seat(0) },
        Rejection::StaleTimer,
        Rejection::RocketNotReady { launch_at: NOON },
        Rejection::FieldEmpty { field: Field::Name },
        Rejection::FieldTooLong {
            field: Field::Notice,
            max: 500,
        },
        Rejection::InvalidSeatCount { seat_count: 0 },
        Rejection::InvalidGiftCount { count: 0, max: 1 },
        Rejection::InvalidRecipientCount { count: 0, max: 1 },
        Rejection::DuplicateRecipient { user },
        Rejection::InvalidGift,
        Rejection::AmountOverflow,
        Rejection::SelfGift,
    ]
}

#[test]
fn rejection_codes_are_unique_screaming_snake_case_and_match_the_json_tag() {
    let rejections = one_of_each_rejection();
    let codes: BTreeSet<&str> = rejections.iter().map(Rejection::code).collect();
    assert_eq!(codes.len(), rejections.len(), "codes are unique: {codes:?}");
    for rejection in &rejections {
        let code = rejection.code();
        let well_formed = !code.is_empty()
            && code.chars().all(|c| c.is_ascii_uppercase() || c == '_')
            && !code.starts_with('_')
            && !code.ends_with('_')
            && !code.contains("__");
        assert!(well_formed, "{code}");
        let json = serde_json::to_value(rejection).expect("serializes");
        assert_eq!(json["code"], code, "{rejection:?}");
        assert!(!rejection.to_string().is_empty());
    }
}

// ---------------------------------------------------------------------------------------------
// Robots.
// ---------------------------------------------------------------------------------------------

#[test]
fn robot_joins_and_leaves_are_marked_and_displayed_but_not_durable() {
    let mut room = Room::open();
    let events = room.join_as(&robot("bot-1"));
    assert_eq!(
        events,
        [Event::RoomUserJoined {
            user: id("bot-1"),
            role: Role::Member,
            vip_level: 0,
            joined_at: NOON,
            robot: true,
        }]
    );
    assert!(room.state.members[&id("bot-1")].robot);
    assert!(!room.state.members[&id("alice")].robot);
    let delivery = events[0].delivery();
    assert!(!delivery.durable);
    assert_eq!(delivery.im, Some(ImPriority::Normal));
    assert!(events[0].is_robot());

    room.ok(&robot("bot-1"), CommandKind::TakeSeat { seat: seat(2) });
    let events = room.ok(&robot("bot-1"), CommandKind::Leave);
    assert_eq!(downs(&events), [(2, "bot-1", MicDownReason::LeftRoom)]);
    let left = events.last().unwrap();
    assert_eq!(
        left,
        &Event::RoomUserLeft {
            user: id("bot-1"),
            reason: LeaveReason::Left,
            robot: true,
        }
    );
    assert!(!left.delivery().durable && left.is_robot());
    assert_eq!(left.delivery().im, Some(ImPriority::Normal));

    // Evicted, a robot's leave is marked too.
    room.join_as(&robot("bot-1"));
    let events = room.ok(
        &system(),
        CommandKind::Evict {
            user: id("bot-1"),
            seen: None,
        },
    );
    assert_eq!(
        events,
        [Event::RoomUserLeft {
            user: id("bot-1"),
            reason: LeaveReason::Evicted,
            robot: true,
        }]
    );

    // Kicked: the kick is a moderator's act and stays durable, marked as a robot's.
    room.join_as(&robot("bot-1"));
    let events = room.ok(
        &user("owner"),
        CommandKind::Kick {
            user: id("bot-1"),
            ban_seconds: None,
        },
    );
    assert_eq!(
        events,
        [Event::RoomUserKicked {
            user: id("bot-1"),
            by: Some(id("owner")),
            ban_until: None,
            robot: true,
        }]
    );
    assert!(events[0].delivery().durable && !events[0].is_robot());

    // A user's join and leave stay durable facts.
    let joined = room.join_as(&user("carol"));
    let left = room.ok(&user("carol"), CommandKind::Leave);
    for event in joined.iter().chain(&left) {
        assert!(event.delivery().durable && !event.is_robot(), "{event:?}");
    }
}

#[test]
fn a_robot_gift_adds_heat_but_no_fuel_no_rank_and_no_durable_event() {
    let mut room = Room::open();
    room.join_as(&robot("bot-1"));
    let fuel = room.state.rocket.clone();
    let contribution = room.state.contribution.clone();
    let mut free = robot_gift(&["alice", "bob"], 10, 3);
    // A lucky gift draws nothing for a robot: a lucky reward is coins.
    free.gift.lucky = true;
    let events = room.ok(&robot("bot-1"), CommandKind::RobotGift(free));
    assert_eq!(
        events,
        [
            Event::RoomGiftSent(GiftSent {
                order_id: OrderId::new("cmd-1").unwrap(),
                sender: id("bot-1"),
                recipients: vec![id("alice"), id("bob")],
                gift_id: GiftId::new("rose").unwrap(),
                count: 3,
                unit_price: Coins(10),
                total_value: Coins(60),
                heat_added: 60,
                fuel_added: 0,
                lucky: None,
                robot: true,
            }),
            Event::RoomHeatChanged {
                heat: 60,
                delta: 60,
            },
        ]
    );
    assert_eq!(room.state.heat, 60);
    assert_eq!(room.state.rocket, fuel);
    assert_eq!(room.state.contribution, contribution);
    let delivery = events[0].delivery();
    assert!(!delivery.durable);
    assert_eq!(delivery.im, Some(ImPriority::High));
    assert!(events[0].is_robot());
    assert!(events.iter().all(|e| !e.delivery().durable));

    // A paid gift in the same room still fills the rocket and the ranks, durably.
    let events = room.give(gift("alice", &["bob"], 10, 1));
    assert!(events[0].delivery().durable && !events[0].is_robot());
    assert_eq!(room.state.rocket.fuel, 10);
    assert_eq!(
        room.state.day_contribution(&id("alice"), NOON.day_key(0)),
        Coins(10)
    );
}

#[test]
fn a_robot_gift_on_a_new_day_leaves_the_rocket_alone() {
    let mut room = Room::open();
    room.join_as(&robot("bot-1"));
    room.give(gift("alice", &["bob"], 10, 1));
    let rocket = room.state.rocket.clone();
    room.advance_secs(24 * 3600);
    let events = room.ok(
        &robot("bot-1"),
        CommandKind::RobotGift(robot_gift(&["alice"], 5, 1)),
    );
    assert_eq!(
        types(&events),
        ["RoomGiftSent", "RoomHeatChanged"],
        "no rocket reset, which would empty the fuel"
    );
    assert_eq!(room.state.rocket, rocket);
}

#[test]
fn only_a_robot_member_sends_robot_gifts_to_members() {
    let mut room = Room::open();
    room.join_as(&robot("bot-1"));
    let give = |recipients: &[&str]| CommandKind::RobotGift(robot_gift(recipients, 10, 1));
    for actor in [
        user("alice"),
        user("owner"),
        platform_admin("staff"),
        system(),
    ] {
        assert_eq!(
            room.err(&actor, give(&["bob"])),
            Rejection::NotARobot,
            "{actor:?}"
        );
    }
    assert_eq!(
        room.err(&robot("bot-2"), give(&["bob"])),
        Rejection::NotAMember { user: id("bot-2") }
    );
    assert_eq!(
        room.err(&robot("bot-1"), give(&["carol"])),
        Rejection::NotAMember { user: id("carol") }
    );
    assert_eq!(
        room.err(&robot("bot-1"), give(&["bot-1"])),
        Rejection::SelfGift
    );
    assert_eq!(
        room.err(&robot("bot-1"), give(&["bob", "bob"])),
        Rejection::DuplicateRecipient { user: id("bob") }
    );
    assert!(matches!(
        room.err(&robot("bot-1"), give(&[])),
        Rejection::InvalidRecipientCount { count: 0, .. }
    ));
    assert!(matches!(
        room.err(
            &robot("bot-1"),
            CommandKind::RobotGift(robot_gift(&["bob"], 10, 0))
        ),
        Rejection::InvalidGiftCount { count: 0, .. }
    ));
    assert_eq!(
        room.err(
            &robot("bot-1"),
            CommandKind::RobotGift(robot_gift(&["bob"], -1, 1))
        ),
        Rejection::InvalidGift
    );
    // Nor does a robot send a paid gift, even in its own name.
    assert_eq!(
        room.err(
            &robot("bot-1"),
            CommandKind::ApplyGift(gift("bot-1", &["bob"], 10, 1))
        ),
        Rejection::NotARobot
    );
    assert_eq!(Rejection::NotARobot.code(), "NOT_A_ROBOT");
    assert_eq!(Rejection::NotARobot.kind(), RejectionKind::Forbidden);

    room.ok(&user("owner"), CommandKind::CloseRoom);
    assert_eq!(
        room.err(&robot("bot-1"), give(&["bob"])),
        Rejection::RoomClosed
    );
}

#[test]
fn a_robot_joins_a_locked_room_like_any_user_and_moderates_nothing() {
    let mut room = Room::open();
    room.ok(
        &user("owner"),
        CommandKind::SetLock {
            password_hash: Some(PasswordHash("argon2id$x".into())),
        },
    );
    let join = |verified| CommandKind::Join {
        password_verified: verified,
        verified_lock: None,
    };
    assert_eq!(
        room.err(&robot("bot-1"), join(false)),
        Rejection::WrongPassword
    );
    room.ok(&robot("bot-1"), join(true));
    assert_eq!(
        room.err(
            &robot("bot-1"),
            CommandKind::Kick {
                user: id("alice"),
                ban_seconds: None,
            }
        ),
        Rejection::Forbidden
    );
}

#[test]
fn robots_never_win_rocket_rewards() {
    let mut room = Room::open_with(small_rocket_rules());
    for name in ["bot-1", "bot-2", "bot-3", "bot-4", "bot-5", "bot-6"] {
        room.join_as(&robot(name));
    }
    let (rocket_id, level, launch_at) = ignite(&mut room);
    room.now = launch_at;
    for random in 0..40 {
        room.random = random;
        let events = room
            .ask(&system(), launch(rocket_id, level, launch_at))
            .expect("launches");
        let won = rewards(&events);
        assert_eq!(won.iter().map(|(_, c)| c).sum::<i64>(), 1_000);
        assert!(
            won.iter().all(|(user, _)| !user.starts_with("bot-")),
            "the rewards are real coins: humans only ({won:?})"
        );
    }
    // A room of robots alone pays nobody.
    let mut room = Room::open_with(small_rocket_rules());
    let (rocket_id, level, launch_at) = ignite(&mut room);
    room.join_as(&robot("bot-1"));
    for name in ["bob", "admin", "admin2", "alice", "owner"] {
        if room.is_member(name) {
            room.ok(&user(name), CommandKind::Leave);
        }
    }
    room.now = launch_at;
    let events = room.ok(&system(), launch(rocket_id, level, launch_at));
    assert_eq!(rewards(&events), []);
}

#[test]
fn the_system_applies_no_paid_gift_in_a_robot_members_name() {
    let mut room = Room::open();
    room.join_as(&robot("bot-1"));
    assert_eq!(
        room.ask(
            &system(),
            CommandKind::ApplyGift(gift("bot-1", &["alice"], 10, 1))
        ),
        Err(Rejection::NotARobot),
        "a robot spends no coins, so the saga refunds such an order"
    );
}

#[test]
fn a_robots_mic_time_is_displayed_but_no_durable_fact() {
    let mut room = Room::open();
    room.join_as(&robot("bot-1"));
    let up = room.ok(&robot("bot-1"), CommandKind::TakeSeat { seat: seat(3) });
    let down = room.ok(&robot("bot-1"), CommandKind::LeaveSeat { seat: seat(3) });
    for event in up.iter().chain(&down) {
        assert!(event.is_robot(), "{event:?}");
        assert!(!event.delivery().durable, "{event:?}");
        assert_eq!(event.delivery().im, Some(ImPriority::Normal));
    }
    let human = room.ok(&user("alice"), CommandKind::TakeSeat { seat: seat(4) });
    assert!(human.iter().all(|e| !e.is_robot() && e.delivery().durable));
}
