//! A member's feed of a room's display events (the embedded stand-in for the room's IM
//! group): who may watch, how a watch is opened so that nothing committed after it is missed,
//! what a reconnecting watcher is sent of what it missed (the events, or a resync when they
//! are too many or no longer in the log), and which events end a watch.
//!
//! How the feed is carried (Server-Sent Events, say) is the front end's.

use std::sync::Arc;

use room_domain::{Event, Rejection, RoomId, UserId};

use crate::local::{BroadcastMessenger, RoomWatch};
use crate::ports::{DisplayMessage, ReadKind};
use crate::service::RoomService;
use crate::{Error, Result};

/// What a watcher that says which event it saw last gets before the live events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CatchUp {
    /// The display events it missed, in order (none when it missed nothing).
    Missed(Vec<DisplayMessage>),
    /// It missed more than may be replayed, or events the log no longer holds (pruned behind
    /// a snapshot): it must read the room again.
    Resync,
}

/// A watch just opened ([`RoomFeed::open`]).
#[derive(Debug)]
pub struct OpenedFeed {
    /// The live display events from the moment of subscription.
    pub watch: RoomWatch,
    /// The room's committed version when the watch opened: the watcher was a member then.
    pub version: u64,
    /// What it missed, when it said what it saw last; `None` otherwise.
    pub catch_up: Option<CatchUp>,
    /// Live events up to this seq were part of the catch-up already (the live feed,
    /// subscribed before `version` was read, may repeat some of it): skip them.
    pub skip_through: u64,
}

/// The feed of rooms' display events to their members.
#[derive(Clone)]
pub struct RoomFeed {
    service: Arc<RoomService>,
    messenger: Arc<BroadcastMessenger>,
    replay_max: u64,
}

impl RoomFeed {
    /// The feed over `service` and the `messenger` its runtime publishes to; a reconnecting
    /// watcher is sent at most `replay_max` missed events, beyond which it resyncs.
    pub fn new(
        service: Arc<RoomService>,
        messenger: Arc<BroadcastMessenger>,
        replay_max: u64,
    ) -> Self {
        RoomFeed {
            service,
            messenger,
            replay_max,
        }
    }

    /// The room's committed version when `user` is a member of it;
    /// [`Rejection::NotAMember`] otherwise. A front end asks this before it holds anything
    /// for the watcher.
    pub async fn member_version(&self, room_id: &RoomId, user: &UserId) -> Result<u64> {
        let seen = self
            .service
            .runtime()
            .membership(room_id, user, ReadKind::Committed)
            .await?;
        if !seen.member {
            return Err(Error::Rejected(Rejection::NotAMember {
                user: user.clone(),
            }));
        }
        Ok(seen.version)
    }

    /// Opens `user`'s watch of the room: subscribes, then reads the membership again, so that
    /// nothing committed after that read is missed and a watcher who left in between is
    /// refused (dropping the subscription). With `last_seen`, the seq of the last event the
    /// watcher got, its [`CatchUp`] comes with it.
    pub async fn open(
        &self,
        room_id: &RoomId,
        user: &UserId,
        last_seen: Option<u64>,
    ) -> Result<OpenedFeed> {
        let watch = self.messenger.subscribe(room_id);
        let version = self.member_version(room_id, user).await?;
        let Some(seen) = last_seen else {
            return Ok(OpenedFeed {
                watch,
                version,
                catch_up: None,
                skip_through: 0,
            });
        };
        let missed = if version.saturating_sub(seen) > self.replay_max {
            None
        } else if seen < version {
            self.service
                .runtime()
                .missed_events(room_id, seen, version)
                .await?
        } else {
            Some(Vec::new())
        };
        Ok(OpenedFeed {
            watch,
            version,
            catch_up: Some(missed.map_or(CatchUp::Resync, CatchUp::Missed)),
            skip_through: version,
        })
    }
}

/// Whether `event` ends `user`'s watch: they are no longer in the room.
pub fn ends_watch(event: &Event, user: &UserId) -> bool {
    match event {
        Event::RoomUserLeft { user: who, .. } | Event::RoomUserKicked { user: who, .. } => {
            who == user
        }
        Event::RoomClosed { .. } => true,
        _ => false,
    }
}

/// The last event a reconnecting watcher saw, read from what it says (the `Last-Event-ID` of
/// an event stream): a seq written in ASCII digits only, 0 to `i64::MAX` (as storage keeps
/// seqs). Anything else (a sign, a space inside, a fraction, a number out of range, letters)
/// is no seq at all, and the watch opens afresh, as if it had said nothing; blanks around the
/// digits are not part of the value.
pub fn last_seen_of(said: &str) -> Option<u64> {
    let digits = said.trim_matches([' ', '\t']);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits
        .parse::<u64>()
        .ok()
        .filter(|seq| i64::try_from(*seq).is_ok())
}

#[cfg(test)]
mod tests {
    use super::last_seen_of;

    #[test]
    fn a_last_seen_seq_is_digits_only_else_none() {
        assert_eq!(last_seen_of("5"), Some(5));
        assert_eq!(last_seen_of("0"), Some(0));
        assert_eq!(last_seen_of(" 42\t"), Some(42));
        assert_eq!(last_seen_of("007"), Some(7));
        assert_eq!(last_seen_of("9223372036854775807"), Some(i64::MAX as u64));
        for said in [
            "",
            " ",
            "+5",
            "-5",
            "5.0",
            "5e1",
            "0x5",
            "5 5",
            "five",
            "٥",
            "９",
            "9223372036854775808",
            "99999999999999999999999",
        ] {
            assert_eq!(last_seen_of(said), None, "{said:?}");
        }
    }
}
