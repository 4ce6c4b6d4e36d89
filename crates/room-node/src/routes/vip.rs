//! VIP routes (platform admins): a user's grant (grant, extend or change; revoke; read) and
//! the level table (read; replace by compare-and-set).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use room_domain::{Timestamp, UserId, VipPrivileges};

use crate::auth::PlatformAdmin;
use crate::dto::{PutVipLevelsRequest, PutVipRequest, VipGrantResponse, VipLevelsResponse};
use crate::error::{ApiCode, ApiError, ApiResult, ErrorResponse};
use crate::extract::{ApiJson, ApiPath, parse_id};
use crate::state::AppState;

/// Grants, extends or changes a user's VIP level until `expires_at_ms` (the last write wins;
/// a repeat changes nothing). Rooms count it on this node at once, on the others within
/// `ROOM__VIP__CACHE_TTL_MS`; a member already in a room shows the new level on their next
/// join, and its shields hold from the next kick or mute.
#[utoipa::path(
    put, path = "/v1/admin/users/{user_id}/vip", tag = "admin",
    params(("user_id" = crate::dto::Id, Path, description = "The user")),
    request_body = PutVipRequest,
    responses(
        (status = 200, description = "The grant as written", body = VipGrantResponse),
        (status = 400, description = "`MALFORMED_JSON`, `INVALID_BODY` or `INVALID_ID`; nothing was written", body = ErrorResponse),
        (status = 422, description = "`INVALID_VIP_GRANT`: the level is not in the current level table, or `expires_at_ms` is not in the future; nothing was written", body = ErrorResponse),
        (status = 403, description = "`FORBIDDEN`: not a platform admin", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn put_user_vip(
    State(state): State<AppState>,
    PlatformAdmin(_): PlatformAdmin,
    ApiPath(user_id): ApiPath<String>,
    // Checked like on every mutating route; a PUT is idempotent by its body.
    _key: crate::extract::IdempotencyKey,
    ApiJson(request): ApiJson<PutVipRequest>,
) -> ApiResult<Json<VipGrantResponse>> {
    let user: UserId = parse_id("user_id", &user_id)?;
    let level = u8::try_from(request.level).map_err(|_| {
        ApiError::of(
            ApiCode::InvalidVipGrant,
            format!("level {} is not in the level table", request.level),
        )
    })?;
    let grant = state
        .service
        .vip()
        .grant(&user, level, Timestamp(request.expires_at_ms))
        .await?;
    let now = state.service.ports().clock.now();
    Ok(Json(VipGrantResponse::new(user.as_str(), grant, now)))
}

/// Revokes a user's VIP grant: from now on (on other nodes within
/// `ROOM__VIP__CACHE_TTL_MS`) they have no VIP privileges. Answers 204 whether or not there
/// was a grant, so a repeat is harmless.
#[utoipa::path(
    delete, path = "/v1/admin/users/{user_id}/vip", tag = "admin",
    params(("user_id" = crate::dto::Id, Path, description = "The user")),
    responses(
        (status = 204, description = "The user has no grant"),
        (status = 400, description = "`INVALID_ID`", body = ErrorResponse),
        (status = 403, description = "`FORBIDDEN`: not a platform admin", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn delete_user_vip(
    State(state): State<AppState>,
    PlatformAdmin(_): PlatformAdmin,
    ApiPath(user_id): ApiPath<String>,
    _key: crate::extract::IdempotencyKey,
) -> ApiResult<StatusCode> {
    let user: UserId = parse_id("user_id", &user_id)?;
    state.service.vip().revoke(&user).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// A user's VIP grant as stored (not the node's cache), expired or not: `active` says
/// whether it is in force now.
#[utoipa::path(
    get, path = "/v1/admin/users/{user_id}/vip", tag = "admin",
    params(("user_id" = crate::dto::Id, Path, description = "The user")),
    responses(
        (status = 200, description = "The grant", body = VipGrantResponse),
        (status = 400, description = "`INVALID_ID`", body = ErrorResponse),
        (status = 403, description = "`FORBIDDEN`: not a platform admin", body = ErrorResponse),
        (status = 404, description = "`NOT_FOUND`: the user has no grant", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn get_user_vip(
    State(state): State<AppState>,
    PlatformAdmin(_): PlatformAdmin,
    ApiPath(user_id): ApiPath<String>,
) -> ApiResult<Json<VipGrantResponse>> {
    let user: UserId = parse_id("user_id", &user_id)?;
    let grant = state
        .service
        .vip()
        .grant_of(&user)
        .await?
        .ok_or_else(|| ApiError::of(ApiCode::NotFound, format!("{user} has no VIP grant")))?;
    let now = state.service.ports().clock.now();
    Ok(Json(VipGrantResponse::new(user.as_str(), grant, now)))
}

/// The VIP level table: what each level gives (kick and mute shields against room admins,
/// the entry effect and vehicle shown when the holder joins a room).
#[utoipa::path(
    get, path = "/v1/admin/vip-levels", tag = "admin",
    responses(
        (status = 200, description = "The level table (version 0 and no levels before the first change)", body = VipLevelsResponse),
        (status = 403, description = "`FORBIDDEN`: not a platform admin", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn get_vip_levels(
    State(state): State<AppState>,
    PlatformAdmin(_): PlatformAdmin,
) -> ApiResult<Json<VipLevelsResponse>> {
    Ok(Json(state.service.vip().levels().await?.into()))
}

/// Replaces the VIP level table, if it is still at `expected_version`. Rooms count the new
/// table on this node at once, on the others within `ROOM__VIP__CACHE_TTL_MS`. Grants of a
/// level the new table lacks stay, and give no privileges while it lacks it.
#[utoipa::path(
    put, path = "/v1/admin/vip-levels", tag = "admin",
    request_body = PutVipLevelsRequest,
    responses(
        (status = 200, description = "The table as written, with its new version", body = VipLevelsResponse),
        (status = 400, description = "`MALFORMED_JSON`, `INVALID_BODY`, or `INVALID_VIP_LEVELS`: more than 32 levels, or an entry effect or vehicle id that is empty, over 64 characters or has a character other than ASCII letters, digits, `-`, `_`, `.`, `:` (the message names the level and the field); nothing was written", body = ErrorResponse),
        (status = 403, description = "`FORBIDDEN`: not a platform admin", body = ErrorResponse),
        (status = 409, description = "`VIP_LEVELS_STALE`: the current version is not `expected_version`", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn put_vip_levels(
    State(state): State<AppState>,
    PlatformAdmin(_): PlatformAdmin,
    // Checked like on every mutating route; the route is idempotent by `expected_version`.
    _key: crate::extract::IdempotencyKey,
    ApiJson(request): ApiJson<PutVipLevelsRequest>,
) -> ApiResult<Json<VipLevelsResponse>> {
    let levels: Vec<VipPrivileges> = request.levels.into_iter().map(Into::into).collect();
    let table = state
        .service
        .vip()
        .put_levels(request.expected_version, levels)
        .await
        .map_err(|error| match error {
            room_app::Error::Conflict(message) => ApiError::of(ApiCode::VipLevelsStale, message),
            other => other.into(),
        })?;
    Ok(Json(table.into()))
}
