//! TRTC room and media callbacks: signature check and the events the service acts on.
//!
//! TRTC posts JSON with the headers `Sign` = base64(HMAC-SHA256(callback key, raw body)) and
//! `SdkAppId`. The service acts on 203 (audio publish started: confirms the seat holder's mic)
//! and 104 (user left the RTC room: frees their seat); every other event is acknowledged and
//! ignored. TRTC retries until it gets HTTP 200, so handling is idempotent.
//!
//! The signature proves who wrote a body, not when: a captured callback verifies forever. So a
//! callback must also be recent ([`check_time`]): every time it carries (`CallbackTs`,
//! `EventInfo.EventMsTs`, `EventInfo.EventTs`) must lie within a window around now, and it
//! must carry at least one. TRTC's retries come within a minute, well inside the window.
//!
//! A time within the window does not stop a repeat inside it: TRTC's retries, or a replay of
//! a captured body. So the command a callback produces is named by the event
//! ([`command_id`]: event type, room, user, event time), and every delivery of one event is
//! the same command to the room, which answers a repeat with its first answer and changes
//! nothing: a repeated 104 does not free the seat its user took again since. The room only
//! remembers commands that changed something, so the command also carries the event's time:
//! an event dated before the user's current seat session began (beyond
//! [`room_domain::RTC_CLOCK_SKEW_MS`]) is about an earlier session and changes nothing, even
//! when its first delivery found no seat to act on.
//!
//! Clients enter the TRTC room with the room's id as TRTC's string room id, or with its short
//! numeric id as TRTC's numeric room id; both resolve to the room.

use base64::Engine;
use hmac::{Hmac, Mac};
use room_domain::{CommandId, RoomId, UserId};
use serde::Deserialize;
use sha2::{Digest, Sha256};

/// Audio publish started.
pub const EVENT_AUDIO_PUBLISH_STARTED: u32 = 203;
/// A user left the RTC room.
pub const EVENT_USER_LEFT: u32 = 104;

/// `base64(HMAC-SHA256(key, body))`, as TRTC computes `Sign`.
pub fn sign(key: &[u8], body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(body);
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

/// Whether `signature` (the `Sign` header) is right for `body`; compared in constant time.
pub fn verify(key: &[u8], body: &[u8], signature: &str) -> bool {
    let Ok(expected) = base64::engine::general_purpose::STANDARD.decode(signature.trim()) else {
        return false;
    };
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(key) else {
        return false;
    };
    mac.update(body);
    mac.verify_slice(&expected).is_ok()
}

/// A callback body (the fields the service reads; others are ignored).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Callback {
    /// 1 = room events, 2 = media events.
    #[serde(default)]
    pub event_group_id: u32,
    /// The event.
    pub event_type: u32,
    /// When TRTC sent it, in milliseconds.
    #[serde(default)]
    pub callback_ts: Option<i64>,
    /// The event's details.
    #[serde(default)]
    pub event_info: EventInfo,
}

/// `EventInfo` of a callback.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct EventInfo {
    /// TRTC's room id: a number or a string.
    #[serde(default)]
    pub room_id: Option<RtcRoomId>,
    /// The user.
    #[serde(default)]
    pub user_id: Option<String>,
    /// When the event happened, in seconds.
    #[serde(default)]
    pub event_ts: Option<i64>,
    /// When the event happened, in milliseconds.
    #[serde(default)]
    pub event_ms_ts: Option<i64>,
}

impl Callback {
    /// When the event happened, in milliseconds: `EventMsTs`, else `EventTs`, else (for a
    /// body without an event time) `CallbackTs`.
    pub fn event_time_ms(&self) -> Option<i64> {
        let info = &self.event_info;
        info.event_ms_ts
            .or(info.event_ts.map(|secs| secs.saturating_mul(1000)))
            .or(self.callback_ts)
    }
}

/// The id of the command that `callback` produces for `user` in `room`: a hash of the event
/// type, the room, the user and [`Callback::event_time_ms`], so TRTC's retries and replays of
/// one event name one command, and different events different commands. Room and user ids
/// may be 64 characters each, so they are hashed to keep the id within the limit:
/// `sys-rtc-{event type}-` and 40 hex digits (160 bits of SHA-256). The `sys-` prefix
/// ([`room_app::SYSTEM_ID_PREFIX`]) is refused in order ids, so no gift can take the id first.
pub fn command_id(callback: &Callback, room: &RoomId, user: &UserId) -> CommandId {
    let mut hash = Sha256::new();
    hash.update(callback.event_type.to_be_bytes());
    // Each id with its length in front, so that no two (room, user) pairs hash the same bytes.
    for id in [room.as_ref(), user.as_ref()] {
        hash.update((id.len() as u64).to_be_bytes());
        hash.update(id.as_bytes());
    }
    match callback.event_time_ms() {
        Some(time) => {
            hash.update([1]);
            hash.update(time.to_be_bytes());
        }
        None => hash.update([0]),
    }
    let digest = hash.finalize();
    let mut id = format!("{}rtc-{}-", room_app::SYSTEM_ID_PREFIX, callback.event_type);
    room_app::digest::push_hex(&mut id, &digest[..20]);
    CommandId::new(id).expect("at most 8 + 10 + 1 + 40 characters, no whitespace")
}

/// Why [`check_time`] refused a callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeRefusal {
    /// The callback carries no time at all.
    Undated,
    /// One of its times is older than the window, by `age_ms` from now.
    TooOld {
        /// How far in the past, in milliseconds.
        age_ms: i64,
    },
    /// One of its times is later than the window allows, by `ahead_ms` from now.
    InTheFuture {
        /// How far in the future, in milliseconds.
        ahead_ms: i64,
    },
}

/// Checks that every time `callback` carries lies within `window_ms` of `now_ms`, in the past
/// or the future, and that it carries one. Refuses replays of captured callbacks: TRTC's own
/// retries of an event come within a minute, while a replay comes later still.
pub fn check_time(callback: &Callback, now_ms: i64, window_ms: i64) -> Result<(), TimeRefusal> {
    let info = &callback.event_info;
    let times = [
        callback.callback_ts,
        info.event_ms_ts,
        info.event_ts.map(|secs| secs.saturating_mul(1000)),
    ];
    let mut dated = false;
    for time in times.into_iter().flatten() {
        dated = true;
        let age_ms = now_ms.saturating_sub(time);
        if age_ms > window_ms {
            return Err(TimeRefusal::TooOld { age_ms });
        }
        // Ahead of the window: a clock far off, or a body dated to outlive the window.
        if age_ms < window_ms.saturating_neg() {
            return Err(TimeRefusal::InTheFuture {
                ahead_ms: age_ms.saturating_neg(),
            });
        }
    }
    if dated {
        Ok(())
    } else {
        Err(TimeRefusal::Undated)
    }
}

/// TRTC's room id, numeric or string.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum RtcRoomId {
    /// A numeric room id: the room's short id.
    Number(u64),
    /// A string room id: the room id.
    Text(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_verify_only_with_the_key_and_the_exact_body() {
        let body = br#"{"EventGroupId":2,"EventType":203}"#;
        let signature = sign(b"key", body);
        assert!(verify(b"key", body, &signature));
        assert!(!verify(b"other", body, &signature));
        assert!(!verify(b"key", b"{}", &signature));
        assert!(!verify(b"key", body, "not base64!"));
        assert!(!verify(b"key", body, ""));
    }

    #[test]
    fn room_ids_may_be_numbers_or_strings() {
        let callback: Callback = serde_json::from_str(
            r#"{"EventGroupId":2,"EventType":203,"CallbackTs":1,"EventInfo":{"RoomId":123456,"UserId":"bob","Role":20}}"#,
        )
        .unwrap();
        assert_eq!(callback.event_info.room_id, Some(RtcRoomId::Number(123456)));
        let callback: Callback = serde_json::from_str(
            r#"{"EventGroupId":1,"EventType":104,"EventInfo":{"RoomId":"r1","UserId":"bob"}}"#,
        )
        .unwrap();
        assert_eq!(
            callback.event_info.room_id,
            Some(RtcRoomId::Text("r1".into()))
        );
    }

    fn dated(
        callback_ts: Option<i64>,
        event_ms_ts: Option<i64>,
        event_ts: Option<i64>,
    ) -> Callback {
        Callback {
            event_group_id: 1,
            event_type: EVENT_USER_LEFT,
            callback_ts,
            event_info: EventInfo {
                event_ms_ts,
                event_ts,
                ..EventInfo::default()
            },
        }
    }

    #[test]
    fn one_event_names_one_command() {
        let room = RoomId::new("r1").unwrap();
        let bob = UserId::new("bob").unwrap();
        let left = |callback_ts, event_ms_ts| Callback {
            event_type: EVENT_USER_LEFT,
            ..dated(callback_ts, event_ms_ts, None)
        };
        let id = |callback: &Callback| command_id(callback, &room, &bob).to_string();
        let first = id(&left(Some(1_000), Some(900)));
        assert!(first.starts_with("sys-rtc-104-"), "{first}");
        // A retry stamped anew is the same event.
        assert_eq!(id(&left(Some(11_000), Some(900))), first);
        // Another time, type, room or user is another command.
        assert_ne!(id(&left(Some(1_000), Some(901))), first);
        let publish = Callback {
            event_type: EVENT_AUDIO_PUBLISH_STARTED,
            ..left(Some(1_000), Some(900))
        };
        assert_ne!(id(&publish), first);
        let other_room = RoomId::new("r2").unwrap();
        assert_ne!(
            command_id(&left(Some(1_000), Some(900)), &other_room, &bob).to_string(),
            first
        );
        let alice = UserId::new("alice").unwrap();
        assert_ne!(
            command_id(&left(Some(1_000), Some(900)), &room, &alice).to_string(),
            first
        );
        // Without an event time, the callback's own time names it.
        assert_ne!(id(&left(Some(1_000), None)), id(&left(Some(2_000), None)));
        // The longest ids still give a valid command id.
        let long = "x".repeat(64);
        let longest = Callback {
            event_type: u32::MAX,
            ..dated(None, Some(i64::MIN), None)
        };
        let id = command_id(
            &longest,
            &RoomId::new(&long).unwrap(),
            &UserId::new(&long).unwrap(),
        );
        assert!(id.as_ref().len() <= 64, "{id}");
    }

    #[test]
    fn only_callbacks_within_the_window_pass() {
        let now = 1_764_460_800_000;
        let window = 300_000;
        let check = |callback: &Callback| check_time(callback, now, window);
        assert_eq!(check(&dated(Some(now), None, None)), Ok(()));
        assert_eq!(check(&dated(Some(now - window), None, None)), Ok(()));
        assert_eq!(check(&dated(Some(now + window), None, None)), Ok(()));
        assert_eq!(check(&dated(None, None, Some(now / 1000 - 10))), Ok(()));
        assert_eq!(
            check(&dated(Some(now - window - 1), None, None)),
            Err(TimeRefusal::TooOld { age_ms: window + 1 })
        );
        assert_eq!(
            check(&dated(Some(now + window + 1), None, None)),
            Err(TimeRefusal::InTheFuture {
                ahead_ms: window + 1
            })
        );
        assert_eq!(check(&dated(None, None, None)), Err(TimeRefusal::Undated));
        // Should a retry be stamped anew, it still carries the old event's time.
        assert_eq!(
            check(&dated(Some(now), Some(now - 3_600_000), None)),
            Err(TimeRefusal::TooOld { age_ms: 3_600_000 })
        );
        assert_eq!(
            check(&dated(Some(now), None, Some(now / 1000 - 3600))),
            Err(TimeRefusal::TooOld { age_ms: 3_600_000 })
        );
        // Extreme values neither overflow nor pass.
        assert!(check(&dated(Some(i64::MIN), None, None)).is_err());
        assert!(check(&dated(Some(i64::MAX), None, None)).is_err());
        assert!(check(&dated(None, None, Some(i64::MAX))).is_err());
    }
}
