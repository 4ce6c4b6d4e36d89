//! The bodies of the user directory's routes: an admin's write of one profile or a batch, a
//! user's change of their own nickname and avatar, and the profile as read.

use room_app::ports::UserProfile;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::fields::present;
use super::schema::{Country, Id, ImageUrl, Nickname, UserRegion};

/// `PUT /v1/admin/users/{user_id}`: each field absent stays as it is, `null` clears it, a
/// value sets it. A user the directory does not know is created.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PutUserRequest {
    /// The name shown for the user.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<Nickname>)]
    pub nickname: Option<Option<String>>,
    /// The user's picture; `""` clears it, like `null`.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<ImageUrl>)]
    pub avatar_url: Option<Option<String>>,
    /// The user's region code.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<UserRegion>)]
    pub region: Option<Option<String>>,
    /// The user's country, ISO 3166-1 alpha-2.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<Country>)]
    pub country: Option<Option<String>>,
    /// The agency the user belongs to: an id.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<Id>)]
    pub agency: Option<Option<String>>,
}

/// One entry of `PUT /v1/admin/users`: the user and their fields, as in
/// `PUT /v1/admin/users/{user_id}`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PutUsersEntry {
    /// The user.
    #[schema(value_type = Id)]
    pub user_id: String,
    /// The name shown for the user.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<Nickname>)]
    pub nickname: Option<Option<String>>,
    /// The user's picture; `""` clears it, like `null`.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<ImageUrl>)]
    pub avatar_url: Option<Option<String>>,
    /// The user's region code.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<UserRegion>)]
    pub region: Option<Option<String>>,
    /// The user's country, ISO 3166-1 alpha-2.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<Country>)]
    pub country: Option<Option<String>>,
    /// The agency the user belongs to: an id.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<Id>)]
    pub agency: Option<Option<String>>,
}

impl PutUsersEntry {
    /// The entry's user id and its fields.
    pub fn split(self) -> (String, PutUserRequest) {
        (
            self.user_id,
            PutUserRequest {
                nickname: self.nickname,
                avatar_url: self.avatar_url,
                region: self.region,
                country: self.country,
                agency: self.agency,
            },
        )
    }
}

/// `PUT /v1/admin/users`: up to 500 users in one transaction.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PutUsersRequest {
    /// The users and their fields, applied in order (a user named twice gets both, the later
    /// last). 1 to 500 entries, within the 64 KiB body limit.
    #[schema(min_items = 1, max_items = 500)]
    pub users: Vec<PutUsersEntry>,
}

/// The answer to `PUT /v1/admin/users`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct PutUsersResponse {
    /// How many entries were written (all of them).
    pub written: usize,
}

/// `PATCH /v1/me/profile`: the caller's nickname and avatar; each absent stays, `null`
/// clears it.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchMyProfileRequest {
    /// The name shown for the caller.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<Nickname>)]
    pub nickname: Option<Option<String>>,
    /// The caller's picture; `""` clears it, like `null`.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<ImageUrl>)]
    pub avatar_url: Option<Option<String>>,
}

/// A user's profile as the directory holds it; a field the user has not set is `null`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct UserProfileResponse {
    /// The user.
    #[schema(value_type = Id)]
    pub user_id: String,
    /// The name shown for the user.
    pub nickname: Option<String>,
    /// The user's picture.
    pub avatar_url: Option<String>,
    /// The user's region code.
    pub region: Option<String>,
    /// The user's country, ISO 3166-1 alpha-2.
    pub country: Option<String>,
    /// The agency the user belongs to.
    pub agency: Option<String>,
}

impl From<UserProfile> for UserProfileResponse {
    fn from(profile: UserProfile) -> Self {
        UserProfileResponse {
            user_id: profile.user_id.to_string(),
            nickname: profile.nickname,
            avatar_url: profile.avatar_url,
            region: profile.region,
            country: profile.country,
            agency: profile.agency,
        }
    }
}
