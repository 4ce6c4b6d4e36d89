//! Rooms' lifecycle and profile: creation (validated before anything is written), reads by
//! id and short id, the list of open rooms, profile updates and closing.

use room_domain::{
    Actor, Command, CommandId, CommandKind, Ctx, Event, EventEnvelope, Rejection, RoomId,
    RoomResource, RoomState, UserActor, UserId, decide,
};

use super::idempotency::IdempotencyKey;
use super::password::hash_password;
use super::room_service::RoomService;
use super::views::{RoomPatch, RoomView, view_of};
use crate::error::{Error, Result};
use crate::ports::{CommandReply, CoverHolder};

impl RoomService {
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
        let probe = Probe::new(&actor, kind.clone(), self)?;
        probe.refused(&RoomState::new(room_id.clone()))?;
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
        let reply = self.run_keyed(&room_id, actor, key, "create", kind).await?;
        self.hand_creation_early(&room_id, &reply).await;
        self.get_room(&room_id).await
    }

    /// Hands the creation fact in `reply` to the early consumers
    /// ([`RoomService::with_early_consumer`]), one after the other.
    async fn hand_creation_early(&self, room_id: &RoomId, reply: &CommandReply) {
        if self.early.is_empty() {
            return;
        }
        let created = reply
            .events
            .iter()
            .filter(|stored| matches!(stored.event, Event::RoomCreated { .. }));
        for stored in created {
            let envelope = EventEnvelope::new(
                room_id.clone(),
                stored.seq,
                stored.occurred_at,
                &stored.event,
            );
            for consumer in &self.early {
                consumer.hand_early(&envelope).await;
            }
        }
    }

    /// The room as clients see it.
    pub async fn get_room(&self, room_id: &RoomId) -> Result<RoomView> {
        let rules = self.runtime.rules().clone();
        let now = self.ports.clock.now();
        let view = self
            .query(room_id, move |state| view_of(state, &rules, now))
            .await?
            .ok_or(Error::Rejected(Rejection::RoomNotFound))?;
        let short_id = self.ports.directory.get_short_id(room_id).await?;
        let mut view = RoomView { short_id, ..view };
        // Display fields at read time, through the cache, outside the room's cell.
        let users: Vec<UserId> = view
            .owner
            .iter()
            .chain(view.seats.iter().filter_map(|seat| seat.user.as_ref()))
            .cloned()
            .collect();
        let displays = self.profiles.displays(&users).await;
        if let Some(display) = view.owner.as_ref().and_then(|owner| displays.get(owner)) {
            view.owner_nickname = display.nickname.clone();
            view.owner_avatar_url = display.avatar_url.clone();
        }
        for seat in &mut view.seats {
            if let Some(display) = seat.user.as_ref().and_then(|user| displays.get(user)) {
                seat.nickname = display.nickname.clone();
                seat.avatar_url = display.avatar_url.clone();
            }
        }
        Ok(view)
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

    /// Applies a profile patch as several commands, in order; stops at the first refusal.
    /// With a key, each command's id comes from it.
    pub async fn update_room(
        &self,
        actor: &UserActor,
        room_id: &RoomId,
        patch: RoomPatch,
        key: Option<&IdempotencyKey>,
    ) -> Result<RoomView> {
        let mut patch = patch;
        if let Some(url) = patch
            .background_url
            .as_deref()
            .filter(|url| !url.is_empty())
        {
            // A bad URL is refused before any part of the patch is applied.
            room_domain::check_image_url(room_domain::Field::BackgroundUrl, url)
                .map_err(Error::Rejected)?;
            // A background a VIP level lists is for that level and higher: the setter's
            // level counts, whoever owns the room.
            if !self.vip.may_use_background(&actor.user_id, url).await? {
                let shown = self
                    .query(room_id, |state| state.profile.background_url.clone())
                    .await?;
                if shown.as_deref() != Some(url) {
                    return Err(Error::Rejected(Rejection::VipBackground));
                }
                // The room shows it already: sending it again changes nothing, and nothing
                // is sent (a change made meanwhile by someone else stays).
                patch.background_url = None;
            }
        }
        let actor = Actor::User(actor.clone());
        // A new cover is claimed first (its own claim renewed, when the room shows it
        // already): one open room at a time shows it. The old cover's claim is noted, so that
        // it is let go only as it was (not after another change renewed it).
        let mut claims: Vec<(String, CoverHolder)> = Vec::new();
        if let Some(new) = &patch.cover_url {
            // What the room would say to the change comes first (a caller who may not change
            // the profile, a closed room): nothing is claimed for a change it refuses.
            let probe = Probe::new(
                &actor,
                CommandKind::UpdateProfile {
                    name: None,
                    notice: None,
                    cover_url: Some(new.clone()),
                },
                self,
            )?;
            let (old, refused) = self
                .query(room_id, move |state| {
                    (state.profile.cover_url.clone(), probe.refused(state))
                })
                .await?;
            refused?;
            if let Some(old) = old.filter(|old| old != new)
                && let Some(claim) = self.claim_of(room_id, &old).await?
            {
                claims.push((old, claim));
            }
            if !new.is_empty() {
                let claim = self.claim_cover(room_id, new).await?;
                claims.push((new.clone(), claim));
            }
        }
        if patch.name.is_some() || patch.notice.is_some() || patch.cover_url.is_some() {
            let changed = self
                .run_keyed(
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
                .await;
            // Whatever the room does not show now is let go: the old cover after a change, the
            // new one after a refusal. What it shows is read from the room, not assumed: a
            // repeat of a keyed change is answered from the log, and another change of the
            // room may have come between. An outcome not known keeps the claims (a change
            // still queued may yet show the new cover; a claim its room does not show is
            // taken over after the grace).
            let known = matches!(
                &changed,
                Ok(_) | Err(Error::Rejected(_) | Error::Overloaded(_))
            );
            if known
                && !claims.is_empty()
                && let Ok(shown) = self
                    .query(room_id, |state| state.profile.cover_url.clone())
                    .await
            {
                for (cover, claim) in &claims {
                    if shown.as_ref() != Some(cover) {
                        self.release_cover(cover, claim).await;
                    }
                }
            }
            changed?;
        }
        if let Some(background) = patch.background_url {
            let background_url = Some(background).filter(|url| !url.is_empty());
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

    /// Resets parts of the room's profile to their defaults, with a reason the room is shown
    /// (platform admins only: the room refuses anyone else). A revoked cover is let go, so
    /// another room may show it.
    pub async fn revoke_resources(
        &self,
        actor: &UserActor,
        room_id: &RoomId,
        resources: Vec<RoomResource>,
        reason: String,
        key: Option<&IdempotencyKey>,
    ) -> Result<RoomView> {
        let cover = if resources.contains(&RoomResource::Cover) {
            let shown = self
                .query(room_id, |state| state.profile.cover_url.clone())
                .await?;
            match shown {
                Some(cover) => self
                    .claim_of(room_id, &cover)
                    .await?
                    .map(|claim| (cover, claim)),
                None => None,
            }
        } else {
            None
        };
        let actor = Actor::User(actor.clone());
        let command = CommandKind::RevokeResources { resources, reason };
        self.run_keyed(room_id, actor, key, "revoke", command)
            .await?;
        // The claim is let go only if the room no longer shows the cover (another change may
        // have come between).
        if let Some((cover, claim)) = cover
            && let Ok(shown) = self
                .query(room_id, |state| state.profile.cover_url.clone())
                .await
            && shown.as_ref() != Some(&cover)
        {
            self.release_cover(&cover, &claim).await;
        }
        self.get_room(room_id).await
    }

    /// Closes the room, and clears the current-room record of each member whose record
    /// names it.
    pub async fn close_room(
        &self,
        actor: &UserActor,
        room_id: &RoomId,
        key: Option<&IdempotencyKey>,
    ) -> Result<()> {
        let (members, cover): (Vec<UserId>, Option<String>) = self
            .query(room_id, |state| {
                let members = state
                    .members
                    .iter()
                    .filter(|(_, member)| !member.robot)
                    .map(|(user, _)| user.clone())
                    .collect();
                (members, state.profile.cover_url.clone())
            })
            .await?;
        let actor = Actor::User(actor.clone());
        self.run_keyed(room_id, actor, key, "close", CommandKind::CloseRoom)
            .await?;
        // A closed room's cover is free for another room (a claim left here is taken over).
        if let Some(cover) = cover
            && let Ok(Some(claim)) = self.claim_of(room_id, &cover).await
        {
            self.release_cover(&cover, &claim).await;
        }
        // A member who joined between the listing and the close has their record cleared by
        // their own join's settle if it comes after the close; otherwise it names the closed
        // room until their next join or the eviction pass, which clears it.
        for user in &members {
            if let Err(error) = self.clear_record(room_id, user).await {
                tracing::warn!(room_id = %room_id, user = %user, error = %error, "a current-room record was not cleared after a close");
            }
        }
        Ok(())
    }
}

/// A command tried against a room's state without running it: the domain's own decision, so
/// that a use case refuses what the room would refuse before it writes anything elsewhere
/// (a short id, a cover claim), with the rules in one place.
struct Probe {
    command: Command,
    actor: Actor,
    rules: std::sync::Arc<room_domain::RoomRules>,
    now: room_domain::Timestamp,
}

impl Probe {
    fn new(actor: &Actor, kind: CommandKind, service: &RoomService) -> Result<Probe> {
        Ok(Probe {
            command: Command::new(CommandId::new("probe").map_err(Error::corrupt)?, kind),
            actor: actor.clone(),
            rules: service.runtime.rules().clone(),
            now: service.ports.clock.now(),
        })
    }

    /// The room's refusal of the command in `state`, if it would refuse it.
    fn refused(&self, state: &RoomState) -> Result<()> {
        let ctx = Ctx {
            now: self.now,
            actor: &self.actor,
            random: 0,
            rules: &self.rules,
        };
        decide(state, &self.command, &ctx)
            .map(|_| ())
            .map_err(Error::Rejected)
    }
}
