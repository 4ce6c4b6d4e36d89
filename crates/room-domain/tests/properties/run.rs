//! Running a case: the live room, its log and the copies rebuilt from JSON; each step decided
//! twice and on an equal state, applied, replayed and snapshotted, with every property checked.

use std::cell::RefCell;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use room_domain::{
    Actor, ApplyGift, Coins, Command, CommandId, CommandKind, Ctx, DayKey, Event, EventEnvelope,
    GiftBroadcast, GiftId, GiftSnapshot, OrderId, PasswordHash, Rejection, RobotGift, RocketId,
    RocketStatus, RoomId, RoomResource, RoomState, SeatIndex, SeatSessionId, Snapshot, Timestamp,
    UserId, VipPrivileges, VipStanding, decide, evolve, evolve_all,
};

use crate::checks::{check_effects, check_events};
use crate::coverage::{Coverage, kind_name};
use crate::pool::{Pool, fitting_actor, recipients_of, resolve_seat};
use crate::scenario::{
    Advance, EPOCH, GiftActor, LaunchOp, OWNER, Op, Recipients, Scenario, SeatPick, Step, Target,
    Tweak,
};

/// The live room, its log, and the copies rebuilt from JSON that must stay equal to it.
pub struct Run<'a> {
    scenario: &'a Scenario,
    pool: Pool,
    now: Timestamp,
    state: RoomState,
    /// Every accepted event, in order.
    log: Vec<Event>,
    /// Built only from events decoded from their JSON.
    from_json: RoomState,
    /// Restored from the newest JSON snapshot, then fed the events after it.
    restored: RoomState,
    coverage: &'a RefCell<Coverage>,
}

pub fn run_scenario(
    scenario: &Scenario,
    coverage: &RefCell<Coverage>,
) -> Result<(), TestCaseError> {
    prop_assert_eq!(scenario.rules.validate(), Ok(()));
    let pool = Pool::new(scenario.vip_levels);
    let room_id = pool.room_id.clone();
    let mut run = Run {
        scenario,
        pool,
        now: Timestamp(EPOCH + scenario.start),
        state: RoomState::new(room_id.clone()),
        log: Vec::new(),
        from_json: RoomState::new(room_id.clone()),
        restored: RoomState::new(room_id),
        coverage,
    };
    if scenario.create_first {
        let create = CommandKind::CreateRoom {
            name: "Night talk".into(),
            seat_count: scenario.seat_count,
            region: "sg".into(),
        };
        let owner = run.pool.actors[OWNER].clone();
        let events = run.apply(
            Command::new(CommandId::new("c-create").unwrap(), create),
            &owner,
            0,
        )?;
        prop_assert!(events.is_some(), "the owner could not create the room");
    }
    for (i, &joiner) in scenario.joiners.iter().enumerate() {
        let join = CommandKind::Join {
            password_verified: false,
            verified_lock: None,
        };
        let actor = run.pool.actors[joiner].clone();
        run.apply(
            Command::new(CommandId::new(format!("c-join-{i}")).unwrap(), join),
            &actor,
            0,
        )?;
    }
    for (i, step) in scenario.steps.iter().enumerate() {
        run.step(i, step)?;
    }
    // Once more, from scratch, with the library's own fold.
    let mut replayed = RoomState::new(run.state.room_id.clone());
    evolve_all(&mut replayed, &run.log);
    prop_assert_eq!(&replayed, &run.state);
    Ok(())
}

impl Run<'_> {
    fn step(&mut self, i: usize, step: &Step) -> Result<(), TestCaseError> {
        self.now = match step.advance {
            Advance::Millis(ms) => Timestamp(self.now.0 + ms),
            Advance::Back(ms) => Timestamp(self.now.0 - ms),
            Advance::BackOverMidnight(ms) => {
                let offset = self.scenario.rules.day_utc_offset_secs;
                Timestamp(self.now.day_key(offset).start(offset).0 - ms)
            }
            Advance::NextDay(ms) => {
                let offset = self.scenario.rules.day_utc_offset_secs;
                let day = self.now.day_key(offset);
                Timestamp(DayKey(day.0 + 1).start(offset).0 + ms)
            }
        };
        let (kind, actor) = self.command_of(i, step);
        let command_id = match &kind {
            CommandKind::ApplyGift(gift) => CommandId::from(gift.order_id.clone()),
            _ => CommandId::new(format!("c-{i}")).unwrap(),
        };
        // A taker of VIP level 3 or more has seat priority.
        let vip = match (&kind, &actor) {
            (CommandKind::TakeSeat { .. }, Actor::User(user)) if user.vip_level >= 3 => {
                Some(VipStanding {
                    level: user.vip_level,
                    privileges: VipPrivileges {
                        seat_priority: true,
                        ..VipPrivileges::default()
                    },
                })
            }
            _ => None,
        };
        self.apply(
            Command::new(command_id, kind).with_vip(vip),
            &actor,
            step.random,
        )?;

        if step.snapshot {
            let json = serde_json::to_string(&Snapshot::new(self.state.clone())).unwrap();
            let snapshot: Snapshot = serde_json::from_str(&json).unwrap();
            self.restored = snapshot.into_state().unwrap();
            self.coverage.borrow_mut().snapshot_restores += 1;
        }
        Ok(())
    }

    /// Builds the step's command, reading the state where the command names something current
    /// (a member, a seat session, an ignition), and moves time forward where the step waits for
    /// a timer.
    fn command_of(&mut self, i: usize, step: &Step) -> (CommandKind, Actor) {
        let pool = &self.pool;
        let state = &self.state;
        let who = if step.fitting_actor {
            fitting_actor(step.actor, &step.op)
        } else {
            step.actor
        };
        let mut actor = pool.actor(who, state);
        let resolve = |target: &Target| pool.user(*target, state);
        let seat = |pick: &SeatPick| SeatIndex(resolve_seat(*pick, state, &actor));
        let kind = match &step.op {
            Op::CreateRoom {
                name,
                seat_count,
                region,
            } => CommandKind::CreateRoom {
                name: name.clone(),
                seat_count: *seat_count,
                region: region.clone(),
            },
            Op::UpdateProfile {
                name,
                notice,
                cover_url,
            } => CommandKind::UpdateProfile {
                name: name.clone(),
                notice: notice.clone(),
                cover_url: cover_url.clone(),
            },
            Op::ChangeBackground(background_url) => CommandKind::ChangeBackground {
                background_url: background_url.clone(),
            },
            Op::Revoke {
                resources,
                blank_reason,
            } => CommandKind::RevokeResources {
                resources: [
                    RoomResource::Name,
                    RoomResource::Notice,
                    RoomResource::Cover,
                    RoomResource::Background,
                ]
                .into_iter()
                .enumerate()
                .filter(|(bit, _)| resources & (1 << bit) != 0)
                .map(|(_, resource)| resource)
                .collect(),
                reason: if *blank_reason { " " } else { "spam" }.to_owned(),
            },
            Op::SystemMessage { blank } => CommandKind::SystemMessage {
                text: if *blank { "\n " } else { "Welcome" }.to_owned(),
            },
            Op::SetChatEnabled(enabled) => CommandKind::SetChatEnabled { enabled: *enabled },
            Op::SetLock(hash) => CommandKind::SetLock {
                password_hash: hash.map(|h| PasswordHash(format!("argon2id$salt${h}"))),
            },
            Op::CloseRoom => CommandKind::CloseRoom,
            Op::Join { password_verified } => CommandKind::Join {
                password_verified: *password_verified,
                verified_lock: None,
            },
            Op::Leave => CommandKind::Leave,
            Op::Evict(u) => CommandKind::Evict {
                user: resolve(u),
                seen: None,
            },
            Op::TakeSeat(pick) => CommandKind::TakeSeat { seat: seat(pick) },
            Op::SetSeatVip(pick, vip_only) => CommandKind::SetSeatVip {
                seat: seat(pick),
                vip_only: *vip_only,
            },
            Op::Invite(target, pick) => CommandKind::Invite {
                user: resolve(target),
                seat: pick.as_ref().map(seat),
            },
            Op::GiftBroadcast => CommandKind::ShowGiftBroadcast(GiftBroadcast {
                from_room: RoomId::new("room-far").unwrap(),
                sender: UserId::new("far-sender").unwrap(),
                sender_nickname: None,
                sender_avatar_url: None,
                gift_id: GiftId::new("castle").unwrap(),
                count: 1,
                total_value: Coins(50_000),
            }),
            Op::LeaveSeat(pick) => CommandKind::LeaveSeat { seat: seat(pick) },
            Op::LockSeat(pick, locked) => CommandKind::LockSeat {
                seat: seat(pick),
                locked: *locked,
            },
            Op::MuteSeat(pick, muted) => CommandKind::MuteSeat {
                seat: seat(pick),
                muted: *muted,
            },
            Op::RemoveFromSeat(pick) => CommandKind::RemoveFromSeat { seat: seat(pick) },
            Op::ConfirmMicPublish(u) => CommandKind::ConfirmMicPublish {
                user: resolve(u),
                at: None,
            },
            Op::MicPublishTimeout {
                pick,
                current_session,
                wait,
                session,
            } => {
                let index = seat(pick);
                let occupant = state.seat(index).and_then(|s| s.occupant.as_ref());
                match occupant {
                    Some(occupant) if *current_session => {
                        if let (true, Some(deadline)) = (*wait, occupant.publish_deadline) {
                            self.now = self.now.max(deadline);
                        }
                        CommandKind::MicPublishTimeout {
                            seat: index,
                            session: occupant.session,
                        }
                    }
                    _ => CommandKind::MicPublishTimeout {
                        seat: index,
                        session: SeatSessionId(*session),
                    },
                }
            }
            Op::RtcUserLeft(u) => CommandKind::RtcUserLeft {
                user: resolve(u),
                at: None,
            },
            Op::Kick { user, ban_seconds } => CommandKind::Kick {
                user: resolve(user),
                ban_seconds: *ban_seconds,
            },
            Op::Unban(u) => CommandKind::Unban { user: resolve(u) },
            Op::ChatMute { user, seconds } => CommandKind::ChatMute {
                user: resolve(user),
                seconds: *seconds,
            },
            Op::SetAdmin { user, admin } => CommandKind::SetAdmin {
                user: resolve(user),
                admin: *admin,
            },
            Op::RobotJoin => CommandKind::Join {
                password_verified: false,
                verified_lock: None,
            },
            Op::RobotLeave => CommandKind::Leave,
            Op::RobotGift(gift) => CommandKind::RobotGift(RobotGift {
                recipients: {
                    let mut recipients = recipients_of(&gift.recipients, state, pool);
                    // Mostly to others: the robot's members are few, and a gift to oneself is
                    // refused (listed recipients still name the robot now and then).
                    if matches!(gift.recipients, Recipients::Members { .. }) && recipients.len() > 1
                    {
                        recipients.retain(|user| Some(user) != actor.user_id());
                    }
                    recipients
                },
                gift: GiftSnapshot {
                    gift_id: GiftId::new(gift.gift_id).unwrap(),
                    price: Coins(gift.price),
                    heat: gift.heat,
                    fuel: gift.fuel,
                    lucky: gift.lucky,
                    billing_version: None,
                },
                count: gift.count,
            }),
            Op::Gift(gift) => {
                let sender = resolve(&gift.sender);
                if step.fitting_actor {
                    actor = match gift.by {
                        GiftActor::System => Actor::System,
                        GiftActor::Sender => pool.actor_of(&sender),
                    };
                }
                CommandKind::ApplyGift(ApplyGift {
                    order_id: OrderId::new(format!("o-{i}")).unwrap(),
                    sender,
                    recipients: recipients_of(&gift.recipients, state, pool),
                    gift: GiftSnapshot {
                        gift_id: GiftId::new(gift.gift_id).unwrap(),
                        price: Coins(gift.price),
                        heat: gift.heat,
                        fuel: gift.fuel,
                        lucky: gift.lucky,
                        billing_version: None,
                    },
                    count: gift.count,
                    lucky_draw: gift.lucky_draw,
                    scope: None,
                })
            }
            Op::Launch(launch) => {
                let rocket = &state.rocket;
                match (*launch, rocket.status) {
                    (
                        LaunchOp::Current { wait, tweak },
                        RocketStatus::Ignited {
                            rocket_id,
                            launch_at,
                            ..
                        },
                    ) => {
                        if wait {
                            self.now = self.now.max(launch_at);
                        }
                        let (mut rocket_id, mut level, mut scheduled_at) =
                            (rocket_id, rocket.level, launch_at);
                        match tweak {
                            Tweak::None => {}
                            Tweak::RocketId => rocket_id = RocketId(rocket_id.0 + 1),
                            Tweak::Level => level += 1,
                            Tweak::ScheduledAt => scheduled_at = Timestamp(scheduled_at.0 - 1),
                        }
                        CommandKind::LaunchRocket {
                            rocket_id,
                            level,
                            scheduled_at,
                        }
                    }
                    // No ignition to aim at: the last rocket's id and the current level.
                    (LaunchOp::Current { .. }, _) => CommandKind::LaunchRocket {
                        rocket_id: RocketId(rocket.next_rocket_id.0.saturating_sub(1)),
                        level: rocket.level,
                        scheduled_at: self.now,
                    },
                    (
                        LaunchOp::Arbitrary {
                            rocket_id,
                            level,
                            scheduled_in,
                        },
                        _,
                    ) => CommandKind::LaunchRocket {
                        rocket_id: RocketId(rocket_id),
                        level,
                        scheduled_at: Timestamp(self.now.0 + scheduled_in),
                    },
                }
            }
            Op::ResetRocket => CommandKind::ResetRocket,
        };
        (kind, actor)
    }

    /// Decides and applies one command, checking every property on the way. Returns the
    /// events if the command was accepted.
    fn apply(
        &mut self,
        command: Command,
        actor: &Actor,
        random: u64,
    ) -> Result<Option<Vec<Event>>, TestCaseError> {
        let rules = &self.scenario.rules;
        let ctx = Ctx {
            now: self.now,
            actor,
            random,
            rules,
        };
        let before = self.state.clone();
        let outcome = decide(&self.state, &command, &ctx);
        prop_assert_eq!(
            &decide(&self.state, &command, &ctx),
            &outcome,
            "decide is not deterministic"
        );
        prop_assert_eq!(&self.state, &before, "decide changed the state");

        // The same values, built apart (decoded from JSON), give the same answer too.
        let command_json = serde_json::to_string(&command).unwrap();
        let decoded: Command = serde_json::from_str(&command_json).unwrap();
        prop_assert_eq!(&decoded, &command);
        prop_assert_eq!(
            &decide(&self.from_json, &decoded, &ctx),
            &outcome,
            "decide differs on an equal state"
        );

        let name = kind_name(&command.kind);
        let accepted = match outcome {
            Err(rejection) => {
                let mut coverage = self.coverage.borrow_mut();
                *coverage.rejected.entry(name).or_default() += 1;
                *coverage
                    .rejection_codes
                    .entry(rejection.code())
                    .or_default() += 1;
                drop(coverage);
                let json = serde_json::to_string(&rejection).unwrap();
                prop_assert_eq!(
                    &serde_json::from_str::<Rejection>(&json).unwrap(),
                    &rejection
                );
                None
            }
            Ok(events) => {
                *self.coverage.borrow_mut().accepted.entry(name).or_default() += 1;
                check_events(self.coverage, &before, &command, &ctx, &events)?;
                for event in &events {
                    evolve(&mut self.state, event);
                    *self
                        .coverage
                        .borrow_mut()
                        .events
                        .entry(event.type_name())
                        .or_default() += 1;
                    self.check_json(event)?;
                    evolve(&mut self.restored, event);
                    self.log.push(event.clone());
                }
                prop_assert_eq!(
                    self.state.version,
                    before.version + events.len() as u64,
                    "the version did not advance by the number of events"
                );
                check_effects(
                    self.coverage,
                    &self.pool.users,
                    &before,
                    &self.state,
                    &command,
                    &ctx,
                    &events,
                )?;
                Some(events)
            }
        };

        if let Err(violation) = self.state.check_invariants(self.now) {
            return Err(TestCaseError::fail(format!(
                "invariant broken after {command:?}: {violation}"
            )));
        }
        // Replay: the log folded onto a new room, events decoded from JSON, and the newest
        // snapshot plus the events after it all give the live state.
        let mut replayed = RoomState::new(self.state.room_id.clone());
        for event in &self.log {
            evolve(&mut replayed, event);
        }
        prop_assert_eq!(
            &replayed,
            &self.state,
            "fold(events) differs from the state"
        );
        prop_assert_eq!(
            &self.from_json,
            &self.state,
            "replaying JSON events differs"
        );
        prop_assert_eq!(&self.restored, &self.state, "snapshot + tail differs");

        let json = serde_json::to_string(&Snapshot::new(self.state.clone())).unwrap();
        let decoded: Snapshot = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(decoded.into_state().unwrap(), self.state.clone());
        Ok(accepted)
    }

    /// Each event survives JSON alone and in its envelope; the envelope is redacted.
    fn check_json(&mut self, event: &Event) -> Result<(), TestCaseError> {
        let json = serde_json::to_string(event).unwrap();
        let decoded: Event = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(&decoded, event);
        evolve(&mut self.from_json, &decoded);

        let seq = self.state.version;
        let envelope = EventEnvelope::new(self.state.room_id.clone(), seq, self.now, event);
        let redacted = event.redacted();
        prop_assert_eq!(&envelope.event, redacted.as_ref());
        prop_assert_eq!(&envelope.event_id, &format!("room-prop:{seq}"));
        let json = serde_json::to_string(&envelope).unwrap();
        prop_assert!(
            !json.contains("argon2id"),
            "a password hash left the room: {json}"
        );
        prop_assert_eq!(
            &serde_json::from_str::<EventEnvelope>(&json).unwrap(),
            &envelope
        );
        Ok(())
    }
}
