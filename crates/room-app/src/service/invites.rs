//! Invites: an owner or room admin invites a user to the room, or to a seat held for them,
//! for the rules' invite lifetime. The invitee sees the invite on their own event stream
//! (the `RoomUserInvited` display event, [`crate::addressee`]) and accepts by joining (past
//! the room's password) or taking the held seat before it expires.

use room_domain::{CommandKind, Event, RoomId, SeatIndex, Timestamp, UserActor, UserId};

use super::idempotency::IdempotencyKey;
use super::room_service::RoomService;
use crate::error::{Error, Result};

/// An invite as the room made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invite {
    /// The room.
    pub room_id: RoomId,
    /// The invitee.
    pub user: UserId,
    /// The seat held for them, if any.
    pub seat: Option<SeatIndex>,
    /// When it expires (exclusive).
    pub expires_at: Timestamp,
}

impl RoomService {
    /// Invites `user` to `room_id`, or to its `seat`, as `actor` (the owner or a room admin).
    /// The room refuses a banned invitee, a seat that is taken, locked or held for someone
    /// else, and more open invites than its rules allow. A repeat with the same key answers
    /// the first invite.
    pub async fn invite(
        &self,
        actor: &UserActor,
        room_id: &RoomId,
        user: UserId,
        seat: Option<SeatIndex>,
        key: Option<&IdempotencyKey>,
    ) -> Result<Invite> {
        let reply = self
            .command(actor, room_id, CommandKind::Invite { user, seat }, key)
            .await?;
        let invite = reply.events.iter().find_map(|stored| match &stored.event {
            Event::RoomUserInvited {
                user,
                seat,
                expires_at,
                ..
            } => Some(Invite {
                room_id: room_id.clone(),
                user: user.clone(),
                seat: *seat,
                expires_at: *expires_at,
            }),
            _ => None,
        });
        metrics::counter!("room_invites_total").increment(1);
        invite.ok_or_else(|| Error::corrupt("an accepted invite produced no RoomUserInvited event"))
    }
}
