//! The rules of the room rocket's timers: its launch, which draws the rewards, and its daily
//! reset. (Gifts fuel and ignite it: see the gift rules.)

use crate::command::Ctx;
use crate::event::{Event, RocketReward};
use crate::ids::{RocketId, UserId};
use crate::money::Coins;
use crate::rejection::Rejection;
use crate::rules::RocketPrize;
use crate::state::{RocketStatus, RoomState};
use crate::time::Timestamp;

use super::standing::{Standing, require_system};

/// `LaunchRocket`: the ignited rocket's timer fires; it launches, rewards members present,
/// and resets for the new day if it was ignited before midnight.
pub(super) fn launch_rocket(
    state: &RoomState,
    ctx: &Ctx<'_>,
    standing: Standing,
    rocket_id: RocketId,
    level: u32,
    scheduled_at: Timestamp,
) -> Result<Vec<Event>, Rejection> {
    require_system(standing)?;
    let rocket = &state.rocket;
    let RocketStatus::Ignited {
        rocket_id: ignited,
        launch_at,
        prize,
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
    // The prize taken at ignition; an ignition recorded without one takes its level's now. A
    // level the rules no longer have still launches, with no rewards: refused, its timer
    // would be dropped and the rocket stay ignited.
    let rewards = match prize.or_else(|| ctx.rules.rocket_level(level).map(|c| c.prize())) {
        Some(prize) => draw_rewards(state, &prize, ctx.random),
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

/// Picks up to `winners` distinct members with the random input and shares the pool among
/// them: equal parts, the remainder one coin each to the first winners drawn, each part at
/// most the prize's cap. The amounts add up to the pool exactly when no cap cuts them (and to
/// less when one does; nothing is given when no human is present). Robots never win: the
/// rewards are real coins, paid into the winners' wallets.
fn draw_rewards(state: &RoomState, prize: &RocketPrize, random: u64) -> Vec<RocketReward> {
    let (pool, winners) = (prize.reward_pool, prize.winners);
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
        .map(|(i, user)| {
            let coins = share + i64::from((i as i64) < remainder);
            RocketReward {
                user: (*user).clone(),
                coins: Coins(prize.reward_cap.map_or(coins, |cap| coins.min(cap.0))),
            }
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

/// `ResetRocket`: at the day boundary the rocket goes back to level 1, once a day, and never
/// while an ignited rocket still awaits its launch.
pub(super) fn reset_rocket(
    state: &RoomState,
    ctx: &Ctx<'_>,
    standing: Standing,
) -> Result<Vec<Event>, Rejection> {
    require_system(standing)?;
    let today = ctx.now.day_key(ctx.rules.day_utc_offset_secs);
    // An ignited rocket launches first: its launch resets it (see `launch_rocket`).
    if state.rocket.day_key >= today || state.rocket.awaits_launch(ctx.now) {
        return Ok(Vec::new());
    }
    Ok(vec![Event::RoomRocketReset { day_key: today }])
}
