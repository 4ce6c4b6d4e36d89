//! What the RTC vendor's events do to rooms: a seat holder's audio that started publishing
//! confirms their mic, a user who left the RTC room frees their seat. [`RtcEvents::apply`]
//! finds the room the vendor names (by room id, or by short id), runs the event's command as
//! the system under the id the caller names the delivery by, and tells a definite refusal of
//! the room (nothing to retry) from a failure (retry later).
//!
//! Reading the vendor's callback (its signature, its times, its event codes) is the front
//! end's; this module starts from a typed [`RtcEvent`].

use std::sync::Arc;

use room_domain::{CommandId, CommandKind, RoomId, Timestamp, UserId};

use crate::service::RoomService;
use crate::{Error, Result};

/// How an RTC event names its room.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RtcRoom {
    /// A string: the room id, or (as some clients pass it) the short id in digits.
    Text(String),
    /// A number: the room's short id.
    Number(u64),
}

/// What happened in the RTC room, of what rooms care about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RtcEventKind {
    /// The user's audio started publishing: their mic is confirmed.
    AudioPublishStarted,
    /// The user left the RTC room: their seat is freed.
    UserLeft,
}

/// An RTC event about one user in one room.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RtcEvent {
    /// What happened.
    pub kind: RtcEventKind,
    /// The room, as the vendor names it.
    pub room: RtcRoom,
    /// Who.
    pub user: UserId,
    /// When it happened by the vendor's clock, if it said: lets the room ignore an event
    /// about an earlier seat session.
    pub at: Option<Timestamp>,
}

/// How an event ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RtcOutcome {
    /// The room took the command (or had taken it before, for a repeat).
    Applied,
    /// The room refused it for good (the user holds no seat any more, the room closed):
    /// retrying cannot change that.
    Refused,
    /// No room has that id or short id.
    UnknownRoom,
}

/// The use case of RTC events, over the room service.
#[derive(Clone)]
pub struct RtcEvents {
    service: Arc<RoomService>,
}

impl RtcEvents {
    /// The use case over `service`.
    pub fn new(service: Arc<RoomService>) -> Self {
        RtcEvents { service }
    }

    /// Applies `event` to its room, as the system, under the id `command_id` gives for the
    /// room found: every delivery of one event must name one command, so that a retry or a
    /// replay is answered as the first delivery was and cannot act on a seat the user took
    /// since. An error is a failure a retry may mend.
    pub async fn apply(
        &self,
        event: RtcEvent,
        command_id: impl FnOnce(&RoomId) -> CommandId + Send,
    ) -> Result<RtcOutcome> {
        let Some(room_id) = self.resolve(&event.room).await? else {
            return Ok(RtcOutcome::UnknownRoom);
        };
        let (user, at) = (event.user, event.at);
        let kind = match event.kind {
            RtcEventKind::AudioPublishStarted => CommandKind::ConfirmMicPublish { user, at },
            RtcEventKind::UserLeft => CommandKind::RtcUserLeft { user, at },
        };
        let command_id = command_id(&room_id);
        match self
            .service
            .system_command_as(&room_id, command_id, kind)
            .await
        {
            Ok(_) => Ok(RtcOutcome::Applied),
            // A definite answer: retrying cannot change it.
            Err(Error::Rejected(_)) => Ok(RtcOutcome::Refused),
            Err(error) => Err(error),
        }
    }

    /// The room an RTC room id names: a string is the room id, a number the short id.
    async fn resolve(&self, room: &RtcRoom) -> Result<Option<RoomId>> {
        let directory = &self.service.ports().directory;
        match room {
            RtcRoom::Text(text) => {
                if let Ok(room_id) = RoomId::new(text)
                    && self.service.room_was_created(&room_id).await?
                {
                    return Ok(Some(room_id));
                }
                // Some clients pass the numeric id as a string.
                match text.parse::<u32>() {
                    Ok(short_id) => directory.get_by_short_id(short_id).await,
                    Err(_) => Ok(None),
                }
            }
            RtcRoom::Number(number) => match u32::try_from(*number) {
                Ok(short_id) => directory.get_by_short_id(short_id).await,
                Err(_) => Ok(None),
            },
        }
    }
}
