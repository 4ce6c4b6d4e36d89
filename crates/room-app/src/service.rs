//! [`RoomService`]: the use cases the API and the workers call. Each one turns a request into
//! commands for the room's cell, or reads the cell's state or the directory.

use std::sync::Arc;

use room_domain::{
    Actor, Coins, Command, CommandId, CommandKind, Ctx, DayKey, PasswordHash, Rejection,
    RocketStatus, Role, RoomId, RoomState, RoomStatus, SeatIndex, Timestamp, UserActor, UserId,
    decide,
};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::cell::CellRuntime;
use crate::gifts::{GiftReceipt, GiftSaga, SendGift};
use crate::ports::{
    CatalogGift, ClockRef, CommandReply, CreditKind, GiftCatalogRef, IdGenRef, PasswordAttemptsRef,
    PresenceRef, RoomDirectoryRef, RoomSummary, WalletRef,
};
use crate::{Error, Result};

/// The ports the use cases need besides the runtime's.
#[derive(Clone)]
pub struct ServicePorts {
    /// Gift orders.
    pub orders: crate::ports::GiftOrdersRef,
    /// Balances.
    pub wallet: WalletRef,
    /// The gift catalog.
    pub catalog: GiftCatalogRef,
    /// Short ids and the room list.
    pub directory: RoomDirectoryRef,
    /// Heartbeats.
    pub presence: PresenceRef,
    /// Wrong room passwords, against brute force.
    pub attempts: PasswordAttemptsRef,
    /// Time.
    pub clock: ClockRef,
    /// Ids and random values.
    pub ids: IdGenRef,
}

/// The most one admin credit may give: a trillion coins. Balances grow only by such credits
/// and by what gifts pay back, so they stay far from the `i64` limit.
pub const MAX_ADMIN_CREDIT: i64 = 1_000_000_000_000;

/// The longest idempotency key, in characters.
pub const MAX_IDEMPOTENCY_KEY_CHARS: usize = 64;

/// A client's idempotency key for one request, scoped to the route it came on: the same key
/// on another route, or from another user, is another request.
///
/// A keyed request runs its room commands under ids derived from (user, route, key), so a
/// repeat gets the first answer from the cell (or from the command log) and changes nothing
/// more. A keyed room creation derives its room id the same way: a repeat answers the same
/// room.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey {
    route: String,
    key: String,
}

impl IdempotencyKey {
    /// The key `key` sent on `route` (say `"POST /v1/rooms/{room_id}/kick"`): 1 to
    /// [`MAX_IDEMPOTENCY_KEY_CHARS`] printable ASCII characters (space to `~`), else
    /// [`Error::Invalid`].
    pub fn new(route: impl Into<String>, key: &str) -> Result<Self> {
        let printable = key.bytes().all(|b| (b' '..=b'~').contains(&b));
        if key.is_empty() || key.len() > MAX_IDEMPOTENCY_KEY_CHARS || !printable {
            return Err(Error::Invalid(format!(
                "an idempotency key has 1 to {MAX_IDEMPOTENCY_KEY_CHARS} printable ASCII characters"
            )));
        }
        Ok(IdempotencyKey {
            route: route.into(),
            key: key.to_owned(),
        })
    }

    /// The key as the client sent it.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// 48 hex digits of SHA-256 over the user, the route, the key and `step` (which of the
    /// request's commands), each length-prefixed so that no two tuples hash the same input.
    fn digest(&self, user: &UserId, step: &str) -> String {
        let parts = [user.as_str(), &self.route, &self.key, step].map(str::as_bytes);
        crate::digest::hex(&crate::digest::length_prefixed_sha256(parts)[..24])
    }

    /// The id of the request's command `step`. Under the [`SYSTEM_ID_PREFIX`], which no
    /// client-chosen id may take.
    ///
    /// [`SYSTEM_ID_PREFIX`]: crate::SYSTEM_ID_PREFIX
    fn command_id(&self, user: &UserId, step: &str) -> Result<CommandId> {
        CommandId::new(format!(
            "{}key-{}",
            crate::SYSTEM_ID_PREFIX,
            self.digest(user, step)
        ))
        .map_err(Error::corrupt)
    }

    /// The id of the room a keyed creation by `user` makes: `rk` and 48 hex digits (generated
    /// room ids are hex digits after the `r`, so they never take this form). Public so that a
    /// caller can look the room up before it creates it.
    pub fn room_id(&self, user: &UserId) -> Result<RoomId> {
        RoomId::new(format!("rk{}", self.digest(user, "room"))).map_err(Error::corrupt)
    }
}

/// The room service's use cases.
pub struct RoomService {
    runtime: CellRuntime,
    ports: ServicePorts,
    gifts: GiftSaga,
    /// Rooms found created, so that requests for rooms other nodes run read nothing.
    known_rooms: crate::KnownRooms,
}

/// A room as clients see it. Never carries the password or its hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RoomView {
    /// The room.
    pub room_id: RoomId,
    /// Its short numeric id.
    pub short_id: Option<u32>,
    /// `open` or `closed`.
    pub status: RoomStatus,
    /// The owner.
    pub owner: Option<UserId>,
    /// Name.
    pub name: String,
    /// Notice board.
    pub notice: String,
    /// Cover image.
    pub cover_url: Option<String>,
    /// Background image.
    pub background_url: Option<String>,
    /// Whether public chat is on.
    pub chat_enabled: bool,
    /// Whether joining needs a password.
    pub locked: bool,
    /// Region code.
    pub region: String,
    /// The mic seats.
    pub seats: Vec<SeatView>,
    /// Members present.
    pub online_count: u32,
    /// Appointed admins.
    pub admins: Vec<UserId>,
    /// Popularity.
    pub heat: i64,
    /// The rocket.
    pub rocket: RocketView,
    /// The room's version.
    pub version: u64,
}

/// One seat as clients see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SeatView {
    /// Its index.
    pub index: SeatIndex,
    /// Its holder.
    pub user: Option<UserId>,
    /// Whether it is locked.
    pub locked: bool,
    /// Whether it is muted.
    pub muted: bool,
    /// Whether the holder's audio is confirmed by the RTC vendor.
    pub publishing: bool,
}

/// The rocket as clients see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RocketView {
    /// Level, from 1.
    pub level: u32,
    /// Fuel gathered.
    pub fuel: i64,
    /// Fuel the level needs.
    pub threshold: i64,
    /// `idle`, `ignited` or `launched`.
    pub status: &'static str,
    /// When an ignited rocket launches.
    pub launch_at: Option<Timestamp>,
}

/// A member as the online list shows them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OnlineUser {
    /// Who.
    pub user_id: UserId,
    /// Their role.
    pub role: Role,
    /// Their VIP level.
    pub vip_level: u8,
    /// When they joined.
    pub joined_at: Timestamp,
}

/// A ban as moderators see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BannedUser {
    /// Who.
    pub user_id: UserId,
    /// Until when.
    pub until: Timestamp,
}

/// One line of a contribution rank.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RankEntry {
    /// Who.
    pub user_id: UserId,
    /// Coins given in the period.
    pub coins: Coins,
}

/// The period of a contribution rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RankPeriod {
    /// Today (in the rules' zone).
    Day,
    /// This week, Monday to Sunday.
    Week,
}

/// What a profile update may change; absent fields stay.
#[derive(Debug, Clone, Default)]
pub struct RoomPatch {
    /// New name.
    pub name: Option<String>,
    /// New notice.
    pub notice: Option<String>,
    /// New cover URL (empty removes).
    pub cover_url: Option<String>,
    /// New background URL (empty removes).
    pub background_url: Option<String>,
    /// Chat on or off.
    pub chat_enabled: Option<bool>,
    /// `Some(Some(p))` locks with password `p`, `Some(None)` unlocks.
    pub password: Option<Option<String>>,
}

impl RoomService {
    /// The use cases over a runtime and ports.
    pub fn new(runtime: CellRuntime, ports: ServicePorts) -> Self {
        runtime.restore_presence_into(ports.presence.clone());
        let gifts = GiftSaga::new(
            runtime.clone(),
            ports.orders.clone(),
            ports.wallet.clone(),
            ports.catalog.clone(),
            ports.clock.clone(),
            ports.ids.clone(),
        );
        RoomService {
            runtime,
            ports,
            gifts,
            known_rooms: crate::KnownRooms::default(),
        }
    }

    /// The runtime (for shutdown and metrics).
    pub fn runtime(&self) -> &CellRuntime {
        &self.runtime
    }

    /// The gift saga (for recovery).
    pub fn gifts(&self) -> &GiftSaga {
        &self.gifts
    }

    /// The ports.
    pub fn ports(&self) -> &ServicePorts {
        &self.ports
    }

    async fn run(
        &self,
        room_id: &RoomId,
        actor: Actor,
        kind: CommandKind,
    ) -> Result<Arc<CommandReply>> {
        self.run_keyed(room_id, actor, None, "", kind).await
    }

    /// Runs `kind` under the id `key` gives step `step` of the actor's request, or under a
    /// fresh id without a key.
    async fn run_keyed(
        &self,
        room_id: &RoomId,
        actor: Actor,
        key: Option<&IdempotencyKey>,
        step: &str,
        kind: CommandKind,
    ) -> Result<Arc<CommandReply>> {
        if !matches!(kind, CommandKind::CreateRoom { .. }) {
            self.ensure_known(room_id).await?;
        }
        let command_id = match (key, actor.user_id()) {
            (Some(key), Some(user)) => key.command_id(user, step)?,
            _ => CommandId::new(self.ports.ids.next_id()).map_err(Error::corrupt)?,
        };
        self.runtime
            .execute(room_id, Command::new(command_id, kind), actor, None)
            .await
    }

    /// Refuses room ids that were never created, before they reach a cell: activating a cell
    /// writes to storage, and clients must not be able to create rows with made-up ids.
    async fn ensure_known(&self, room_id: &RoomId) -> Result<()> {
        if self.room_was_created(room_id).await? {
            Ok(())
        } else {
            Err(Error::Rejected(Rejection::RoomNotFound))
        }
    }

    /// Whether a room was ever created (it may be closed). Every created room reserved a short
    /// id first and keeps it for good, so an active cell proves it, and so does a room this
    /// node found before ([`KnownRooms`](crate::KnownRooms)); otherwise the directory says. A
    /// node that forwards a room's requests to its owner reads the directory once per room,
    /// not once per request.
    pub async fn room_was_created(&self, room_id: &RoomId) -> Result<bool> {
        if self.runtime.is_active(room_id) || self.known_rooms.contains(room_id) {
            return Ok(true);
        }
        let created = self.ports.directory.get_short_id(room_id).await?.is_some();
        if created {
            self.known_rooms.remember(room_id);
        }
        Ok(created)
    }

    /// Runs `read` in the room's cell, for known rooms only.
    async fn query<T, F>(&self, room_id: &RoomId, read: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&RoomState) -> T + Send + 'static,
    {
        self.ensure_known(room_id).await?;
        self.runtime.query(room_id, read).await
    }

    /// Creates a room owned by the actor, with a fresh room id and short id, and returns it.
    /// With a key, the room id comes from the key: a repeat answers the same room.
    #[tracing::instrument(skip_all, err(level = "debug"))]
    pub async fn create_room(
        &self,
        actor: &UserActor,
        name: String,
        seat_count: Option<u8>,
        region: String,
        key: Option<&IdempotencyKey>,
    ) -> Result<RoomView> {
        let room_id = match key {
            Some(key) => key.room_id(&actor.user_id)?,
            None => {
                RoomId::new(format!("r{}", self.ports.ids.next_id())).map_err(Error::corrupt)?
            }
        };
        let actor = Actor::User(actor.clone());
        let kind = CommandKind::CreateRoom {
            name,
            seat_count,
            region,
        };
        // Whatever the room would refuse is refused before anything is written: a short id
        // reserved (or a cell activated) for a room that is never created would stay behind.
        // The domain's own decision on an absent room is the check, so the rules live in one
        // place.
        let ctx = Ctx {
            now: self.ports.clock.now(),
            actor: &actor,
            random: 0,
            rules: self.runtime.rules(),
        };
        let probe = Command::new(
            CommandId::new("create-check").map_err(Error::corrupt)?,
            kind,
        );
        decide(&RoomState::new(room_id.clone()), &probe, &ctx).map_err(Error::Rejected)?;
        // A repeat of a keyed creation finds its short id reserved already.
        let mut reserved =
            key.is_some() && self.ports.directory.get_short_id(&room_id).await?.is_some();
        for _ in 0..if reserved { 0 } else { 16 } {
            // 6 to 8 digits: 100000 ..= 99999999.
            let short_id = 100_000 + (self.ports.ids.random() % 99_900_000) as u32;
            if self
                .ports
                .directory
                .reserve_short_id(&room_id, short_id)
                .await?
            {
                reserved = true;
                break;
            }
            // A concurrent repeat of the same keyed creation may have reserved one first.
            if key.is_some() && self.ports.directory.get_short_id(&room_id).await?.is_some() {
                reserved = true;
                break;
            }
        }
        if !reserved {
            return Err(Error::Unavailable("no free short id found".into()));
        }
        self.run_keyed(&room_id, actor, key, "create", probe.kind)
            .await?;
        self.get_room(&room_id).await
    }

    /// The room as clients see it.
    pub async fn get_room(&self, room_id: &RoomId) -> Result<RoomView> {
        let rules = self.runtime.rules().clone();
        let view = self
            .query(room_id, move |state| view_of(state, &rules))
            .await?
            .ok_or(Error::Rejected(Rejection::RoomNotFound))?;
        let short_id = self.ports.directory.get_short_id(room_id).await?;
        Ok(RoomView { short_id, ..view })
    }

    /// The room with this short id.
    pub async fn get_room_by_short_id(&self, short_id: u32) -> Result<RoomView> {
        let room_id = self
            .ports
            .directory
            .get_by_short_id(short_id)
            .await?
            .ok_or(Error::Rejected(Rejection::RoomNotFound))?;
        self.get_room(&room_id).await
    }

    /// Open rooms, hottest first.
    pub async fn list_rooms(
        &self,
        cursor: Option<(i64, RoomId)>,
        limit: u32,
    ) -> Result<Vec<RoomSummary>> {
        self.ports.directory.list_open_by_heat(cursor, limit).await
    }

    /// Applies a profile patch as several commands, in order; stops at the first refusal.
    /// With a key, each command's id comes from it.
    pub async fn update_room(
        &self,
        actor: &UserActor,
        room_id: &RoomId,
        patch: RoomPatch,
        key: Option<&IdempotencyKey>,
    ) -> Result<RoomView> {
        let actor = Actor::User(actor.clone());
        if patch.name.is_some() || patch.notice.is_some() || patch.cover_url.is_some() {
            self.run_keyed(
                room_id,
                actor.clone(),
                key,
                "profile",
                CommandKind::UpdateProfile {
                    name: patch.name,
                    notice: patch.notice,
                    cover_url: patch.cover_url,
                },
            )
            .await?;
        }
        if let Some(background) = patch.background_url {
            let background_url = Some(background).filter(|url| !url.trim().is_empty());
            self.run_keyed(
                room_id,
                actor.clone(),
                key,
                "background",
                CommandKind::ChangeBackground { background_url },
            )
            .await?;
        }
        if let Some(enabled) = patch.chat_enabled {
            self.run_keyed(
                room_id,
                actor.clone(),
                key,
                "chat",
                CommandKind::SetChatEnabled { enabled },
            )
            .await?;
        }
        if let Some(password) = patch.password {
            let password_hash = password.map(|p| hash_password(&p, self.ports.ids.random()));
            self.run_keyed(
                room_id,
                actor,
                key,
                "lock",
                CommandKind::SetLock { password_hash },
            )
            .await?;
        }
        self.get_room(room_id).await
    }

    /// Closes the room.
    pub async fn close_room(
        &self,
        actor: &UserActor,
        room_id: &RoomId,
        key: Option<&IdempotencyKey>,
    ) -> Result<()> {
        let actor = Actor::User(actor.clone());
        self.run_keyed(room_id, actor, key, "close", CommandKind::CloseRoom)
            .await
            .map(drop)
    }

    /// Joins a room, then leaves the room the user was in before. The password, for a locked
    /// room, is checked against the stored hash here; the domain gets the verdict.
    #[tracing::instrument(skip_all, fields(room_id = %room_id), err(level = "debug"))]
    pub async fn join(
        &self,
        actor: &UserActor,
        room_id: &RoomId,
        password: Option<String>,
        key: Option<&IdempotencyKey>,
    ) -> Result<RoomView> {
        let user = &actor.user_id;
        let joiner = actor.clone();
        let (lock, needs_password) = self
            .query(room_id, move |state| {
                (
                    state.settings.lock.clone(),
                    state.join_needs_password(&joiner),
                )
            })
            .await?;
        let password_verified = match (&lock, &password) {
            (Some(hash), Some(password)) => verify_password(password, hash),
            _ => false,
        };
        // The owner, the room's admins and platform admins need no password: wrong passwords
        // neither count for them nor lock them out. For anyone else, a join of a locked room
        // without the right password counts as a wrong one until the room answers otherwise.
        let counted = if needs_password {
            let now = self.ports.clock.now();
            match self
                .ports
                .attempts
                .check(user, room_id, now, !password_verified)
                .await
            {
                Err(error @ Error::TooManyAttempts { .. }) => {
                    metrics::counter!("room_join_password_lockouts_total").increment(1);
                    return Err(error);
                }
                checked => checked?,
            }
        } else {
            None
        };
        let joined = self
            .run_keyed(
                room_id,
                Actor::User(actor.clone()),
                key,
                "join",
                CommandKind::Join {
                    password_verified,
                    verified_lock: lock.filter(|_| password_verified),
                },
            )
            .await;
        if let Some(counted) = counted
            && !matches!(joined, Err(Error::Rejected(Rejection::WrongPassword)))
            && let Err(error) = self.ports.attempts.uncount(counted).await
        {
            // The join's answer stands: the attempt stays counted, which costs the user one
            // guess of the window at worst.
            tracing::warn!(room_id = %room_id, error = %error, "a wrong password count was not taken back");
        }
        joined?;
        // The room the user was in is left only once the new one let them in (a refused join
        // leaves them where they were), and before presence moves: if leaving fails, presence
        // still names that room, and the client's retry of this join leaves it then.
        if let Some(previous) = self.ports.presence.get_current_room(user).await?
            && previous != *room_id
        {
            match self.leave_quietly(&previous, actor).await {
                Ok(()) => {}
                Err(error) if error.is_retryable() => return Err(error),
                // A room that can never be left (its data unreadable, a fault of the service)
                // must not keep the user from every other room: presence lets go of it.
                Err(error) => {
                    tracing::error!(
                        room_id = %previous,
                        user = %user,
                        error = %error,
                        "cannot leave the previous room; presence lets go of it"
                    );
                    self.ports.presence.remove(&previous, user).await?;
                }
            }
        }
        let now = self.ports.clock.now();
        if let Some(previous) = self.ports.presence.heartbeat(room_id, user, now).await?
            && previous != *room_id
        {
            // A concurrent join elsewhere slipped in between: leave that room too.
            self.leave_quietly(&previous, actor).await?;
        }
        self.get_room(room_id).await
    }

    async fn leave_quietly(&self, room_id: &RoomId, actor: &UserActor) -> Result<()> {
        match self
            .run(room_id, Actor::User(actor.clone()), CommandKind::Leave)
            .await
        {
            Ok(_) | Err(Error::Rejected(_)) => {}
            Err(error) => return Err(error),
        }
        self.ports.presence.remove(room_id, &actor.user_id).await
    }

    /// Leaves a room.
    pub async fn leave(
        &self,
        actor: &UserActor,
        room_id: &RoomId,
        key: Option<&IdempotencyKey>,
    ) -> Result<()> {
        let user = Actor::User(actor.clone());
        self.run_keyed(room_id, user, key, "leave", CommandKind::Leave)
            .await?;
        self.ports.presence.remove(room_id, &actor.user_id).await
    }

    /// Records that a member is still there.
    pub async fn heartbeat(&self, actor: &UserActor, room_id: &RoomId) -> Result<()> {
        self.ensure_known(room_id).await?;
        let present = self
            .runtime
            .membership(room_id, &actor.user_id, crate::ports::ReadKind::Committed)
            .await?
            .member;
        if !present {
            return Err(Error::Rejected(Rejection::NotAMember {
                user: actor.user_id.clone(),
            }));
        }
        let now = self.ports.clock.now();
        self.ports
            .presence
            .heartbeat(room_id, &actor.user_id, now)
            .await
            .map(drop)
    }

    /// Members present, by user id, after `cursor`.
    pub async fn online_users(
        &self,
        room_id: &RoomId,
        cursor: Option<UserId>,
        limit: u32,
    ) -> Result<Vec<OnlineUser>> {
        self.read_open(room_id, move |state| {
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
                })
                .collect()
        })
        .await
    }

    /// Runs a seat or moderation command as the actor; with a key, under the id it gives.
    pub async fn command(
        &self,
        actor: &UserActor,
        room_id: &RoomId,
        kind: CommandKind,
        key: Option<&IdempotencyKey>,
    ) -> Result<Arc<CommandReply>> {
        self.run_keyed(room_id, Actor::User(actor.clone()), key, "command", kind)
            .await
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

    /// The top givers of the day or week.
    pub async fn contribution_rank(
        &self,
        room_id: &RoomId,
        period: RankPeriod,
        limit: u32,
    ) -> Result<Vec<RankEntry>> {
        let today = self
            .ports
            .clock
            .now()
            .day_key(self.runtime.rules().day_utc_offset_secs);
        self.read_open(room_id, move |state| {
            rank_of(state, period, today, limit as usize)
        })
        .await
    }

    /// Sends a gift through the saga.
    pub async fn send_gift(&self, request: SendGift) -> Result<GiftReceipt> {
        self.ensure_known(&request.room_id).await?;
        self.gifts.send(request).await
    }

    /// The catalog.
    pub async fn list_gifts(&self) -> Result<Vec<CatalogGift>> {
        self.ports.catalog.list().await
    }

    /// Creates or replaces a catalog entry.
    pub async fn put_gift(&self, gift: CatalogGift) -> Result<()> {
        if let Some(problem) = gift.problem() {
            return Err(Error::Invalid(format!("gift {}: {problem}", gift.gift_id)));
        }
        self.ports.catalog.put(&gift).await?;
        self.gifts.forget_catalog();
        Ok(())
    }

    /// A user's balance.
    pub async fn balance(&self, user: &UserId) -> Result<Coins> {
        self.ports.wallet.balance(user).await
    }

    /// Credits coins to a user (platform admins), idempotent by `op_id`; `amount` is 1 to
    /// [`MAX_ADMIN_CREDIT`].
    pub async fn admin_credit(&self, op_id: &str, user: &UserId, amount: Coins) -> Result<Coins> {
        if !(1..=MAX_ADMIN_CREDIT).contains(&amount.0) {
            return Err(Error::Invalid(format!(
                "amount must be 1 to {MAX_ADMIN_CREDIT} coins"
            )));
        }
        self.ports
            .wallet
            .credit(&format!("admin:{op_id}"), CreditKind::Admin, user, amount)
            .await
    }

    /// The room the user is in.
    pub async fn current_room(&self, user: &UserId) -> Result<Option<RoomId>> {
        self.ports.presence.get_current_room(user).await
    }

    async fn read_open<T, F>(&self, room_id: &RoomId, read: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&RoomState) -> T + Send + 'static,
    {
        self.query(room_id, move |state| {
            (state.status != RoomStatus::Absent).then(|| read(state))
        })
        .await?
        .ok_or(Error::Rejected(Rejection::RoomNotFound))
    }
}

fn view_of(state: &RoomState, rules: &room_domain::RoomRules) -> Option<RoomView> {
    if state.status == RoomStatus::Absent {
        return None;
    }
    let rocket = &state.rocket;
    let (status, launch_at) = match rocket.status {
        RocketStatus::Idle => ("idle", None),
        RocketStatus::Ignited { launch_at, .. } => ("ignited", Some(launch_at)),
        RocketStatus::Launched { .. } => ("launched", None),
    };
    Some(RoomView {
        room_id: state.room_id.clone(),
        short_id: None,
        status: state.status,
        owner: state.owner.clone(),
        name: state.profile.name.clone(),
        notice: state.profile.notice.clone(),
        cover_url: state.profile.cover_url.clone(),
        background_url: state.profile.background_url.clone(),
        chat_enabled: state.settings.chat_enabled,
        locked: state.settings.lock.is_some(),
        region: state.settings.region.clone(),
        seats: state
            .seats
            .iter()
            .enumerate()
            .map(|(i, seat)| SeatView {
                index: SeatIndex(u8::try_from(i).unwrap_or(u8::MAX)),
                user: seat.occupant.as_ref().map(|o| o.user.clone()),
                locked: seat.locked,
                muted: seat.muted,
                publishing: seat
                    .occupant
                    .as_ref()
                    .is_some_and(|o| o.publish_deadline.is_none()),
            })
            .collect(),
        online_count: u32::try_from(state.members.len()).unwrap_or(u32::MAX),
        admins: state.admins.iter().cloned().collect(),
        heat: state.heat,
        rocket: RocketView {
            level: rocket.level,
            fuel: rocket.fuel,
            threshold: rules.rocket_level(rocket.level).map_or(0, |l| l.fuel),
            status,
            launch_at,
        },
        version: state.version,
    })
}

fn rank_of(state: &RoomState, period: RankPeriod, today: DayKey, limit: usize) -> Vec<RankEntry> {
    let contribution = &state.contribution;
    let scores = match period {
        RankPeriod::Day if contribution.day_key == today => &contribution.day,
        RankPeriod::Week if contribution.week_key == today.week() => &contribution.week,
        _ => return Vec::new(),
    };
    let mut entries: Vec<RankEntry> = scores
        .iter()
        .filter(|(_, coins)| **coins > Coins::ZERO)
        .map(|(user, coins)| RankEntry {
            user_id: user.clone(),
            coins: *coins,
        })
        .collect();
    entries.sort_by(|a, b| {
        b.coins
            .cmp(&a.coins)
            .then_with(|| a.user_id.cmp(&b.user_id))
    });
    entries.truncate(limit);
    entries
}

/// `sha256$<salt>$<hex digest of salt:password>`. Room passwords are short PINs shared with a
/// room's audience, not account secrets; the salt keeps equal PINs from having equal hashes.
fn hash_password(password: &str, salt: u64) -> PasswordHash {
    let salt = format!("{salt:016x}");
    PasswordHash(format!("sha256${salt}${}", digest(&salt, password)))
}

fn verify_password(password: &str, hash: &PasswordHash) -> bool {
    let mut parts = hash.0.splitn(3, '$');
    match (parts.next(), parts.next(), parts.next()) {
        (Some("sha256"), Some(salt), Some(expected)) => {
            // Compare all bytes so timing does not reveal a matching prefix.
            let actual = digest(salt, password);
            actual.len() == expected.len()
                && actual
                    .bytes()
                    .zip(expected.bytes())
                    .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                    == 0
        }
        _ => false,
    }
}

fn digest(salt: &str, password: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(salt.as_bytes());
    hasher.update(b":");
    hasher.update(password.as_bytes());
    crate::digest::hex(&hasher.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idempotency_keys_are_printable_ascii_and_scoped_by_user_route_and_step() {
        for bad in ["", "tab\there", "clé", &"k".repeat(65)] {
            assert!(
                IdempotencyKey::new("POST /v1/rooms", bad).is_err(),
                "{bad:?}"
            );
        }
        let user = |name: &str| UserId::new(name).unwrap();
        let key = IdempotencyKey::new("POST /v1/rooms/{room_id}/kick", "a b~1").unwrap();
        let other_route = IdempotencyKey::new("POST /v1/rooms/{room_id}/unban", "a b~1").unwrap();
        let id = |key: &IdempotencyKey, name: &str, step: &str| {
            key.command_id(&user(name), step).unwrap()
        };
        assert_eq!(id(&key, "alice", "command"), id(&key, "alice", "command"));
        assert_ne!(id(&key, "alice", "command"), id(&key, "bob", "command"));
        assert_ne!(
            id(&key, "alice", "command"),
            id(&other_route, "alice", "command")
        );
        assert_ne!(id(&key, "alice", "command"), id(&key, "alice", "join"));
        assert!(
            id(&key, "alice", "command")
                .as_str()
                .starts_with(crate::SYSTEM_ID_PREFIX)
        );
        assert!(IdempotencyKey::new("r", &"k".repeat(64)).is_ok());
    }

    #[test]
    fn passwords_verify_only_with_the_right_text() {
        let hash = hash_password("1234", 42);
        assert!(!hash.0.contains("1234"));
        assert!(verify_password("1234", &hash));
        assert!(!verify_password("12345", &hash));
        assert!(!verify_password("1234", &PasswordHash("garbage".into())));
        assert_ne!(hash, hash_password("1234", 43));
    }
}
