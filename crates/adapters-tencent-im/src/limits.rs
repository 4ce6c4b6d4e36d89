//! The sizes Tencent IM's REST API refuses beyond, shared by the client, the settings that
//! must stay within them and the fake server that enforces them.

/// The most a message's `MsgBody` may take as JSON: Tencent refuses longer ones (80002).
pub const MAX_MSG_BODY_BYTES: usize = 12 * 1024;
/// The longest group `Name`, in bytes.
pub const MAX_GROUP_NAME_BYTES: usize = 30;
/// Most members per `forbid_send_msg` call.
pub const MAX_MUTE_MEMBERS: usize = 500;
/// Most members per `ban_group_member` / `unban_group_member` call.
pub const MAX_BAN_MEMBERS: usize = 20;
