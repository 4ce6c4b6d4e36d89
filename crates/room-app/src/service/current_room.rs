//! The user's current-room record and the rooms' online lists, kept in agreement.
//!
//! The record (one per user, in [`Presence`](crate::ports::Presence)) names the one room a
//! user is in; it changes only by compare-and-set. Whoever changes it, or a room's members,
//! then settles each room the change touched: [`RoomService::settle`] reads the record and
//! the room's membership, and makes the room follow the record (drops a member whose record
//! names another room or none; lets back in a member whose record names this room), reading
//! both again after each change it makes, until they agree.
//!
//! Why this converges: take the last change to a room's members and the last change of the
//! record to or from that room. If the member change came last, the one who made it read both
//! afterwards and found them agreeing (or it would have changed the members again). If the
//! record change came last, the one who made it settles the room afterwards and reads both
//! as they stay. Either way, once every settle has ended, the room holds the user if and only
//! if the record names it. A room never drops a member whose record names it when it reads
//! so, and a member whose record names another room is dropped by whoever moved it.

use room_domain::{Actor, CommandKind, RoomId, RoomStatus, UserActor, UserId};

use super::room_service::RoomService;
use crate::error::{Error, Result};
use crate::ports::ReadKind;

/// At most this many rounds (a read of the record and of the membership, and at most one
/// command) per settle: a settle that races others that long gives up, and the last of them
/// settles the room.
const SETTLE_ROUNDS: usize = 16;

impl RoomService {
    /// Forgets `user`'s record if it still names `room_id` (a leave, a kick, a close): a
    /// record that names another room by now is that room's.
    pub(super) async fn clear_record(&self, room_id: &RoomId, user: &UserId) -> Result<()> {
        let now = self.ports.clock.now();
        self.ports
            .presence
            .compare_and_set(user, Some(room_id.clone()), None, now)
            .await
            .map(drop)
    }

    /// Makes `room_id`'s membership of `user` follow their record (see the module's docs).
    /// `actor` is the user acting, if it is them: only then is a member the room dropped
    /// while their record named it let back in (under the join the record stands for);
    /// otherwise the record is cleared instead.
    pub(crate) async fn settle(
        &self,
        room_id: &RoomId,
        user: &UserId,
        actor: Option<&UserActor>,
    ) -> Result<()> {
        for _ in 0..SETTLE_ROUNDS {
            let record = self.ports.presence.get_current_room(user).await?;
            let here = record.as_ref() == Some(room_id);
            let membership = self
                .runtime
                .membership(room_id, user, ReadKind::Committed)
                .await?;
            match (membership.status, here, membership.member) {
                (RoomStatus::Open, true, true) | (_, false, false) => return Ok(()),
                (RoomStatus::Open, false, true) => {
                    let leaver = actor.cloned().unwrap_or_else(|| UserActor {
                        user_id: user.clone(),
                        vip_level: 0,
                        platform_admin: false,
                    });
                    match self
                        .run(room_id, Actor::User(leaver), CommandKind::Leave)
                        .await
                    {
                        Ok(_) | Err(Error::Rejected(_)) => {}
                        Err(error) => return Err(error),
                    }
                }
                (RoomStatus::Open, true, false) => match actor {
                    Some(actor) => {
                        if !self.let_back_in(room_id, actor).await? {
                            self.clear_record(room_id, user).await?;
                        }
                    }
                    None => self.clear_record(room_id, user).await?,
                },
                // A closed (or never created) room holds no one: no record names it.
                (_, true, _) => self.clear_record(room_id, user).await?,
                (_, false, true) => return Ok(()),
            }
        }
        metrics::counter!("room_current_room_unsettled_total").increment(1);
        tracing::warn!(room_id = %room_id, user = %user, "a room did not settle with the user's record");
        Ok(())
    }

    /// Lets `actor` back into `room_id`, which dropped them while their record named it: the
    /// join the record stands for was let in by the room already, so the password it passed
    /// then is not asked again (bans and the member limit are). `Ok(false)` when the room
    /// refuses.
    async fn let_back_in(&self, room_id: &RoomId, actor: &UserActor) -> Result<bool> {
        let lock = self
            .query(room_id, |state| state.settings.lock.clone())
            .await?;
        let join = CommandKind::Join {
            password_verified: true,
            verified_lock: lock,
        };
        match self.run(room_id, Actor::User(actor.clone()), join).await {
            Ok(_) => Ok(true),
            Err(Error::Rejected(_)) => Ok(false),
            Err(error) => Err(error),
        }
    }

    /// After a member left `room_id` by another's act (a kick, an eviction): clears their
    /// record if it still names the room, then settles the room. Errors are logged: the act
    /// itself stands.
    pub(crate) async fn settle_departure(&self, room_id: &RoomId, user: &UserId) {
        let settled = async {
            self.clear_record(room_id, user).await?;
            self.settle(room_id, user, None).await
        };
        if let Err(error) = settled.await {
            metrics::counter!("room_current_room_unsettled_total").increment(1);
            tracing::warn!(room_id = %room_id, user = %user, error = %error, "the current-room record was not settled after a departure");
        }
    }
}
