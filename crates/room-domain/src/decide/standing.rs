//! Where the actor stands in the room, and the checks of who may do what that the rules of
//! every family start with.

use crate::actor::{Actor, UserActor};
use crate::command::Ctx;
use crate::ids::UserId;
use crate::rejection::Rejection;
use crate::state::{Role, RoomState};

/// What the actor is in this room, from most to least powerful.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Standing {
    Outsider,
    Member,
    Admin,
    Owner,
    PlatformAdmin,
    System,
}

impl Standing {
    /// Where `actor` stands in `state`.
    pub(super) fn of(state: &RoomState, actor: &Actor) -> Standing {
        match actor {
            Actor::System => Standing::System,
            Actor::User(user) if user.platform_admin => Standing::PlatformAdmin,
            // A robot stands where its user id puts it, like an ordinary user.
            Actor::User(UserActor { user_id, .. }) | Actor::Robot(user_id) => {
                if state.owner.as_ref() == Some(user_id) {
                    Standing::Owner
                } else if state.admins.contains(user_id) {
                    Standing::Admin
                } else if state.members.contains_key(user_id) {
                    Standing::Member
                } else {
                    Standing::Outsider
                }
            }
        }
    }

    /// Whether this standing moderates the room: an admin or above.
    pub(super) fn is_moderator(self) -> bool {
        self >= Standing::Admin
    }
}

/// The acting user (or robot); the system is refused.
pub(super) fn acting_user<'a>(ctx: &Ctx<'a>) -> Result<&'a UserId, Rejection> {
    ctx.actor.user_id().ok_or(Rejection::Forbidden)
}

/// Refuses `user` unless they are in the room.
pub(super) fn require_member(state: &RoomState, user: &UserId) -> Result<(), Rejection> {
    if state.members.contains_key(user) {
        Ok(())
    } else {
        Err(Rejection::NotAMember { user: user.clone() })
    }
}

/// Refuses anyone below an admin.
pub(super) fn require_moderator(standing: Standing) -> Result<(), Rejection> {
    if standing.is_moderator() {
        Ok(())
    } else {
        Err(Rejection::Forbidden)
    }
}

/// Refuses anyone but the system.
pub(super) fn require_system(standing: Standing) -> Result<(), Rejection> {
    if standing == Standing::System {
        Ok(())
    } else {
        Err(Rejection::Forbidden)
    }
}

/// Whether a moderator of `standing` may act on `target`: nobody moderates the owner or
/// themselves; admins do not moderate other admins.
pub(super) fn may_moderate(
    state: &RoomState,
    ctx: &Ctx<'_>,
    standing: Standing,
    target: &UserId,
) -> Result<(), Rejection> {
    let refused = || {
        Err(Rejection::CannotModerate {
            target: target.clone(),
        })
    };
    if ctx.actor.user_id() == Some(target) {
        return refused();
    }
    match state.role_of(target) {
        Role::Owner => refused(),
        Role::Admin if standing == Standing::Admin => refused(),
        _ => Ok(()),
    }
}

/// Whether `user` is in the room as a robot.
pub(super) fn is_robot_member(state: &RoomState, user: &UserId) -> bool {
    state.members.get(user).is_some_and(|member| member.robot)
}
