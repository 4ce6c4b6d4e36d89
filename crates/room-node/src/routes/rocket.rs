//! The rocket's levels at run time (platform admins).

use axum::Json;
use axum::extract::State;
use room_app::rocket::change_rocket;

use crate::auth::PlatformAdmin;
use crate::dto::{PutRocketRequest, RocketSettingsResponse};
use crate::error::{ApiCode, ApiError, ApiResult, ErrorResponse};
use crate::extract::ApiJson;
use crate::state::AppState;

/// The rocket's current levels: the fuel that ignites each, its countdown, and what its
/// launch gives away.
#[utoipa::path(
    get, path = "/v1/admin/rocket", tag = "admin",
    responses(
        (status = 200, description = "The current levels", body = RocketSettingsResponse),
        (status = 403, description = "`FORBIDDEN`: not a platform admin", body = ErrorResponse),
        (status = 404, description = "`NOT_FOUND`: no levels are stored (the service stores version 1 at start-up)", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn get_rocket(
    State(state): State<AppState>,
    PlatformAdmin(_): PlatformAdmin,
) -> ApiResult<Json<RocketSettingsResponse>> {
    let settings = state
        .service
        .ports()
        .rocket
        .current_rocket()
        .await?
        .ok_or_else(|| ApiError::of(ApiCode::NotFound, "no rocket levels are stored"))?;
    Ok(Json(settings.into()))
}

/// Stores the next version of the rocket's levels, if the current one is still
/// `expected_version`. This node's rooms take them at once, every other node's within
/// `catalog.rocket_refresh_ms`, without a restart: a room fuels and ignites by them from its
/// next gift; a rocket counting down launches with the prize it ignited with.
#[utoipa::path(
    put, path = "/v1/admin/rocket", tag = "admin",
    request_body = PutRocketRequest,
    responses(
        (status = 200, description = "The new version", body = RocketSettingsResponse),
        (status = 400, description = "`MALFORMED_JSON` or `INVALID_BODY`", body = ErrorResponse),
        (status = 403, description = "`FORBIDDEN`: not a platform admin", body = ErrorResponse),
        (status = 409, description = "`ROCKET_VERSION_STALE`: the current version is not `expected_version`", body = ErrorResponse),
        (status = 422, description = "`INVALID_ROCKET_SETTINGS`: fuel not rising from level to level, a pool without winners (or no levels or more than 50, fuel not positive, a countdown over 3600 s, a negative pool, more than 10000 winners, a cap below 1); nothing stored", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn put_rocket(
    State(state): State<AppState>,
    PlatformAdmin(_): PlatformAdmin,
    // Checked like on every mutating route; the route is idempotent by `expected_version`.
    _key: crate::extract::IdempotencyKey,
    ApiJson(request): ApiJson<PutRocketRequest>,
) -> ApiResult<Json<RocketSettingsResponse>> {
    let levels = request.levels.into_iter().map(Into::into).collect();
    let settings = change_rocket(
        &state.service.ports().rocket,
        request.expected_version,
        levels,
    )
    .await
    .map_err(|error| match error {
        room_app::Error::Invalid(message) => ApiError::of(ApiCode::InvalidRocketSettings, message),
        room_app::Error::Conflict(message) => ApiError::of(ApiCode::RocketVersionStale, message),
        other => other.into(),
    })?;
    // This node's rooms take the new levels from their next batch.
    state.service.runtime().set_rocket(&settings);
    Ok(Json(settings.into()))
}
