//! Planning a batch: each command decided and evolved in memory, and the one commit built from
//! them (events, outbox, gift orders, timers, payouts, the directory's summary).

use std::collections::HashMap;
use std::sync::Arc;

use room_domain::{
    CommandId, CommandKind, Ctx, DayKey, Event, EventEnvelope, MicChange, Rejection, RoomState,
    RoomStatus, SagaOutcome, decide, evolve,
};

use super::active::Cell;
use super::mailbox::CommandRequest;
use crate::error::{Error, Result};
use crate::lists::score::add_heat;
use crate::ports::{
    CommandRecord, CommandReply, CommitBatch, CreditKind, DisplayMessage, Payout, RoomSummary,
    StoredEvent, Timer,
};

impl Cell {
    /// Decides and evolves every command in memory and builds the commit.
    pub(super) fn plan(&mut self, commands: &[CommandRequest]) -> Plan {
        let deps = &self.inner.deps;
        let rules = self.inner.rules();
        let rules = &*rules;
        let now = deps.clock.now();
        let room_id = &self.room_id;
        let mut batch = CommitBatch {
            room_id: room_id.clone(),
            epoch: self.epoch,
            expected_version: self.state.version,
            commands: Vec::new(),
            events: Vec::new(),
            outbox: Vec::new(),
            orders: Vec::new(),
            timers: Vec::new(),
            payouts: Vec::new(),
            summary: None,
        };
        let mut display = Vec::new();
        let mut outcomes: Vec<Outcome> = Vec::with_capacity(commands.len());
        let mut in_batch: HashMap<&CommandId, usize> = HashMap::new();
        for (index, request) in commands.iter().enumerate() {
            let id = &request.command.command_id;
            if let Some(reply) = self.recent.get(id) {
                outcomes.push(Outcome::Done(Ok(reply.clone())));
                continue;
            }
            if let Some(first) = in_batch.get(id) {
                outcomes.push(Outcome::SameAs(*first));
                continue;
            }
            in_batch.insert(id, index);
            if !carries_its_order(room_id, request) {
                outcomes.push(Outcome::Done(Err(Error::Rejected(Rejection::Forbidden))));
                continue;
            }
            let ctx = Ctx {
                now,
                actor: &request.actor,
                random: deps.ids.random(),
                rules,
            };
            let events = match decide(&self.state, &request.command, &ctx) {
                Ok(events) => events,
                Err(rejection) => {
                    outcomes.push(Outcome::Done(Err(Error::Rejected(rejection))));
                    continue;
                }
            };
            if events.is_empty() {
                outcomes.push(Outcome::Done(Ok(Arc::new(CommandReply {
                    version: self.state.version,
                    events: Vec::new(),
                }))));
                continue;
            }
            let first_seq = self.state.version + 1;
            let mut applied = None;
            let mut stored = Vec::with_capacity(events.len());
            for event in events {
                evolve(&mut self.state, &event);
                let seq = self.state.version;
                let delivery = event.delivery();
                if delivery.durable || delivery.im.is_some() {
                    let envelope = EventEnvelope::new(room_id.clone(), seq, now, &event);
                    if let Some(priority) = delivery.im {
                        display.push(DisplayMessage {
                            envelope: envelope.clone(),
                            priority,
                            coalesce_key: delivery.coalesce_key,
                        });
                    }
                    if delivery.durable {
                        batch.outbox.push(envelope);
                    }
                }
                self.follow_up(&event, &mut batch);
                if let Event::RoomGiftSent(gift) = &event {
                    applied = Some(SagaOutcome::Applied {
                        lucky_reward: gift.lucky.map(|l| l.reward).unwrap_or_default(),
                        recipients: gift.recipients.clone(),
                        value: gift.total_value,
                    });
                }
                stored.push(StoredEvent {
                    seq,
                    occurred_at: now,
                    event,
                });
            }
            if let (Some(order), Some(applied)) = (&request.order, applied) {
                let mut order = order.clone();
                match order.record(applied) {
                    Ok(()) => batch.orders.push(order),
                    Err(error) => {
                        tracing::error!(room_id = %room_id, error = %error, "gift order out of step")
                    }
                }
            }
            batch.commands.push(CommandRecord {
                command_id: id.clone(),
                command: request.command.clone(),
                actor: request.actor.clone(),
                applied_at: now,
                first_seq,
                last_seq: self.state.version,
            });
            batch.events.extend(stored.iter().cloned());
            outcomes.push(Outcome::Done(Ok(Arc::new(CommandReply {
                version: self.state.version,
                events: stored,
            }))));
        }
        if !batch.events.is_empty() {
            batch.summary = summary_of(&self.state).map(|mut summary| {
                let recent = &mut self.recent_heat;
                let added = self.state.heat.saturating_sub(recent.heat);
                let half_life = self.inner.config.heat_half_life;
                recent.milli = add_heat(recent.milli, recent.at, now, added, half_life);
                recent.at = now;
                recent.heat = self.state.heat;
                summary.recent_heat_milli = recent.milli;
                summary.recent_heat_at = now;
                summary
            });
            dedup_timers(&mut batch.timers);
            let armed = self.reset_armed_at;
            batch
                .timers
                .retain(|t| !(is_rocket_reset(t) && Some(t.due_at) == armed));
        }
        Plan {
            batch,
            display,
            outcomes,
        }
    }

    /// Timers and payouts an event calls for.
    fn follow_up(&self, event: &Event, batch: &mut CommitBatch) {
        let room = &self.room_id;
        match event {
            Event::RoomMicChanged {
                seat,
                change:
                    MicChange::Up {
                        session,
                        publish_deadline,
                        robot: false,
                        ..
                    },
            } => batch.timers.push(Timer {
                timer_id: format!("{room}:mic:{seat}"),
                room_id: room.clone(),
                due_at: *publish_deadline,
                command: CommandKind::MicPublishTimeout {
                    seat: *seat,
                    session: *session,
                },
            }),
            Event::RoomRocketIgnited {
                rocket_id,
                level,
                launch_at,
                ..
            } => batch.timers.push(Timer {
                timer_id: format!("{room}:rocket-launch"),
                room_id: room.clone(),
                due_at: *launch_at,
                command: CommandKind::LaunchRocket {
                    rocket_id: *rocket_id,
                    level: *level,
                    scheduled_at: *launch_at,
                },
            }),
            Event::RoomRocketFuelChanged { .. } => {
                let offset = self.inner.config.rules.day_utc_offset_secs;
                let tomorrow = DayKey(self.state.rocket.day_key.0 + 1);
                batch.timers.push(Timer {
                    timer_id: format!("{room}:rocket-reset"),
                    room_id: room.clone(),
                    due_at: tomorrow.start(offset),
                    command: CommandKind::ResetRocket,
                });
            }
            Event::RoomRocketLaunched {
                rocket_id, rewards, ..
            } => {
                for reward in rewards {
                    batch.payouts.push(Payout {
                        op_id: format!("{room}:rocket:{}:{}", rocket_id.0, reward.user),
                        kind: CreditKind::RocketReward,
                        user: reward.user.clone(),
                        amount: reward.coins,
                        room_id: room.clone(),
                    });
                }
            }
            _ => {}
        }
    }
}

/// A planned batch: the commit to write, the display events to hand over once it is
/// written, and each command's outcome.
pub(super) struct Plan {
    pub(super) batch: CommitBatch,
    pub(super) display: Vec<DisplayMessage>,
    pub(super) outcomes: Vec<Outcome>,
}

/// How one command of a batch is answered.
pub(super) enum Outcome {
    /// With this result.
    Done(Result<Arc<CommandReply>>),
    /// A repeat, within the batch, of the command at this index.
    SameAs(usize),
}

/// Whether `timer` is the room's daily rocket reset.
pub(super) fn is_rocket_reset(timer: &Timer) -> bool {
    matches!(timer.command, CommandKind::ResetRocket)
}

/// Keeps the last timer of each id.
fn dedup_timers(timers: &mut Vec<Timer>) {
    if timers.len() < 2 {
        return;
    }
    let mut seen = std::collections::HashSet::new();
    let mut kept: Vec<Timer> = timers
        .drain(..)
        .rev()
        .filter(|t| seen.insert(t.timer_id.clone()))
        .collect();
    kept.reverse();
    *timers = kept;
}

/// The room as the directory shows it; `None` while it has no owner (not created).
fn summary_of(state: &RoomState) -> Option<RoomSummary> {
    Some(RoomSummary {
        room_id: state.room_id.clone(),
        owner: state.owner.clone()?,
        name: state.profile.name.clone(),
        open: state.status == RoomStatus::Open,
        heat: state.heat,
        online: u32::try_from(state.members.len()).unwrap_or(u32::MAX),
        locked: state.settings.lock.is_some(),
        version: state.version,
        region: state.settings.region.clone(),
        cover_url: state.profile.cover_url.clone(),
        seats_taken: u32::try_from(state.seats.iter().filter(|s| s.occupant.is_some()).count())
            .unwrap_or(u32::MAX),
        created_at: state.created_at,
        recent_heat_milli: 0,
        recent_heat_at: room_domain::Timestamp(0),
    })
}

/// Whether a paid gift comes with the order that debited it: an `ApplyGift` is applied only
/// with its gift order, of this room, still awaiting it, whose gift it is. The commit then
/// records the order APPLIED in the same transaction, and
/// every store refuses it unless that order is stored and still awaits its room, so no gift is
/// applied that nobody paid for. Every other command needs no order, and carries none.
fn carries_its_order(room_id: &room_domain::RoomId, request: &CommandRequest) -> bool {
    match (&request.command.kind, &request.order) {
        (CommandKind::ApplyGift(gift), Some(order)) => {
            &order.room_id == room_id && order.awaits_room() && order.apply_command() == *gift
        }
        (CommandKind::ApplyGift(_), None) => false,
        (_, order) => order.is_none(),
    }
}
