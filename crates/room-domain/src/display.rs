//! [`UserDisplay`]: how a user is shown beside their id (nickname and avatar), as of a
//! command. The room service looks it up before it sends the command to the room, and the
//! room copies it into the display events the command produces; the room's state does not
//! keep it.

use serde::{Deserialize, Serialize};

/// A user's display fields as of a command, each optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserDisplay {
    /// The name shown for the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nickname: Option<String>,
    /// The user's picture.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub avatar_url: Option<String>,
}

impl UserDisplay {
    /// Whether neither field is set.
    pub fn is_empty(&self) -> bool {
        self.nickname.is_none() && self.avatar_url.is_none()
    }

    /// The nickname and avatar of `display`, each `None` where it has none.
    pub fn split(display: Option<&UserDisplay>) -> (Option<String>, Option<String>) {
        display.map_or((None, None), |d| (d.nickname.clone(), d.avatar_url.clone()))
    }
}
