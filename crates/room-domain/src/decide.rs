//! `decide`: the rules of a room. Given the state, a command and its context, either the events
//! the command causes or the reason it is refused. Pure: the same inputs give the same output.
//!
//! This module only routes: a room that is absent or closed takes (almost) nothing, and each
//! command of an open room goes to the rules of its family, one child module each:
//! [`room`] (creation, profile, settings, closing), [`membership`] (join, leave, eviction),
//! [`seats`] (seats and the mic), [`moderation`] (kicks, bans, chat mutes, admins), [`gifts`]
//! (paid and robot gifts) and [`rocket`] (launch and daily reset). Where the actor stands, and
//! the checks built on it, are in [`standing`].

mod gifts;
mod membership;
mod moderation;
mod rocket;
mod room;
mod seats;
mod standing;

use crate::command::{Command, CommandKind, Ctx};
use crate::event::Event;
use crate::rejection::Rejection;
use crate::state::{RoomState, RoomStatus};

use standing::Standing;

/// Decides what `command` does to `state`: the events to record, in order, or a [`Rejection`].
/// An empty list means the command is already satisfied (joining twice, unmuting an unmuted
/// seat); it changes nothing and needs no write.
pub fn decide(
    state: &RoomState,
    command: &Command,
    ctx: &Ctx<'_>,
) -> Result<Vec<Event>, Rejection> {
    let kind = &command.kind;
    match state.status {
        RoomStatus::Absent => {
            return match kind {
                CommandKind::CreateRoom {
                    name,
                    seat_count,
                    region,
                } => room::create_room(name, *seat_count, region, ctx),
                _ => Err(Rejection::RoomNotFound),
            };
        }
        RoomStatus::Closed => {
            return Err(match kind {
                CommandKind::CreateRoom { .. } => Rejection::RoomAlreadyExists,
                _ => Rejection::RoomClosed,
            });
        }
        RoomStatus::Open => {}
    }
    let standing = Standing::of(state, ctx.actor);
    let by = ctx.actor.user_id().cloned();
    let display = command.display.as_ref();
    let vip = command.vip.as_ref();
    match kind {
        CommandKind::CreateRoom { .. } => Err(Rejection::RoomAlreadyExists),
        CommandKind::UpdateProfile {
            name,
            notice,
            cover_url,
        } => room::update_profile(
            state,
            standing,
            by,
            name.as_deref(),
            notice.as_deref(),
            cover_url.as_deref(),
        ),
        CommandKind::ChangeBackground { background_url } => {
            room::change_background(state, standing, by, background_url.as_deref())
        }
        CommandKind::SystemMessage { text } => room::system_message(standing, by, text),
        CommandKind::RevokeResources { resources, reason } => {
            room::revoke_resources(standing, by, resources, reason, ctx)
        }
        CommandKind::SetChatEnabled { enabled } => {
            room::set_chat_enabled(state, standing, by, *enabled)
        }
        CommandKind::SetLock { password_hash } => {
            room::set_lock(state, standing, by, password_hash.as_ref())
        }
        CommandKind::CloseRoom => room::close_room(state, standing, by),
        CommandKind::Join {
            password_verified,
            verified_lock,
        } => membership::join(
            state,
            ctx,
            *password_verified,
            verified_lock.as_ref(),
            display,
            vip,
        ),
        CommandKind::Leave => membership::leave(state, ctx),
        CommandKind::Evict { user, seen } => membership::evict(state, standing, user, *seen),
        CommandKind::TakeSeat { seat } => seats::take_seat(state, ctx, *seat, display, vip),
        CommandKind::LeaveSeat { seat } => seats::leave_seat(state, ctx, *seat),
        CommandKind::LockSeat { seat, locked } => {
            seats::lock_seat(state, ctx, standing, by, *seat, *locked)
        }
        CommandKind::SetSeatVip { seat, vip_only } => {
            seats::set_seat_vip(state, standing, by, *seat, *vip_only)
        }
        CommandKind::Invite { user, seat } => seats::invite(state, ctx, standing, by, user, *seat),
        CommandKind::ShowGiftBroadcast(broadcast) => room::show_gift_broadcast(standing, broadcast),
        CommandKind::MuteSeat { seat, muted } => {
            seats::mute_seat(state, ctx, standing, by, *seat, *muted)
        }
        CommandKind::RemoveFromSeat { seat } => {
            seats::remove_from_seat(state, ctx, standing, *seat)
        }
        CommandKind::ConfirmMicPublish { user, at } => {
            seats::confirm_mic_publish(state, standing, user, *at)
        }
        CommandKind::MicPublishTimeout { seat, session } => {
            seats::mic_publish_timeout(state, ctx, standing, *seat, *session)
        }
        CommandKind::RtcUserLeft { user, at } => seats::rtc_user_left(state, standing, user, *at),
        CommandKind::Kick { user, ban_seconds } => {
            moderation::kick(state, ctx, standing, by, user, *ban_seconds, vip)
        }
        CommandKind::Unban { user } => moderation::unban(state, ctx, standing, by, user),
        CommandKind::ChatMute { user, seconds } => {
            moderation::chat_mute(state, ctx, standing, by, user, *seconds, vip)
        }
        CommandKind::SetAdmin { user, admin } => {
            moderation::set_admin(state, ctx, standing, by, user, *admin)
        }
        CommandKind::ApplyGift(gift) => gifts::apply_gift(state, ctx, standing, gift, display),
        CommandKind::RobotGift(gift) => gifts::robot_gift(state, ctx, &command.command_id, gift),
        CommandKind::LaunchRocket {
            rocket_id,
            level,
            scheduled_at,
        } => rocket::launch_rocket(state, ctx, standing, *rocket_id, *level, *scheduled_at),
        CommandKind::ResetRocket => rocket::reset_rocket(state, ctx, standing),
    }
}
