//! Golden files pin the JSON that leaves this crate: every event type in its Kafka envelope
//! (`tests/golden/<Type>.json`), every value of the enums nested in events
//! (`event_variants.json`), every command kind as written to the command log (`commands.json`)
//! and a snapshot (`snapshot.json`); every actor as the command log stores it (`actors.json`);
//! and what robots add: their events (`robot_events.json`), the robot gift command
//! (`robot_commands.json`) and a robot member in a snapshot (`robot_snapshot.json`). The robot
//! fields are left out of JSON when false, so the files from before robots stay as they were.
//!
//! Other services parse these bytes, and stored logs and snapshots are read back by newer
//! builds, so **a change to a golden file is a deliberate contract change**. When a test here
//! fails, fix the code; or, if the new format is intended, regenerate the files with
//!
//! ```text
//! UPDATE_GOLDEN=1 cargo test -p room-domain --test golden
//! ```
//!
//! review the diff, bump the schema version if old readers would misread the new JSON, and say
//! why in the commit message.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::path::{Path, PathBuf};

use room_domain::{
    Actor, ApplyGift, Coins, Command, CommandId, CommandKind, Contribution, DayKey,
    EVENT_SCHEMA_VERSION, Event, EventEnvelope, GiftBroadcast, GiftId, GiftSent, GiftSnapshot,
    LeaveReason, LuckyOutcome, Member, MicChange, MicDownReason, Occupant, OrderId, PasswordHash,
    RobotGift, Rocket, RocketId, RocketPrize, RocketReward, RocketStatus, Role, RoomId,
    RoomProfile, RoomResource, RoomSettings, RoomState, RoomStatus, Seat, SeatHold, SeatIndex,
    SeatSessionId, Snapshot, Timestamp, UserActor, UserDisplay, UserId, VipPrivileges, VipStanding,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// 2025-11-30T00:00:00Z.
const AT: i64 = 1_764_460_800_000;
const HASH: &str = "argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNo";

/// Every event type, as in [`Event::type_name`] and the JSON `type`.
const EVENT_TYPES: [&str; 26] = [
    "RoomCreated",
    "RoomProfileUpdated",
    "RoomBackgroundChanged",
    "RoomChatEnabledChanged",
    "RoomLockChanged",
    "RoomClosed",
    "RoomUserJoined",
    "RoomUserLeft",
    "RoomUserKicked",
    "RoomUserUnbanned",
    "RoomUserMuted",
    "RoomAdminChanged",
    "RoomMicChanged",
    "RoomMicSeatLocked",
    "RoomGiftSent",
    "RoomHeatChanged",
    "RoomRankChanged",
    "RoomRocketFuelChanged",
    "RoomRocketIgnited",
    "RoomRocketLaunched",
    "RoomRocketReset",
    "RoomResourcesRevoked",
    "RoomSystemMessage",
    "RoomMicSeatVip",
    "RoomUserInvited",
    "RoomGiftBroadcast",
];

/// The golden files that are not one event type each.
const OTHER_FILES: [&str; 7] = [
    "commands.json",
    "event_variants.json",
    "snapshot.json",
    "actors.json",
    "robot_commands.json",
    "robot_events.json",
    "robot_snapshot.json",
];

fn at(secs: i64) -> Timestamp {
    Timestamp(AT + secs * 1000)
}

fn user(name: &str) -> UserId {
    UserId::new(name).unwrap()
}

fn room() -> RoomId {
    RoomId::new("room-1").unwrap()
}

fn today() -> DayKey {
    at(0).day_key(0)
}

/// One sample of every event type, in [`EVENT_TYPES`] order.
fn sample_events() -> Vec<Event> {
    vec![
        Event::RoomCreated {
            owner: user("alice"),
            name: "Night talk".into(),
            seat_count: 8,
            region: "sg".into(),
            created_at: at(0),
        },
        Event::RoomProfileUpdated {
            name: "Night talk".into(),
            notice: "Be kind. No ads.".into(),
            cover_url: Some("https://cdn.example/covers/night.png".into()),
            by: Some(user("alice")),
        },
        Event::RoomBackgroundChanged {
            background_url: Some("https://cdn.example/backgrounds/stars.png".into()),
            by: Some(user("bob")),
        },
        Event::RoomChatEnabledChanged {
            enabled: false,
            by: Some(user("alice")),
        },
        Event::RoomLockChanged {
            locked: true,
            password_hash: Some(PasswordHash(HASH.into())),
            by: Some(user("alice")),
        },
        Event::RoomClosed { by: None },
        Event::RoomUserJoined {
            user: user("carol"),
            role: Role::Member,
            vip_level: 3,
            joined_at: at(5),
            robot: false,
            nickname: Some("Carol ✨".into()),
            avatar_url: Some("https://cdn.example/avatars/carol.png".into()),
            entry_effect_id: Some("fx-gold-wings".into()),
            vehicle_id: Some("car:7".into()),
        },
        Event::RoomUserLeft {
            user: user("carol"),
            reason: LeaveReason::Left,
            robot: false,
        },
        Event::RoomUserKicked {
            user: user("dave"),
            by: Some(user("bob")),
            ban_until: Some(at(3_600)),
            robot: false,
        },
        Event::RoomUserUnbanned {
            user: user("dave"),
            by: Some(user("alice")),
        },
        Event::RoomUserMuted {
            user: user("carol"),
            until: Some(at(600)),
            by: Some(user("bob")),
        },
        Event::RoomAdminChanged {
            user: user("bob"),
            admin: true,
            by: Some(user("alice")),
        },
        Event::RoomMicChanged {
            seat: SeatIndex(2),
            change: MicChange::Up {
                user: user("carol"),
                session: SeatSessionId(7),
                since: at(10),
                publish_deadline: at(40),
                robot: false,
                nickname: Some("Carol ✨".into()),
                avatar_url: Some("https://cdn.example/avatars/carol.png".into()),
            },
        },
        Event::RoomMicSeatLocked {
            seat: SeatIndex(5),
            locked: true,
            by: Some(user("bob")),
        },
        Event::RoomGiftSent(GiftSent {
            order_id: OrderId::new("o-20251130-0001").unwrap(),
            sender: user("carol"),
            recipients: vec![user("alice"), user("bob")],
            gift_id: GiftId::new("rose").unwrap(),
            count: 3,
            unit_price: Coins(10),
            total_value: Coins(60),
            heat_added: 60,
            fuel_added: 60,
            lucky: Some(LuckyOutcome {
                multiplier: 2,
                reward: Coins(120),
            }),
            robot: false,
            billing_version: Some(1),

            sender_nickname: Some("Carol ✨".into()),
            sender_avatar_url: Some("https://cdn.example/avatars/carol.png".into()),
        }),
        Event::RoomHeatChanged {
            heat: 1_060,
            delta: 60,
        },
        Event::RoomRankChanged {
            user: user("carol"),
            day_key: today(),
            week_key: today().week(),
            day_total: Coins(60),
            week_total: Coins(260),
        },
        Event::RoomRocketFuelChanged {
            level: 1,
            fuel: 10_000,
            threshold: 10_000,
        },
        Event::RoomRocketIgnited {
            rocket_id: RocketId(4),
            level: 1,
            ignited_at: at(20),
            launch_at: at(80),
            prize: Some(RocketPrize {
                reward_pool: Coins(1_000),
                winners: 5,
                reward_cap: Some(Coins(300)),
            }),
        },
        Event::RoomRocketLaunched {
            rocket_id: RocketId(4),
            level: 1,
            rewards: vec![
                RocketReward {
                    user: user("bob"),
                    coins: Coins(334),
                },
                RocketReward {
                    user: user("alice"),
                    coins: Coins(333),
                },
                RocketReward {
                    user: user("carol"),
                    coins: Coins(333),
                },
            ],
            next_level: Some(2),
        },
        Event::RoomRocketReset {
            day_key: DayKey(today().0 + 1),
        },
        Event::RoomResourcesRevoked {
            resources: vec![RoomResource::Name, RoomResource::Cover],
            name: Some("Voice room".into()),
            reason: "The cover breaks the content rules.".into(),
            by: Some(user("staff")),
        },
        Event::RoomSystemMessage {
            text: "Maintenance tonight at 02:00.\nGifts stay open.".into(),
            by: Some(user("staff")),
        },
        Event::RoomMicSeatVip {
            seat: SeatIndex(5),
            vip_only: true,
            by: Some(user("alice")),
        },
        Event::RoomUserInvited {
            user: user("dave"),
            seat: Some(SeatIndex(3)),
            invited_at: at(200),
            expires_at: at(320),
            by: Some(user("bob")),
        },
        Event::RoomGiftBroadcast(GiftBroadcast {
            from_room: RoomId::new("room-far").unwrap(),
            sender: user("carol"),
            sender_nickname: Some("Carol ✨".into()),
            sender_avatar_url: None,
            gift_id: GiftId::new("castle").unwrap(),
            count: 1,
            total_value: Coins(50_000),
        }),
    ]
}

/// Every seat-leaving reason, in declaration order.
fn all_down_reasons() -> Vec<MicDownReason> {
    vec![
        MicDownReason::Left,
        MicDownReason::Moved,
        MicDownReason::Removed,
        MicDownReason::SeatLocked,
        MicDownReason::LeftRoom,
        MicDownReason::Kicked,
        MicDownReason::PublishTimeout,
        MicDownReason::RtcLeft,
        MicDownReason::RoomClosed,
    ]
}

/// Stops compiling when one of these enums gains a variant: add the new value to
/// [`all_down_reasons`] or [`variant_events`] (and so to `event_variants.json`), then count it
/// in `nested_event_values_match_their_golden_file`.
fn nested_enums_are_listed(change: &MicChange, down: MicDownReason, left: LeaveReason, role: Role) {
    match change {
        MicChange::Up { .. }
        | MicChange::Down { .. }
        | MicChange::Published { .. }
        | MicChange::Muted { .. } => {}
    }
    match down {
        MicDownReason::Left
        | MicDownReason::Moved
        | MicDownReason::Removed
        | MicDownReason::SeatLocked
        | MicDownReason::LeftRoom
        | MicDownReason::Kicked
        | MicDownReason::PublishTimeout
        | MicDownReason::RtcLeft
        | MicDownReason::RoomClosed => {}
    }
    match left {
        LeaveReason::Left | LeaveReason::Evicted => {}
    }
    match role {
        Role::Member | Role::Admin | Role::Owner => {}
    }
}

/// The values of nested enums and optional fields that [`sample_events`] does not show: every
/// mic change and reason, every leave reason and role, and the empty forms of optional fields.
fn variant_events() -> Vec<Event> {
    let mut events: Vec<Event> = all_down_reasons()
        .into_iter()
        .map(|reason| Event::RoomMicChanged {
            seat: SeatIndex(2),
            change: MicChange::Down {
                user: user("carol"),
                session: SeatSessionId(7),
                reason,
                robot: false,
            },
        })
        .collect();
    events.extend([
        Event::RoomMicChanged {
            seat: SeatIndex(2),
            change: MicChange::Published {
                user: user("carol"),
                session: SeatSessionId(7),
                robot: false,
            },
        },
        Event::RoomMicChanged {
            seat: SeatIndex(2),
            change: MicChange::Muted {
                muted: true,
                by_moderator: true,
                by: Some(user("bob")),
            },
        },
        Event::RoomMicChanged {
            seat: SeatIndex(2),
            change: MicChange::Muted {
                muted: false,
                by_moderator: false,
                by: None,
            },
        },
        Event::RoomUserLeft {
            user: user("dave"),
            reason: LeaveReason::Evicted,
            robot: false,
        },
        Event::RoomUserJoined {
            user: user("bob"),
            role: Role::Admin,
            vip_level: 0,
            joined_at: at(1),
            robot: false,
            nickname: None,
            avatar_url: None,
            entry_effect_id: None,
            vehicle_id: None,
        },
        Event::RoomUserJoined {
            user: user("alice"),
            role: Role::Owner,
            vip_level: 12,
            joined_at: at(2),
            robot: false,
            nickname: None,
            avatar_url: None,
            entry_effect_id: None,
            vehicle_id: None,
        },
        Event::RoomLockChanged {
            locked: false,
            password_hash: None,
            by: None,
        },
        Event::RoomUserKicked {
            user: user("dave"),
            by: Some(user("alice")),
            ban_until: None,
            robot: false,
        },
        Event::RoomUserMuted {
            user: user("carol"),
            until: None,
            by: Some(user("bob")),
        },
        Event::RoomBackgroundChanged {
            background_url: None,
            by: Some(user("alice")),
        },
        Event::RoomGiftSent(GiftSent {
            order_id: OrderId::new("o-20251130-0002").unwrap(),
            sender: user("dave"),
            recipients: vec![user("carol")],
            gift_id: GiftId::new("clover").unwrap(),
            count: 1,
            unit_price: Coins(0),
            total_value: Coins(0),
            heat_added: 1,
            fuel_added: 0,
            lucky: None,
            robot: false,
            billing_version: None,

            sender_nickname: None,
            sender_avatar_url: None,
        }),
        Event::RoomRocketLaunched {
            rocket_id: RocketId(6),
            level: 3,
            rewards: Vec::new(),
            next_level: None,
        },
        Event::RoomResourcesRevoked {
            resources: vec![RoomResource::Notice, RoomResource::Background],
            name: None,
            reason: "Advertising.".into(),
            by: Some(user("staff")),
        },
    ]);
    events
}

/// Compiles only while [`sample_commands`] covers every command kind.
fn command_kind_is_listed(kind: &CommandKind) {
    match kind {
        CommandKind::CreateRoom { .. }
        | CommandKind::UpdateProfile { .. }
        | CommandKind::ChangeBackground { .. }
        | CommandKind::RevokeResources { .. }
        | CommandKind::SystemMessage { .. }
        | CommandKind::SetSeatVip { .. }
        | CommandKind::Invite { .. }
        | CommandKind::ShowGiftBroadcast(_)
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
        | CommandKind::ResetRocket => {}
        // Sampled in `robot_commands.json`, so that `commands.json` stays as it was.
        CommandKind::RobotGift(_) => {}
    }
}

/// Every actor, as the command log stores it beside the command.
fn sample_actors() -> Vec<Actor> {
    vec![
        Actor::User(UserActor {
            user_id: user("carol"),
            vip_level: 3,
            platform_admin: false,
        }),
        Actor::User(UserActor {
            user_id: user("staff"),
            vip_level: 0,
            platform_admin: true,
        }),
        Actor::System,
        Actor::Robot(user("bot-1")),
    ]
}

/// The robot gift command; its id stands for the order id.
fn sample_robot_commands() -> Vec<Command> {
    let kind = CommandKind::RobotGift(RobotGift {
        gift: GiftSnapshot {
            gift_id: GiftId::new("rose").unwrap(),
            price: Coins(10),
            heat: 10,
            fuel: 10,
            lucky: false,
            billing_version: None,
        },
        count: 3,
        recipients: vec![user("alice"), user("bob")],
    });
    command_kind_is_listed(&kind);
    vec![Command::new(CommandId::new("c-robot-1").unwrap(), kind)]
}

/// The events robots mark: a robot's join, leave, kick and gift.
fn sample_robot_events() -> Vec<Event> {
    vec![
        Event::RoomUserJoined {
            user: user("bot-1"),
            role: Role::Member,
            vip_level: 0,
            joined_at: at(5),
            robot: true,
            nickname: None,
            avatar_url: None,
            entry_effect_id: None,
            vehicle_id: None,
        },
        Event::RoomGiftSent(GiftSent {
            order_id: OrderId::new("c-robot-1").unwrap(),
            sender: user("bot-1"),
            recipients: vec![user("alice"), user("bob")],
            gift_id: GiftId::new("rose").unwrap(),
            count: 3,
            unit_price: Coins(10),
            total_value: Coins(60),
            heat_added: 60,
            fuel_added: 0,
            lucky: None,
            robot: true,
            billing_version: None,

            sender_nickname: None,
            sender_avatar_url: None,
        }),
        Event::RoomUserLeft {
            user: user("bot-1"),
            reason: LeaveReason::Evicted,
            robot: true,
        },
        Event::RoomUserKicked {
            user: user("bot-2"),
            by: Some(user("alice")),
            ban_until: None,
            robot: true,
        },
    ]
}

/// [`sample_snapshot`] with a robot among the members.
fn sample_robot_snapshot() -> Snapshot {
    let mut snapshot = sample_snapshot();
    snapshot.state.members.insert(
        user("bot-1"),
        Member {
            role: Role::Member,
            vip_level: 0,
            joined_at: at(50),
            robot: true,
        },
    );
    snapshot
}

/// One command of every kind, as the command log stores them.
fn sample_commands() -> Vec<Command> {
    let gift = ApplyGift {
        order_id: OrderId::new("o-20251130-0001").unwrap(),
        sender: user("carol"),
        recipients: vec![user("alice"), user("bob")],
        gift: GiftSnapshot {
            gift_id: GiftId::new("rose").unwrap(),
            price: Coins(10),
            heat: 10,
            fuel: 10,
            lucky: true,
            billing_version: Some(1),
        },
        count: 3,
        // Above i64::MAX: the full u64 range must survive JSON.
        lucky_draw: 18_446_744_073_709_551_557,
        scope: None,
    };
    let kinds = vec![
        CommandKind::CreateRoom {
            name: "Night talk".into(),
            seat_count: Some(8),
            region: "sg".into(),
        },
        CommandKind::UpdateProfile {
            name: Some("Night talk".into()),
            notice: None,
            cover_url: Some(String::new()),
        },
        CommandKind::ChangeBackground {
            background_url: None,
        },
        CommandKind::SetChatEnabled { enabled: true },
        CommandKind::SetLock {
            password_hash: Some(PasswordHash(HASH.into())),
        },
        CommandKind::CloseRoom,
        CommandKind::Join {
            password_verified: true,
            verified_lock: None,
        },
        CommandKind::Leave,
        CommandKind::Evict {
            user: user("dave"),
            seen: None,
        },
        CommandKind::TakeSeat { seat: SeatIndex(2) },
        CommandKind::LeaveSeat { seat: SeatIndex(2) },
        CommandKind::LockSeat {
            seat: SeatIndex(5),
            locked: true,
        },
        CommandKind::MuteSeat {
            seat: SeatIndex(2),
            muted: true,
        },
        CommandKind::RemoveFromSeat { seat: SeatIndex(2) },
        CommandKind::ConfirmMicPublish {
            user: user("carol"),
            at: None,
        },
        CommandKind::MicPublishTimeout {
            seat: SeatIndex(2),
            session: SeatSessionId(7),
        },
        CommandKind::RtcUserLeft {
            user: user("carol"),
            at: Some(Timestamp(1_767_225_600_000)),
        },
        CommandKind::Kick {
            user: user("dave"),
            ban_seconds: Some(3_600),
        },
        CommandKind::Unban { user: user("dave") },
        CommandKind::ChatMute {
            user: user("carol"),
            seconds: 600,
        },
        CommandKind::SetAdmin {
            user: user("bob"),
            admin: true,
        },
        CommandKind::ApplyGift(gift.clone()),
        CommandKind::LaunchRocket {
            rocket_id: RocketId(4),
            level: 1,
            scheduled_at: at(80),
        },
        CommandKind::ResetRocket,
        // A join whose password was checked against a lock.
        CommandKind::Join {
            password_verified: true,
            verified_lock: Some(PasswordHash(HASH.into())),
        },
        CommandKind::RevokeResources {
            resources: vec![RoomResource::Name, RoomResource::Cover],
            reason: "The cover breaks the content rules.".into(),
        },
        CommandKind::SystemMessage {
            text: "Maintenance tonight at 02:00.\nGifts stay open.".into(),
        },
        CommandKind::SetSeatVip {
            seat: SeatIndex(5),
            vip_only: true,
        },
        CommandKind::Invite {
            user: user("dave"),
            seat: Some(SeatIndex(3)),
        },
        CommandKind::Invite {
            user: user("erin"),
            seat: None,
        },
        CommandKind::ShowGiftBroadcast(GiftBroadcast {
            from_room: RoomId::new("room-far").unwrap(),
            sender: user("carol"),
            sender_nickname: None,
            sender_avatar_url: Some("https://cdn.example/avatars/carol.png".into()),
            gift_id: GiftId::new("castle").unwrap(),
            count: 2,
            total_value: Coins(100_000),
        }),
    ];
    let mut commands: Vec<Command> = kinds
        .into_iter()
        .enumerate()
        .map(|(i, kind)| {
            command_kind_is_listed(&kind);
            let id = match &kind {
                CommandKind::ApplyGift(gift) => CommandId::from(gift.order_id.clone()),
                _ => CommandId::new(format!("c-{}", i + 1)).unwrap(),
            };
            Command::new(id, kind)
        })
        .collect();
    // The commands that carry the display fields of the user they are about.
    let display = UserDisplay {
        nickname: Some("Carol ✨".into()),
        avatar_url: Some("https://cdn.example/avatars/carol.png".into()),
    };
    commands.extend([
        Command::new(
            CommandId::new("c-display-join").unwrap(),
            CommandKind::Join {
                password_verified: false,
                verified_lock: None,
            },
        )
        .with_display(Some(display.clone())),
        Command::new(
            CommandId::new("c-display-seat").unwrap(),
            CommandKind::TakeSeat { seat: SeatIndex(2) },
        )
        .with_display(Some(UserDisplay {
            nickname: Some("Carol ✨".into()),
            avatar_url: None,
        })),
        Command::new(
            CommandId::from(gift.order_id.clone()),
            CommandKind::ApplyGift(gift),
        )
        .with_display(Some(display)),
    ]);
    // The commands that carry the VIP standing of the user they are about.
    let vip = VipStanding {
        level: 3,
        privileges: VipPrivileges {
            kick_shield: true,
            mute_shield: true,
            entry_effect_id: Some("fx-gold-wings".into()),
            vehicle_id: Some("car:7".into()),
            seat_priority: true,
            backgrounds: vec!["https://cdn.example/bg/gold.png".into()],
        },
    };
    commands.extend([
        Command::new(
            CommandId::new("c-vip-join").unwrap(),
            CommandKind::Join {
                password_verified: false,
                verified_lock: None,
            },
        )
        .with_vip(Some(vip.clone())),
        Command::new(
            CommandId::new("c-vip-kick").unwrap(),
            CommandKind::Kick {
                user: user("carol"),
                ban_seconds: None,
            },
        )
        .with_vip(Some(vip)),
        Command::new(
            CommandId::new("c-vip-mute").unwrap(),
            CommandKind::ChatMute {
                user: user("bob"),
                seconds: 60,
            },
        )
        .with_vip(Some(VipStanding::default())),
    ]);
    commands
}

/// A small room with something in every part of its state.
fn sample_snapshot() -> Snapshot {
    let member = |role, vip_level, joined| Member {
        role,
        vip_level,
        joined_at: at(joined),
        robot: false,
    };
    let seats = vec![
        Seat {
            occupant: Some(Occupant {
                user: user("alice"),
                session: SeatSessionId(3),
                since: at(30),
                publish_deadline: None,
            }),
            ..Seat::default()
        },
        Seat {
            occupant: Some(Occupant {
                user: user("carol"),
                session: SeatSessionId(4),
                since: at(40),
                publish_deadline: Some(at(70)),
            }),
            muted: true,
            muted_by_moderator: true,
            // A snapshot from before the muter was kept reads without one.
            muted_by: None,
            locked: false,
            vip_only: true,
            hold: None,
        },
        Seat {
            locked: true,
            ..Seat::default()
        },
        Seat {
            hold: Some(SeatHold {
                user: user("erin"),
                until: at(900),
            }),
            ..Seat::default()
        },
    ];
    let state = RoomState {
        room_id: room(),
        status: RoomStatus::Open,
        owner: Some(user("alice")),
        created_at: at(0),
        profile: RoomProfile {
            name: "Night talk".into(),
            notice: "Be kind.".into(),
            cover_url: Some("https://cdn.example/covers/night.png".into()),
            background_url: None,
        },
        settings: RoomSettings {
            chat_enabled: true,
            lock: Some(PasswordHash(HASH.into())),
            seat_count: 4,
            region: "sg".into(),
        },
        members: BTreeMap::from([
            (user("alice"), member(Role::Owner, 2, 0)),
            (user("bob"), member(Role::Admin, 0, 10)),
            (user("carol"), member(Role::Member, 5, 20)),
        ]),
        admins: BTreeSet::from([user("bob")]),
        bans: BTreeMap::from([(user("dave"), at(3_600))]),
        chat_mutes: BTreeMap::from([(user("carol"), at(600))]),
        invites: BTreeMap::from([(user("erin"), at(900))]),
        seats,
        heat: 1_060,
        contribution: Contribution {
            day_key: today(),
            week_key: today().week(),
            day: BTreeMap::from([(user("carol"), Coins(60))]),
            week: BTreeMap::from([(user("carol"), Coins(260)), (user("bob"), Coins(5))]),
        },
        rocket: Rocket {
            level: 2,
            fuel: 50_000,
            status: RocketStatus::Ignited {
                rocket_id: RocketId(5),
                ignited_at: at(90),
                launch_at: at(150),
                prize: Some(RocketPrize {
                    reward_pool: Coins(6_000),
                    winners: 10,
                    reward_cap: None,
                }),
            },
            day_key: today(),
            next_rocket_id: RocketId(6),
        },
        next_seat_session: SeatSessionId(5),
        version: 42,
    };
    Snapshot::new(state)
}

fn envelope(seq: u64, event: &Event) -> EventEnvelope {
    EventEnvelope::new(room(), seq, at(i64::try_from(seq).unwrap()), event)
}

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

fn updating() -> bool {
    std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1")
}

/// Compares `value`'s pretty JSON with the golden file `name` and decodes the file back into
/// `value`; with `UPDATE_GOLDEN=1`, rewrites the file instead. Returns what differs.
fn check_golden<T>(name: &str, value: &T) -> Vec<String>
where
    T: Serialize + DeserializeOwned + PartialEq + Debug,
{
    let path = golden_dir().join(name);
    let json = serde_json::to_string_pretty(value).unwrap() + "\n";
    if updating() {
        if std::fs::read_to_string(&path).ok().as_deref() != Some(json.as_str()) {
            std::fs::create_dir_all(golden_dir()).unwrap();
            std::fs::write(&path, &json).unwrap();
        }
        return Vec::new();
    }
    let golden = match std::fs::read_to_string(&path) {
        Ok(golden) => golden,
        Err(e) => return vec![format!("{name}: cannot read {}: {e}", path.display())],
    };
    let mut problems = Vec::new();
    if golden != json {
        problems.push(format!(
            "{name}: the JSON changed.\n--- golden\n{golden}--- now\n{json}"
        ));
    }
    match serde_json::from_str::<T>(&golden) {
        Ok(decoded) if decoded == *value => {}
        Ok(decoded) => problems.push(format!(
            "{name}: decodes to {decoded:#?}\ninstead of {value:#?}"
        )),
        Err(e) => problems.push(format!("{name}: no longer decodes: {e}")),
    }
    problems
}

fn assert_no_problems(problems: Vec<String>) {
    assert!(
        problems.is_empty(),
        "{}\n\nIf the change is intended, run `UPDATE_GOLDEN=1 cargo test -p room-domain --test \
         golden` and review the diff: it changes a published contract.",
        problems.join("\n\n")
    );
}

#[test]
fn every_event_type_has_a_sample_and_a_golden_file() {
    let samples = sample_events();
    let sampled: Vec<&str> = samples.iter().map(Event::type_name).collect();
    assert_eq!(sampled, EVENT_TYPES, "one sample per type, in order");

    // `Event` is non-exhaustive, so this crate cannot match on it exhaustively; but
    // `Event::type_name` does, so its arms name every variant there is.
    let source = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/src/event.rs"))
        .expect("read src/event.rs");
    let body_start = source
        .find("pub fn type_name(")
        .expect("Event::type_name in src/event.rs");
    let body_len = source[body_start..]
        .find("\n    }\n")
        .expect("the end of Event::type_name");
    let declared: BTreeSet<&str> = source[body_start..body_start + body_len]
        .split("=> \"")
        .skip(1)
        .map(|rest| &rest[..rest.find('"').expect("a closing quote")])
        .collect();
    assert!(
        declared.len() >= EVENT_TYPES.len(),
        "found only {declared:?} in Event::type_name"
    );
    let listed: BTreeSet<&str> = EVENT_TYPES.into_iter().collect();
    assert_eq!(
        declared, listed,
        "Event::type_name and EVENT_TYPES differ: add a sample and a golden file for each new \
         event type"
    );

    for event in &samples {
        let json: serde_json::Value = serde_json::to_value(envelope(1, event)).unwrap();
        assert_eq!(json["type"], event.type_name());
        assert!(json.get("payload").is_some(), "{json}");
    }

    if updating() {
        return;
    }
    let mut expected: BTreeSet<String> = EVENT_TYPES.iter().map(|t| format!("{t}.json")).collect();
    expected.extend(OTHER_FILES.iter().map(|f| (*f).to_owned()));
    let present: BTreeSet<String> = std::fs::read_dir(golden_dir())
        .expect("tests/golden exists")
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(
        present, expected,
        "tests/golden must hold exactly one file per event type plus {OTHER_FILES:?}"
    );
}

#[test]
fn event_envelopes_match_their_golden_files() {
    let mut problems = Vec::new();
    for (i, event) in sample_events().iter().enumerate() {
        let seq = u64::try_from(i).unwrap() + 1;
        let envelope = envelope(seq, event);
        assert_eq!(envelope.event_id, format!("room-1:{seq}"));
        assert_eq!(envelope.v, EVENT_SCHEMA_VERSION);
        problems.extend(check_golden(
            &format!("{}.json", event.type_name()),
            &envelope,
        ));
    }
    assert_no_problems(problems);
}

#[test]
fn nested_event_values_match_their_golden_file() {
    let events = variant_events();
    // Every value of every enum nested in an event appears in the golden files.
    let mut seen: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for event in sample_events().iter().chain(&events) {
        let payload = serde_json::to_value(event).unwrap()["payload"].clone();
        let mut note = |what, value: &serde_json::Value| {
            if let Some(value) = value.as_str() {
                seen.entry(what).or_default().insert(value.to_owned());
            }
        };
        match event {
            Event::RoomMicChanged { change, .. } => {
                nested_enums_are_listed(
                    change,
                    MicDownReason::Left,
                    LeaveReason::Left,
                    Role::Owner,
                );
                note("mic change", &payload["change"]["action"]);
                note("mic down reason", &payload["change"]["reason"]);
            }
            Event::RoomUserLeft { .. } => note("leave reason", &payload["reason"]),
            Event::RoomUserJoined { .. } => note("role", &payload["role"]),
            _ => {}
        }
    }
    let counts: BTreeMap<&str, usize> = seen.iter().map(|(k, v)| (*k, v.len())).collect();
    let expected = BTreeMap::from([
        ("leave reason", 2),
        ("mic change", 4),
        ("mic down reason", all_down_reasons().len()),
        ("role", 3),
    ]);
    assert_eq!(counts, expected, "{seen:#?}");

    let envelopes: Vec<EventEnvelope> = events
        .iter()
        .enumerate()
        .map(|(i, event)| envelope(u64::try_from(i).unwrap() + 100, event))
        .collect();
    assert_no_problems(check_golden("event_variants.json", &envelopes));
}

#[test]
fn commands_match_their_golden_file() {
    assert_no_problems(check_golden("commands.json", &sample_commands()));
}

#[test]
fn snapshot_matches_its_golden_file() {
    let snapshot = sample_snapshot();
    snapshot
        .state
        .check_invariants(at(100))
        .expect("the sample snapshot is a state a room can be in");
    assert_no_problems(check_golden("snapshot.json", &snapshot));
}

#[test]
fn actors_match_their_golden_file() {
    assert_no_problems(check_golden("actors.json", &sample_actors()));
}

#[test]
fn robot_values_match_their_golden_files() {
    let mut problems = check_golden("robot_commands.json", &sample_robot_commands());
    let envelopes: Vec<EventEnvelope> = sample_robot_events()
        .iter()
        .enumerate()
        .map(|(i, event)| envelope(u64::try_from(i).unwrap() + 200, event))
        .collect();
    problems.extend(check_golden("robot_events.json", &envelopes));
    let snapshot = sample_robot_snapshot();
    snapshot
        .state
        .check_invariants(at(100))
        .expect("the robot snapshot is a state a room can be in");
    problems.extend(check_golden("robot_snapshot.json", &snapshot));
    assert_no_problems(problems);
}

#[test]
fn robot_fields_are_left_out_when_false() {
    // The same values from before robots: no `robot` key, so the older files stay valid.
    for event in sample_events().iter().chain(&variant_events()) {
        let json = serde_json::to_string(event).unwrap();
        assert!(!json.contains("robot"), "{json}");
    }
    let json = serde_json::to_string(&sample_snapshot()).unwrap();
    assert!(!json.contains("robot"), "{json}");
    // And a robot's are marked.
    for event in sample_robot_events() {
        let json = serde_json::to_value(&event).unwrap();
        let payload = &json["payload"];
        assert_eq!(payload["robot"], serde_json::Value::Bool(true), "{json}");
    }
    let robot: serde_json::Value = serde_json::to_value(Actor::Robot(user("bot-1"))).unwrap();
    assert_eq!(
        robot,
        serde_json::json!({"kind": "robot", "user_id": "bot-1"})
    );
}

#[test]
fn envelopes_never_carry_the_password_hash() {
    let locked = Event::RoomLockChanged {
        locked: true,
        password_hash: Some(PasswordHash(HASH.into())),
        by: Some(user("alice")),
    };
    // The hash is in the event as the room records it (its log and snapshots need it) ...
    assert!(serde_json::to_string(&locked).unwrap().contains(HASH));
    // ... but never in what leaves the room, nor in logs.
    let envelope = envelope(5, &locked);
    let json = serde_json::to_string(&envelope).unwrap();
    assert!(!json.contains(HASH), "{json}");
    assert!(!json.contains("password_hash"), "{json}");
    assert!(!format!("{locked:?}").contains(HASH));
    assert_eq!(
        envelope.event,
        Event::RoomLockChanged {
            locked: true,
            password_hash: None,
            by: Some(user("alice")),
        }
    );
    let golden = std::fs::read_to_string(golden_dir().join("RoomLockChanged.json"));
    if let Ok(golden) = golden {
        assert!(!golden.contains("password_hash"), "{golden}");
    } else {
        assert!(updating(), "RoomLockChanged.json is missing");
    }
}

#[test]
fn a_gift_fact_from_before_billing_decodes_and_bills_under_the_first_version() {
    // The RoomGiftSent envelope as written before `billing_version` existed.
    let old = r#"{
        "event_id": "room-1:15", "room_id": "room-1", "seq": 15, "v": 1,
        "occurred_at": 1764460815000, "type": "RoomGiftSent",
        "payload": {
            "order_id": "o-20251130-0001", "sender": "carol", "recipients": ["alice", "bob"],
            "gift_id": "rose", "count": 3, "unit_price": 10, "total_value": 60,
            "heat_added": 60, "fuel_added": 60, "lucky": {"multiplier": 2, "reward": 120}
        }
    }"#;
    let envelope: EventEnvelope = serde_json::from_str(old).unwrap();
    let Event::RoomGiftSent(gift) = &envelope.event else {
        panic!("a gift: {envelope:?}");
    };
    assert_eq!(gift.billing_version, None);
    assert_eq!(gift.billed_under(), room_domain::FIRST_BILLING_VERSION);
    let again = serde_json::to_value(&envelope).unwrap();
    assert!(
        again["payload"].get("billing_version").is_none(),
        "absent stays absent: {again}"
    );
    let mut current = sample_events()[14].clone();
    if let Event::RoomGiftSent(gift) = &mut current {
        assert_eq!(
            gift.billing_version,
            Some(1),
            "the sample carries a version"
        );
        gift.billing_version = None;
        gift.sender_nickname = None;
        gift.sender_avatar_url = None;
    }
    assert_eq!(
        envelope.event, current,
        "otherwise the same fact as the sample (without display fields)"
    );
}

/// Envelopes and commands as they were written before the display fields (`nickname`,
/// `avatar_url`, `sender_nickname`, `sender_avatar_url`, a command's `display`): stored logs and
/// other services' copies of this crate hold them.
const BEFORE_DISPLAY_FIELDS: [&str; 3] = [
    r#"{
  "event_id": "room-1:7",
  "room_id": "room-1",
  "seq": 7,
  "v": 1,
  "occurred_at": 1764460807000,
  "type": "RoomUserJoined",
  "payload": {
    "user": "carol",
    "role": "member",
    "vip_level": 3,
    "joined_at": 1764460805000
  }
}"#,
    r#"{
  "event_id": "room-1:13",
  "room_id": "room-1",
  "seq": 13,
  "v": 1,
  "occurred_at": 1764460813000,
  "type": "RoomMicChanged",
  "payload": {
    "seat": 2,
    "change": {
      "action": "up",
      "user": "carol",
      "session": 7,
      "since": 1764460810000,
      "publish_deadline": 1764460840000
    }
  }
}"#,
    r#"{
  "event_id": "room-1:15",
  "room_id": "room-1",
  "seq": 15,
  "v": 1,
  "occurred_at": 1764460815000,
  "type": "RoomGiftSent",
  "payload": {
    "order_id": "o-20251130-0001",
    "sender": "carol",
    "recipients": [
      "alice",
      "bob"
    ],
    "gift_id": "rose",
    "count": 3,
    "unit_price": 10,
    "total_value": 60,
    "heat_added": 60,
    "fuel_added": 60,
    "lucky": {
      "multiplier": 2,
      "reward": 120
    }
  }
}"#,
];

#[test]
fn envelopes_and_commands_written_before_display_fields_still_decode() {
    for json in BEFORE_DISPLAY_FIELDS {
        let envelope: EventEnvelope = serde_json::from_str(json).expect("an old envelope decodes");
        match &envelope.event {
            Event::RoomUserJoined {
                user: who,
                nickname,
                avatar_url,
                entry_effect_id,
                vehicle_id,
                ..
            } => {
                assert_eq!(who, &user("carol"));
                assert_eq!((nickname, avatar_url), (&None, &None));
                assert_eq!((entry_effect_id, vehicle_id), (&None, &None));
            }
            Event::RoomMicChanged {
                change:
                    MicChange::Up {
                        nickname,
                        avatar_url,
                        ..
                    },
                ..
            } => assert_eq!((nickname, avatar_url), (&None, &None)),
            Event::RoomGiftSent(gift) => {
                assert_eq!(gift.total_value, Coins(60));
                assert_eq!(
                    (&gift.sender_nickname, &gift.sender_avatar_url),
                    (&None, &None)
                );
            }
            other => panic!("unexpected {other:?}"),
        }
        // Written again, it is the same JSON: absent fields stay absent.
        let again: serde_json::Value = serde_json::to_value(&envelope).unwrap();
        assert_eq!(
            again,
            serde_json::from_str::<serde_json::Value>(json).unwrap()
        );
    }
    let join: Command =
        serde_json::from_str(r#"{"command_id": "c-7", "type": "join", "password_verified": true}"#)
            .expect("an old command decodes");
    assert_eq!(join.display, None);
    assert_eq!(join.vip, None);
    assert_eq!(
        serde_json::to_value(&join).unwrap(),
        serde_json::json!({"command_id": "c-7", "type": "join", "password_verified": true})
    );
}

#[test]
fn display_fields_are_left_out_when_absent() {
    for event in variant_events().iter().chain(&sample_robot_events()) {
        let json = serde_json::to_string(event).unwrap();
        assert!(
            !json.contains("nickname") && !json.contains("avatar"),
            "{json}"
        );
    }
    let joined = serde_json::to_value(envelope(1, &sample_events()[6])).unwrap();
    assert_eq!(joined["payload"]["nickname"], "Carol ✨");
}

/// `snapshot.json` as it was before seats reserved for VIP and invites: a snapshot written
/// by the release before reads, with no seat reserved or held and no invite.
#[test]
fn a_snapshot_from_before_invites_and_vip_seats_still_decodes() {
    let json = include_str!("frozen/snapshot_before_invites.json");
    let snapshot: Snapshot = serde_json::from_str(json).expect("an old snapshot decodes");
    let state = snapshot.into_state().expect("its version is known");
    assert_eq!(state.seats.len(), 4);
    assert!(
        state
            .seats
            .iter()
            .all(|seat| !seat.vip_only && seat.hold.is_none())
    );
    assert!(state.invites.is_empty());
    assert_eq!(state.members.len(), 3);
}
