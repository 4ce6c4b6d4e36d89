//! [`RoomService`]: the use cases the API and the workers call. Each one turns a request into
//! commands for the room's cell, or reads the cell's state or the directory.
//!
//! `room_service` holds the service and how a use case reaches a room; the use cases are
//! grouped by what they touch: `rooms` (creation, profile, closing), `covers` (one open room
//! per cover picture), `members` (joins and
//! leaves), `current_room` (the user's current-room record and how rooms follow it), `commands` (commands of users, the system and robots, and the room's lists),
//! `money` (gifts, the catalog, balances), `messages` (the platform's system messages to
//! rooms). `views` is what clients see, `idempotency` the
//! keys that make a request repeatable, `password` how room passwords are kept.

mod commands;
mod covers;
mod current_room;
mod idempotency;
mod invites;
mod members;
mod messages;
mod money;
mod password;
mod room_service;
mod rooms;
mod views;

pub use covers::COVER_CLAIM_GRACE;
pub use idempotency::{IdempotencyKey, MAX_IDEMPOTENCY_KEY_CHARS};
pub use invites::Invite;
pub use messages::{MessageReport, MessageTarget};
pub use money::MAX_ADMIN_CREDIT;
pub use room_service::{RoomService, ServicePorts};
pub use views::{
    BannedUser, OnlineUser, RankEntry, RankPeriod, RocketView, RoomPatch, RoomView, SeatView,
};
