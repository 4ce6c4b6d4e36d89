//! What the runs exercised, counted so that a generator that stops reaching a command, an
//! event or a rare path fails the test instead of passing vacuously.

use std::collections::BTreeMap;

use room_domain::CommandKind;

/// What the runs exercised, so that a generator that stops reaching parts of the model fails
/// the test instead of passing vacuously.
#[derive(Debug, Default)]
pub struct Coverage {
    pub accepted: BTreeMap<&'static str, u64>,
    pub rejected: BTreeMap<&'static str, u64>,
    pub rejection_codes: BTreeMap<&'static str, u64>,
    pub events: BTreeMap<&'static str, u64>,
    pub launches_with_rewards: u64,
    pub lucky_wins: u64,
    pub gifts_on_a_new_day: u64,
    pub launches_on_a_later_day: u64,
    pub gifts_stamped_on_an_earlier_day: u64,
    pub snapshot_restores: u64,
    pub robot_joins: u64,
    pub robot_leaves: u64,
    pub robot_gifts_with_heat: u64,
    pub robot_gifts_while_idle: u64,
}

/// The `type` tag of a command kind in its JSON.
pub fn kind_name(kind: &CommandKind) -> &'static str {
    match kind {
        CommandKind::CreateRoom { .. } => "create_room",
        CommandKind::UpdateProfile { .. } => "update_profile",
        CommandKind::ChangeBackground { .. } => "change_background",
        CommandKind::RevokeResources { .. } => "revoke_resources",
        CommandKind::SystemMessage { .. } => "system_message",
        CommandKind::SetChatEnabled { .. } => "set_chat_enabled",
        CommandKind::SetLock { .. } => "set_lock",
        CommandKind::CloseRoom => "close_room",
        CommandKind::Join { .. } => "join",
        CommandKind::Leave => "leave",
        CommandKind::Evict { .. } => "evict",
        CommandKind::TakeSeat { .. } => "take_seat",
        CommandKind::LeaveSeat { .. } => "leave_seat",
        CommandKind::LockSeat { .. } => "lock_seat",
        CommandKind::MuteSeat { .. } => "mute_seat",
        CommandKind::RemoveFromSeat { .. } => "remove_from_seat",
        CommandKind::ConfirmMicPublish { .. } => "confirm_mic_publish",
        CommandKind::MicPublishTimeout { .. } => "mic_publish_timeout",
        CommandKind::RtcUserLeft { .. } => "rtc_user_left",
        CommandKind::Kick { .. } => "kick",
        CommandKind::Unban { .. } => "unban",
        CommandKind::ChatMute { .. } => "chat_mute",
        CommandKind::SetAdmin { .. } => "set_admin",
        CommandKind::ApplyGift(_) => "apply_gift",
        CommandKind::LaunchRocket { .. } => "launch_rocket",
        CommandKind::ResetRocket => "reset_rocket",
        CommandKind::RobotGift(_) => "robot_gift",
        CommandKind::SetSeatVip { .. } => "set_seat_vip",
        CommandKind::Invite { .. } => "invite",
        CommandKind::ShowGiftBroadcast(_) => "show_gift_broadcast",
    }
}

pub const ALL_COMMAND_KINDS: [&str; 30] = [
    "set_seat_vip",
    "invite",
    "show_gift_broadcast",
    "create_room",
    "update_profile",
    "change_background",
    "revoke_resources",
    "system_message",
    "set_chat_enabled",
    "set_lock",
    "close_room",
    "join",
    "leave",
    "evict",
    "take_seat",
    "leave_seat",
    "lock_seat",
    "mute_seat",
    "remove_from_seat",
    "confirm_mic_publish",
    "mic_publish_timeout",
    "rtc_user_left",
    "kick",
    "unban",
    "chat_mute",
    "set_admin",
    "apply_gift",
    "launch_rocket",
    "reset_rocket",
    "robot_gift",
];

pub const ALL_EVENT_TYPES: [&str; 26] = [
    "RoomMicSeatVip",
    "RoomUserInvited",
    "RoomGiftBroadcast",
    "RoomCreated",
    "RoomProfileUpdated",
    "RoomBackgroundChanged",
    "RoomResourcesRevoked",
    "RoomSystemMessage",
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
];
