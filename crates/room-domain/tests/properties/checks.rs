//! The properties of one accepted command: what its events say (money adds up, robots
//! leave no durable fact) and what the state after them shows.

use std::cell::RefCell;
use std::collections::BTreeSet;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use room_domain::{
    Actor, Coins, Command, CommandKind, Ctx, Event, OrderId, RocketStatus, RoomState, UserId,
};

use crate::coverage::Coverage;

/// What can be said of the events before they are applied: money adds up.
pub fn check_events(
    coverage: &RefCell<Coverage>,
    before: &RoomState,
    command: &Command,
    ctx: &Ctx<'_>,
    events: &[Event],
) -> Result<(), TestCaseError> {
    for event in events {
        let delivery = event.delivery();
        if event.is_robot() {
            prop_assert!(!delivery.durable, "a durable robot event: {:?}", event);
            prop_assert!(
                delivery.im.is_some(),
                "a robot event not shown: {:?}",
                event
            );
        }
        match event {
            Event::RoomGiftSent(sent) if sent.robot => {
                check_robot_gift(command, ctx, sent)?;
            }
            Event::RoomUserJoined { robot, .. } => {
                prop_assert_eq!(*robot, ctx.actor.is_robot(), "join marked wrong");
                prop_assert_eq!(delivery.durable, !robot);
                prop_assert_eq!(event.is_robot(), *robot);
                if *robot {
                    coverage.borrow_mut().robot_joins += 1;
                }
            }
            Event::RoomUserLeft { user, robot, .. } => {
                let was_robot = before.members.get(user).is_some_and(|m| m.robot);
                prop_assert_eq!(*robot, was_robot, "leave of {:?} marked wrong", user);
                prop_assert_eq!(delivery.durable, !robot);
                prop_assert_eq!(event.is_robot(), *robot);
                if *robot {
                    coverage.borrow_mut().robot_leaves += 1;
                }
            }
            Event::RoomUserKicked { user, robot, .. } => {
                let was_robot = before.members.get(user).is_some_and(|m| m.robot);
                prop_assert_eq!(*robot, was_robot, "kick of {:?} marked wrong", user);
                prop_assert!(delivery.durable && !event.is_robot());
            }
            Event::RoomGiftSent(sent) => {
                let CommandKind::ApplyGift(gift) = &command.kind else {
                    return Err(TestCaseError::fail(format!("gift from {command:?}")));
                };
                prop_assert!(!ctx.actor.is_robot(), "a robot sent a paid gift");
                prop_assert!(sent.total_value.0 >= 0);
                let units = i128::from(gift.count) * gift.recipients.len() as i128;
                prop_assert_eq!(&sent.order_id, &gift.order_id);
                prop_assert_eq!(&sent.sender, &gift.sender);
                prop_assert_eq!(&sent.recipients, &gift.recipients);
                prop_assert_eq!(&sent.gift_id, &gift.gift.gift_id);
                prop_assert_eq!(sent.count, gift.count);
                prop_assert_eq!(sent.unit_price, gift.gift.price);
                prop_assert_eq!(
                    i128::from(sent.total_value.0),
                    i128::from(sent.unit_price.0)
                        * i128::from(sent.count)
                        * sent.recipients.len() as i128
                );
                prop_assert_eq!(
                    i128::from(sent.heat_added),
                    i128::from(gift.gift.heat) * units
                );
                prop_assert_eq!(
                    i128::from(sent.fuel_added),
                    i128::from(gift.gift.fuel) * units
                );
                match (gift.gift.lucky, sent.lucky) {
                    (false, None) => {}
                    (true, Some(lucky)) => {
                        prop_assert!(
                            ctx.rules
                                .lucky
                                .entries
                                .iter()
                                .any(|e| e.multiplier == lucky.multiplier && e.weight > 0),
                            "multiplier {} is not in the table",
                            lucky.multiplier
                        );
                        prop_assert_eq!(
                            i128::from(lucky.reward.0),
                            i128::from(sent.total_value.0) * i128::from(lucky.multiplier)
                        );
                        if lucky.reward.0 > 0 {
                            coverage.borrow_mut().lucky_wins += 1;
                        }
                    }
                    (lucky, outcome) => {
                        return Err(TestCaseError::fail(format!(
                            "lucky gift {lucky} drew {outcome:?}"
                        )));
                    }
                }
                prop_assert!(event.delivery().durable);
            }
            Event::RoomRocketLaunched {
                rocket_id,
                level,
                rewards,
                next_level,
            } => {
                let CommandKind::LaunchRocket {
                    rocket_id: asked,
                    level: asked_level,
                    scheduled_at,
                } = &command.kind
                else {
                    return Err(TestCaseError::fail(format!("launch from {command:?}")));
                };
                prop_assert_eq!(rocket_id, asked);
                prop_assert_eq!(level, asked_level);
                prop_assert!(ctx.now >= *scheduled_at, "launched before its time");
                let was_ignited = matches!(
                    before.rocket.status,
                    RocketStatus::Ignited { rocket_id: r, .. } if r == *rocket_id
                );
                prop_assert!(was_ignited, "launched a rocket that was not ignited");
                // The prize the rocket ignited with (the rules' level, as they were then).
                let config = match before.rocket.status {
                    RocketStatus::Ignited {
                        prize: Some(prize), ..
                    } => prize,
                    _ => ctx.rules.rocket_level(*level).unwrap().prize(),
                };
                prop_assert_eq!(
                    *next_level,
                    ctx.rules.rocket_level(level + 1).map(|_| level + 1)
                );
                let winners: BTreeSet<&UserId> = rewards.iter().map(|r| &r.user).collect();
                prop_assert_eq!(winners.len(), rewards.len(), "a user won twice");
                for reward in rewards {
                    prop_assert!(
                        before.members.contains_key(&reward.user),
                        "{:?} won but is not a member",
                        reward.user
                    );
                    // The rewards are real coins: robots never win them.
                    prop_assert!(
                        !before.members[&reward.user].robot,
                        "robot {:?} won coins",
                        reward.user
                    );
                    prop_assert!(!reward.coins.is_negative());
                    if let Some(cap) = config.reward_cap {
                        prop_assert!(reward.coins <= cap, "a reward over the cap");
                    }
                }
                let humans = before.members.values().filter(|m| !m.robot).count();
                let paid: i128 = rewards.iter().map(|r| i128::from(r.coins.0)).sum();
                if humans == 0 || config.reward_pool.0 == 0 {
                    prop_assert!(rewards.is_empty());
                } else {
                    // Nobody wins zero coins: a pool smaller than the winner count has
                    // fewer winners.
                    let expected = humans
                        .min(config.winners as usize)
                        .min(usize::try_from(config.reward_pool.0).unwrap_or(0));
                    prop_assert_eq!(rewards.len(), expected);
                    // The pool shared exactly, each part cut to the cap when there is one.
                    let k = i128::try_from(expected).unwrap();
                    let pool = i128::from(config.reward_pool.0);
                    let cap = config.reward_cap.map_or(i128::MAX, |cap| i128::from(cap.0));
                    let owed: i128 = (0..k)
                        .map(|i| (pool / k + i128::from(i < pool % k)).min(cap))
                        .sum();
                    prop_assert_eq!(paid, owed);
                    coverage.borrow_mut().launches_with_rewards += 1;
                }
                prop_assert!(event.delivery().durable);
                // Ignited on an earlier day: the reset that waited for the launch follows.
                let today = ctx.now.day_key(ctx.rules.day_utc_offset_secs);
                let reset_after = before.rocket.day_key < today;
                prop_assert_eq!(
                    events.len(),
                    1 + usize::from(reset_after),
                    "a launch's events: {:?}",
                    events
                );
                if reset_after {
                    prop_assert_eq!(&events[1], &Event::RoomRocketReset { day_key: today });
                    coverage.borrow_mut().launches_on_a_later_day += 1;
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// A robot gift's event: as the command asked, sent by the acting robot, under the command
/// id, with no fuel, no lucky draw, and no durable delivery.
fn check_robot_gift(
    command: &Command,
    ctx: &Ctx<'_>,
    sent: &room_domain::GiftSent,
) -> Result<(), TestCaseError> {
    let CommandKind::RobotGift(gift) = &command.kind else {
        return Err(TestCaseError::fail(format!(
            "a robot gift from {command:?}"
        )));
    };
    let Actor::Robot(robot) = ctx.actor else {
        return Err(TestCaseError::fail(format!(
            "a robot gift by {:?}",
            ctx.actor
        )));
    };
    let units = i128::from(gift.count) * gift.recipients.len() as i128;
    prop_assert_eq!(&sent.sender, robot);
    prop_assert_eq!(&sent.order_id, &OrderId::from(&command.command_id));
    prop_assert_eq!(&sent.recipients, &gift.recipients);
    prop_assert_eq!(&sent.gift_id, &gift.gift.gift_id);
    prop_assert_eq!(sent.count, gift.count);
    prop_assert_eq!(sent.unit_price, gift.gift.price);
    prop_assert_eq!(
        i128::from(sent.total_value.0),
        i128::from(gift.gift.price.0) * units
    );
    prop_assert_eq!(
        i128::from(sent.heat_added),
        i128::from(gift.gift.heat) * units
    );
    prop_assert_eq!(sent.fuel_added, 0);
    prop_assert_eq!(sent.lucky, None);
    let event = Event::RoomGiftSent(sent.clone());
    prop_assert!(!event.delivery().durable);
    prop_assert_eq!(event.delivery().im, Some(room_domain::ImPriority::High));
    Ok(())
}

/// What can be said of the state after a command's events were applied.
pub fn check_effects(
    coverage: &RefCell<Coverage>,
    users: &[UserId],
    before: &RoomState,
    after: &RoomState,
    command: &Command,
    ctx: &Ctx<'_>,
    events: &[Event],
) -> Result<(), TestCaseError> {
    let gifts = events
        .iter()
        .filter(|e| matches!(e, Event::RoomGiftSent(_)))
        .count();
    if let CommandKind::Join { .. } = command.kind
        && let Some(user) = ctx.actor.user_id()
        && !events.is_empty()
    {
        prop_assert_eq!(after.members[user].robot, ctx.actor.is_robot());
    }
    if let CommandKind::RobotGift(gift) = &command.kind {
        // Free gifts make the room look lively, and do nothing that money does: no fuel
        // (a launch pays members real coins), no contribution (ranks are of coins given),
        // no durable fact for other services to count.
        prop_assert_eq!(gifts, 1, "an accepted robot gift gives one RoomGiftSent");
        let Some(Event::RoomGiftSent(sent)) = events.first() else {
            return Err(TestCaseError::fail("RoomGiftSent is not the first event"));
        };
        prop_assert!(sent.robot);
        prop_assert_eq!(after.heat, before.heat + sent.heat_added);
        prop_assert_eq!(&after.contribution, &before.contribution);
        prop_assert_eq!(
            &after.rocket,
            &before.rocket,
            "a robot gift moved the rocket"
        );
        for event in events {
            prop_assert!(
                matches!(
                    event,
                    Event::RoomGiftSent(_) | Event::RoomHeatChanged { .. }
                ),
                "a robot gift gave {:?}",
                event
            );
            prop_assert!(!event.delivery().durable, "durable: {:?}", event);
        }
        let mut coverage = coverage.borrow_mut();
        if sent.heat_added > 0 {
            coverage.robot_gifts_with_heat += 1;
        }
        if before.rocket.status == RocketStatus::Idle && gift.gift.fuel > 0 {
            coverage.robot_gifts_while_idle += 1;
        }
        return Ok(());
    }
    if !matches!(command.kind, CommandKind::ApplyGift(_)) {
        prop_assert_eq!(gifts, 0);
        prop_assert_eq!(after.heat, before.heat);
        prop_assert_eq!(&after.contribution, &before.contribution);
        return Ok(());
    }
    prop_assert_eq!(gifts, 1, "an accepted gift gives one RoomGiftSent");
    let Some(Event::RoomGiftSent(sent)) = events.first() else {
        return Err(TestCaseError::fail("RoomGiftSent is not the first event"));
    };
    prop_assert!(!sent.robot, "a paid gift marked as a robot's");
    prop_assert!(
        events[0].delivery().durable,
        "a paid gift is a durable fact"
    );
    prop_assert_eq!(after.heat, before.heat + sent.heat_added);
    let ranked = events
        .iter()
        .any(|e| matches!(e, Event::RoomRankChanged { .. }));
    prop_assert_eq!(ranked, sent.total_value.0 > 0, "paid gifts move the ranks");

    // Contribution: the sender's day and week totals grow by exactly the gift's value;
    // nobody else's change. The totals are those of the newest day the room has seen: a
    // gift on a new day starts the day from zero, and a clock that stepped back must not
    // roll the ranks back to an earlier day (that would drop the later day's totals).
    let today = ctx.now.day_key(ctx.rules.day_utc_offset_secs);
    let day = today.max(before.contribution.day_key);
    let week = day.week();
    for user in users {
        let grew = if *user == sent.sender {
            sent.total_value
        } else {
            Coins::ZERO
        };
        prop_assert_eq!(
            after.day_contribution(user, day).0,
            before.day_contribution(user, day).0 + grew.0,
            "day contribution of {:?} on {:?} (now is in {:?})",
            user,
            day,
            today
        );
        prop_assert_eq!(
            after.week_contribution(user, week).0,
            before.week_contribution(user, week).0 + grew.0,
            "week contribution of {:?}",
            user
        );
    }
    if before.contribution.day_key > today && sent.total_value.0 > 0 {
        coverage.borrow_mut().gifts_stamped_on_an_earlier_day += 1;
    }
    // Likewise the rocket resets on a later day only, and not while it is ignited: its
    // launch comes first.
    let resets = events
        .iter()
        .filter(|e| matches!(e, Event::RoomRocketReset { .. }))
        .count();
    let new_day = before.rocket.day_key < today && !before.rocket.awaits_launch(ctx.now);
    prop_assert_eq!(resets, usize::from(new_day));
    if new_day {
        prop_assert!(
            events
                .iter()
                .any(|e| matches!(e, Event::RoomRocketReset { day_key } if *day_key == today)),
            "a gift on a new day did not reset the rocket"
        );
        if before.contribution.day_key < today && sent.total_value.0 > 0 {
            coverage.borrow_mut().gifts_on_a_new_day += 1;
        }
    }
    if let Some(config) = ctx.rules.rocket_level(after.rocket.level) {
        prop_assert!(
            after.rocket.fuel <= config.fuel,
            "fuel beyond the threshold"
        );
        let ignited = events
            .iter()
            .any(|e| matches!(e, Event::RoomRocketIgnited { .. }));
        // A rocket already counting down takes no fuel, whatever the day, unless the gift
        // reset it (on a new day, a launch overdue by more than a day is waited for no more).
        let was_counting_down =
            matches!(before.rocket.status, RocketStatus::Ignited { .. }) && !new_day;
        let is_counting_down = matches!(after.rocket.status, RocketStatus::Ignited { .. });
        prop_assert_eq!(
            ignited,
            is_counting_down && !was_counting_down,
            "ignition does not match the rocket status"
        );
        if ignited {
            prop_assert_eq!(after.rocket.fuel, config.fuel);
        }
    }
    // A paid gift with fuel fills a rocket that takes fuel (idle, once reset on a new day).
    let level = if new_day { 1 } else { before.rocket.level };
    let idle = new_day || before.rocket.status == RocketStatus::Idle;
    if idle && sent.fuel_added > 0 && ctx.rules.rocket_level(level).is_some() {
        prop_assert!(
            events
                .iter()
                .any(|e| matches!(e, Event::RoomRocketFuelChanged { .. })),
            "a paid gift with fuel did not fill the rocket"
        );
    }
    Ok(())
}
