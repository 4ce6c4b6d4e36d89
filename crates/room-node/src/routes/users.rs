//! The user directory's routes: the upstream user service writes and reads profiles (platform
//! admin), and a user changes their own nickname and avatar.

use axum::Json;
use axum::extract::State;
use room_app::ports::{Change, ProfilePatch};
use room_domain::UserId;

use crate::auth::{Auth, PlatformAdmin};
use crate::dto::{
    PatchMyProfileRequest, PutUserRequest, PutUsersRequest, PutUsersResponse, UserProfileResponse,
};
use crate::error::{ApiCode, ApiError, ApiResult, ErrorResponse};
use crate::extract::{ApiJson, ApiPath, parse_id};
use crate::state::AppState;

/// A field of a request as a change: absent keeps it, `null` clears it, a value sets it.
fn change(field: Option<Option<String>>) -> Change<String> {
    match field {
        None => Change::Keep,
        Some(None) => Change::Clear,
        Some(Some(value)) => Change::Set(value),
    }
}

/// An avatar URL as a change: `""` clears it, as it removes a room's cover.
fn avatar(field: Option<Option<String>>) -> Change<String> {
    match field {
        Some(Some(url)) if url.is_empty() => Change::Clear,
        other => change(other),
    }
}

fn patch_of(request: PutUserRequest) -> ProfilePatch {
    ProfilePatch {
        nickname: change(request.nickname),
        avatar_url: avatar(request.avatar_url),
        region: change(request.region),
        country: change(request.country),
        agency: change(request.agency),
    }
}

/// Creates or changes a user's profile (the upstream user service keeps it up to date): each
/// field absent stays, `null` clears it, a value sets it. Answers the profile as written.
#[utoipa::path(
    put, path = "/v1/admin/users/{user_id}", tag = "admin",
    params(("user_id" = crate::dto::Id, Path, description = "The user")),
    request_body = PutUserRequest,
    responses(
        (status = 200, description = "The profile as written", body = UserProfileResponse),
        (status = 400, description = "`MALFORMED_JSON`, `INVALID_BODY`, `INVALID_ID`, or `INVALID_PROFILE`: a field breaks its rule, the message names it (nickname: 1 to 30 characters, not blank, no control or bidirectional character; avatar_url: the image URL rule, at most 2,048 bytes; region: 1 to 32 ASCII letters, digits, `-`, `_`; country: two ASCII uppercase letters; agency: an id, 1 to 64 characters); nothing was written", body = ErrorResponse),
        (status = 403, description = "`FORBIDDEN`: not a platform admin", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn put_user(
    State(state): State<AppState>,
    PlatformAdmin(_): PlatformAdmin,
    ApiPath(user_id): ApiPath<String>,
    // Checked like on every mutating route; a PUT is idempotent by its body.
    _key: crate::extract::IdempotencyKey,
    ApiJson(request): ApiJson<PutUserRequest>,
) -> ApiResult<Json<UserProfileResponse>> {
    let user: UserId = parse_id("user_id", &user_id)?;
    let profile = state
        .service
        .profiles()
        .put(&user, &patch_of(request))
        .await?;
    Ok(Json(profile.into()))
}

/// Creates or changes many users' profiles in one transaction, each entry as
/// `PUT /v1/admin/users/{user_id}` does, in order: all are written, or (a bad entry, too many)
/// none.
#[utoipa::path(
    put, path = "/v1/admin/users", tag = "admin",
    request_body = PutUsersRequest,
    responses(
        (status = 200, description = "Every entry was written", body = PutUsersResponse),
        (status = 400, description = "`MALFORMED_JSON`, `INVALID_BODY`, `INVALID_ID` (`users[3].user_id`), or `INVALID_PROFILE`: no entry or more than 500, or a field of an entry breaks its rule, the message names the entry and the field (`users[3].country`); nothing was written", body = ErrorResponse),
        (status = 403, description = "`FORBIDDEN`: not a platform admin", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn put_users(
    State(state): State<AppState>,
    PlatformAdmin(_): PlatformAdmin,
    // Checked like on every mutating route; a repeat of the batch writes the same profiles.
    _key: crate::extract::IdempotencyKey,
    ApiJson(request): ApiJson<PutUsersRequest>,
) -> ApiResult<Json<PutUsersResponse>> {
    if request.users.is_empty() {
        return Err(ApiError::of(
            ApiCode::InvalidProfile,
            "users: at least one entry",
        ));
    }
    let patches = request
        .users
        .into_iter()
        .enumerate()
        .map(|(index, entry)| {
            let (user_id, fields) = entry.split();
            let user: UserId = parse_id(&format!("users[{index}].user_id"), &user_id)?;
            Ok((user, patch_of(fields)))
        })
        .collect::<ApiResult<Vec<_>>>()?;
    state.service.profiles().put_many(&patches).await?;
    Ok(Json(PutUsersResponse {
        written: patches.len(),
    }))
}

/// A user's profile as the directory holds it (not the node's cache).
#[utoipa::path(
    get, path = "/v1/admin/users/{user_id}", tag = "admin",
    params(("user_id" = crate::dto::Id, Path, description = "The user")),
    responses(
        (status = 200, description = "The profile", body = UserProfileResponse),
        (status = 403, description = "`FORBIDDEN`: not a platform admin", body = ErrorResponse),
        (status = 404, description = "`NOT_FOUND`: the directory has no profile of the user", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn get_user(
    State(state): State<AppState>,
    PlatformAdmin(_): PlatformAdmin,
    ApiPath(user_id): ApiPath<String>,
) -> ApiResult<Json<UserProfileResponse>> {
    let user: UserId = parse_id("user_id", &user_id)?;
    match state.service.profiles().get(&user).await? {
        Some(profile) => Ok(Json(profile.into())),
        None => Err(ApiError::of(
            ApiCode::NotFound,
            format!("no profile of {user}"),
        )),
    }
}

/// Changes the caller's own nickname and avatar (region, country and agency are the upstream
/// user service's): each absent stays, `null` clears it. Rooms show the change in new events
/// and views at once on this node, within `ROOM__PROFILES__CACHE_TTL_MS` on the others.
#[utoipa::path(
    patch, path = "/v1/me/profile", tag = "me",
    request_body = PatchMyProfileRequest,
    responses(
        (status = 200, description = "The caller's profile as written", body = UserProfileResponse),
        (status = 400, description = "`MALFORMED_JSON`, `INVALID_BODY`, or `INVALID_PROFILE`: the nickname (1 to 30 characters, not blank, no control or bidirectional character) or the avatar URL (the image URL rule, at most 2,048 bytes) breaks its rule, the message names it; nothing was written", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn patch_my_profile(
    State(state): State<AppState>,
    Auth(actor): Auth,
    // Checked like on every mutating route; a repeat of the change writes the same profile.
    _key: crate::extract::IdempotencyKey,
    ApiJson(request): ApiJson<PatchMyProfileRequest>,
) -> ApiResult<Json<UserProfileResponse>> {
    let profile = state
        .service
        .profiles()
        .put_own(
            &actor.user_id,
            change(request.nickname),
            avatar(request.avatar_url),
        )
        .await?;
    Ok(Json(profile.into()))
}
