//! Membership: joining (with the room's password and its brute-force limit, leaving the room
//! the user was in), leaving, heartbeats and the room the user is in.

use room_domain::{Actor, CommandKind, Rejection, RoomId, UserActor, UserId};

use super::idempotency::IdempotencyKey;
use super::password::verify_password;
use super::room_service::RoomService;
use super::views::RoomView;
use crate::error::{Error, Result};

impl RoomService {
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

    /// The room the user is in.
    pub async fn current_room(&self, user: &UserId) -> Result<Option<RoomId>> {
        self.ports.presence.get_current_room(user).await
    }
}
