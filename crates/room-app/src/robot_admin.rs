//! Robot-room administration, the use case behind the platform admins' robot rooms: create a
//! robot room (an ordinary room, created by the pool's first robot through the room's own
//! commands, plus its configuration), change its configuration (and the profile the room
//! shows), delete it, read and list configurations.
//!
//! [`RobotRoomAdmin`] takes typed input ([`CreateRobotRoom`], [`PatchRobotRoom`]) and answers
//! a [`RobotRoom`] or a typed refusal ([`RobotAdminError`]); a front end parses its request
//! into the input and maps the answer. The rules are [`RobotRoomConfig::validate`]'s, plus
//! the numbers a request may ask for (seat count, region, seats), the catalog (every gift of
//! the mix there and enabled) and the other rooms' pools (a robot is in one room at a time: the
//! store's unique key on the robot decides, when the configuration is written).

mod checks;
mod content;
mod input;
mod keys;
mod refusal;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;

use room_domain::{RoomId, RoomStatus, UserActor};

pub use input::{CreateRobotRoom, PatchRobotRoom, ProfileInput, ProfilePatch};
pub use refusal::{ExistsReason, RobotAdminError};

use crate::Error;
use crate::ports::{RobotRoomConfig, RobotRoomsRef};
use crate::service::{RoomPatch, RoomService};
use checks::{
    check_config, check_pool, check_region, is_room_of, problem, seat_count_of, seats_of, shows,
    taken,
};
use content::same_content;
use keys::{creation_key, profile_key};

/// The result type of robot-room administration.
pub type AdminResult<T> = Result<T, RobotAdminError>;

/// A robot room's configuration, with the node running the room.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RobotRoom {
    /// The configuration as stored.
    pub config: RobotRoomConfig,
    /// The id of the node running the room ([`CellRuntime::running_on`]), if any.
    ///
    /// [`CellRuntime::running_on`]: crate::CellRuntime::running_on
    pub running_on: Option<String>,
}

/// A page of robot rooms, by room id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RobotRoomPage {
    /// The robot rooms.
    pub robot_rooms: Vec<RobotRoom>,
    /// The room to list after for the next page; `None` on the last page.
    pub next_cursor: Option<RoomId>,
}

/// The robot-room administration use case, over the room service and the robot room
/// configurations.
#[derive(Clone)]
pub struct RobotRoomAdmin {
    service: Arc<RoomService>,
    configs: RobotRoomsRef,
    /// The user-id prefix that marks robots.
    id_prefix: String,
}

impl RobotRoomAdmin {
    /// The use case over `service`, the stored configurations, and the prefix robot ids
    /// start with.
    pub fn new(
        service: Arc<RoomService>,
        configs: RobotRoomsRef,
        robot_id_prefix: impl Into<String>,
    ) -> Self {
        RobotRoomAdmin {
            service,
            configs,
            id_prefix: robot_id_prefix.into(),
        }
    }

    /// Creates a robot room: an ordinary room, created by the pool's first robot (its owner)
    /// through the room's own commands, and its configuration.
    ///
    /// Idempotent: the room id comes from the client's key (scoped to the admin), or without
    /// one from the request's content. The room is looked up first, and before anything is
    /// written it must be open and be what the request asks for (name, seat count, region,
    /// owner), and any configuration it has must say what the request says; else
    /// [`RobotAdminError::Exists`]. So a retry after a retryable error (the room was created,
    /// its configuration not yet stored: [`RobotAdminError::ConfigNotStored`]) finishes the
    /// same room and answers its configuration, however long after.
    ///
    /// What remains: a room, once made, is what its key or content names for good. After its
    /// room is closed, the same key or content is refused as [`RobotAdminError::Exists`];
    /// after a [`delete`](Self::delete) of the configuration, the same request configures the
    /// same room again while it is open.
    #[tracing::instrument(skip_all, err(level = "debug"))]
    pub async fn create(&self, request: CreateRobotRoom) -> AdminResult<RobotRoom> {
        let CreateRobotRoom {
            admin,
            idempotency_key,
            profile,
            seat_count,
            region,
            robots,
            audience,
            seats,
            gift_rate_per_minute,
            gift_mix,
            enabled,
        } = request;
        let seat_count = seat_count_of(
            seat_count,
            self.service.runtime().rules().default_seat_count,
        )?;
        check_region(&region)?;
        let now = self.service.ports().clock.now();
        let mut config = RobotRoomConfig {
            // Replaced by the room's id; a placeholder the checks do not look at.
            room_id: RoomId::new("pending").map_err(Error::corrupt)?,
            profile: input::profile_of(profile.name, profile.notice, profile.cover_url),
            seat_count,
            robots,
            audience,
            seats: seats_of(seats)?,
            gift_rate_per_minute,
            gift_mix,
            enabled,
            version: 1,
            created_at: now,
            updated_at: now,
        };
        check_config(&self.service, &self.id_prefix, &config).await?;

        let key = creation_key(&admin, idempotency_key.as_deref(), &config, &region)?;
        let owner = UserActor {
            user_id: config.robots[0].clone(),
            vip_level: 0,
            platform_admin: false,
        };
        let room_id = key.room_id(&owner.user_id)?;
        check_pool(&self.configs, &room_id, &config.robots).await?;
        // The cover is claimed before the room is made: another open room's cover is refused
        // with nothing written (a claim left by a request that fails later is taken over
        // once its grace passed, or claimed again by the request's repeat).
        let claim = match &config.profile.cover_url {
            Some(cover) => Some((
                cover.clone(),
                self.service.claim_cover(&room_id, cover).await?,
            )),
            None => None,
        };
        let made: AdminResult<RobotRoom> = async {
            let exists = |why| RobotAdminError::Exists {
                room_id: room_id.clone(),
                why,
            };
            // Looked up before it is created: a repeat must not count on the creation command
            // answering again (the command log forgets old commands, and the room then refuses a
            // second creation), and a room made before is reused only while it is open.
            let room = match self.service.get_room(&room_id).await {
                Ok(room) => room,
                Err(Error::Rejected(room_domain::Rejection::RoomNotFound)) => self
                    .service
                    .create_room(
                        &owner,
                        config.profile.name.clone(),
                        Some(seat_count),
                        region.clone(),
                        Some(&key),
                    )
                    .await
                    .map_err(|error| match error {
                        // A concurrent repeat won, long ago by the command log's measure, or the
                        // room was closed meanwhile.
                        Error::Rejected(
                            room_domain::Rejection::RoomAlreadyExists
                            | room_domain::Rejection::RoomClosed,
                        ) => exists(ExistsReason::CreatedOrClosedMeanwhile),
                        other => other.into(),
                    })?,
                Err(other) => return Err(other.into()),
            };
            // Nothing is written into a room that is not the one this request asks for.
            if !is_room_of(&room, &config, &region) {
                return Err(if room.status == RoomStatus::Open {
                    exists(ExistsReason::OtherRoom)
                } else {
                    exists(ExistsReason::Closed)
                });
            }
            config.room_id = room.room_id.clone();
            if let Some(stored) = self.configs.get(&config.room_id).await? {
                if !same_content(&stored, &config) {
                    return Err(exists(ExistsReason::ConfiguredOtherwise));
                }
                return self.with_node(stored).await;
            }
            if !shows(&room, &config.profile) {
                self.service
                    .update_room(
                        &owner,
                        &config.room_id,
                        RoomPatch {
                            notice: Some(config.profile.notice.clone()),
                            cover_url: Some(config.profile.cover_url.clone().unwrap_or_default()),
                            ..RoomPatch::default()
                        },
                        Some(&key),
                    )
                    .await
                    .map_err(|error| match error {
                        Error::Rejected(room_domain::Rejection::RoomClosed) => {
                            exists(ExistsReason::ClosedMeanwhile)
                        }
                        other => other.into(),
                    })?;
            }
            let stored = match self.configs.create(&config).await {
                Ok(()) => config,
                // Another creation or change claimed the robot since the early check: the room
                // stays, unconfigured, and the same request configures it once the robot is free.
                Err(Error::RobotTaken { robot, room_id }) => {
                    return Err(taken(&config.robots, &robot, &room_id));
                }
                Err(Error::AlreadyExists(_)) => {
                    let stored = self
                        .configs
                        .get(&config.room_id)
                        .await?
                        .ok_or_else(|| Error::unavailable("the robot room was just deleted"))?;
                    if !same_content(&stored, &config) {
                        return Err(exists(ExistsReason::ConfiguredOtherwise));
                    }
                    stored
                }
                Err(error) => return Err(RobotAdminError::ConfigNotStored(error)),
            };
            self.with_node(stored).await
        }
        .await;
        // Refused as another room's: the claim made for it goes, unless the room of this id
        // shows the cover itself (its own claim was renewed, and stays).
        if let (Err(RobotAdminError::Exists { .. }), Some((cover, claim))) = (&made, &claim)
            && let Ok(room) = self.service.get_room(&room_id).await
            && room.cover_url.as_ref() != Some(cover)
        {
            self.service.release_cover(cover, claim).await;
        }
        made
    }

    /// Changes a robot room's configuration: absent fields stay, and the result is checked as
    /// a whole. A changed profile is applied to the room as well, by its owner.
    ///
    /// The configuration is stored first, conditionally on its version: a change that loses a
    /// race writes nothing anywhere ([`RobotAdminError::Changed`]). The room then gets the
    /// profile under ids derived from the new version, so a retry converges: a change already
    /// in effect answers the configuration (whatever `version` says) and finishes showing its
    /// profile in the room.
    #[tracing::instrument(skip_all, fields(room_id = %request.room_id), err(level = "debug"))]
    pub async fn patch(&self, request: PatchRobotRoom) -> AdminResult<RobotRoom> {
        let PatchRobotRoom {
            room_id,
            profile,
            robots,
            audience,
            seats,
            gift_rate_per_minute,
            gift_mix,
            enabled,
            version,
        } = request;
        if version == Some(0) {
            return Err(problem("version", "versions start at 1"));
        }
        let stored = self
            .configs
            .get(&room_id)
            .await?
            .ok_or_else(|| RobotAdminError::NotFound(room_id.clone()))?;
        let mut config = stored.clone();
        if let Some(profile) = profile {
            config.profile = input::patched_profile(config.profile, profile);
        }
        if let Some(robots) = robots {
            config.robots = robots;
        }
        if let Some(audience) = audience {
            config.audience = audience;
        }
        if let Some(seats) = seats {
            config.seats = seats_of(seats)?;
        }
        if let Some(rate) = gift_rate_per_minute {
            config.gift_rate_per_minute = rate;
        }
        if let Some(enabled) = enabled {
            config.enabled = enabled;
        }
        if let Some(mix) = gift_mix {
            config.gift_mix = mix;
        }
        check_config(&self.service, &self.id_prefix, &config).await?;
        if same_content(&config, &stored) {
            // In effect already, perhaps by a first attempt of this very request that stored
            // the configuration and then failed to reach the room: finish that.
            self.show_profile(&room_id).await?;
            return self.with_node(stored).await;
        }
        if version.is_some_and(|v| v != stored.version) {
            return Err(RobotAdminError::Changed(room_id));
        }
        let profile_changed = config.profile != stored.profile;
        if profile_changed {
            // Refused before anything is written: a closed room shows no new profile.
            let room = self.service.get_room(&room_id).await?;
            if room.status != RoomStatus::Open {
                return Err(RobotAdminError::RoomClosed(room_id));
            }
        }
        // A new cover is claimed before anything is written: another open room's cover is
        // refused with the configuration unchanged.
        let claim = match config
            .profile
            .cover_url
            .clone()
            .filter(|cover| profile_changed && stored.profile.cover_url.as_ref() != Some(cover))
        {
            Some(cover) => {
                let claim = self.service.claim_cover(&room_id, &cover).await?;
                Some((cover, claim))
            }
            None => None,
        };
        config.version = stored.version + 1;
        config.updated_at = self.service.ports().clock.now();
        // The configuration first: if it lost a race, nothing was written to the room either.
        let updated = self.configs.update(&config, stored.version).await;
        // Refused for sure: the room will not show the cover for this change. (A claim the
        // winner of a race renewed since is not this one, and stays.)
        if let (
            Err(Error::Conflict(_) | Error::NotFound(_) | Error::RobotTaken { .. }),
            Some((cover, claim)),
        ) = (&updated, &claim)
        {
            self.service.release_cover(cover, claim).await;
        }
        updated.map_err(|error| match error {
            Error::Conflict(_) => RobotAdminError::Changed(room_id.clone()),
            Error::NotFound(_) => RobotAdminError::NotFound(room_id.clone()),
            Error::RobotTaken { robot, room_id } => taken(&config.robots, &robot, &room_id),
            other => other.into(),
        })?;
        if profile_changed {
            self.show_profile(&room_id)
                .await
                .map_err(|error| match error {
                    RobotAdminError::Service(error) => RobotAdminError::ProfileNotShown(error),
                    other => other,
                })?;
        }
        self.with_node(config).await
    }

    /// Deletes a robot room's configuration; the room itself stays, an ordinary room. A
    /// repeat is refused as [`RobotAdminError::NotFound`].
    #[tracing::instrument(skip_all, fields(room_id = %room_id), err(level = "debug"))]
    pub async fn delete(&self, room_id: &RoomId) -> AdminResult<()> {
        if self.configs.delete(room_id).await? {
            Ok(())
        } else {
            Err(RobotAdminError::NotFound(room_id.clone()))
        }
    }

    /// A robot room's configuration, with the node running it.
    pub async fn get(&self, room_id: &RoomId) -> AdminResult<RobotRoom> {
        let config = self
            .configs
            .get(room_id)
            .await?
            .ok_or_else(|| RobotAdminError::NotFound(room_id.clone()))?;
        self.with_node(config).await
    }

    /// Robot rooms by room id, after `after` when given, at most `limit` (the caller bounds
    /// it), each with the node running it.
    pub async fn list(&self, after: Option<RoomId>, limit: u32) -> AdminResult<RobotRoomPage> {
        let configs = self.configs.list(after, limit).await?;
        let next_cursor = (configs.len() == limit as usize)
            .then(|| configs.last().map(|c| c.room_id.clone()))
            .flatten();
        // Concurrently: the caller bounds the page, which bounds the lookups.
        let robot_rooms = join_all(
            configs
                .into_iter()
                .map(|config| Box::pin(self.with_node(config))),
        )
        .await
        .into_iter()
        .collect::<AdminResult<Vec<_>>>()?;
        Ok(RobotRoomPage {
            robot_rooms,
            next_cursor,
        })
    }

    /// `config` with the node running its room.
    async fn with_node(&self, config: RobotRoomConfig) -> AdminResult<RobotRoom> {
        let running_on = self.service.runtime().running_on(&config.room_id).await?;
        Ok(RobotRoom { config, running_on })
    }

    /// Makes the room show the profile of its configuration as stored now, as its owner.
    /// Reading the configuration again, rather than applying the caller's, makes concurrent
    /// changes converge on the latest one (but for a change that reads the configuration
    /// before another is stored and reaches the room after it).
    async fn show_profile(&self, room_id: &RoomId) -> AdminResult<()> {
        let Some(config) = self.configs.get(room_id).await? else {
            // Deleted meanwhile: the room is an ordinary room now.
            return Ok(());
        };
        let room = self.service.get_room(room_id).await?;
        if shows(&room, &config.profile) {
            return Ok(());
        }
        let owner = match room.owner {
            Some(owner) if room.status == RoomStatus::Open => owner,
            _ => return Err(RobotAdminError::RoomClosed(room_id.clone())),
        };
        let owner = UserActor {
            user_id: owner,
            vip_level: 0,
            platform_admin: false,
        };
        self.service
            .update_room(
                &owner,
                room_id,
                RoomPatch {
                    name: Some(config.profile.name.clone()),
                    notice: Some(config.profile.notice.clone()),
                    cover_url: Some(config.profile.cover_url.clone().unwrap_or_default()),
                    ..RoomPatch::default()
                },
                Some(&profile_key(&config)?),
            )
            .await?;
        Ok(())
    }
}

/// Awaits every future of `futures` together; their outputs in their order.
async fn join_all<F: Future + Unpin>(futures: impl IntoIterator<Item = F>) -> Vec<F::Output> {
    let mut slots: Vec<(F, Option<F::Output>)> =
        futures.into_iter().map(|future| (future, None)).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (future, output) in &mut slots {
            if output.is_none() {
                match Pin::new(future).poll(cx) {
                    Poll::Ready(value) => *output = Some(value),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    slots.into_iter().filter_map(|(_, output)| output).collect()
}
