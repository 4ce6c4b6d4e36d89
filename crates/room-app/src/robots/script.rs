//! The script a robot room follows: what a step reads of the room ([`RobotView`]) and the
//! actions it plans ([`plan_step`]) toward the hour's audience, the configured seats and the
//! gift rate. Pure: no time, no randomness of its own, no I/O.

use std::collections::HashSet;
use std::time::Duration;

use room_domain::{GiftId, RoomState, RoomStatus, SeatIndex, Timestamp, UserId};

use crate::ports::RobotRoomConfig;

/// The most robot gifts one step sends, whatever the rate.
const MAX_GIFTS_PER_STEP: u32 = 20;

/// What the script reads of a robot room, taken from its state at the start of a step.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RobotView {
    /// Whether the room is open.
    pub open: bool,
    /// Robots of the pool in the room, in pool order.
    pub present: Vec<UserId>,
    /// Robots of the pool out of the room and free to join (not banned), in pool order.
    pub absent: Vec<UserId>,
    /// Robots of the pool on a seat, with the seat.
    pub seated: Vec<(UserId, SeatIndex)>,
    /// Seats a robot may take: nobody on them, not locked, not reserved for VIP, not held for
    /// an invitee; in seat order.
    pub free_seats: Vec<SeatIndex>,
    /// Whoever is on a seat, robot or not: who robot gifts go to.
    pub on_seats: Vec<UserId>,
}

impl RobotView {
    /// What the script reads of `state` for the pool of `config`, at `now`.
    pub fn of(state: &RoomState, config: &RobotRoomConfig, now: Timestamp) -> RobotView {
        let pool: HashSet<&UserId> = config.robots.iter().collect();
        let mut view = RobotView {
            open: state.status == RoomStatus::Open,
            ..RobotView::default()
        };
        for robot in &config.robots {
            if state.members.get(robot).is_some_and(|m| m.robot) {
                view.present.push(robot.clone());
            } else if !state.members.contains_key(robot)
                && state.bans.get(robot).is_none_or(|until| *until <= now)
            {
                view.absent.push(robot.clone());
            }
        }
        for (i, seat) in state.seats.iter().enumerate() {
            let index = SeatIndex(i as u8);
            match &seat.occupant {
                Some(occupant) => {
                    if pool.contains(&occupant.user) {
                        view.seated.push((occupant.user.clone(), index));
                    }
                    view.on_seats.push(occupant.user.clone());
                }
                None if !seat.locked && !seat.vip_only && seat.held_for(now).is_none() => {
                    view.free_seats.push(index)
                }
                None => {}
            }
        }
        view
    }
}

/// One robot action of a step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RobotAction {
    /// The robot joins the room.
    Join(UserId),
    /// The robot leaves the room.
    Leave(UserId),
    /// The robot takes the seat.
    TakeSeat(UserId, SeatIndex),
    /// The robot leaves the seat.
    LeaveSeat(UserId, SeatIndex),
    /// The robot sends one unit of the gift to the recipient.
    Gift {
        /// Who sends.
        sender: UserId,
        /// Which gift of the mix.
        gift_id: GiftId,
        /// Who receives.
        recipient: UserId,
    },
}

impl RobotAction {
    /// The action's name, for metrics.
    pub fn name(&self) -> &'static str {
        match self {
            RobotAction::Join(_) => "join",
            RobotAction::Leave(_) => "leave",
            RobotAction::TakeSeat(..) => "take_seat",
            RobotAction::LeaveSeat(..) => "leave_seat",
            RobotAction::Gift { .. } => "gift",
        }
    }
}

/// What a step carries over to the next: the fraction of a gift not yet sent.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ScriptCarry {
    /// Gifts owed by the rate and not yet sent, below one.
    pub gifts: f64,
}

/// The robot listeners `config` asks for at `now` (its audience for the hour of the day, UTC).
pub fn target_listeners(config: &RobotRoomConfig, now: Timestamp) -> usize {
    let hour = (now.0.div_euclid(3_600_000)).rem_euclid(24) as usize;
    config.audience.get(hour).copied().unwrap_or(0) as usize
}

/// Plans one step of a robot room's script: at most one join or leave toward the hour's
/// audience (and, at the audience, now and then one robot leaves so that another takes its
/// place), at most one seat change toward the configured seats, and the gifts the rate owes
/// for `step` (a fraction carried over in `carry`). Robots never take the last free seat:
/// with one seat free they sit down no more, with none free one of them stands up.
/// `random` draws uniform values.
pub fn plan_step(
    config: &RobotRoomConfig,
    view: &RobotView,
    now: Timestamp,
    step: Duration,
    robot_stay: Duration,
    carry: &mut ScriptCarry,
    random: &mut dyn FnMut() -> u64,
) -> Vec<RobotAction> {
    let mut actions = Vec::new();
    if !view.open {
        return actions;
    }
    let mut pick = |items: usize| (random() % items.max(1) as u64) as usize;
    let target = target_listeners(config, now).min(config.robots.len());
    let present = view.present.len();
    let seated: HashSet<&UserId> = view.seated.iter().map(|(robot, _)| robot).collect();
    // Who leaves this step: no seat change is asked of it, no gift sent by or to it.
    let mut leaving: Option<&UserId> = None;
    if present < target && !view.absent.is_empty() {
        actions.push(RobotAction::Join(
            view.absent[pick(view.absent.len())].clone(),
        ));
    } else if present > target {
        // Robots off the seats leave first.
        let standing: Vec<&UserId> = view
            .present
            .iter()
            .filter(|r| !seated.contains(r))
            .collect();
        let robot = if standing.is_empty() {
            &view.present[pick(present)]
        } else {
            standing[pick(standing.len())]
        };
        leaving = Some(robot);
        actions.push(RobotAction::Leave(robot.clone()));
    } else if present > 0 && !view.absent.is_empty() {
        // Turnover: each robot leaves once per stay on average; another joins next step.
        let chance = step.as_secs_f64() / robot_stay.as_secs_f64().max(0.001);
        let draw = (pick(1_000_000) as f64) / 1_000_000.0;
        if draw < chance * present as f64 {
            let standing: Vec<&UserId> = view
                .present
                .iter()
                .filter(|r| !seated.contains(r))
                .collect();
            if !standing.is_empty() {
                let robot = standing[pick(standing.len())];
                leaving = Some(robot);
                actions.push(RobotAction::Leave(robot.clone()));
            }
        }
    }

    // The seats as the step's leave leaves them: a seated robot that leaves frees its seat,
    // and is told nothing more.
    let staying = present - usize::from(leaving.is_some());
    let still_seated: Vec<&(UserId, SeatIndex)> = view
        .seated
        .iter()
        .filter(|(robot, _)| Some(robot) != leaving)
        .collect();
    let free_after_leave = view.free_seats.len() + (view.seated.len() - still_seated.len());
    let wanted_seats = usize::from(config.seats).min(staying);
    if free_after_leave == 0 && !still_seated.is_empty() {
        // No seat left for a person: a robot makes room.
        let (robot, seat) = still_seated[pick(still_seated.len())];
        actions.push(RobotAction::LeaveSeat(robot.clone(), *seat));
    } else if still_seated.len() > wanted_seats {
        let (robot, seat) = still_seated[pick(still_seated.len())];
        actions.push(RobotAction::LeaveSeat(robot.clone(), *seat));
    } else if still_seated.len() < wanted_seats && free_after_leave > 1 {
        let standing: Vec<&UserId> = view
            .present
            .iter()
            .filter(|r| !seated.contains(r) && Some(*r) != leaving)
            .collect();
        if !standing.is_empty() {
            let robot = standing[pick(standing.len())];
            let seat = view.free_seats[pick(view.free_seats.len())];
            actions.push(RobotAction::TakeSeat(robot.clone(), seat));
        }
    }

    carry.gifts += f64::from(config.gift_rate_per_minute) * step.as_secs_f64() / 60.0;
    let due = carry.gifts.floor().min(f64::from(MAX_GIFTS_PER_STEP));
    carry.gifts = (carry.gifts - due).clamp(0.0, 1.0);
    let senders: Vec<&UserId> = view
        .present
        .iter()
        .filter(|r| Some(*r) != leaving)
        .collect();
    let total_weight: u64 = config.gift_mix.iter().map(|g| u64::from(g.weight)).sum();
    if senders.is_empty() || total_weight == 0 {
        return actions;
    }
    for _ in 0..due as u32 {
        let sender = senders[pick(senders.len())];
        // Never the robot leaving this step: its leave comes first, and a gift to someone
        // no longer in the room is refused.
        let on_seats: Vec<&UserId> = view
            .on_seats
            .iter()
            .filter(|u| *u != sender && Some(*u) != leaving)
            .collect();
        let recipients: Vec<&UserId> = if on_seats.is_empty() {
            senders.iter().copied().filter(|u| *u != sender).collect()
        } else {
            on_seats
        };
        if recipients.is_empty() {
            break;
        }
        let mut draw = pick(usize::MAX) as u64 % total_weight;
        let gift = config
            .gift_mix
            .iter()
            .find(|share| {
                let weight = u64::from(share.weight);
                if draw < weight {
                    true
                } else {
                    draw -= weight;
                    false
                }
            })
            .unwrap_or(&config.gift_mix[0]);
        actions.push(RobotAction::Gift {
            sender: sender.clone(),
            gift_id: gift.gift_id.clone(),
            recipient: recipients[pick(recipients.len())].clone(),
        });
    }
    actions
}
