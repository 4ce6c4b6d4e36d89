//! `[lists]`: the room lists users read, and the rooms they follow.

use serde::{Deserialize, Serialize};

use super::reference::Section;

/// `[lists]`: the room lists users read, and the rooms they follow.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ListSettings {
    /// The most rooms one user may follow; one more follow is answered 409 `FOLLOW_LIMIT`
    /// (`ROOM__LISTS__MAX_FOLLOWS_PER_USER`).
    pub max_follows_per_user: u32,
}

impl Default for ListSettings {
    fn default() -> Self {
        ListSettings {
            max_follows_per_user: 1000,
        }
    }
}

/// The largest [`ListSettings::max_follows_per_user`]: the followed-rooms list reads every
/// follow of the caller.
pub const MAX_FOLLOWS_PER_USER: u32 = 10_000;

/// What `[lists]` and each of its keys are for, in the reference (`docs/configuration.md`).
pub(super) const SECTION: Section = Section {
    name: "lists",
    about: "The room lists users read, and the rooms they follow \
            (`PUT /v1/rooms/{room_id}/follow`, `GET /v1/me/followed-rooms`).",
    keys: &[(
        "max_follows_per_user",
        "The most rooms one user may follow, 1 to 10000; one more follow is answered 409 \
         `FOLLOW_LIMIT`. `GET /v1/me/followed-rooms` reads at most this many follows of the \
         caller.",
    )],
};
