//! Commands by other actors and reads of a room's lists: seat and moderation commands of
//! users, commands of the system and of robots, the online list, bans and contribution ranks.

use std::sync::Arc;

use room_domain::{
    Actor, Command, CommandId, CommandKind, Periods, Rejection, RoomId, UserActor, UserId,
};

use super::idempotency::IdempotencyKey;
use super::room_service::RoomService;
use super::views::{BannedUser, OnlineUser, RankEntry, RankPeriod};
use crate::error::{Error, Result};
use crate::ports::{BoardId, BoardKind, BoardPeriod, CommandReply};

impl RoomService {
    /// Runs a seat or moderation command as the actor; with a key, under the id it gives. A
    /// kick clears the kicked user's current-room record if it names the room.
    pub async fn command(
        &self,
        actor: &UserActor,
        room_id: &RoomId,
        kind: CommandKind,
        key: Option<&IdempotencyKey>,
    ) -> Result<Arc<CommandReply>> {
        let kicked = match &kind {
            CommandKind::Kick { user, .. } => Some(user.clone()),
            _ => None,
        };
        let reply = self
            .run_keyed(room_id, Actor::User(actor.clone()), key, "command", kind)
            .await?;
        if let Some(kicked) = kicked {
            // The kicked user's record lets go of the room.
            self.settle_departure(room_id, &kicked).await;
        }
        Ok(reply)
    }

    /// Runs a command as the system (timers, RTC callbacks, presence).
    pub async fn system_command(
        &self,
        room_id: &RoomId,
        kind: CommandKind,
    ) -> Result<Arc<CommandReply>> {
        self.run(room_id, Actor::System, kind).await
    }

    /// Runs a command as the robot `robot` ([`Actor::Robot`]), for the robot orchestrator:
    /// through the runtime like any command (forwarded to the node that runs the room), under
    /// a fresh command id, so that it is in the room's log and snapshot. The room marks the
    /// robot's joins and leaves and accepts [`CommandKind::RobotGift`] from it alone; the API
    /// never acts as a robot.
    #[tracing::instrument(skip_all, fields(room_id = %room_id), err(level = "debug"))]
    pub async fn robot_command(
        &self,
        room_id: &RoomId,
        robot: &UserId,
        kind: CommandKind,
    ) -> Result<Arc<CommandReply>> {
        self.run(room_id, Actor::Robot(robot.clone()), kind).await
    }

    /// Runs a command as the system under `command_id`, for an outside event that may be
    /// delivered more than once (an RTC callback TRTC retries): every delivery names the same
    /// id, so a repeat gets the first answer and changes nothing, whatever the room did since.
    /// A first delivery that changed nothing (a rejection, a no-op) is not recorded, so it
    /// does not stop a later delivery from acting.
    pub async fn system_command_as(
        &self,
        room_id: &RoomId,
        command_id: CommandId,
        kind: CommandKind,
    ) -> Result<Arc<CommandReply>> {
        self.ensure_known(room_id).await?;
        self.runtime
            .execute(room_id, Command::new(command_id, kind), Actor::System, None)
            .await
    }

    /// Members present, by user id, after `cursor`.
    pub async fn online_users(
        &self,
        room_id: &RoomId,
        cursor: Option<UserId>,
        limit: u32,
    ) -> Result<Vec<OnlineUser>> {
        let mut users = self
            .read_open(room_id, move |state| {
                let range = match &cursor {
                    Some(after) => state.members.range::<UserId, _>((
                        std::ops::Bound::Excluded(after),
                        std::ops::Bound::Unbounded,
                    )),
                    None => state.members.range::<UserId, _>(..),
                };
                range
                    .take(limit as usize)
                    .map(|(user, member)| OnlineUser {
                        user_id: user.clone(),
                        role: member.role,
                        vip_level: member.vip_level,
                        joined_at: member.joined_at,
                        nickname: None,
                        avatar_url: None,
                    })
                    .collect::<Vec<_>>()
            })
            .await?;
        // Display fields at read time, through the cache, outside the room's cell.
        let ids: Vec<UserId> = users.iter().map(|u| u.user_id.clone()).collect();
        let mut displays = self.profiles.displays(&ids).await;
        for user in &mut users {
            if let Some(display) = displays.remove(&user.user_id) {
                user.nickname = display.nickname;
                user.avatar_url = display.avatar_url;
            }
        }
        Ok(users)
    }

    /// Bans in force; moderators only.
    pub async fn banned_users(
        &self,
        actor: &UserActor,
        room_id: &RoomId,
    ) -> Result<Vec<BannedUser>> {
        let now = self.ports.clock.now();
        let actor = actor.clone();
        self.read_open(room_id, move |state| {
            let moderator = actor.platform_admin
                || state.owner.as_ref() == Some(&actor.user_id)
                || state.admins.contains(&actor.user_id);
            if !moderator {
                return Err(Error::Rejected(Rejection::Forbidden));
            }
            Ok(state
                .bans
                .iter()
                .filter(|(_, until)| **until > now)
                .map(|(user, until)| BannedUser {
                    user_id: user.clone(),
                    until: *until,
                })
                .collect())
        })
        .await?
    }

    /// The top givers of the day or week in the zone `utc_offset_secs` east of UTC (the
    /// billing time zone): the room's board of senders ([`crate::boards`]), read from the
    /// boards' store, never from the room's cell.
    pub async fn contribution_rank(
        &self,
        room_id: &RoomId,
        period: RankPeriod,
        limit: u32,
        utc_offset_secs: i32,
    ) -> Result<Vec<RankEntry>> {
        let period = match period {
            RankPeriod::Day => BoardPeriod::Day,
            RankPeriod::Week => BoardPeriod::Week,
        };
        let board = BoardId::new(
            BoardKind::Senders,
            Some(room_id.clone()),
            period,
            &Periods::at(self.ports.clock.now(), utc_offset_secs),
        );
        let mut entries = self
            .ports
            .boards
            .board_page(&board, None, limit)
            .await?
            .into_iter()
            .map(|entry| {
                Ok(RankEntry {
                    user_id: UserId::new(&entry.subject).map_err(Error::corrupt)?,
                    coins: entry.score,
                    nickname: None,
                    avatar_url: None,
                })
            })
            .collect::<Result<Vec<RankEntry>>>()?;
        let ids: Vec<UserId> = entries.iter().map(|e| e.user_id.clone()).collect();
        let mut displays = self.profiles.displays(&ids).await;
        for entry in &mut entries {
            if let Some(display) = displays.remove(&entry.user_id) {
                entry.nickname = display.nickname;
                entry.avatar_url = display.avatar_url;
            }
        }
        Ok(entries)
    }
}
