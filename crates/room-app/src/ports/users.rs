//! The user directory ([`UserDirectory`]): who people are. Per user, the display fields the
//! rooms show beside the id (nickname, avatar) and the fields the room lists and billing group
//! people by (region, country, agency), each optional. The upstream user service keeps them up
//! to date, and users their own nickname and avatar.
//!
//! The rules of the fields ([`ProfilePatch::problem`]):
//!
//! - nickname: the room name's text rule ([`Field::Name`]): 1 to [`MAX_NICKNAME_CHARS`]
//!   characters, not blank, no control character and no bidirectional embedding, override or
//!   isolate;
//! - avatar URL: the image URL rule of covers and backgrounds
//!   ([`check_image_url`](room_domain::check_image_url)), at most
//!   [`MAX_IMAGE_URL_BYTES`](room_domain::MAX_IMAGE_URL_BYTES) bytes;
//! - region: 1 to [`MAX_REGION_CHARS`] ASCII letters, digits, `-` or `_` (`eu-west`, `SA`);
//! - country: an ISO 3166-1 alpha-2 code, two ASCII uppercase letters (`SA`, `EG`);
//! - agency: an id, by the id rule of users and rooms (1 to
//!   [`MAX_AGENCY_CHARS`] printable characters, no whitespace and no `/`).

use std::sync::Arc;

use async_trait::async_trait;
use room_domain::{Field, Rejection, UserId};
use serde::{Deserialize, Serialize};

use crate::error::Result;

/// The longest nickname, in characters: the room name's limit.
pub const MAX_NICKNAME_CHARS: usize = Field::Name.max_chars() as usize;

/// The longest region code, in characters.
pub const MAX_REGION_CHARS: usize = 32;

/// The longest agency id, in characters (the id rule's limit).
pub const MAX_AGENCY_CHARS: usize = room_domain::MAX_ID_CHARS;

/// The most users one batch may write or read: [`UserDirectory::upsert_profiles`] and
/// [`UserDirectory::get_profiles`] refuse more with [`Error::Invalid`](crate::Error::Invalid).
pub const MAX_PROFILE_BATCH: usize = 500;

/// What the directory holds about one user. A user the directory never heard of has no
/// profile; one it knows may still have any field unset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserProfile {
    /// The user.
    pub user_id: UserId,
    /// The name shown for the user.
    pub nickname: Option<String>,
    /// The user's picture.
    pub avatar_url: Option<String>,
    /// The user's region code.
    pub region: Option<String>,
    /// The user's country (ISO 3166-1 alpha-2).
    pub country: Option<String>,
    /// The agency the user belongs to.
    pub agency: Option<String>,
}

impl UserProfile {
    /// A profile of `user_id` with no field set.
    pub fn empty(user_id: UserId) -> Self {
        UserProfile {
            user_id,
            nickname: None,
            avatar_url: None,
            region: None,
            country: None,
            agency: None,
        }
    }
}

/// A change of one field of a profile.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Change<T> {
    /// The field stays as it is.
    #[default]
    Keep,
    /// The field takes this value.
    Set(T),
    /// The field is cleared (unset).
    Clear,
}

impl<T: Clone> Change<T> {
    /// The field after this change, from `current`.
    pub fn applied(&self, current: Option<T>) -> Option<T> {
        match self {
            Change::Keep => current,
            Change::Set(value) => Some(value.clone()),
            Change::Clear => None,
        }
    }

    /// Whether the change writes the field (sets or clears it).
    pub fn writes(&self) -> bool {
        !matches!(self, Change::Keep)
    }

    /// The value the change sets, if it sets one.
    pub fn value(&self) -> Option<&T> {
        match self {
            Change::Set(value) => Some(value),
            Change::Keep | Change::Clear => None,
        }
    }
}

/// A change of a profile: each field kept, set or cleared. Writing a patch to a user the
/// directory does not know creates the profile, with the fields the patch sets.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProfilePatch {
    /// The nickname's change.
    pub nickname: Change<String>,
    /// The avatar URL's change.
    pub avatar_url: Change<String>,
    /// The region's change.
    pub region: Change<String>,
    /// The country's change.
    pub country: Change<String>,
    /// The agency's change.
    pub agency: Change<String>,
}

impl ProfilePatch {
    /// `profile` with this patch applied.
    pub fn apply(&self, profile: UserProfile) -> UserProfile {
        UserProfile {
            user_id: profile.user_id,
            nickname: self.nickname.applied(profile.nickname),
            avatar_url: self.avatar_url.applied(profile.avatar_url),
            region: self.region.applied(profile.region),
            country: self.country.applied(profile.country),
            agency: self.agency.applied(profile.agency),
        }
    }

    /// Why a value this patch sets breaks its field's rule (see the [module](self)), if one
    /// does: the field's name in the API and what is wrong.
    pub fn problem(&self) -> Option<(&'static str, String)> {
        if let Some(nickname) = self.nickname.value()
            && let Some(problem) = nickname_problem(nickname)
        {
            return Some(("nickname", problem));
        }
        if let Some(url) = self.avatar_url.value()
            && room_domain::check_image_url(Field::CoverUrl, url).is_err()
        {
            return Some((
                "avatar_url",
                format!(
                    "an avatar URL is an absolute http or https URL of the plain shape of \
                     the image URL rule, at most {} bytes",
                    room_domain::MAX_IMAGE_URL_BYTES
                ),
            ));
        }
        if let Some(region) = self.region.value() {
            let shaped = (1..=MAX_REGION_CHARS).contains(&region.len())
                && region
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
            if !shaped {
                return Some((
                    "region",
                    format!(
                        "a region has 1 to {MAX_REGION_CHARS} ASCII letters, digits, '-' or '_'"
                    ),
                ));
            }
        }
        if let Some(country) = self.country.value()
            && (country.len() != 2 || !country.bytes().all(|b| b.is_ascii_uppercase()))
        {
            return Some((
                "country",
                "a country is an ISO 3166-1 alpha-2 code: two ASCII uppercase letters".to_owned(),
            ));
        }
        if let Some(agency) = self.agency.value()
            && let Err(error) = UserId::new(agency)
        {
            return Some((
                "agency",
                format!("an agency is an id of 1 to {MAX_AGENCY_CHARS} characters: {error}"),
            ));
        }
        None
    }
}

/// Why `nickname` breaks the nickname rule, if it does.
fn nickname_problem(nickname: &str) -> Option<String> {
    if nickname.trim().is_empty() {
        return Some("a nickname must not be blank".to_owned());
    }
    match Field::Name.check(nickname) {
        Ok(()) => None,
        Err(Rejection::FieldTooLong { max, .. }) => {
            Some(format!("a nickname has at most {max} characters"))
        }
        Err(Rejection::FieldInvalidCharacter { character, .. }) => Some(format!(
            "a nickname may not hold U+{character:04X} (a control or bidirectional character)"
        )),
        Err(other) => Some(format!("a nickname breaks the text rule: {other}")),
    }
}

/// The user directory. Reads of many users and writes of many are bounded by
/// [`MAX_PROFILE_BATCH`]. The store does not check the fields' rules: the use cases do, with
/// [`ProfilePatch::problem`], before they write.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait UserDirectory: Send + Sync {
    /// The profile of `user_id`, if the directory has one.
    async fn get_profile(&self, user_id: &UserId) -> Result<Option<UserProfile>>;

    /// The profiles of those of `user_ids` the directory has, each once, by user id. More
    /// than [`MAX_PROFILE_BATCH`] ids: [`Error::Invalid`](crate::Error::Invalid), nothing
    /// read.
    async fn get_profiles(&self, user_ids: &[UserId]) -> Result<Vec<UserProfile>>;

    /// Applies `patch` to the profile of `user_id` (creating it if absent) in one atomic
    /// write, and returns the profile as written. Two patches at once of different fields
    /// both hold.
    async fn upsert_profile(&self, user_id: &UserId, patch: &ProfilePatch) -> Result<UserProfile>;

    /// Applies every patch, in order, in ONE transaction: all are written or none. More than
    /// [`MAX_PROFILE_BATCH`] patches: [`Error::Invalid`](crate::Error::Invalid), nothing
    /// written.
    async fn upsert_profiles(&self, patches: &[(UserId, ProfilePatch)]) -> Result<()>;
}

/// Shared handle to a [`UserDirectory`].
pub type UserDirectoryRef = Arc<dyn UserDirectory>;

/// The error of a batch over [`MAX_PROFILE_BATCH`], which every store answers the same.
pub fn batch_too_large(len: usize) -> crate::Error {
    crate::Error::Invalid(format!(
        "{len} users in one batch; at most {MAX_PROFILE_BATCH}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(value: &str) -> Change<String> {
        Change::Set(value.to_owned())
    }

    #[test]
    fn each_rule_refuses_what_it_names() {
        let refused = [
            (
                ProfilePatch {
                    nickname: set("  "),
                    ..ProfilePatch::default()
                },
                "nickname",
            ),
            (
                ProfilePatch {
                    nickname: set(&"n".repeat(MAX_NICKNAME_CHARS + 1)),
                    ..ProfilePatch::default()
                },
                "nickname",
            ),
            (
                ProfilePatch {
                    nickname: set("a\u{202E}b"),
                    ..ProfilePatch::default()
                },
                "nickname",
            ),
            (
                ProfilePatch {
                    avatar_url: set("javascript:alert(1)"),
                    ..ProfilePatch::default()
                },
                "avatar_url",
            ),
            (
                ProfilePatch {
                    region: set("eu west"),
                    ..ProfilePatch::default()
                },
                "region",
            ),
            (
                ProfilePatch {
                    region: set(&"r".repeat(MAX_REGION_CHARS + 1)),
                    ..ProfilePatch::default()
                },
                "region",
            ),
            (
                ProfilePatch {
                    country: set("sa"),
                    ..ProfilePatch::default()
                },
                "country",
            ),
            (
                ProfilePatch {
                    country: set("SAU"),
                    ..ProfilePatch::default()
                },
                "country",
            ),
            (
                ProfilePatch {
                    agency: set("a/b"),
                    ..ProfilePatch::default()
                },
                "agency",
            ),
            (
                ProfilePatch {
                    agency: set(&"a".repeat(MAX_AGENCY_CHARS + 1)),
                    ..ProfilePatch::default()
                },
                "agency",
            ),
        ];
        for (patch, field) in refused {
            assert_eq!(patch.problem().map(|(f, _)| f), Some(field), "{patch:?}");
        }
    }

    #[test]
    fn values_at_the_limits_pass() {
        let patch = ProfilePatch {
            nickname: set(&"名".repeat(MAX_NICKNAME_CHARS)),
            avatar_url: set("https://img.example/a.png"),
            region: set(&"r".repeat(MAX_REGION_CHARS)),
            country: set("SA"),
            agency: set(&"a".repeat(MAX_AGENCY_CHARS)),
        };
        assert_eq!(patch.problem(), None);
        assert_eq!(ProfilePatch::default().problem(), None);
    }

    #[test]
    fn a_patch_keeps_sets_and_clears() {
        let before = UserProfile {
            nickname: Some("old".into()),
            avatar_url: Some("https://img.example/old.png".into()),
            region: Some("eu".into()),
            ..UserProfile::empty(UserId::new("u1").unwrap())
        };
        let patch = ProfilePatch {
            nickname: set("new"),
            avatar_url: Change::Clear,
            country: set("SA"),
            ..ProfilePatch::default()
        };
        let after = patch.apply(before);
        assert_eq!(after.nickname.as_deref(), Some("new"));
        assert_eq!(after.avatar_url, None);
        assert_eq!(after.region.as_deref(), Some("eu"));
        assert_eq!(after.country.as_deref(), Some("SA"));
        assert_eq!(after.agency, None);
    }
}
