//! The rules of moderation: kicks and bans and chat mutes (each with its VIP shield from room
//! admins), and appointing admins.

use crate::command::Ctx;
use crate::event::{Event, MicDownReason};
use crate::ids::UserId;
use crate::rejection::Rejection;
use crate::state::RoomState;
use crate::vip::VipStanding;

use super::seats::down_from;
use super::standing::{Standing, may_moderate, require_member, require_moderator};

/// `Kick`: moderators remove a member (off their seat first), optionally banning them; a ban
/// also ends an admin's role. A room admin may not kick (or ban) a user whose VIP standing
/// has the kick shield; see [`kick_shield`].
pub(super) fn kick(
    state: &RoomState,
    ctx: &Ctx<'_>,
    standing: Standing,
    by: Option<UserId>,
    user: &UserId,
    ban_seconds: Option<u32>,
    vip: Option<&VipStanding>,
) -> Result<Vec<Event>, Rejection> {
    require_moderator(standing)?;
    may_moderate(state, ctx, standing, user)?;
    let member = state.members.get(user);
    let ban_seconds = ban_seconds.filter(|secs| *secs > 0);
    if member.is_none() && ban_seconds.is_none() {
        return Err(Rejection::NotAMember { user: user.clone() });
    }
    if standing == Standing::Admin
        && let Some(vip_level) = kick_shield(state, ctx, user, vip)
    {
        return Err(Rejection::VipProtected {
            target: user.clone(),
            vip_level,
        });
    }
    let mut events = Vec::with_capacity(3);
    if let Some(seat) = state.seat_of(user) {
        events.push(down_from(state, seat, MicDownReason::Kicked));
    }
    events.push(Event::RoomUserKicked {
        user: user.clone(),
        by: by.clone(),
        ban_until: ban_seconds.map(|secs| ctx.now.plus_secs(secs)),
        robot: member.is_some_and(|m| m.robot),
    });
    // A banned admin is an admin no more: the role would let them lift their own ban
    // and moderate the room they are banned from.
    if ban_seconds.is_some() && state.admins.contains(user) {
        events.push(Event::RoomAdminChanged {
            user: user.clone(),
            admin: false,
            by,
        });
    }
    Ok(events)
}

/// The VIP level that shields `user` from a room admin's kick, if any: with the standing the
/// service looked up, its level's kick shield (an expired or revoked grant shields no more,
/// from the first command after); without one (a command built without the lookup), a
/// member's level at their join against [`RoomRules::vip_kick_protection_level`].
///
/// [`RoomRules::vip_kick_protection_level`]: crate::RoomRules::vip_kick_protection_level
fn kick_shield(
    state: &RoomState,
    ctx: &Ctx<'_>,
    user: &UserId,
    vip: Option<&VipStanding>,
) -> Option<u8> {
    match vip {
        Some(vip) => vip.privileges.kick_shield.then_some(vip.level),
        None => {
            let member = state.members.get(user)?;
            let threshold = ctx.rules.vip_kick_protection_level?;
            (member.vip_level >= threshold).then_some(member.vip_level)
        }
    }
}

/// `Unban`: moderators lift a ban that is in force.
pub(super) fn unban(
    state: &RoomState,
    ctx: &Ctx<'_>,
    standing: Standing,
    by: Option<UserId>,
    user: &UserId,
) -> Result<Vec<Event>, Rejection> {
    require_moderator(standing)?;
    // Nobody lifts their own ban.
    may_moderate(state, ctx, standing, user)?;
    if state.ban_of(user, ctx.now).is_none() {
        return Err(Rejection::NotBanned { user: user.clone() });
    }
    Ok(vec![Event::RoomUserUnbanned {
        user: user.clone(),
        by,
    }])
}

/// `ChatMute`: moderators mute a member on the public screen for a while, or unmute them. A
/// room admin may not mute a member whose VIP standing has the mute shield (the owner and
/// platform admins may, as with the kick shield); anyone who may moderate may unmute.
pub(super) fn chat_mute(
    state: &RoomState,
    ctx: &Ctx<'_>,
    standing: Standing,
    by: Option<UserId>,
    user: &UserId,
    seconds: u32,
    vip: Option<&VipStanding>,
) -> Result<Vec<Event>, Rejection> {
    require_moderator(standing)?;
    may_moderate(state, ctx, standing, user)?;
    require_member(state, user)?;
    if seconds > 0
        && standing == Standing::Admin
        && let Some(vip) = vip.filter(|vip| vip.privileges.mute_shield)
    {
        return Err(Rejection::VipProtected {
            target: user.clone(),
            vip_level: vip.level,
        });
    }
    let until = (seconds > 0).then(|| ctx.now.plus_secs(seconds));
    if until.is_none() && state.chat_mute_of(user, ctx.now).is_none() {
        return Ok(Vec::new());
    }
    Ok(vec![Event::RoomUserMuted {
        user: user.clone(),
        until,
        by,
    }])
}

/// `SetAdmin`: the owner (or a platform admin) appoints members as admins, up to the rules'
/// limit, and dismisses them.
pub(super) fn set_admin(
    state: &RoomState,
    ctx: &Ctx<'_>,
    standing: Standing,
    by: Option<UserId>,
    user: &UserId,
    admin: bool,
) -> Result<Vec<Event>, Rejection> {
    if !matches!(standing, Standing::Owner | Standing::PlatformAdmin) {
        return Err(Rejection::Forbidden);
    }
    if state.owner.as_ref() == Some(user) {
        return Err(Rejection::CannotModerate {
            target: user.clone(),
        });
    }
    if state.admins.contains(user) == admin {
        return Ok(Vec::new());
    }
    if admin {
        require_member(state, user)?;
        let max = ctx.rules.max_admins;
        if state.admins.len() >= max as usize {
            return Err(Rejection::TooManyAdmins { max });
        }
    }
    Ok(vec![Event::RoomAdminChanged {
        user: user.clone(),
        admin,
        by,
    }])
}
