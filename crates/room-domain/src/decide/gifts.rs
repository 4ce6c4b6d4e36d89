//! The rules of gifts: paid gifts the gift saga applies, with their heat, ranks, lucky rewards
//! and rocket fuel; and robots' free gifts, which show and warm the room but move no money.

use crate::actor::Actor;
use crate::command::{ApplyGift, Ctx, RobotGift};
use crate::display::UserDisplay;
use crate::event::{Event, GiftSent, LuckyOutcome};
use crate::ids::{CommandId, OrderId, UserId};
use crate::money::Coins;
use crate::rejection::Rejection;
use crate::state::{RocketStatus, RoomState};

use super::standing::{Standing, is_robot_member, require_member};

/// `ApplyGift`: a paid gift, applied by the system (the gift saga) only: the gift,
/// its heat, the sender's ranks, a lucky reward, and fuel for the rocket (which may reset for
/// a new day or ignite).
pub(super) fn apply_gift(
    state: &RoomState,
    ctx: &Ctx<'_>,
    standing: Standing,
    gift: &ApplyGift,
    sender_display: Option<&UserDisplay>,
) -> Result<Vec<Event>, Rejection> {
    // Robots give only free robot gifts: a paid gift in a robot's name would be money a
    // robot spent.
    if ctx.actor.is_robot() {
        return Err(Rejection::NotARobot);
    }
    // Only the gift saga applies a paid gift, with the order that debited it: a user's own
    // `ApplyGift` would be a gift nobody paid for.
    if standing != Standing::System {
        return Err(Rejection::Forbidden);
    }
    let rules = ctx.rules;
    gift.check_shape(rules)?;
    // A batch gift reaches whom its scope names now, at most as many as were paid for; the
    // saga refunds the rest of the order.
    let resolved;
    let gift = match gift.scope {
        None => gift,
        Some(scope) => {
            let recipients = state.batch_recipients(scope, &gift.sender, gift.recipients.len());
            if recipients.is_empty() {
                return Err(Rejection::NoRecipients);
            }
            resolved = ApplyGift {
                recipients,
                ..gift.clone()
            };
            &resolved
        }
    };
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

    let (sender_nickname, sender_avatar_url) = UserDisplay::split(sender_display);
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
        billing_version: gift.gift.billing_version,
        sender_nickname,
        sender_avatar_url,
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
                prize: Some(config.prize()),
            });
        }
    }
    Ok(events)
}

/// A robot's free gift: the gift and its heat, and nothing else. No rank change and no fuel
/// (not even the day's rocket reset, which would empty the fuel): rocket launches pay real
/// coins to members and ranks are money leaderboards, so only paid gifts may move them. See
/// [`RobotGift`].
pub(super) fn robot_gift(
    state: &RoomState,
    ctx: &Ctx<'_>,
    command_id: &CommandId,
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
        order_id: OrderId::from(command_id),
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
        billing_version: None,
        sender_nickname: None,
        sender_avatar_url: None,
    }));
    if heat_added != 0 {
        events.push(Event::RoomHeatChanged {
            heat,
            delta: heat_added,
        });
    }
    Ok(events)
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
