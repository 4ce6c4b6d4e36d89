//! The rules of the mic seats: taking, leaving, locking, reserving for VIP, muting and emptying
//! a seat, invites (to the room or a held seat), and the
//! RTC vendor's word on who publishes audio. Also the `Down` events that other families emit
//! when a user leaves a seat with the room, a kick or a closing.

use crate::command::{Ctx, RTC_CLOCK_SKEW_MS};
use crate::display::UserDisplay;
use crate::event::{Event, MicChange, MicDownReason};
use crate::ids::{SeatIndex, SeatSessionId, UserId};
use crate::rejection::Rejection;
use crate::state::{Occupant, Role, RoomState, Seat};
use crate::time::Timestamp;
use crate::vip::VipStanding;

use super::standing::{
    Standing, acting_user, is_robot_member, may_moderate, require_member, require_moderator,
    require_system,
};

/// `TakeSeat`: a member takes a free, unlocked seat, leaving the one they sat on.
pub(super) fn take_seat(
    state: &RoomState,
    ctx: &Ctx<'_>,
    seat: SeatIndex,
    display: Option<&UserDisplay>,
    vip: Option<&VipStanding>,
) -> Result<Vec<Event>, Rejection> {
    let user = acting_user(ctx)?;
    require_member(state, user)?;
    let target = checked_seat(state, seat)?;
    if target.locked {
        return Err(Rejection::SeatLocked { seat });
    }
    if let Some(occupant) = &target.occupant {
        if occupant.user == *user {
            return Ok(Vec::new());
        }
        return Err(Rejection::SeatOccupied { seat });
    }
    let held_for = target.held_for(ctx.now);
    if held_for.is_some_and(|invitee| invitee != user) {
        return Err(Rejection::SeatHeld { seat });
    }
    // A moderator who holds a seat for an invitee chose them: the hold lets them past a VIP
    // reservation.
    if target.vip_only && held_for.is_none() && !vip.is_some_and(|vip| vip.privileges.seat_priority)
    {
        return Err(Rejection::VipSeat { seat });
    }
    let mut events = Vec::with_capacity(2);
    if let Some(old) = state.seat_of(user) {
        events.push(down_from(state, old, MicDownReason::Moved));
    }
    let (nickname, avatar_url) = UserDisplay::split(display);
    events.push(Event::RoomMicChanged {
        seat,
        change: MicChange::Up {
            user: user.clone(),
            session: state.next_seat_session,
            since: ctx.now,
            publish_deadline: ctx.now.plus_secs(ctx.rules.mic_publish_timeout_secs),
            robot: is_robot_member(state, user),
            nickname,
            avatar_url,
        },
    });
    Ok(events)
}

/// `LeaveSeat`: only the holder leaves a seat.
pub(super) fn leave_seat(
    state: &RoomState,
    ctx: &Ctx<'_>,
    seat: SeatIndex,
) -> Result<Vec<Event>, Rejection> {
    let user = acting_user(ctx)?;
    let target = checked_seat(state, seat)?;
    match &target.occupant {
        Some(occupant) if occupant.user == *user => {
            Ok(vec![down_from(state, seat, MicDownReason::Left)])
        }
        _ => Err(Rejection::NotOnSeat { user: user.clone() }),
    }
}

/// `LockSeat`: moderators lock or unlock a seat; locking takes its holder off.
pub(super) fn lock_seat(
    state: &RoomState,
    ctx: &Ctx<'_>,
    standing: Standing,
    by: Option<UserId>,
    seat: SeatIndex,
    locked: bool,
) -> Result<Vec<Event>, Rejection> {
    require_moderator(standing)?;
    let target = checked_seat(state, seat)?;
    if target.locked == locked {
        return Ok(Vec::new());
    }
    let mut events = Vec::with_capacity(2);
    if let Some(occupant) = &target.occupant {
        if Some(&occupant.user) != ctx.actor.user_id() {
            may_moderate(state, ctx, standing, &occupant.user)?;
        }
        events.push(down_from(state, seat, MicDownReason::SeatLocked));
    }
    events.push(Event::RoomMicSeatLocked { seat, locked, by });
    Ok(events)
}

/// `SetSeatVip`: moderators reserve a seat for VIP or open it again; its holder stays.
pub(super) fn set_seat_vip(
    state: &RoomState,
    standing: Standing,
    by: Option<UserId>,
    seat: SeatIndex,
    vip_only: bool,
) -> Result<Vec<Event>, Rejection> {
    require_moderator(standing)?;
    let target = checked_seat(state, seat)?;
    if target.vip_only == vip_only {
        return Ok(Vec::new());
    }
    Ok(vec![Event::RoomMicSeatVip { seat, vip_only, by }])
}

/// `Invite`: moderators invite a user who is not banned, for the rules' invite lifetime; an
/// invited seat must exist, be unlocked, and be neither taken nor held for someone else. A
/// room holds at most the rules' `max_invites` open invites (a new invite of the same user
/// replaces theirs).
pub(super) fn invite(
    state: &RoomState,
    ctx: &Ctx<'_>,
    standing: Standing,
    by: Option<UserId>,
    user: &UserId,
    seat: Option<SeatIndex>,
) -> Result<Vec<Event>, Rejection> {
    require_moderator(standing)?;
    if let Some(until) = state.ban_of(user, ctx.now) {
        return Err(Rejection::Banned {
            user: user.clone(),
            until,
        });
    }
    let mut seat = seat;
    if let Some(index) = seat {
        let target = checked_seat(state, index)?;
        if target.locked {
            return Err(Rejection::SeatLocked { seat: index });
        }
        match &target.occupant {
            Some(occupant) if occupant.user != *user => {
                return Err(Rejection::SeatOccupied { seat: index });
            }
            // The invitee sits on it already: nothing to hold.
            Some(_) => seat = None,
            None => {}
        }
        if target.held_for(ctx.now).is_some_and(|held| held != user) {
            return Err(Rejection::SeatHeld { seat: index });
        }
    }
    let max = ctx.rules.max_invites;
    let open = state
        .invites
        .iter()
        .filter(|(invitee, until)| *invitee != user && **until > ctx.now)
        .count();
    if open >= max as usize {
        return Err(Rejection::TooManyInvites { max });
    }
    Ok(vec![Event::RoomUserInvited {
        user: user.clone(),
        seat,
        invited_at: ctx.now,
        expires_at: ctx.now.plus_secs(ctx.rules.invite_ttl_secs),
        by,
    }])
}

/// `MuteSeat`: the holder mutes their own seat; moderators mute or unmute anyone's, and
/// their mute binds the holder.
pub(super) fn mute_seat(
    state: &RoomState,
    ctx: &Ctx<'_>,
    standing: Standing,
    by: Option<UserId>,
    seat: SeatIndex,
    muted: bool,
) -> Result<Vec<Event>, Rejection> {
    let target = checked_seat(state, seat)?;
    let holder = target
        .occupant
        .as_ref()
        .is_some_and(|o| Some(&o.user) == ctx.actor.user_id());
    // Holders may mute themselves; anyone else muting or unmuting moderates the seat.
    let by_moderator = !holder;
    if by_moderator {
        require_moderator(standing)?;
        if let Some(occupant) = &target.occupant {
            may_moderate(state, ctx, standing, &occupant.user)?;
        }
    }
    // A moderator's mute binds until a moderator lifts it; an admin lifts only an
    // admin's mute. The owner's, a platform admin's, or one whose muter is unknown (a
    // snapshot from before it was kept) or no longer an admin binds until the owner or
    // a platform admin lifts it: whether the admin holds the seat, or empties it and
    // unmutes it before sitting down again.
    if !muted && target.muted_by_moderator {
        let admins_mute = target
            .muted_by
            .as_ref()
            .is_some_and(|muter| state.role_of(muter) == Role::Admin);
        if !standing.is_moderator() || !(admins_mute || standing >= Standing::Owner) {
            return Err(Rejection::SeatMutedByModerator { seat });
        }
    }
    // A moderator muting a seat its holder muted must still bind the holder.
    let binds_holder = by_moderator && muted && !target.muted_by_moderator;
    if target.muted == muted && !binds_holder {
        return Ok(Vec::new());
    }
    Ok(vec![Event::RoomMicChanged {
        seat,
        change: MicChange::Muted {
            muted,
            by_moderator: by_moderator && muted,
            by,
        },
    }])
}

/// `RemoveFromSeat`: moderators take a user off an occupied seat.
pub(super) fn remove_from_seat(
    state: &RoomState,
    ctx: &Ctx<'_>,
    standing: Standing,
    seat: SeatIndex,
) -> Result<Vec<Event>, Rejection> {
    require_moderator(standing)?;
    let target = checked_seat(state, seat)?;
    let occupant = target
        .occupant
        .as_ref()
        .ok_or(Rejection::SeatEmpty { seat })?;
    may_moderate(state, ctx, standing, &occupant.user)?;
    Ok(vec![down_from(state, seat, MicDownReason::Removed)])
}

/// `ConfirmMicPublish`: the RTC vendor saw the holder publish; their deadline is lifted once.
pub(super) fn confirm_mic_publish(
    state: &RoomState,
    standing: Standing,
    user: &UserId,
    at: Option<Timestamp>,
) -> Result<Vec<Event>, Rejection> {
    require_system(standing)?;
    let seat = state
        .seat_of(user)
        .ok_or_else(|| Rejection::NotOnSeat { user: user.clone() })?;
    let occupant = occupant_of(state, seat);
    if occupant.publish_deadline.is_none() || predates(occupant, at) {
        return Ok(Vec::new());
    }
    Ok(vec![Event::RoomMicChanged {
        seat,
        change: MicChange::Published {
            user: user.clone(),
            session: occupant.session,
            robot: is_robot_member(state, user),
        },
    }])
}

/// `MicPublishTimeout`: a holder who never published is taken off at their deadline.
pub(super) fn mic_publish_timeout(
    state: &RoomState,
    ctx: &Ctx<'_>,
    standing: Standing,
    seat: SeatIndex,
    session: SeatSessionId,
) -> Result<Vec<Event>, Rejection> {
    require_system(standing)?;
    let due = checked_seat(state, seat)?
        .occupant
        .as_ref()
        .filter(|o| o.session == session)
        .and_then(|o| o.publish_deadline);
    match due {
        Some(deadline) if ctx.now >= deadline => {
            Ok(vec![down_from(state, seat, MicDownReason::PublishTimeout)])
        }
        Some(deadline) => Err(Rejection::PublishDeadlineAhead { deadline }),
        None => Err(Rejection::StaleTimer),
    }
}

/// `RtcUserLeft`: the user left the audio room, so they leave their seat (not the room).
pub(super) fn rtc_user_left(
    state: &RoomState,
    standing: Standing,
    user: &UserId,
    at: Option<Timestamp>,
) -> Result<Vec<Event>, Rejection> {
    require_system(standing)?;
    Ok(state
        .seat_of(user)
        .filter(|seat| !predates(occupant_of(state, *seat), at))
        .map(|seat| down_from(state, seat, MicDownReason::RtcLeft))
        .into_iter()
        .collect())
}

/// The `Down` event for whoever holds `seat` (which must be occupied).
pub(super) fn down_from(state: &RoomState, seat: SeatIndex, reason: MicDownReason) -> Event {
    let occupant = occupant_of(state, seat);
    mic_down(state, seat, &occupant.user, occupant.session, reason)
}

/// Whether an RTC event seen at `at` happened before `occupant`'s seat session began (beyond
/// the vendor's allowed clock lag): then it is about an earlier session, replayed or late.
fn predates(occupant: &Occupant, at: Option<Timestamp>) -> bool {
    at.is_some_and(|at| at.0.saturating_add(RTC_CLOCK_SKEW_MS) < occupant.since.0)
}

fn occupant_of(state: &RoomState, seat: SeatIndex) -> &Occupant {
    state
        .seat(seat)
        .and_then(|s| s.occupant.as_ref())
        .expect("callers pass an occupied seat")
}

/// The `Down` event for `user` leaving `seat` in seat session `session`.
pub(super) fn mic_down(
    state: &RoomState,
    seat: SeatIndex,
    user: &UserId,
    session: SeatSessionId,
    reason: MicDownReason,
) -> Event {
    Event::RoomMicChanged {
        seat,
        change: MicChange::Down {
            user: user.clone(),
            session,
            reason,
            robot: is_robot_member(state, user),
        },
    }
}

/// The index of the `i`-th seat.
pub(super) fn seat_index(i: usize) -> SeatIndex {
    // Rooms have at most MAX_SEATS (20) seats.
    SeatIndex(u8::try_from(i).unwrap_or(u8::MAX))
}

fn checked_seat(state: &RoomState, seat: SeatIndex) -> Result<&Seat, Rejection> {
    state.seat(seat).ok_or(Rejection::InvalidSeat {
        seat,
        seat_count: state.settings.seat_count,
    })
}
