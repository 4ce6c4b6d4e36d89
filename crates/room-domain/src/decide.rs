//! `decide`: the rules of a room. Given the state, a command and its context, either the events
//! the command causes or the reason it is refused. Pure: the same inputs give the same output.

use crate::actor::{Actor, UserActor};
use crate::command::{ApplyGift, Command, CommandKind, Ctx, RobotGift};
use crate::event::{
    Event, GiftSent, LeaveReason, LuckyOutcome, MicChange, MicDownReason, RocketReward,
};
use crate::ids::{OrderId, RocketId, SeatIndex, UserId};
use crate::money::Coins;
use crate::rejection::{Field, Rejection};
use crate::rules::MAX_SEATS;
use crate::state::{RocketStatus, Role, RoomState, RoomStatus};
use crate::time::Timestamp;

/// What the actor is in this room, from most to least powerful.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Standing {
    Outsider,
    Member,
    Admin,
    Owner,
    PlatformAdmin,
    System,
}

impl Standing {
    fn of(state: &RoomState, actor: &Actor) -> Standing {
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

    fn is_moderator(self) -> bool {
        self >= Standing::Admin
    }
}

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
                } => create_room(name, *seat_count, region, ctx),
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
    match kind {
        CommandKind::CreateRoom { .. } => Err(Rejection::RoomAlreadyExists),
        CommandKind::UpdateProfile {
            name,
            notice,
            cover_url,
        } => {
            require_moderator(standing)?;
            let mut profile = state.profile.clone();
            if let Some(name) = name {
                profile.name = checked_name(name)?;
            }
            if let Some(notice) = notice {
                Field::Notice.check(notice)?;
                profile.notice = notice.clone();
            }
            if let Some(cover) = cover_url {
                profile.cover_url = checked_url(Field::CoverUrl, cover)?;
            }
            if profile == state.profile {
                return Ok(Vec::new());
            }
            Ok(vec![Event::RoomProfileUpdated {
                name: profile.name,
                notice: profile.notice,
                cover_url: profile.cover_url,
                by,
            }])
        }
        CommandKind::ChangeBackground { background_url } => {
            require_moderator(standing)?;
            let background_url = match background_url {
                Some(url) => checked_url(Field::BackgroundUrl, url)?,
                None => None,
            };
            if background_url == state.profile.background_url {
                return Ok(Vec::new());
            }
            Ok(vec![Event::RoomBackgroundChanged { background_url, by }])
        }
        CommandKind::SetChatEnabled { enabled } => {
            require_moderator(standing)?;
            if *enabled == state.settings.chat_enabled {
                return Ok(Vec::new());
            }
            Ok(vec![Event::RoomChatEnabledChanged {
                enabled: *enabled,
                by,
            }])
        }
        CommandKind::SetLock { password_hash } => {
            require_moderator(standing)?;
            if *password_hash == state.settings.lock {
                return Ok(Vec::new());
            }
            Ok(vec![Event::RoomLockChanged {
                locked: password_hash.is_some(),
                password_hash: password_hash.clone(),
                by,
            }])
        }
        CommandKind::CloseRoom => {
            if !matches!(
                standing,
                Standing::Owner | Standing::PlatformAdmin | Standing::System
            ) {
                return Err(Rejection::Forbidden);
            }
            let mut events = Vec::new();
            for (i, seat) in state.seats.iter().enumerate() {
                if let Some(occupant) = &seat.occupant {
                    events.push(mic_down(
                        state,
                        seat_index(i),
                        &occupant.user,
                        occupant.session,
                        MicDownReason::RoomClosed,
                    ));
                }
            }
            events.push(Event::RoomClosed { by });
            Ok(events)
        }
        CommandKind::Join {
            password_verified,
            verified_lock,
        } => {
            let verified = *password_verified
                && verified_lock
                    .as_ref()
                    .is_none_or(|lock| state.settings.lock.as_ref() == Some(lock));
            join(state, ctx, verified)
        }
        CommandKind::Leave => {
            let user = acting_user(ctx)?;
            if !state.members.contains_key(user) {
                return Err(Rejection::NotAMember { user: user.clone() });
            }
            Ok(leave_events(state, user, LeaveReason::Left))
        }
        CommandKind::Evict { user, seen } => {
            require_system(standing)?;
            let Some(member) = state.members.get(user) else {
                return Ok(Vec::new());
            };
            if seen.is_some_and(|seen| member.joined_at > seen) {
                return Ok(Vec::new());
            }
            Ok(leave_events(state, user, LeaveReason::Evicted))
        }
        CommandKind::TakeSeat { seat } => {
            let user = acting_user(ctx)?;
            require_member(state, user)?;
            let target = checked_seat(state, *seat)?;
            if target.locked {
                return Err(Rejection::SeatLocked { seat: *seat });
            }
            if let Some(occupant) = &target.occupant {
                if occupant.user == *user {
                    return Ok(Vec::new());
                }
                return Err(Rejection::SeatOccupied { seat: *seat });
            }
            let mut events = Vec::with_capacity(2);
            if let Some(old) = state.seat_of(user) {
                events.push(down_from(state, old, MicDownReason::Moved));
            }
            events.push(Event::RoomMicChanged {
                seat: *seat,
                change: MicChange::Up {
                    user: user.clone(),
                    session: state.next_seat_session,
                    since: ctx.now,
                    publish_deadline: ctx.now.plus_secs(ctx.rules.mic_publish_timeout_secs),
                    robot: is_robot_member(state, user),
                },
            });
            Ok(events)
        }
        CommandKind::LeaveSeat { seat } => {
            let user = acting_user(ctx)?;
            let target = checked_seat(state, *seat)?;
            match &target.occupant {
                Some(occupant) if occupant.user == *user => {
                    Ok(vec![down_from(state, *seat, MicDownReason::Left)])
                }
                _ => Err(Rejection::NotOnSeat { user: user.clone() }),
            }
        }
        CommandKind::LockSeat { seat, locked } => {
            require_moderator(standing)?;
            let target = checked_seat(state, *seat)?;
            if target.locked == *locked {
                return Ok(Vec::new());
            }
            let mut events = Vec::with_capacity(2);
            if let Some(occupant) = &target.occupant {
                if Some(&occupant.user) != ctx.actor.user_id() {
                    may_moderate(state, ctx, standing, &occupant.user)?;
                }
                events.push(down_from(state, *seat, MicDownReason::SeatLocked));
            }
            events.push(Event::RoomMicSeatLocked {
                seat: *seat,
                locked: *locked,
                by,
            });
            Ok(events)
        }
        CommandKind::MuteSeat { seat, muted } => {
            let target = checked_seat(state, *seat)?;
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
            if !*muted && target.muted_by_moderator {
                let admins_mute = target
                    .muted_by
                    .as_ref()
                    .is_some_and(|muter| state.role_of(muter) == Role::Admin);
                if !standing.is_moderator() || !(admins_mute || standing >= Standing::Owner) {
                    return Err(Rejection::SeatMutedByModerator { seat: *seat });
                }
            }
            // A moderator muting a seat its holder muted must still bind the holder.
            let binds_holder = by_moderator && *muted && !target.muted_by_moderator;
            if target.muted == *muted && !binds_holder {
                return Ok(Vec::new());
            }
            Ok(vec![Event::RoomMicChanged {
                seat: *seat,
                change: MicChange::Muted {
                    muted: *muted,
                    by_moderator: by_moderator && *muted,
                    by,
                },
            }])
        }
        CommandKind::RemoveFromSeat { seat } => {
            require_moderator(standing)?;
            let target = checked_seat(state, *seat)?;
            let occupant = target
                .occupant
                .as_ref()
                .ok_or(Rejection::SeatEmpty { seat: *seat })?;
            may_moderate(state, ctx, standing, &occupant.user)?;
            Ok(vec![down_from(state, *seat, MicDownReason::Removed)])
        }
        CommandKind::ConfirmMicPublish { user, at } => {
            require_system(standing)?;
            let seat = state
                .seat_of(user)
                .ok_or_else(|| Rejection::NotOnSeat { user: user.clone() })?;
            let occupant = occupant_of(state, seat);
            if occupant.publish_deadline.is_none() || predates(occupant, *at) {
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
        CommandKind::MicPublishTimeout { seat, session } => {
            require_system(standing)?;
            let due = checked_seat(state, *seat)?
                .occupant
                .as_ref()
                .filter(|o| o.session == *session)
                .and_then(|o| o.publish_deadline);
            match due {
                Some(deadline) if ctx.now >= deadline => {
                    Ok(vec![down_from(state, *seat, MicDownReason::PublishTimeout)])
                }
                Some(deadline) => Err(Rejection::PublishDeadlineAhead { deadline }),
                None => Err(Rejection::StaleTimer),
            }
        }
        CommandKind::RtcUserLeft { user, at } => {
            require_system(standing)?;
            Ok(state
                .seat_of(user)
                .filter(|seat| !predates(occupant_of(state, *seat), *at))
                .map(|seat| down_from(state, seat, MicDownReason::RtcLeft))
                .into_iter()
                .collect())
        }
        CommandKind::Kick { user, ban_seconds } => {
            require_moderator(standing)?;
            may_moderate(state, ctx, standing, user)?;
            let member = state.members.get(user);
            let ban_seconds = ban_seconds.filter(|secs| *secs > 0);
            if member.is_none() && ban_seconds.is_none() {
                return Err(Rejection::NotAMember { user: user.clone() });
            }
            if let (Some(member), Some(level)) = (member, ctx.rules.vip_kick_protection_level)
                && standing == Standing::Admin
                && member.vip_level >= level
            {
                return Err(Rejection::VipProtected {
                    target: user.clone(),
                    vip_level: member.vip_level,
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
        CommandKind::Unban { user } => {
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
        CommandKind::ChatMute { user, seconds } => {
            require_moderator(standing)?;
            may_moderate(state, ctx, standing, user)?;
            require_member(state, user)?;
            let until = (*seconds > 0).then(|| ctx.now.plus_secs(*seconds));
            if until.is_none() && state.chat_mute_of(user, ctx.now).is_none() {
                return Ok(Vec::new());
            }
            Ok(vec![Event::RoomUserMuted {
                user: user.clone(),
                until,
                by,
            }])
        }
        CommandKind::SetAdmin { user, admin } => {
            if !matches!(standing, Standing::Owner | Standing::PlatformAdmin) {
                return Err(Rejection::Forbidden);
            }
            if state.owner.as_ref() == Some(user) {
                return Err(Rejection::CannotModerate {
                    target: user.clone(),
                });
            }
            if state.admins.contains(user) == *admin {
                return Ok(Vec::new());
            }
            if *admin {
                require_member(state, user)?;
                let max = ctx.rules.max_admins;
                if state.admins.len() >= max as usize {
                    return Err(Rejection::TooManyAdmins { max });
                }
            }
            Ok(vec![Event::RoomAdminChanged {
                user: user.clone(),
                admin: *admin,
                by,
            }])
        }
        CommandKind::ApplyGift(gift) => apply_gift(state, ctx, standing, gift),
        CommandKind::RobotGift(gift) => robot_gift(state, ctx, command, gift),
        CommandKind::LaunchRocket {
            rocket_id,
            level,
            scheduled_at,
        } => {
            require_system(standing)?;
            launch_rocket(state, ctx, *rocket_id, *level, *scheduled_at)
        }
        CommandKind::ResetRocket => {
            require_system(standing)?;
            let today = ctx.now.day_key(ctx.rules.day_utc_offset_secs);
            // An ignited rocket launches first: its launch resets it (see `launch_rocket`).
            if state.rocket.day_key >= today || state.rocket.awaits_launch(ctx.now) {
                return Ok(Vec::new());
            }
            Ok(vec![Event::RoomRocketReset { day_key: today }])
        }
    }
}

fn create_room(
    name: &str,
    seat_count: Option<u8>,
    region: &str,
    ctx: &Ctx<'_>,
) -> Result<Vec<Event>, Rejection> {
    let owner = acting_user(ctx)?;
    let name = checked_name(name)?;
    let seat_count = seat_count.unwrap_or(ctx.rules.default_seat_count);
    if !(1..=MAX_SEATS).contains(&seat_count) {
        return Err(Rejection::InvalidSeatCount { seat_count });
    }
    Field::Region.check(region)?;
    Ok(vec![Event::RoomCreated {
        owner: owner.clone(),
        name,
        seat_count,
        region: region.to_owned(),
        created_at: ctx.now,
    }])
}

fn join(
    state: &RoomState,
    ctx: &Ctx<'_>,
    password_verified: bool,
) -> Result<Vec<Event>, Rejection> {
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
    if state.join_needs_password(actor) && !password_verified {
        return Err(Rejection::WrongPassword);
    }
    let role = state.role_of(user);
    let max = ctx.rules.max_members;
    if state.members.len() >= max as usize {
        return Err(Rejection::RoomFull { max });
    }
    Ok(vec![Event::RoomUserJoined {
        user: user.clone(),
        role,
        vip_level: actor.vip_level,
        joined_at: ctx.now,
        robot,
    }])
}

fn apply_gift(
    state: &RoomState,
    ctx: &Ctx<'_>,
    standing: Standing,
    gift: &ApplyGift,
) -> Result<Vec<Event>, Rejection> {
    // Robots give only free robot gifts: a paid gift in a robot's name would be money a
    // robot spent.
    if ctx.actor.is_robot() {
        return Err(Rejection::NotARobot);
    }
    if standing != Standing::System && ctx.actor.user_id() != Some(&gift.sender) {
        return Err(Rejection::Forbidden);
    }
    let rules = ctx.rules;
    let total_value = gift.check_shape(rules)?;
    let (units, heat_added, heat) = gift_heat(
        state,
        &gift.sender,
        &gift.recipients,
        gift.count,
        gift.gift.heat,
    )?;
    // Nor does the system apply one in a robot member's name (the saga refunds it).
    if is_robot_member(state, &gift.sender) {
        return Err(Rejection::NotARobot);
    }
    let fuel_added = gift
        .gift
        .fuel
        .checked_mul(units)
        .ok_or(Rejection::AmountOverflow)?;
    let lucky = if gift.gift.lucky {
        let multiplier = rules.lucky.draw(gift.lucky_draw);
        let reward = total_value
            .checked_mul(i64::from(multiplier))
            .ok_or(Rejection::AmountOverflow)?;
        Some(LuckyOutcome { multiplier, reward })
    } else {
        None
    };
    let today = ctx.now.day_key(rules.day_utc_offset_secs);
    // Like the rocket below, the ranks never go back to an earlier day: a gift stamped by a
    // clock that stepped back counts toward the newest day the room has seen instead of
    // wiping that day's totals.
    let rank_day = today.max(state.contribution.day_key);
    let week = rank_day.week();
    let day_total = state
        .day_contribution(&gift.sender, rank_day)
        .checked_add(total_value)
        .ok_or(Rejection::AmountOverflow)?;
    let week_total = state
        .week_contribution(&gift.sender, week)
        .checked_add(total_value)
        .ok_or(Rejection::AmountOverflow)?;

    let mut events = Vec::with_capacity(6);
    events.push(Event::RoomGiftSent(GiftSent {
        order_id: gift.order_id.clone(),
        sender: gift.sender.clone(),
        recipients: gift.recipients.clone(),
        gift_id: gift.gift.gift_id.clone(),
        count: gift.count,
        unit_price: gift.gift.price,
        total_value,
        heat_added,
        fuel_added,
        lucky,
        robot: false,
    }));
    if heat_added != 0 {
        events.push(Event::RoomHeatChanged {
            heat,
            delta: heat_added,
        });
    }
    if total_value != Coins::ZERO {
        events.push(Event::RoomRankChanged {
            user: gift.sender.clone(),
            day_key: rank_day,
            week_key: week,
            day_total,
            week_total,
        });
    }
    // A gift on a new day finds the rocket as the reset leaves it, unless the rocket is
    // ignited: the people who fuelled it are owed its launch, which resets it afterwards.
    // A clock that stepped back (a room moving between nodes) must not reset the rocket to an
    // earlier day: only a later day resets it.
    let (level, fuel, status, next_rocket_id) =
        if state.rocket.day_key < today && !state.rocket.awaits_launch(ctx.now) {
            events.push(Event::RoomRocketReset { day_key: today });
            (1, 0, RocketStatus::Idle, state.rocket.next_rocket_id)
        } else {
            let r = &state.rocket;
            (r.level, r.fuel, r.status, r.next_rocket_id)
        };
    if status == RocketStatus::Idle
        && fuel_added > 0
        && let Some(config) = rules.rocket_level(level)
    {
        let fuel = fuel.saturating_add(fuel_added).min(config.fuel);
        events.push(Event::RoomRocketFuelChanged {
            level,
            fuel,
            threshold: config.fuel,
        });
        if fuel >= config.fuel {
            events.push(Event::RoomRocketIgnited {
                rocket_id: next_rocket_id,
                level,
                ignited_at: ctx.now,
                launch_at: ctx.now.plus_secs(config.countdown_secs),
            });
        }
    }
    Ok(events)
}

/// A robot's free gift: the gift and its heat, and nothing else. No rank change and no fuel
/// (not even the day's rocket reset, which would empty the fuel): rocket launches pay real
/// coins to members and ranks are money leaderboards, so only paid gifts may move them. See
/// [`RobotGift`].
fn robot_gift(
    state: &RoomState,
    ctx: &Ctx<'_>,
    command: &Command,
    gift: &RobotGift,
) -> Result<Vec<Event>, Rejection> {
    let Actor::Robot(sender) = ctx.actor else {
        return Err(Rejection::NotARobot);
    };
    let total_value = gift.check_shape(sender, ctx.rules)?;
    let (_, heat_added, heat) =
        gift_heat(state, sender, &gift.recipients, gift.count, gift.gift.heat)?;
    let mut events = Vec::with_capacity(2);
    events.push(Event::RoomGiftSent(GiftSent {
        order_id: OrderId::from(&command.command_id),
        sender: sender.clone(),
        recipients: gift.recipients.clone(),
        gift_id: gift.gift.gift_id.clone(),
        count: gift.count,
        unit_price: gift.gift.price,
        total_value,
        heat_added,
        fuel_added: 0,
        lucky: None,
        robot: true,
    }));
    if heat_added != 0 {
        events.push(Event::RoomHeatChanged {
            heat,
            delta: heat_added,
        });
    }
    Ok(events)
}

fn launch_rocket(
    state: &RoomState,
    ctx: &Ctx<'_>,
    rocket_id: RocketId,
    level: u32,
    scheduled_at: Timestamp,
) -> Result<Vec<Event>, Rejection> {
    let rocket = &state.rocket;
    let RocketStatus::Ignited {
        rocket_id: ignited,
        launch_at,
        ..
    } = rocket.status
    else {
        return Err(Rejection::StaleTimer);
    };
    if ignited != rocket_id || rocket.level != level || launch_at != scheduled_at {
        return Err(Rejection::StaleTimer);
    }
    if ctx.now < launch_at {
        return Err(Rejection::RocketNotReady { launch_at });
    }
    // A level the rules no longer have (changed while it was ignited) still launches, with
    // no rewards: refused, its timer would be dropped and the rocket stay ignited.
    let rewards = match ctx.rules.rocket_level(level) {
        Some(config) => draw_rewards(state, config.reward_pool, config.winners, ctx.random),
        None => Vec::new(),
    };
    let next_level = ctx.rules.rocket_level(level + 1).map(|_| level + 1);
    let mut events = vec![Event::RoomRocketLaunched {
        rocket_id,
        level,
        rewards,
        next_level,
    }];
    // Ignited before midnight, launched after it: the day's reset, which waited for the
    // launch, comes now.
    let today = ctx.now.day_key(ctx.rules.day_utc_offset_secs);
    if rocket.day_key < today {
        events.push(Event::RoomRocketReset { day_key: today });
    }
    Ok(events)
}

/// Picks up to `winners` distinct members with the random input and shares `pool` among them:
/// equal parts, the remainder one coin each to the first winners drawn. The amounts add up to
/// `pool` exactly (or nothing is given when no human is present). Robots never win: the
/// rewards are real coins, paid into the winners' wallets.
fn draw_rewards(state: &RoomState, pool: Coins, winners: u32, random: u64) -> Vec<RocketReward> {
    let mut candidates: Vec<&UserId> = state
        .members
        .iter()
        .filter(|(_, member)| !member.robot)
        .map(|(user, _)| user)
        .collect();
    // Never more winners than coins: nobody wins zero.
    let k = (winners as usize)
        .min(candidates.len())
        .min(usize::try_from(pool.0).unwrap_or(0));
    if k == 0 {
        return Vec::new();
    }
    let mut rng = SplitMix64(random);
    // Partial Fisher-Yates: the first k slots become a uniform sample without replacement.
    for i in 0..k {
        let remaining = (candidates.len() - i) as u64;
        let j = i + (rng.next() % remaining) as usize;
        candidates.swap(i, j);
    }
    let k_i64 = k as i64;
    let (share, remainder) = (pool.0 / k_i64, pool.0 % k_i64);
    candidates[..k]
        .iter()
        .enumerate()
        .map(|(i, user)| RocketReward {
            user: (*user).clone(),
            coins: Coins(share + i64::from((i as i64) < remainder)),
        })
        .collect()
}

/// A small deterministic generator (SplitMix64), so that one random input draws several winners.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
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

/// The `Down` event for whoever holds `seat` (which must be occupied).
fn down_from(state: &RoomState, seat: SeatIndex, reason: MicDownReason) -> Event {
    let occupant = occupant_of(state, seat);
    mic_down(state, seat, &occupant.user, occupant.session, reason)
}

/// Whether an RTC event seen at `at` happened before `occupant`'s seat session began (beyond
/// the vendor's allowed clock lag): then it is about an earlier session, replayed or late.
fn predates(occupant: &crate::state::Occupant, at: Option<Timestamp>) -> bool {
    at.is_some_and(|at| at.0.saturating_add(crate::command::RTC_CLOCK_SKEW_MS) < occupant.since.0)
}

fn occupant_of(state: &RoomState, seat: SeatIndex) -> &crate::state::Occupant {
    state
        .seat(seat)
        .and_then(|s| s.occupant.as_ref())
        .expect("callers pass an occupied seat")
}

fn mic_down(
    state: &RoomState,
    seat: SeatIndex,
    user: &UserId,
    session: crate::ids::SeatSessionId,
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

/// What every gift needs and adds, paid or not: the sender and each recipient in the room, and
/// the heat of `count` units of `heat` to each recipient. Answers the units given, the heat
/// added and the room's heat after. A gift's shape was checked first (count <= 9999, at most
/// 20 recipients), so the unit product fits; the heat totals are checked.
fn gift_heat(
    state: &RoomState,
    sender: &UserId,
    recipients: &[UserId],
    count: u32,
    heat: i64,
) -> Result<(i64, i64, i64), Rejection> {
    require_member(state, sender)?;
    for recipient in recipients {
        require_member(state, recipient)?;
    }
    let units = i64::from(count) * recipients.len() as i64;
    let heat_added = heat.checked_mul(units).ok_or(Rejection::AmountOverflow)?;
    let after = state
        .heat
        .checked_add(heat_added)
        .ok_or(Rejection::AmountOverflow)?;
    Ok((units, heat_added, after))
}

/// Whether `user` is in the room as a robot.
fn is_robot_member(state: &RoomState, user: &UserId) -> bool {
    state.members.get(user).is_some_and(|member| member.robot)
}

fn seat_index(i: usize) -> SeatIndex {
    // Rooms have at most MAX_SEATS (20) seats.
    SeatIndex(u8::try_from(i).unwrap_or(u8::MAX))
}

fn checked_seat(state: &RoomState, seat: SeatIndex) -> Result<&crate::state::Seat, Rejection> {
    state.seat(seat).ok_or(Rejection::InvalidSeat {
        seat,
        seat_count: state.settings.seat_count,
    })
}

fn acting_user<'a>(ctx: &Ctx<'a>) -> Result<&'a UserId, Rejection> {
    ctx.actor.user_id().ok_or(Rejection::Forbidden)
}

fn require_member(state: &RoomState, user: &UserId) -> Result<(), Rejection> {
    if state.members.contains_key(user) {
        Ok(())
    } else {
        Err(Rejection::NotAMember { user: user.clone() })
    }
}

fn require_moderator(standing: Standing) -> Result<(), Rejection> {
    if standing.is_moderator() {
        Ok(())
    } else {
        Err(Rejection::Forbidden)
    }
}

fn require_system(standing: Standing) -> Result<(), Rejection> {
    if standing == Standing::System {
        Ok(())
    } else {
        Err(Rejection::Forbidden)
    }
}

/// Whether a moderator of `standing` may act on `target`: nobody moderates the owner or
/// themselves; admins do not moderate other admins.
fn may_moderate(
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

fn checked_name(name: &str) -> Result<String, Rejection> {
    let name = name.trim();
    if name.is_empty() {
        return Err(Rejection::FieldEmpty { field: Field::Name });
    }
    Field::Name.check(name)?;
    Ok(name.to_owned())
}

/// An empty URL removes the image.
fn checked_url(field: Field, url: &str) -> Result<Option<String>, Rejection> {
    let url = url.trim();
    if url.is_empty() {
        return Ok(None);
    }
    field.check(url)?;
    Ok(Some(url.to_owned()))
}
