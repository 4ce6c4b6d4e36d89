//! A room driven through `decide` and `evolve`, and small builders for commands, rejections
//! and rules that the rule families share.

use room_domain::{
    Actor, ApplyGift, Coins, Command, CommandId, CommandKind, Ctx, Event, GiftId, GiftSnapshot,
    MicChange, MicDownReason, OrderId, Rejection, RobotGift, RocketId, RocketLevel, RocketStatus,
    RoomId, RoomResource, RoomRules, RoomState, SeatIndex, SeatSessionId, Timestamp, UserActor,
    UserId, VipStanding, decide, evolve,
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
            billing_version: None,
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
        self.ask_command(
            actor,
            Command::new(CommandId::new("cmd-1").expect("a valid id"), kind),
        )
    }

    /// What `decide` answers to a whole command (with its display fields or VIP standing),
    /// without applying anything.
    pub fn ask_command(&self, actor: &Actor, command: Command) -> Result<Vec<Event>, Rejection> {
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
        self.run_command(
            actor,
            Command::new(CommandId::new("cmd-1").expect("a valid id"), kind),
        )
    }

    /// Like [`Room::run`], for a whole command.
    #[track_caller]
    pub fn run_command(
        &mut self,
        actor: &Actor,
        command: Command,
    ) -> Result<Vec<Event>, Rejection> {
        let result = self.ask_command(actor, command);
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

    /// Runs `kind` as `actor` with the VIP standing `vip` of the user it is about.
    #[track_caller]
    pub fn run_vip(
        &mut self,
        actor: &Actor,
        kind: CommandKind,
        vip: VipStanding,
    ) -> Result<Vec<Event>, Rejection> {
        let command =
            Command::new(CommandId::new("cmd-1").expect("a valid id"), kind).with_vip(Some(vip));
        self.run_command(actor, command)
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
            billing_version: None,
        },
        count,
        lucky_draw: 0,
        scope: None,
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
        CommandKind::RevokeResources {
            resources: vec![RoomResource::Notice],
            reason: "spam".into(),
        },
        CommandKind::SystemMessage {
            text: "hello".into(),
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
        CommandKind::SetSeatVip {
            seat: SeatIndex(0),
            vip_only: true,
        },
        CommandKind::Invite {
            user: id("alice"),
            seat: Some(SeatIndex(1)),
        },
        CommandKind::ShowGiftBroadcast(room_domain::GiftBroadcast {
            from_room: RoomId::new("room-far").unwrap(),
            sender: id("far"),
            sender_nickname: None,
            sender_avatar_url: None,
            gift_id: GiftId::new("castle").unwrap(),
            count: 1,
            total_value: Coins(50_000),
        }),
    ];
    for kind in &kinds {
        match kind {
            CommandKind::CreateRoom { .. }
            | CommandKind::UpdateProfile { .. }
            | CommandKind::ChangeBackground { .. }
            | CommandKind::RevokeResources { .. }
            | CommandKind::SystemMessage { .. }
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
            | CommandKind::RobotGift(_)
            | CommandKind::SetSeatVip { .. }
            | CommandKind::Invite { .. }
            | CommandKind::ShowGiftBroadcast(_) => {}
        }
    }
    kinds
}

pub fn kick(name: &str) -> CommandKind {
    CommandKind::Kick {
        user: id(name),
        ban_seconds: None,
    }
}

pub fn chat_mute(name: &str, seconds: u32) -> CommandKind {
    CommandKind::ChatMute {
        user: id(name),
        seconds,
    }
}

pub fn mute_seat(index: u8, muted: bool) -> CommandKind {
    CommandKind::MuteSeat {
        seat: seat(index),
        muted,
    }
}

pub fn lock_seat(index: u8, locked: bool) -> CommandKind {
    CommandKind::LockSeat {
        seat: seat(index),
        locked,
    }
}

pub fn remove_from_seat(index: u8) -> CommandKind {
    CommandKind::RemoveFromSeat { seat: seat(index) }
}

pub fn set_admin(name: &str, admin: bool) -> CommandKind {
    CommandKind::SetAdmin {
        user: id(name),
        admin,
    }
}

pub fn join(password_verified: bool) -> CommandKind {
    CommandKind::Join {
        password_verified,
        verified_lock: None,
    }
}

pub fn cannot_moderate(name: &str) -> Rejection {
    Rejection::CannotModerate { target: id(name) }
}

pub fn not_a_member(name: &str) -> Rejection {
    Rejection::NotAMember { user: id(name) }
}

/// Three rocket levels small enough to reach with a few gifts.
pub fn small_rocket_rules() -> RoomRules {
    let rules = RoomRules {
        rocket_levels: vec![
            RocketLevel {
                fuel: 100,
                countdown_secs: 60,
                reward_pool: Coins(1_000),
                winners: 3,
                reward_cap: None,
            },
            RocketLevel {
                fuel: 300,
                countdown_secs: 60,
                reward_pool: Coins(500),
                winners: 10,
                reward_cap: None,
            },
            RocketLevel {
                fuel: 600,
                countdown_secs: 90,
                reward_pool: Coins(7),
                winners: 2,
                reward_cap: None,
            },
        ],
        ..RoomRules::default()
    };
    rules.validate().expect("valid rules");
    rules
}

/// Fills the current level with one gift from alice and returns the ignition.
pub fn ignite(room: &mut Room) -> (RocketId, u32, Timestamp) {
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

pub fn launch(rocket_id: RocketId, level: u32, scheduled_at: Timestamp) -> CommandKind {
    CommandKind::LaunchRocket {
        rocket_id,
        level,
        scheduled_at,
    }
}

/// The rewards of a launch event.
pub fn rewards(events: &[Event]) -> Vec<(String, i64)> {
    match events {
        [Event::RoomRocketLaunched { rewards, .. }] => rewards
            .iter()
            .map(|r| (r.user.to_string(), r.coins.0))
            .collect(),
        _ => panic!("not a launch: {events:?}"),
    }
}
