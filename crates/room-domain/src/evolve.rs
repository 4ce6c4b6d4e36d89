//! `evolve`: applies one event to the state. Events are facts, so `evolve` never refuses one
//! and needs no rules: everything a rule decided is in the event.

use std::collections::BTreeMap;

use crate::event::{Event, MicChange};
use crate::ids::{SeatSessionId, UserId};
use crate::money::Coins;
use crate::state::{
    Member, Occupant, RocketStatus, RoomResource, RoomState, RoomStatus, Seat, SeatHold,
};

/// Frees every seat held for `user`.
fn release_holds(state: &mut RoomState, user: &UserId) {
    for seat in &mut state.seats {
        if seat.hold.as_ref().is_some_and(|hold| hold.user == *user) {
            seat.hold = None;
        }
    }
}

/// Applies `event` to `state` and advances [`RoomState::version`] by one.
pub fn evolve(state: &mut RoomState, event: &Event) {
    state.version += 1;
    match event {
        Event::RoomCreated {
            owner,
            name,
            seat_count,
            region,
            created_at,
        } => {
            state.status = RoomStatus::Open;
            state.owner = Some(owner.clone());
            state.created_at = *created_at;
            state.profile.name = name.clone();
            state.settings.seat_count = *seat_count;
            state.settings.region = region.clone();
            state.settings.chat_enabled = true;
            state.seats = vec![Seat::default(); usize::from(*seat_count)];
        }
        Event::RoomProfileUpdated {
            name,
            notice,
            cover_url,
            ..
        } => {
            state.profile.name = name.clone();
            state.profile.notice = notice.clone();
            state.profile.cover_url = cover_url.clone();
        }
        Event::RoomBackgroundChanged { background_url, .. } => {
            state.profile.background_url = background_url.clone();
        }
        // A message changes nothing in the room but its version.
        Event::RoomSystemMessage { .. } => {}
        Event::RoomResourcesRevoked {
            resources, name, ..
        } => {
            for resource in resources {
                match resource {
                    RoomResource::Name => {
                        if let Some(name) = name {
                            state.profile.name = name.clone();
                        }
                    }
                    RoomResource::Notice => state.profile.notice.clear(),
                    RoomResource::Cover => state.profile.cover_url = None,
                    RoomResource::Background => state.profile.background_url = None,
                }
            }
        }
        Event::RoomChatEnabledChanged { enabled, .. } => state.settings.chat_enabled = *enabled,
        Event::RoomLockChanged { password_hash, .. } => {
            state.settings.lock = password_hash.clone();
        }
        Event::RoomClosed { .. } => {
            state.status = RoomStatus::Closed;
            state.members.clear();
            for seat in &mut state.seats {
                seat.occupant = None;
            }
        }
        Event::RoomUserJoined {
            user,
            role,
            vip_level,
            joined_at,
            robot,
            ..
        } => {
            state.bans.remove(user);
            state.members.insert(
                user.clone(),
                Member {
                    role: *role,
                    vip_level: *vip_level,
                    joined_at: *joined_at,
                    robot: *robot,
                },
            );
        }
        Event::RoomUserLeft { user, .. } => {
            state.members.remove(user);
        }
        Event::RoomUserKicked {
            user, ban_until, ..
        } => {
            state.members.remove(user);
            if let Some(until) = ban_until {
                state.bans.insert(user.clone(), *until);
            }
            // A kick ends the user's invite and frees the seat held for them.
            state.invites.remove(user);
            release_holds(state, user);
        }
        Event::RoomUserUnbanned { user, .. } => {
            state.bans.remove(user);
        }
        Event::RoomUserMuted { user, until, .. } => match until {
            Some(until) => {
                state.chat_mutes.insert(user.clone(), *until);
            }
            None => {
                state.chat_mutes.remove(user);
            }
        },
        Event::RoomAdminChanged { user, admin, .. } => {
            if *admin {
                state.admins.insert(user.clone());
            } else {
                state.admins.remove(user);
            }
            let role = state.role_of(user);
            if let Some(member) = state.members.get_mut(user) {
                member.role = role;
            }
        }
        Event::RoomMicChanged { seat, change } => {
            if let MicChange::Up { user, .. } = change {
                // Whoever takes a seat lets go of any seat held for them; the one taken is
                // held for nobody.
                release_holds(state, user);
            }
            let Some(seat) = state.seats.get_mut(usize::from(seat.0)) else {
                return;
            };
            match change {
                MicChange::Up {
                    user,
                    session,
                    since,
                    publish_deadline,
                    robot,
                    ..
                } => {
                    seat.hold = None;
                    seat.occupant = Some(Occupant {
                        user: user.clone(),
                        session: *session,
                        since: *since,
                        // A robot publishes no audio: nothing waits for it to start.
                        publish_deadline: (!robot).then_some(*publish_deadline),
                    });
                    state.next_seat_session = SeatSessionId(session.0 + 1);
                }
                MicChange::Down { .. } => seat.occupant = None,
                MicChange::Published { .. } => {
                    if let Some(occupant) = &mut seat.occupant {
                        occupant.publish_deadline = None;
                    }
                }
                MicChange::Muted {
                    muted,
                    by_moderator,
                    by,
                } => {
                    seat.muted = *muted;
                    seat.muted_by_moderator = *muted && *by_moderator;
                    seat.muted_by = if seat.muted_by_moderator {
                        by.clone()
                    } else {
                        None
                    };
                }
            }
        }
        Event::RoomMicSeatLocked { seat, locked, .. } => {
            if let Some(seat) = state.seats.get_mut(usize::from(seat.0)) {
                seat.locked = *locked;
                if *locked {
                    seat.hold = None;
                }
            }
        }
        Event::RoomMicSeatVip { seat, vip_only, .. } => {
            if let Some(seat) = state.seats.get_mut(usize::from(seat.0)) {
                seat.vip_only = *vip_only;
            }
        }
        Event::RoomUserInvited {
            user,
            seat,
            invited_at,
            expires_at,
            ..
        } => {
            state.invites.retain(|_, until| *until > *invited_at);
            state.invites.insert(user.clone(), *expires_at);
            // A new invite replaces the user's earlier one, and its seat.
            release_holds(state, user);
            if let Some(seat) = seat.and_then(|seat| state.seats.get_mut(usize::from(seat.0))) {
                seat.hold = Some(SeatHold {
                    user: user.clone(),
                    until: *expires_at,
                });
            }
        }
        Event::RoomGiftBroadcast(_) => {}
        Event::RoomGiftSent(_) => {
            // The gift's effects come as the events that follow it (heat, rank, fuel; a robot
            // gift's only as heat).
        }
        Event::RoomHeatChanged { heat, .. } => state.heat = *heat,
        Event::RoomRankChanged {
            user,
            day_key,
            week_key,
            day_total,
            week_total,
        } => {
            let contribution = &mut state.contribution;
            if contribution.day_key != *day_key {
                contribution.day.clear();
                contribution.day_key = *day_key;
            }
            if contribution.week_key != *week_key {
                contribution.week.clear();
                contribution.week_key = *week_key;
            }
            set_total(&mut contribution.day, user, *day_total);
            set_total(&mut contribution.week, user, *week_total);
        }
        Event::RoomRocketFuelChanged { level, fuel, .. } => {
            state.rocket.level = *level;
            state.rocket.fuel = *fuel;
        }
        Event::RoomRocketIgnited {
            rocket_id,
            level,
            ignited_at,
            launch_at,
            prize,
        } => {
            state.rocket.level = *level;
            state.rocket.status = RocketStatus::Ignited {
                rocket_id: *rocket_id,
                ignited_at: *ignited_at,
                launch_at: *launch_at,
                prize: *prize,
            };
            state.rocket.next_rocket_id = crate::ids::RocketId(rocket_id.0 + 1);
        }
        Event::RoomRocketLaunched {
            rocket_id,
            next_level,
            ..
        } => match next_level {
            Some(level) => {
                state.rocket.level = *level;
                state.rocket.fuel = 0;
                state.rocket.status = RocketStatus::Idle;
            }
            None => {
                state.rocket.status = RocketStatus::Launched {
                    rocket_id: *rocket_id,
                }
            }
        },
        Event::RoomRocketReset { day_key } => {
            state.rocket.level = 1;
            state.rocket.fuel = 0;
            state.rocket.status = RocketStatus::Idle;
            state.rocket.day_key = *day_key;
        }
    }
}

/// Applies `events` in order: `fold(RoomState::new(id), log) == state` is the replay guarantee.
pub fn evolve_all<'a>(state: &mut RoomState, events: impl IntoIterator<Item = &'a Event>) {
    for event in events {
        evolve(state, event);
    }
}

/// Sets `user`'s total in a rank. A sender gives again and again: updating the entry in place
/// spares cloning the key (an allocation) on every gift.
fn set_total(rank: &mut BTreeMap<UserId, Coins>, user: &UserId, total: Coins) {
    match rank.get_mut(user) {
        Some(entry) => *entry = total,
        None => {
            rank.insert(user.clone(), total);
        }
    }
}
