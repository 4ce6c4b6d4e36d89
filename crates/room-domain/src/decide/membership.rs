//! The rules of being in a room: joining (bans, the lock, the member limit), leaving, and the
//! system's eviction of a member whose heartbeat stopped.

use crate::actor::{Actor, UserActor};
use crate::command::Ctx;
use crate::display::UserDisplay;
use crate::event::{Event, LeaveReason, MicDownReason};
use crate::ids::UserId;
use crate::rejection::Rejection;
use crate::state::{PasswordHash, RoomState};
use crate::time::Timestamp;
use crate::vip::VipStanding;

use super::seats::down_from;
use super::standing::{Standing, acting_user, require_system};

/// `Join`: the actor joins, unless banned, shut out by the lock or the member limit. The
/// password's verdict holds only against the lock it was checked against, if one is named.
/// A user's VIP standing, when the service looked it up, gives the event its entry effect
/// and vehicle; a robot has none.
pub(super) fn join(
    state: &RoomState,
    ctx: &Ctx<'_>,
    password_verified: bool,
    verified_lock: Option<&PasswordHash>,
    display: Option<&UserDisplay>,
    vip: Option<&VipStanding>,
) -> Result<Vec<Event>, Rejection> {
    let password_verified = password_verified
        && verified_lock.is_none_or(|lock| state.settings.lock.as_ref() == Some(lock));
    // A robot joins as an ordinary user would: VIP level 0, no platform admin.
    let robot_actor;
    let (actor, robot) = match ctx.actor {
        Actor::User(actor) => (actor, false),
        Actor::Robot(user_id) => {
            robot_actor = UserActor {
                user_id: user_id.clone(),
                vip_level: 0,
                platform_admin: false,
            };
            (&robot_actor, true)
        }
        Actor::System => return Err(Rejection::Forbidden),
    };
    let user = &actor.user_id;
    if state.members.contains_key(user) {
        return Ok(Vec::new());
    }
    if let Some(until) = state.ban_of(user, ctx.now) {
        return Err(Rejection::Banned {
            user: user.clone(),
            until,
        });
    }
    if state.join_needs_password(actor, ctx.now) && !password_verified {
        return Err(Rejection::WrongPassword);
    }
    let role = state.role_of(user);
    let max = ctx.rules.max_members;
    if state.members.len() >= max as usize {
        return Err(Rejection::RoomFull { max });
    }
    let (nickname, avatar_url) = UserDisplay::split(display);
    let privileges = vip.filter(|_| !robot).map(|vip| &vip.privileges);
    Ok(vec![Event::RoomUserJoined {
        user: user.clone(),
        role,
        vip_level: actor.vip_level,
        joined_at: ctx.now,
        robot,
        nickname,
        avatar_url,
        entry_effect_id: privileges.and_then(|p| p.entry_effect_id.clone()),
        vehicle_id: privileges.and_then(|p| p.vehicle_id.clone()),
    }])
}

/// `Leave`: a member leaves, and their seat with them.
pub(super) fn leave(state: &RoomState, ctx: &Ctx<'_>) -> Result<Vec<Event>, Rejection> {
    let user = acting_user(ctx)?;
    if !state.members.contains_key(user) {
        return Err(Rejection::NotAMember { user: user.clone() });
    }
    Ok(leave_events(state, user, LeaveReason::Left))
}

/// `Evict`: the system removes a member whose heartbeat stopped, unless they joined again
/// after the heartbeat the eviction saw.
pub(super) fn evict(
    state: &RoomState,
    standing: Standing,
    user: &UserId,
    seen: Option<Timestamp>,
) -> Result<Vec<Event>, Rejection> {
    require_system(standing)?;
    let Some(member) = state.members.get(user) else {
        return Ok(Vec::new());
    };
    if seen.is_some_and(|seen| member.joined_at > seen) {
        return Ok(Vec::new());
    }
    Ok(leave_events(state, user, LeaveReason::Evicted))
}

fn leave_events(state: &RoomState, user: &UserId, reason: LeaveReason) -> Vec<Event> {
    let mut events = Vec::with_capacity(2);
    if let Some(seat) = state.seat_of(user) {
        events.push(down_from(state, seat, MicDownReason::LeftRoom));
    }
    events.push(Event::RoomUserLeft {
        user: user.clone(),
        reason,
        robot: state.members.get(user).is_some_and(|m| m.robot),
    });
    events
}
