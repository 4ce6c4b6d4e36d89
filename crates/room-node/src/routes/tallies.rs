//! Gift value (any user's, for any signed-in user) and room turnover (platform admins).

// utoipa's `params(DayQuery)` expands to fully qualified paths.
#![allow(unused_qualifications)]

use axum::Json;
use axum::extract::State;
use room_app::gift_value::{gift_value, room_turnover};
use room_domain::{DayKey, RoomId, UserId};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::auth::{Auth, PlatformAdmin};
use crate::dto::{GiftValueResponse, TurnoverResponse};
use crate::error::{ApiCode, ApiError, ApiResult, ErrorResponse};
use crate::extract::{ApiPath, ApiQuery, parse_id};
use crate::state::AppState;

/// The day a read is about.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DayQuery {
    /// The day, `YYYY-MM-DD` in the billing time zone (`ROOM__BILLING__TIME_ZONE`); today
    /// when absent.
    #[param(pattern = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")]
    day: Option<String>,
}

impl DayQuery {
    /// The day asked for, if any; 400 `INVALID_DAY` for one that is no calendar date.
    fn day(&self) -> ApiResult<Option<DayKey>> {
        self.day
            .as_deref()
            .map(|text| {
                DayKey::parse(text).ok_or_else(|| {
                    ApiError::of(
                        ApiCode::InvalidDay,
                        format!("day {text:?} is not a calendar date written YYYY-MM-DD"),
                    )
                })
            })
            .transpose()
    }
}

/// A user's gift value: the coin value of the paid gifts they sent and received, all time
/// and in one day, its week (Monday to Sunday) and its month, in the billing time zone.
/// Counted from the applied gifts shortly after each is applied; robot gifts never count.
#[utoipa::path(
    get, path = "/v1/users/{user_id}/gift-value", tag = "users",
    params(("user_id" = crate::dto::Id, Path, description = "Whose gift value"), DayQuery),
    responses(
        (status = 200, description = "The user's gift value (zeros for a user without gifts)", body = GiftValueResponse),
        (status = 400, description = "`INVALID_ID`, `INVALID_QUERY` or `INVALID_DAY`", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn get_gift_value(
    State(state): State<AppState>,
    Auth(_): Auth,
    ApiPath(user_id): ApiPath<String>,
    ApiQuery(query): ApiQuery<DayQuery>,
) -> ApiResult<Json<GiftValueResponse>> {
    let user: UserId = parse_id("user_id", &user_id)?;
    let ports = state.service.ports();
    let zone = &state.billing_zone;
    let view = gift_value(
        &ports.tallies,
        &user,
        query.day()?,
        ports.clock.now(),
        zone.utc_offset_secs,
    )
    .await?;
    Ok(Json(GiftValueResponse::new(
        user.to_string(),
        zone.name.clone(),
        view,
    )))
}

/// A room's gift turnover of one day (the coin value of the paid gifts applied in it), and,
/// once the day has closed and been settled, the owner's reward for it.
#[utoipa::path(
    get, path = "/v1/admin/rooms/{room_id}/turnover", tag = "admin",
    params(("room_id" = crate::dto::Id, Path, description = "The room"), DayQuery),
    responses(
        (status = 200, description = "The turnover (zero for a day without gifts)", body = TurnoverResponse),
        (status = 400, description = "`INVALID_ID`, `INVALID_QUERY` or `INVALID_DAY`", body = ErrorResponse),
        (status = 403, description = "`FORBIDDEN`: not a platform admin", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn get_turnover(
    State(state): State<AppState>,
    PlatformAdmin(_): PlatformAdmin,
    ApiPath(room_id): ApiPath<String>,
    ApiQuery(query): ApiQuery<DayQuery>,
) -> ApiResult<Json<TurnoverResponse>> {
    let room: RoomId = parse_id("room_id", &room_id)?;
    let ports = state.service.ports();
    let zone = &state.billing_zone;
    let day = match query.day()? {
        Some(day) => day,
        None => ports.clock.now().day_key(zone.utc_offset_secs),
    };
    let turnover = room_turnover(&ports.tallies, &room, day).await?;
    Ok(Json(TurnoverResponse::new(turnover, zone.name.clone())))
}
