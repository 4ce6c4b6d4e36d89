//! The idempotency keys of robot-room administration: the key a creation's room is named by,
//! and the key a configuration's profile is applied to its room under. Both name stored
//! rooms and commands, so neither form may ever change.

use room_domain::UserId;

use super::content::content;
use crate::ports::RobotRoomConfig;
use crate::service::IdempotencyKey;
use crate::{Error, Result};

/// The scope robot room creations are keyed under. It spells the API route they first came
/// on; it names stored rooms, so it stays as it is.
pub(super) const CREATE_ROUTE: &str = "POST /v1/admin/robot-rooms";

/// The scope a configuration's profile is applied under (see [`CREATE_ROUTE`]).
const PROFILE_ROUTE: &str = "PATCH /v1/admin/robot-rooms/{room_id} profile";

/// 48 hex digits of SHA-256 over `parts`, each length-prefixed so that no two tuples hash
/// the same input.
fn digest<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> String {
    crate::digest::hex(&crate::digest::length_prefixed_sha256(parts)[..24])
}

/// The idempotency key of a creation, which names its room.
///
/// A client's key is scoped to the admin who sent it: another admin's request with the same
/// key is another request, and gets another room. Without a key, one is derived from what the
/// request asks for, so that a plain retry lands on the same room. The two kinds live under
/// scopes of their own (`... key by <admin>` and `... content`, hashed length-prefixed into
/// every id), so no client key can spell a content key.
pub(super) fn creation_key(
    admin: &UserId,
    client_key: Option<&str>,
    config: &RobotRoomConfig,
    region: &str,
) -> Result<IdempotencyKey> {
    if let Some(key) = client_key {
        return IdempotencyKey::new(format!("{CREATE_ROUTE} key by {admin}"), key);
    }
    // The region sits after the seat count: the order keys of stored rooms were made in.
    let (profile, seat_count, robots, audience, seats, rate, mix, enabled) = content(config);
    let content = serde_json::to_vec(&(
        profile, seat_count, region, robots, audience, seats, rate, mix, enabled,
    ))
    .map_err(|e| Error::internal(format!("encoding a robot room: {e}")))?;
    IdempotencyKey::new(
        format!("{CREATE_ROUTE} content"),
        &digest([content.as_slice()]),
    )
}

/// The idempotency key the room's profile is changed under for version `config.version` of
/// its configuration: derived from the room, the configuration's creation (a configuration
/// deleted and made again starts at version 1 again) and the version, so that a retry, or a
/// late concurrent attempt, repeats the same command and changes nothing more.
pub(super) fn profile_key(config: &RobotRoomConfig) -> Result<IdempotencyKey> {
    IdempotencyKey::new(
        PROFILE_ROUTE,
        &digest([
            config.room_id.as_str().as_bytes(),
            &config.created_at.0.to_be_bytes(),
            &config.version.to_be_bytes(),
        ]),
    )
}

#[cfg(test)]
mod tests {
    use room_domain::{GiftId, RoomId, Timestamp};

    use super::*;
    use crate::ports::{GiftShare, RobotProfile};

    fn config() -> RobotRoomConfig {
        let now = Timestamp(0);
        RobotRoomConfig {
            room_id: RoomId::new("pending").unwrap(),
            profile: RobotProfile {
                name: "Night owls".into(),
                notice: String::new(),
                cover_url: None,
            },
            seat_count: 8,
            robots: vec![UserId::new("robot-0").unwrap()],
            audience: vec![1; 24],
            seats: 1,
            gift_rate_per_minute: 3,
            gift_mix: vec![GiftShare {
                gift_id: GiftId::new("rose").unwrap(),
                weight: 1,
            }],
            enabled: true,
            version: 1,
            created_at: now,
            updated_at: now,
        }
    }

    #[test]
    fn creation_keys_are_scoped_to_the_admin_and_apart_from_content_keys() {
        let (config, robot) = (config(), UserId::new("robot-0").unwrap());
        let (alice, bob) = (UserId::new("alice").unwrap(), UserId::new("bob").unwrap());
        let room = |admin: &UserId, key: Option<&str>| {
            creation_key(admin, key, &config, "eu")
                .unwrap()
                .room_id(&robot)
                .unwrap()
        };
        assert_eq!(room(&alice, Some("k")), room(&alice, Some("k")));
        assert_ne!(
            room(&alice, Some("k")),
            room(&bob, Some("k")),
            "another admin's key is another room"
        );
        let content = creation_key(&alice, None, &config, "eu").unwrap();
        assert_eq!(
            room(&alice, None),
            room(&bob, None),
            "the content names the room"
        );
        for spelled in [
            content.key().to_owned(),
            format!("content-{}", content.key()),
        ] {
            assert_ne!(
                room(&alice, Some(&spelled)),
                room(&alice, None),
                "a client key spelled {spelled} names no content's room"
            );
        }
    }
}
