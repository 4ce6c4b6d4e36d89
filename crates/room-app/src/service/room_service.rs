//! The service itself ([`RoomService`]) and its ports ([`ServicePorts`]), and how every use
//! case reaches a room: known rooms only, commands under a fresh id or one an idempotency key
//! gives, reads of the room's state.

use std::sync::Arc;

use room_domain::{
    Actor, Command, CommandId, CommandKind, Rejection, RoomId, RoomState, RoomStatus,
};

use super::idempotency::IdempotencyKey;
use crate::cell::CellRuntime;
use crate::consumers::FactConsumer;
use crate::error::{Error, Result};
use crate::gifts::GiftSaga;
use crate::ports::{
    ClockRef, CommandReply, GiftCatalogRef, IdGenRef, PasswordAttemptsRef, PresenceRef,
    RoomDirectoryRef, UserDirectoryRef, VipGrantsRef, WalletRef,
};
use crate::profiles::{ProfileCacheConfig, Profiles};
use crate::vip::{Vip, VipCacheConfig};

/// The ports the use cases need besides the runtime's.
#[derive(Clone)]
pub struct ServicePorts {
    /// Gift orders.
    pub orders: crate::ports::GiftOrdersRef,
    /// Balances.
    pub wallet: WalletRef,
    /// The gift catalog.
    pub catalog: GiftCatalogRef,
    /// The billing policy's versions.
    pub billing: crate::ports::BillingPoliciesRef,
    /// Income balances and their ledger.
    pub income: crate::ports::IncomeLedgerRef,
    /// Gift value by user and turnover by room and day.
    pub tallies: crate::ports::GiftTalliesRef,
    /// The leaderboards.
    pub boards: crate::ports::BoardsRef,
    /// The leaderboards' reward tables and payouts.
    pub board_rewards: crate::ports::BoardRewardsRef,
    /// The rocket's levels by version.
    pub rocket: crate::ports::RocketSettingsStoreRef,
    /// Short ids and the room list.
    pub directory: RoomDirectoryRef,
    /// Who people are: the profiles rooms show.
    pub users: UserDirectoryRef,
    /// VIP grants and the level table.
    pub vip: VipGrantsRef,
    /// Heartbeats.
    pub presence: PresenceRef,
    /// Wrong room passwords, against brute force.
    pub attempts: PasswordAttemptsRef,
    /// Time.
    pub clock: ClockRef,
    /// Ids and random values.
    pub ids: IdGenRef,
}

/// The room service's use cases.
pub struct RoomService {
    pub(super) runtime: CellRuntime,
    pub(super) ports: ServicePorts,
    pub(super) gifts: GiftSaga,
    /// Profiles, read for display through the node's cache.
    pub(super) profiles: Arc<Profiles>,
    /// VIP levels, read by the rooms through the node's cache.
    pub(super) vip: Vip,
    /// Rooms found created, so that requests for rooms other nodes run read nothing.
    known_rooms: crate::known::KnownRooms,
    /// Consumers handed each room's creation fact as soon as it is committed.
    pub(super) early: Vec<Arc<FactConsumer>>,
}

impl RoomService {
    /// The use cases over a runtime and ports.
    pub fn new(runtime: CellRuntime, ports: ServicePorts) -> Self {
        runtime.restore_presence_into(ports.presence.clone());
        let mut gifts = GiftSaga::new(
            runtime.clone(),
            ports.orders.clone(),
            ports.wallet.clone(),
            ports.catalog.clone(),
            ports.billing.clone(),
            ports.clock.clone(),
            ports.ids.clone(),
        );
        let profiles = Arc::new(Profiles::new(
            ports.users.clone(),
            ports.clock.clone(),
            ProfileCacheConfig::default(),
        ));
        gifts.set_profiles(profiles.clone());
        let vip = Vip::new(
            ports.vip.clone(),
            ports.clock.clone(),
            VipCacheConfig::default(),
        );
        RoomService {
            runtime,
            ports,
            gifts,
            profiles,
            vip,
            known_rooms: crate::known::KnownRooms::default(),
            early: Vec::new(),
        }
    }

    /// Hands each room's creation fact to `consumer` as soon as the room is created, before
    /// the creation is answered ([`FactConsumer::hand_early`]: at most a second, never
    /// failing the creation), besides the durable way, which brings it again later and is
    /// the retry. For an effect a new room needs at once: its IM group.
    pub fn with_early_consumer(mut self, consumer: Arc<FactConsumer>) -> Self {
        self.early.push(consumer);
        self
    }

    /// The service with its profile cache bounded by `config` instead of the default.
    pub fn with_profile_cache(mut self, config: ProfileCacheConfig) -> Self {
        self.profiles = Arc::new(Profiles::new(
            self.ports.users.clone(),
            self.ports.clock.clone(),
            config,
        ));
        self.gifts.set_profiles(self.profiles.clone());
        self
    }

    /// The service with its VIP cache bounded by `config` instead of the default.
    pub fn with_vip_cache(mut self, config: VipCacheConfig) -> Self {
        self.vip = Vip::new(self.ports.vip.clone(), self.ports.clock.clone(), config);
        self
    }

    /// The VIP use cases (grants, the level table, and the node's cache of them).
    pub fn vip(&self) -> &Vip {
        &self.vip
    }

    /// The profile use cases (the user directory and the node's cache of it).
    pub fn profiles(&self) -> &Profiles {
        &self.profiles
    }

    /// A shared handle to [`RoomService::profiles`], for use cases beside the service.
    pub fn profiles_handle(&self) -> Arc<Profiles> {
        self.profiles.clone()
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

    pub(super) async fn run(
        &self,
        room_id: &RoomId,
        actor: Actor,
        kind: CommandKind,
    ) -> Result<Arc<CommandReply>> {
        self.run_keyed(room_id, actor, None, "", kind).await
    }

    /// Runs `kind` under the id `key` gives step `step` of the actor's request, or under a
    /// fresh id without a key.
    pub(super) async fn run_keyed(
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
        // The display events of a user's join and seat carry how the user is shown: looked up
        // here, through the cache, before the command reaches the room.
        let display = match (&kind, &actor) {
            (CommandKind::Join { .. } | CommandKind::TakeSeat { .. }, Actor::User(user)) => {
                self.profiles.display(&user.user_id).await
            }
            _ => None,
        };
        let mut actor = actor;
        let vip = self.vip_standing(&kind, &mut actor).await?;
        let command = Command::new(command_id, kind)
            .with_display(display)
            .with_vip(vip);
        self.runtime.execute(room_id, command, actor, None).await
    }

    /// The VIP standing a user's command carries, looked up here through the node's cache
    /// (the service keeps VIP levels, not the token): a join's (the joining user's level is
    /// set on the actor, and a level's entry effect and vehicle go with the command), a seat
    /// taker's (seat priority for seats reserved for VIP), a kick's and a muting `chat_mute`'s (the target's shields). A join goes on without VIP
    /// when the grants cannot be read now; a kick or a mute fails, retryably, rather than
    /// guess a shield.
    async fn vip_standing(
        &self,
        kind: &CommandKind,
        actor: &mut Actor,
    ) -> Result<Option<room_domain::VipStanding>> {
        let Actor::User(user) = actor else {
            return Ok(None);
        };
        match kind {
            CommandKind::Join { .. } => {
                let standing = self.vip.standing_or_none(&user.user_id).await;
                user.vip_level = standing.as_ref().map_or(0, |standing| standing.level);
                Ok(standing.filter(|standing| standing.level > 0))
            }
            // The taker's seat priority, for seats reserved for VIP; without the grants a
            // seat taker is refused only those seats.
            CommandKind::TakeSeat { .. } => Ok(self
                .vip
                .standing_or_none(&user.user_id)
                .await
                .filter(|standing| standing.level > 0)),
            CommandKind::Kick { user: target, .. } => Ok(Some(self.vip.standing(target).await?)),
            CommandKind::ChatMute {
                user: target,
                seconds,
            } if *seconds > 0 => Ok(Some(self.vip.standing(target).await?)),
            _ => Ok(None),
        }
    }

    /// Refuses room ids that were never created, before they reach a cell: activating a cell
    /// writes to storage, and clients must not be able to create rows with made-up ids.
    pub(super) async fn ensure_known(&self, room_id: &RoomId) -> Result<()> {
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
    pub(super) async fn query<T, F>(&self, room_id: &RoomId, read: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&RoomState) -> T + Send + 'static,
    {
        self.ensure_known(room_id).await?;
        self.runtime.query(room_id, read).await
    }

    pub(super) async fn read_open<T, F>(&self, room_id: &RoomId, read: F) -> Result<T>
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
