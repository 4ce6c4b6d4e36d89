//! The sizes Tencent IM's REST API refuses beyond, shared by the client, the settings that
//! must stay within them and the fake server that enforces them.

/// The most a whole `send_group_msg` request body may take: Tencent counts all of it, not
/// only `MsgBody`, and refuses longer ones (80002).
pub const MAX_MSG_BYTES: usize = 12 * 1024;
/// The most the rest of a `send_group_msg` request takes besides `MsgBody`: `GroupId` (under
/// 48 bytes), `Random`, `MsgPriority` and the keys and punctuation around them, rounded up.
pub const SEND_REQUEST_OVERHEAD_BYTES: usize = 256;
/// The most a message's `MsgBody` may take as JSON so that the whole request stays within
/// [`MAX_MSG_BYTES`].
pub const MAX_MSG_BODY_BYTES: usize = MAX_MSG_BYTES - SEND_REQUEST_OVERHEAD_BYTES;
/// The default size display messages are packed to: a margin of 1 KiB under the limit, for
/// whatever Tencent counts that its documents do not say.
pub const DEFAULT_MSG_BODY_BYTES: usize = MAX_MSG_BYTES - 1024;
/// The longest group `Name`, in bytes.
pub const MAX_GROUP_NAME_BYTES: usize = 30;
/// Most members per `forbid_send_msg` call.
pub const MAX_MUTE_MEMBERS: usize = 500;
/// Most members per `ban_group_member` / `unban_group_member` call.
pub const MAX_BAN_MEMBERS: usize = 20;
