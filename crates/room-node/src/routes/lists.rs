//! The room lists: `GET /v1/rooms` (tabs, scopes, pins) and the admins' pins
//! (`POST`/`GET /v1/admin/pins`, `DELETE /v1/admin/pins/{pin_id}`).

// utoipa's `params(...)` expands to fully qualified paths.
#![allow(unused_qualifications)]

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use room_app::lists::{ListCursor, ListQuery, NewPin, Tab, pin_problem};
use room_app::ports::{MAX_PIN_ID_BYTES, MAX_PIN_PAGE, PinnedList};
use room_domain::{RoomId, Timestamp};
use serde::Deserialize;
use utoipa::IntoParams;

use super::follows::parse_followed_cursor;
use super::rooms::page_limit;
use crate::auth::{Auth, PlatformAdmin};
use crate::dto::{CreatePinRequest, PinListResponse, PinResponse, RoomListResponse};
use crate::error::{ApiCode, ApiError, ApiResult, ErrorResponse};
use crate::extract::{ApiJson, ApiPath, ApiQuery, parse_id};
use crate::state::AppState;

/// The query of `GET /v1/rooms`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    /// `hot` (default), `new`, `following`, `region`, `country` or `agency`.
    tab: Option<String>,
    /// The region of the `region` tab (default the caller's).
    region: Option<String>,
    /// The country of the `country` tab (default the caller's).
    country: Option<String>,
    /// The agency of the `agency` tab (default the caller's).
    agency: Option<String>,
    /// Items per page, 1 to 100 (default 20).
    limit: Option<u32>,
    /// The `next_cursor` of the previous page.
    cursor: Option<String>,
}

fn bad_query(message: impl Into<String>) -> ApiError {
    ApiError::of(ApiCode::InvalidQuery, message.into())
}

/// A page of a room list. `hot` ranks every open room by its recent heat (each gift's heat
/// halving every `ROOM__LISTS__HEAT_HALF_LIFE_SECS`) plus the boosts of a room with someone
/// on the mic and of a room created within the last `ROOM__LISTS__NEW_ROOM_SECS`; `new` by
/// creation, newest first; `region`, `country` and `agency` rank like `hot` the rooms of a
/// region, of owners of a country, of owners of an agency (each defaulting to the caller's
/// own); `following` lists the rooms the caller follows, open ones first. The lists are
/// ranked every `ROOM__LISTS__REFRESH_MS` and are at most that old; admins' pins show at
/// their positions while their windows are open.
#[utoipa::path(
    get, path = "/v1/rooms", tag = "rooms",
    params(
        ("tab" = Option<String>, Query, pattern = r"^(hot|new|following|region|country|agency)$", description = "`hot` (default), `new`, `following`, `region`, `country` or `agency`"),
        ("region" = Option<crate::dto::Region>, Query, description = "The region of the `region` tab (default the caller's); not taken by other tabs"),
        ("country" = Option<crate::dto::Country>, Query, description = "The country of the `country` tab (default the caller's); not taken by other tabs"),
        ("agency" = Option<crate::dto::Id>, Query, description = "The agency of the `agency` tab (default the caller's); not taken by other tabs"),
        ("limit" = Option<u32>, Query, minimum = 1, maximum = 100, description = "Items per page, 1 to 100 (default 20)"),
        ("cursor" = Option<String>, Query, max_length = 21, pattern = r"^([0-9]{1,9}|[01]\.[0-9]{1,19})?$", description = "The `next_cursor` of the previous page of the same tab"),
    ),
    responses(
        (status = 200, description = "A page of rooms", body = RoomListResponse),
        (status = 400, description = "`INVALID_QUERY` (an unknown tab, a scope given to a tab that takes none, a bad region, country or agency), `INVALID_LIMIT`, `INVALID_CURSOR`, or `INVALID_REQUEST` (a scoped tab without its scope, for a caller whose profile has none)", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn list_rooms(
    State(state): State<AppState>,
    Auth(actor): Auth,
    ApiQuery(params): ApiQuery<ListParams>,
) -> ApiResult<Json<RoomListResponse>> {
    let limit = page_limit(params.limit)?;
    let tab = match params.tab.as_deref() {
        None => Tab::Hot,
        Some(name) => Tab::from_name(name).ok_or_else(|| {
            bad_query(format!(
                "tab {name:?} is not one of hot, new, following, region, country, agency"
            ))
        })?,
    };
    // An empty scope is a bad one (refused below), not a missing one.
    let (region, country, agency) = (params.region, params.country, params.agency);
    for (name, given, takes) in [
        ("region", region.is_some(), Tab::Region),
        ("country", country.is_some(), Tab::Country),
        ("agency", agency.is_some(), Tab::Agency),
    ] {
        if given && tab != takes {
            return Err(bad_query(format!(
                "{name} is taken by the {} tab only",
                takes.name()
            )));
        }
    }
    let cursor = match params.cursor.as_deref() {
        None | Some("") => None,
        Some(raw) if tab == Tab::Following => {
            Some(ListCursor::Followed(parse_followed_cursor(raw)?))
        }
        Some(raw) => Some(ListCursor::Place(
            raw.parse::<u32>()
                .ok()
                .filter(|p| *p < 1_000_000_000)
                .ok_or_else(|| {
                    ApiError::of(
                        ApiCode::InvalidCursor,
                        "the cursor is not one this API gave",
                    )
                })?,
        )),
    };
    let query = ListQuery {
        tab,
        region,
        country,
        agency,
        limit,
        cursor,
    };
    if let Some((field, problem)) = room_app::lists::scope_problem(&query) {
        return Err(bad_query(format!("{field}: {problem}")));
    }
    let page = state.lists.page(&actor.user_id, &query).await?;
    Ok(Json(RoomListResponse {
        rooms: page.items.into_iter().map(Into::into).collect(),
        next_cursor: page.next.map(|next| match next {
            ListCursor::Place(place) => place.to_string(),
            ListCursor::Followed(followed) => {
                format!("{}.{}", u8::from(followed.open), followed.seq)
            }
        }),
    }))
}

/// Pins a room into one list (a tab and its scope) at a position, from `starts_at_ms`
/// (default now) until `ends_at_ms`. The pin shows in that list only, at its position (a
/// later pin of the same position comes after it), while its window is open and its room is
/// open, on every node within `ROOM__LISTS__REFRESH_MS`; it vanishes when its window ends.
#[utoipa::path(
    post, path = "/v1/admin/pins", tag = "admin",
    request_body = CreatePinRequest,
    responses(
        (status = 201, description = "The pin", body = PinResponse),
        (status = 400, description = "`MALFORMED_JSON`, `INVALID_BODY`, `INVALID_ID` or `INVALID_PIN` (the message names the field); nothing was written", body = ErrorResponse),
        (status = 403, description = "`FORBIDDEN`: not a platform admin", body = ErrorResponse),
        (status = 404, description = "`ROOM_NOT_FOUND`: no room was ever created with this id", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn create_pin(
    State(state): State<AppState>,
    PlatformAdmin(_): PlatformAdmin,
    _key: crate::extract::IdempotencyKey,
    ApiJson(request): ApiJson<CreatePinRequest>,
) -> ApiResult<(StatusCode, Json<PinResponse>)> {
    let room_id: RoomId = parse_id("room_id", &request.room_id)?;
    let bad = |message: String| ApiError::of(ApiCode::InvalidPin, message);
    let scope = match (request.tab.as_str(), request.region, request.country) {
        (_, Some(_), Some(_)) => {
            return Err(bad("give a region or a country, not both".into()));
        }
        ("region", Some(region), None) => region,
        ("country", None, Some(country)) => country,
        ("region" | "country", _, _) => {
            return Err(bad(format!(
                "the {} tab needs its {}",
                request.tab, request.tab
            )));
        }
        (_, None, None) => String::new(),
        (tab, _, _) => return Err(bad(format!("the {tab:?} tab takes no region or country"))),
    };
    let list = PinnedList::from_parts(&request.tab, &scope).ok_or_else(|| {
        bad(format!(
            "tab {:?} is not one of hot, new, region, country",
            request.tab
        ))
    })?;
    let pin = NewPin {
        room_id,
        list,
        // Out of range, it is 0 and refused below.
        position: u32::try_from(request.position).unwrap_or(0),
        starts_at: request.starts_at_ms.map(Timestamp),
        ends_at: Timestamp(request.ends_at_ms),
    };
    let now = state.service.ports().clock.now();
    if let Some((field, problem)) = pin_problem(&pin, now) {
        return Err(bad(format!("{field}: {problem}")));
    }
    let pin = state.lists.create_pin(pin).await?;
    Ok((StatusCode::CREATED, Json(pin.into())))
}

/// The query of `GET /v1/admin/pins`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PinPageQuery {
    /// Items per page, 1 to 200 (default 50).
    limit: Option<u32>,
    /// The `next_cursor` of the previous page.
    cursor: Option<String>,
}

/// Every pin, ended ones too, in the order they were made.
#[utoipa::path(
    get, path = "/v1/admin/pins", tag = "admin",
    params(
        ("limit" = Option<u32>, Query, minimum = 1, maximum = 200, description = "Items per page, 1 to 200 (default 50)"),
        ("cursor" = Option<String>, Query, max_length = 64, pattern = r"^[0-9a-z-]*$", description = "The `next_cursor` of the previous page"),
    ),
    responses(
        (status = 200, description = "A page of pins", body = PinListResponse),
        (status = 400, description = "`INVALID_QUERY`, `INVALID_LIMIT` or `INVALID_CURSOR`", body = ErrorResponse),
        (status = 403, description = "`FORBIDDEN`: not a platform admin", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn list_pins(
    State(state): State<AppState>,
    PlatformAdmin(_): PlatformAdmin,
    ApiQuery(query): ApiQuery<PinPageQuery>,
) -> ApiResult<Json<PinListResponse>> {
    let limit = match query.limit {
        None => 50,
        Some(limit) if (1..=MAX_PIN_PAGE).contains(&limit) => limit,
        Some(limit) => {
            return Err(ApiError::of(
                ApiCode::InvalidLimit,
                format!("limit {limit} is outside 1..={MAX_PIN_PAGE}"),
            ));
        }
    };
    let after = match query.cursor {
        None => None,
        Some(cursor) if cursor.is_empty() => None,
        Some(cursor) if valid_pin_id(&cursor) => Some(cursor),
        Some(_) => {
            return Err(ApiError::of(
                ApiCode::InvalidCursor,
                "the cursor is not one this API gave",
            ));
        }
    };
    let pins = state.lists.list_pins(after, limit).await?;
    let next_cursor = (pins.len() == limit as usize)
        .then(|| pins.last().map(|pin| pin.pin_id.clone()))
        .flatten();
    Ok(Json(PinListResponse {
        pins: pins.into_iter().map(Into::into).collect(),
        next_cursor,
    }))
}

/// Whether `raw` can be a pin id: what [`create_pin`] makes, lowercase letters, digits and
/// `-`, at most [`MAX_PIN_ID_BYTES`] bytes.
fn valid_pin_id(raw: &str) -> bool {
    !raw.is_empty()
        && raw.len() <= MAX_PIN_ID_BYTES
        && raw
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// Deletes a pin: it vanishes from every node's lists within `ROOM__LISTS__REFRESH_MS`.
#[utoipa::path(
    delete, path = "/v1/admin/pins/{pin_id}", tag = "admin",
    params(("pin_id" = String, Path, max_length = 64, pattern = r"^[0-9a-z-]+$", description = "The pin")),
    responses(
        (status = 204, description = "The pin is gone"),
        (status = 403, description = "`FORBIDDEN`: not a platform admin", body = ErrorResponse),
        (status = 404, description = "`PIN_NOT_FOUND`", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn delete_pin(
    State(state): State<AppState>,
    PlatformAdmin(_): PlatformAdmin,
    ApiPath(pin_id): ApiPath<String>,
    _key: crate::extract::IdempotencyKey,
) -> ApiResult<StatusCode> {
    if valid_pin_id(&pin_id) && state.lists.delete_pin(&pin_id).await? {
        return Ok(StatusCode::NO_CONTENT);
    }
    Err(ApiError::of(
        ApiCode::PinNotFound,
        format!("no pin {pin_id:?}"),
    ))
}
