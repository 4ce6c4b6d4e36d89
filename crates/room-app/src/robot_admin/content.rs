//! What a robot room configuration asks for, without its bookkeeping: what two requests are
//! compared by, and what a creation without a key is named by.

use room_domain::UserId;

use crate::ports::{GiftShare, RobotProfile, RobotRoomConfig};

/// What a configuration asks for, without its bookkeeping (room, version, times). Taken
/// apart whole, so that a field added to [`RobotRoomConfig`] must be placed here.
pub(super) type Content<'a> = (
    &'a RobotProfile,
    u8,
    &'a [UserId],
    &'a [u32],
    u8,
    u32,
    &'a [GiftShare],
    bool,
);

/// The [`Content`] of `config`.
pub(super) fn content(config: &RobotRoomConfig) -> Content<'_> {
    let RobotRoomConfig {
        room_id: _,
        profile,
        seat_count,
        robots,
        audience,
        seats,
        gift_rate_per_minute,
        gift_mix,
        enabled,
        version: _,
        created_at: _,
        updated_at: _,
    } = config;
    (
        profile,
        *seat_count,
        robots,
        audience,
        *seats,
        *gift_rate_per_minute,
        gift_mix,
        *enabled,
    )
}

/// Whether two configurations say the same (their room, version and times aside).
pub(super) fn same_content(a: &RobotRoomConfig, b: &RobotRoomConfig) -> bool {
    content(a) == content(b)
}
