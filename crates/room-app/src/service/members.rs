//! Membership: joining (with the room's password and its brute-force limit, leaving the room
//! the user was in), leaving, heartbeats and the room the user is in, each through the
//! user's current-room record (`current_room`).

use room_domain::{Actor, CommandKind, Rejection, RoomId, UserActor, UserId};

use super::idempotency::IdempotencyKey;
use super::password::verify_password;
use super::room_service::RoomService;
use super::views::RoomView;
use crate::error::{Error, Result};

impl RoomService {
    /// Joins a room, then leaves the room the user was in before (moving their current-room
    /// record from it to this one). The password, for a locked room, is checked against the
    /// stored hash here; the domain gets the verdict.
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
        let asked_at = self.ports.clock.now();
        let (lock, needs_password) = self
            .query(room_id, move |state| {
                (
                    state.settings.lock.clone(),
                    state.join_needs_password(&joiner, asked_at),
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
        // The room let the user in: the join moves their record here by compare-and-set
        // (a refused join leaves them where they were), then settles the room the record
        // named before (which drops them unless the record names it again by then) and this
        // one (which lets them back in if a settle of another join dropped them meanwhile).
        let now = self.ports.clock.now();
        let previous = self.ports.presence.move_to(room_id, user, now).await?;
        if let Some(previous) = previous
            && let Err(error) = self.settle(&previous, user, Some(actor)).await
        {
            if error.is_retryable() {
                // The room before could not let the user go for now: the join is undone
                // (the record names that room again unless another join moved it on, and
                // this room follows the record), so that the client's retry moves them.
                let now = self.ports.clock.now();
                self.ports
                    .presence
                    .compare_and_set(user, Some(room_id.clone()), Some(previous.clone()), now)
                    .await?;
                self.settle(room_id, user, Some(actor)).await?;
                // The failure may have come after the room before let the user go (an
                // outcome unknown): settling it once more lets them back in then. At worst
                // it fails again, and the client's retry settles it.
                if let Err(again) = self.settle(&previous, user, Some(actor)).await {
                    tracing::debug!(room_id = %previous, error = %again, "the room before is still not settled");
                }
                return Err(error);
            }
            // A room that can never be left (its data unreadable, a fault of the service)
            // must not keep the user from every other room: the join stands, the record
            // names this room.
            metrics::counter!("room_current_room_unsettled_total").increment(1);
            tracing::error!(room_id = %previous, user = %user, error = %error, "cannot leave the previous room; the current-room record lets go of it");
        }
        self.settle(room_id, user, Some(actor)).await?;
        self.get_room(room_id).await
    }

    /// Leaves a room: the room lets the user go, their record is cleared if it still names
    /// the room, and the room is settled with the record (a join of the same room racing
    /// this leave may win).
    pub async fn leave(
        &self,
        actor: &UserActor,
        room_id: &RoomId,
        key: Option<&IdempotencyKey>,
    ) -> Result<()> {
        let user = Actor::User(actor.clone());
        let left = self
            .run_keyed(room_id, user, key, "leave", CommandKind::Leave)
            .await;
        if matches!(
            left,
            Ok(_) | Err(Error::Rejected(Rejection::NotAMember { .. }))
        ) {
            self.clear_record(room_id, &actor.user_id).await?;
            self.settle(room_id, &actor.user_id, Some(actor)).await?;
        }
        left.map(drop)
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
        // Renews the record only if it names this room: a heartbeat never moves a user. A
        // member whose record names another room or none is settled out of this one.
        let now = self.ports.clock.now();
        let record = self
            .ports
            .presence
            .compare_and_set(
                &actor.user_id,
                Some(room_id.clone()),
                Some(room_id.clone()),
                now,
            )
            .await?;
        if record.as_ref() == Some(room_id) {
            return Ok(());
        }
        self.settle(room_id, &actor.user_id, Some(actor)).await?;
        Err(Error::Rejected(Rejection::NotAMember {
            user: actor.user_id.clone(),
        }))
    }

    /// The room the user is in.
    pub async fn current_room(&self, user: &UserId) -> Result<Option<RoomId>> {
        self.ports.presence.get_current_room(user).await
    }
}
