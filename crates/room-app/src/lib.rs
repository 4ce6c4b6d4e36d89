//! The application layer of the room service: the ports (traits every adapter implements),
//! the Room Cell runtime (one task per active room, group commit), and the use cases that the
//! API and the workers call.
//!
//! Binaries build adapters, hand them to [`RoomService`] through [`ServicePorts`] and
//! [`CellDeps`], and call its methods. With feature `testkit`, `testkit` has in-memory fakes
//! of every port and the conformance suites every adapter must pass.

mod attempts;
pub mod boards;
pub mod broadcast;
mod budgets;
mod cell;
pub mod consumers;
pub mod dead_letters;
pub mod digest;
mod error;
pub mod follows;
mod footprint;
pub mod gift_value;
mod gifts;
mod ids;
pub mod income;
pub mod keyed;
mod known;
pub mod ledger;
pub mod lists;
mod local;
mod memory;
pub mod ports;
pub mod profiles;
pub mod robot_admin;
pub mod robots;
pub mod rocket;
pub mod room_feed;
pub mod rtc_events;
mod service;
pub mod stored;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
mod ttl_map;
pub mod vip;
pub mod visitors;
pub mod workers;

pub use attempts::{LocalPasswordAttempts, MAX_WRONG_PASSWORDS, PASSWORD_WINDOW_MS};
pub use budgets::{LocalOpenStreams, LocalRateBudgets};
pub use cell::{
    CellConfig, CellDeps, CellRuntime, HeldCell, KeeperTick, MEMBER_HINT_FOR, RecentReplies,
};
pub use error::{Error, RemoteError, Result};
pub use gifts::{
    GiftReceipt, GiftSaga, ORDER_LOCK_QUEUE, RecoveryReport, SendGift, gift_apply_command,
    gift_command_id,
};
pub use ids::SYSTEM_ID_PREFIX;
pub use known::{KNOWN_ROOMS_REMEMBERED, KnownRooms};
pub use local::{
    BroadcastMessenger, FanOutMessenger, LocalLease, LocalPresence, RandomIds, RoomWatch,
    SystemClock, UserWatch, Watch, addressee,
};
pub use memory::{InMemoryStore, MemoryListCache};
pub use ports::CommandReply;
pub use robot_admin::RobotRoomAdmin;
pub use service::{
    BannedUser, COVER_CLAIM_GRACE, IdempotencyKey, Invite, MAX_ADMIN_CREDIT,
    MAX_IDEMPOTENCY_KEY_CHARS, MessageReport, MessageTarget, OnlineUser, RankEntry, RankPeriod,
    RocketView, RoomPatch, RoomService, RoomView, SeatView, ServicePorts,
};
