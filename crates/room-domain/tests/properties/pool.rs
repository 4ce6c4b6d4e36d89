//! The users and robots a case acts with, and how a step's actor, targets, seats and
//! recipients resolve against the state when it runs.

use room_domain::{Actor, RoomId, RoomState, UserActor, UserId};

use crate::scenario::{Op, PLATFORM_ADMIN, ROBOTS, Recipients, SeatPick, Target, USERS, Who};

pub struct Pool {
    pub room_id: RoomId,
    pub users: Vec<UserId>,
    pub actors: Vec<Actor>,
    pub robots: Vec<UserId>,
}

impl Pool {
    pub fn new(vip_levels: [u8; USERS]) -> Self {
        let users: Vec<UserId> = (0..USERS)
            .map(|i| UserId::new(format!("u{i}")).unwrap())
            .collect();
        let actors = users
            .iter()
            .zip(vip_levels)
            .enumerate()
            .map(|(i, (user_id, vip_level))| {
                Actor::User(UserActor {
                    user_id: user_id.clone(),
                    vip_level,
                    platform_admin: i == PLATFORM_ADMIN,
                })
            })
            .collect();
        Pool {
            room_id: RoomId::new("room-prop").unwrap(),
            users,
            actors,
            robots: (0..ROBOTS)
                .map(|i| UserId::new(format!("bot{i}")).unwrap())
                .collect(),
        }
    }

    /// The actor `user` is: a robot acts as one.
    pub fn actor_of(&self, user: &UserId) -> Actor {
        if self.robots.contains(user) {
            return Actor::Robot(user.clone());
        }
        let i = self.users.iter().position(|u| u == user).unwrap();
        self.actors[i].clone()
    }

    pub fn actor(&self, who: Who, state: &RoomState) -> Actor {
        let user = match who {
            Who::Member(k) => nth_or(state.members.keys(), k, &self.users),
            Who::Moderator(k) => {
                let platform_admin = &self.users[PLATFORM_ADMIN];
                let moderators = state
                    .owner
                    .iter()
                    .chain(&state.admins)
                    .chain(std::iter::once(platform_admin));
                nth_or(moderators, k, &self.users)
            }
            Who::Anyone(i) => self.users[i % USERS].clone(),
            Who::Robot(i) => self.robots[i % ROBOTS].clone(),
            Who::RobotMember(k) => {
                let robots = state.members.iter().filter(|(_, m)| m.robot);
                nth_or(robots.map(|(user, _)| user), k, &self.robots)
            }
            Who::System => return Actor::System,
        };
        self.actor_of(&user)
    }

    pub fn user(&self, target: Target, state: &RoomState) -> UserId {
        match target {
            Target::Member(k) => nth_or(state.members.keys(), k, &self.users),
            Target::Banned(k) => nth_or(state.bans.keys(), k, &self.users),
            Target::Seated(k) => {
                let seated = state.seats.iter().filter_map(|s| s.occupant.as_ref());
                nth_or(seated.map(|o| &o.user), k, &self.users)
            }
            Target::Anyone(i) => self.users[i % USERS].clone(),
        }
    }
}

/// Who may send `op`, picked with the index of `who`.
pub fn fitting_actor(who: Who, op: &Op) -> Who {
    let k = match who {
        Who::Member(k)
        | Who::Moderator(k)
        | Who::Anyone(k)
        | Who::Robot(k)
        | Who::RobotMember(k) => k,
        Who::System => 0,
    };
    match op {
        Op::Evict(_)
        | Op::ConfirmMicPublish(_)
        | Op::MicPublishTimeout { .. }
        | Op::RtcUserLeft(_)
        | Op::Launch(_)
        | Op::ResetRocket
        | Op::GiftBroadcast => Who::System,
        Op::UpdateProfile { .. }
        | Op::ChangeBackground(_)
        | Op::Revoke { .. }
        | Op::SystemMessage { .. }
        | Op::SetChatEnabled(_)
        | Op::SetLock(_)
        | Op::LockSeat(..)
        | Op::SetSeatVip(..)
        | Op::Invite(..)
        | Op::RemoveFromSeat(_)
        | Op::Kick { .. }
        | Op::Unban(_)
        | Op::ChatMute { .. }
        | Op::SetAdmin { .. } => Who::Moderator(k),
        Op::CreateRoom { .. } | Op::Join { .. } => Who::Anyone(k),
        Op::RobotJoin => Who::Robot(k),
        Op::RobotLeave | Op::RobotGift(_) => Who::RobotMember(k),
        // Mostly refused (only the owner among members may close), so that rooms stay open.
        Op::CloseRoom
        | Op::Leave
        | Op::TakeSeat(_)
        | Op::LeaveSeat(_)
        | Op::MuteSeat(..)
        | Op::Gift(_) => Who::Member(k),
    }
}

/// The seat `pick` names in `state`, for `actor`.
pub fn resolve_seat(pick: SeatPick, state: &RoomState, actor: &Actor) -> u8 {
    let seats = state.seats.len().max(1);
    let index = match pick {
        SeatPick::Any(k) => k % seats,
        SeatPick::Occupied(k) => {
            let occupied: Vec<usize> = (0..state.seats.len())
                .filter(|&i| state.seats[i].occupant.is_some())
                .collect();
            occupied
                .get(k % occupied.len().max(1))
                .copied()
                .unwrap_or(0)
        }
        SeatPick::Own => actor
            .user_id()
            .and_then(|user| state.seat_of(user))
            .map_or(0, |seat| usize::from(seat.0)),
        SeatPick::Raw(index) => usize::from(index),
    };
    u8::try_from(index).unwrap()
}

/// The `k`-th of `candidates` modulo their number, or the `k`-th of `users` (modulo their
/// number) if there are none.
fn nth_or<'a>(
    candidates: impl Iterator<Item = &'a UserId> + Clone,
    k: usize,
    users: &[UserId],
) -> UserId {
    let len = candidates.clone().count();
    if len == 0 {
        users[k % users.len()].clone()
    } else {
        candidates.clone().nth(k % len).unwrap().clone()
    }
}

/// The users `recipients` names in `state`.
pub fn recipients_of(recipients: &Recipients, state: &RoomState, pool: &Pool) -> Vec<UserId> {
    match recipients {
        Recipients::Members { start, n } => {
            let members: Vec<&UserId> = state.members.keys().collect();
            if members.is_empty() {
                vec![pool.users[start % USERS].clone()]
            } else {
                (0..(*n).min(members.len()))
                    .map(|j| members[(start % members.len() + j) % members.len()].clone())
                    .collect()
            }
        }
        Recipients::Listed(targets) => targets.iter().map(|t| pool.user(*t, state)).collect(),
    }
}
