//! Tencent IM adapter of the room service: the display events of every room reach the room's
//! Tencent IM group (an `AVChatRoom`), which the app's clients are members of.
//!
//! - [`UserSigner`]: UserSig version 2, for the admin account the service calls as and for the
//!   app users the service mints credentials for ([`ImClient::sign_user`]).
//! - [`ImClient`]: the REST API over keep-alive HTTPS: groups ([`ImClient::create_group`],
//!   [`ImClient::destroy_group`]), moderation ([`ImClient::forbid_send_msg`],
//!   [`ImClient::ban_group_member`], [`ImClient::unban_group_member`]) and custom messages
//!   ([`ImClient::send_group_msg`]), with bounded retries and every Tencent `ErrorCode` sorted
//!   into retryable, re-sign and permanent ([`ImError::is_retryable`]).
//! - [`ImMessenger`]: the [`Messenger`](room_app::ports::Messenger) port. It never blocks a
//!   commit: events are queued, coalesced, packed several to a message and rate-limited per
//!   room below Tencent's 40 messages/s per group (shedding Low before Normal before High)
//!   and per node within the app's 200 calls/s, with bounds on the events a node holds and
//!   on their age, and a patient retry for groups that do not exist yet.
//! - [`group_id`]: the group of a room, the same on every node.
//! - `FakeIm` (feature `fake`): a local server speaking the same REST contract, for tests.
//!
//! [`ImSettings`] is the service configuration's `[im]` section.

mod client;
mod error;
#[cfg(feature = "fake")]
mod fake;
mod group;
mod limits;
mod messenger;
mod settings;
mod usersig;

pub use client::{GroupMessage, ImClient, SendOutcome};
pub use error::{CODE_NOT_PERMITTED, CODE_TOO_LONG, CODES_NO_SUCH_GROUP, ErrorClass, ImError};
#[cfg(feature = "fake")]
pub use fake::{FakeIm, FakeImConfig, FakeMessage, FakeRequest, Fault, GROUP_MSGS_PER_SEC};
pub use group::group_id;
pub use limits::{
    DEFAULT_MSG_BODY_BYTES, MAX_BAN_MEMBERS, MAX_GROUP_NAME_BYTES, MAX_MSG_BODY_BYTES,
    MAX_MSG_BYTES, MAX_MUTE_MEMBERS, SEND_REQUEST_OVERHEAD_BYTES,
};
pub use messenger::{DispatcherHandle, DisplayStats, ImMessenger};
pub use settings::{DEFAULT_BASE_URL, DisplaySettings, ImSettings};
pub use usersig::{Claims, SigError, UserSigner, decode as decode_user_sig};

/// The crate's result type.
pub type Result<T, E = ImError> = std::result::Result<T, E>;
