//! Idempotency keys ([`IdempotencyKey`]): a client's key for one request, and the command and
//! room ids derived from it so that a repeat gets the first answer.

use room_domain::{CommandId, RoomId, UserId};

use crate::error::{Error, Result};

/// The longest idempotency key, in characters.
pub const MAX_IDEMPOTENCY_KEY_CHARS: usize = 64;

/// A client's idempotency key for one request, scoped to the route it came on: the same key
/// on another route, or from another user, is another request.
///
/// A keyed request runs its room commands under ids derived from (user, route, key), so a
/// repeat gets the first answer from the cell (or from the command log) and changes nothing
/// more. A keyed room creation derives its room id the same way: a repeat answers the same
/// room.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey {
    route: String,
    key: String,
}

impl IdempotencyKey {
    /// The key `key` sent on `route` (say `"POST /v1/rooms/{room_id}/kick"`): 1 to
    /// [`MAX_IDEMPOTENCY_KEY_CHARS`] printable ASCII characters (space to `~`), else
    /// [`Error::Invalid`].
    pub fn new(route: impl Into<String>, key: &str) -> Result<Self> {
        let printable = key.bytes().all(|b| (b' '..=b'~').contains(&b));
        if key.is_empty() || key.len() > MAX_IDEMPOTENCY_KEY_CHARS || !printable {
            return Err(Error::Invalid(format!(
                "an idempotency key has 1 to {MAX_IDEMPOTENCY_KEY_CHARS} printable ASCII characters"
            )));
        }
        Ok(IdempotencyKey {
            route: route.into(),
            key: key.to_owned(),
        })
    }

    /// The key as the client sent it.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// 48 hex digits of SHA-256 over the user, the route, the key and `step` (which of the
    /// request's commands), each length-prefixed so that no two tuples hash the same input.
    fn digest(&self, user: &UserId, step: &str) -> String {
        let parts = [user.as_str(), &self.route, &self.key, step].map(str::as_bytes);
        crate::digest::hex(&crate::digest::length_prefixed_sha256(parts)[..24])
    }

    /// The key of the request's record in the shared store of keyed requests
    /// ([`KeyedGate`](crate::keyed::KeyedGate)): 64 hex digits over the user, the route and
    /// the key.
    pub fn record_key(&self, user: &UserId) -> String {
        let parts = [user.as_str(), &self.route, &self.key, "record"].map(str::as_bytes);
        crate::digest::hex(&crate::digest::length_prefixed_sha256(parts))
    }

    /// The id of the request's command `step`. Under the [`SYSTEM_ID_PREFIX`], which no
    /// client-chosen id may take.
    ///
    /// [`SYSTEM_ID_PREFIX`]: crate::SYSTEM_ID_PREFIX
    pub(super) fn command_id(&self, user: &UserId, step: &str) -> Result<CommandId> {
        CommandId::new(format!(
            "{}key-{}",
            crate::ids::SYSTEM_ID_PREFIX,
            self.digest(user, step)
        ))
        .map_err(Error::corrupt)
    }

    /// The id of the room a keyed creation by `user` makes: `rk` and 48 hex digits (generated
    /// room ids are hex digits after the `r`, so they never take this form). Public so that a
    /// caller can look the room up before it creates it.
    pub fn room_id(&self, user: &UserId) -> Result<RoomId> {
        RoomId::new(format!("rk{}", self.digest(user, "room"))).map_err(Error::corrupt)
    }
}

#[cfg(test)]
mod tests {
    use room_domain::UserId;

    use super::*;

    #[test]
    fn idempotency_keys_are_printable_ascii_and_scoped_by_user_route_and_step() {
        for bad in ["", "tab\there", "clé", &"k".repeat(65)] {
            assert!(
                IdempotencyKey::new("POST /v1/rooms", bad).is_err(),
                "{bad:?}"
            );
        }
        let user = |name: &str| UserId::new(name).unwrap();
        let key = IdempotencyKey::new("POST /v1/rooms/{room_id}/kick", "a b~1").unwrap();
        let other_route = IdempotencyKey::new("POST /v1/rooms/{room_id}/unban", "a b~1").unwrap();
        let id = |key: &IdempotencyKey, name: &str, step: &str| {
            key.command_id(&user(name), step).unwrap()
        };
        assert_eq!(id(&key, "alice", "command"), id(&key, "alice", "command"));
        assert_ne!(id(&key, "alice", "command"), id(&key, "bob", "command"));
        assert_ne!(
            id(&key, "alice", "command"),
            id(&other_route, "alice", "command")
        );
        assert_ne!(id(&key, "alice", "command"), id(&key, "alice", "join"));
        assert!(
            id(&key, "alice", "command")
                .as_str()
                .starts_with(crate::ids::SYSTEM_ID_PREFIX)
        );
        assert!(IdempotencyKey::new("r", &"k".repeat(64)).is_ok());
    }
}
