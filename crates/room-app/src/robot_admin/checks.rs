//! The rules a robot room configuration is checked by beyond its own
//! ([`RobotRoomConfig::validate`]): the numbers a request may ask for, the gift catalog, the
//! pools of the other robot rooms, and whether a room is the one a creation makes.

use room_domain::{RoomId, RoomStatus, UserId};

use super::refusal::RobotAdminError;
use crate::ports::{
    RobotProfile, RobotRoomConfig, RobotRoomProblem, RobotRoomsRef, check_cover_url,
};
use crate::service::{RoomService, RoomView};

/// The longest region code, in characters.
const MAX_REGION_CHARS: usize = 32;

/// A broken rule: the field, as the API names it, and the rule.
pub(super) fn problem(field: impl Into<String>, reason: impl Into<String>) -> RobotAdminError {
    RobotAdminError::Invalid(RobotRoomProblem {
        field: field.into(),
        reason: reason.into(),
    })
}

/// The seat count a creation asks for: `default` unless given, else 1 to
/// [`room_domain::MAX_SEATS`].
pub(super) fn seat_count_of(asked: Option<i64>, default: u8) -> Result<u8, RobotAdminError> {
    match asked {
        None => Ok(default),
        Some(count) => u8::try_from(count)
            .ok()
            .filter(|count| (1..=room_domain::MAX_SEATS).contains(count))
            .ok_or_else(|| {
                problem(
                    "seat_count",
                    format!("{count} is outside 1 to {}", room_domain::MAX_SEATS),
                )
            }),
    }
}

/// A region code: up to 32 characters, no control character or bidirectional override.
pub(super) fn check_region(region: &str) -> Result<(), RobotAdminError> {
    if region.chars().count() > MAX_REGION_CHARS
        || region.chars().any(|c| {
            c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
        })
    {
        return Err(problem(
            "region",
            "must have up to 32 characters, no control character or bidirectional override",
        ));
    }
    Ok(())
}

/// A seat target as a seat number (its range against the seat count is
/// [`RobotRoomConfig::validate`]'s).
pub(super) fn seats_of(seats: i64) -> Result<u8, RobotAdminError> {
    u8::try_from(seats).map_err(|_| {
        problem(
            "seats",
            format!("{seats} is outside 0 to the seat count less one"),
        )
    })
}

/// Checks a configuration's rules, then that every gift of its mix is in the catalog and
/// enabled (robots send gifts like users do, and a disabled gift cannot be sent).
pub(super) async fn check_config(
    service: &RoomService,
    id_prefix: &str,
    config: &RobotRoomConfig,
) -> Result<(), RobotAdminError> {
    // The image URL rule is the room's, answered as for a room's own profile.
    check_cover_url(&config.profile).map_err(RobotAdminError::InvalidUrl)?;
    config.validate(id_prefix)?;
    let catalog = service.list_gifts().await?;
    for (i, share) in config.gift_mix.iter().enumerate() {
        let field = || format!("gift_mix[{i}].gift_id");
        match catalog.iter().find(|gift| gift.gift_id == share.gift_id) {
            None => {
                return Err(problem(
                    field(),
                    format!("{} is not in the gift catalog", share.gift_id),
                ));
            }
            Some(gift) if !gift.enabled => {
                return Err(problem(
                    field(),
                    format!("{} is disabled in the gift catalog", share.gift_id),
                ));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// Refuses early a pool that shares a robot with another robot room's (a robot is in one
/// room at a time), before a creation makes a room for it. Only a courtesy: the rule itself
/// is the store's unique key on the robot, which refuses the configuration's write
/// ([`taken`]) when two writes at once pass this read.
pub(super) async fn check_pool(
    configs: &RobotRoomsRef,
    room_id: &RoomId,
    robots: &[UserId],
) -> Result<(), RobotAdminError> {
    let held = configs.list_by_robots(robots).await?;
    match held.into_iter().find(|(_, held)| held != room_id) {
        Some((robot, held)) => Err(taken(robots, &robot, &held)),
        None => Ok(()),
    }
}

/// The refusal of a pool whose `robot` the pool of robot room `held` holds, naming the robot's
/// place in `robots`.
pub(super) fn taken(robots: &[UserId], robot: &UserId, held: &RoomId) -> RobotAdminError {
    let i = robots.iter().position(|r| r == robot).unwrap_or_default();
    problem(
        format!("robots[{i}]"),
        format!("{robot} is in the pool of robot room {held} (a robot is in one room at a time)"),
    )
}

/// Whether `room` shows `profile`.
pub(super) fn shows(room: &RoomView, profile: &RobotProfile) -> bool {
    room.name == profile.name
        && room.notice == profile.notice
        && room.cover_url == profile.cover_url
}

/// Whether `room` is the room a creation of `config` in `region` makes: open, owned by the
/// pool's first robot, with the configuration's name and seat count and the region.
pub(super) fn is_room_of(room: &RoomView, config: &RobotRoomConfig, region: &str) -> bool {
    room.status == RoomStatus::Open
        && room.owner.as_ref() == config.robots.first()
        && room.name == config.profile.name
        && room.seats.len() == usize::from(config.seat_count)
        && room.region == region
}
