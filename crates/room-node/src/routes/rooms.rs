//! Rooms: create, read, list, update, close, join, leave, heartbeat, seats and moderation.

// utoipa's `params(PageQuery)` expands to fully qualified paths.
#![allow(unused_qualifications)]

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use room_app::{RankPeriod, RoomPatch};
use room_domain::{CommandKind, RoomId, SeatIndex, UserId};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::auth::Auth;
use crate::dto::{
    BannedUsersResponse, ChatMuteRequest, CreateRoomRequest, InviteRequest, InviteResponse,
    JoinRequest, KickRequest, LockSeatRequest, MuteSeatRequest, OnlineUsersResponse,
    PatchRoomRequest, RankResponse, RoomResponse, SeatVipRequest, UnbanRequest,
};
use crate::error::{ApiCode, ApiError, ApiResult, ErrorResponse};
use crate::extract::{ApiJson, ApiPath, ApiQuery, IdempotencyKey, OptionalJson, parse_id};
use crate::state::AppState;

/// The most items one page may ask for.
pub const MAX_PAGE: u32 = 100;
const DEFAULT_PAGE: u32 = 20;
/// The longest room password.
const MAX_PASSWORD_CHARS: usize = 64;

/// `limit` and `cursor` of a list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// Items per page, 1 to 100 (default 20).
    pub(super) limit: Option<u32>,
    /// The `next_cursor` of the previous page.
    pub(super) cursor: Option<String>,
}

/// `period` and `limit` of a rank.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RankQuery {
    /// `day` (default) or `week`.
    period: Option<PeriodParam>,
    /// Entries, 1 to 100 (default 20).
    limit: Option<u32>,
}

/// A rank period.
#[derive(Debug, Clone, Copy, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PeriodParam {
    /// Today.
    Day,
    /// This week.
    Week,
}

/// A page's `limit`: 20 unless given, 1 to [`MAX_PAGE`] (else 400 `INVALID_LIMIT`).
pub(super) fn page_limit(limit: Option<u32>) -> ApiResult<u32> {
    match limit {
        None => Ok(DEFAULT_PAGE),
        Some(limit) if (1..=MAX_PAGE).contains(&limit) => Ok(limit),
        Some(limit) => Err(ApiError::of(
            ApiCode::InvalidLimit,
            format!("limit {limit} is outside 1..={MAX_PAGE}"),
        )),
    }
}

fn seat_index(raw: &str) -> ApiResult<SeatIndex> {
    raw.parse::<u8>().map(SeatIndex).map_err(|_| {
        ApiError::of(
            ApiCode::InvalidSeat,
            format!("seat {raw:?} is not a seat number (0 to 255)"),
        )
    })
}

async fn room_response(state: &AppState, room_id: &RoomId) -> ApiResult<Json<RoomResponse>> {
    let view = state.service.get_room(room_id).await?;
    Ok(Json(view.into()))
}

/// Creates a room owned by the caller.
#[utoipa::path(
    post, path = "/v1/rooms", tag = "rooms",
    request_body = CreateRoomRequest,
    responses(
        (status = 201, description = "The new room", body = RoomResponse),
        (status = 400, description = "Bad input: `MALFORMED_JSON`, `INVALID_BODY`, `INVALID_SEAT_COUNT`, `FIELD_EMPTY`, `FIELD_TOO_LONG`, `FIELD_INVALID_CHARACTER`", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn create_room(
    State(state): State<AppState>,
    Auth(actor): Auth,
    key: IdempotencyKey,
    ApiJson(request): ApiJson<CreateRoomRequest>,
) -> ApiResult<impl IntoResponse> {
    let seat_count = match request.seat_count {
        None => None,
        Some(count) => Some(u8::try_from(count).map_err(|_| {
            ApiError::of(
                ApiCode::InvalidSeatCount,
                format!("seat count {count} is outside 1..=20"),
            )
        })?),
    };
    let view = state
        .service
        .create_room(
            &actor,
            request.name,
            seat_count,
            request.region.unwrap_or_default(),
            key.get(),
        )
        .await?;
    Ok((StatusCode::CREATED, Json(RoomResponse::from(view))))
}

/// A room's snapshot: profile, settings, seats, online count, heat, rocket, version, and
/// how many users follow it.
#[utoipa::path(
    get, path = "/v1/rooms/{room_id}", tag = "rooms",
    params(("room_id" = crate::dto::Id, Path, description = "The room id")),
    responses(
        (status = 200, description = "The room", body = RoomResponse),
        (status = 404, description = "`ROOM_NOT_FOUND`", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn get_room(
    State(state): State<AppState>,
    Auth(_): Auth,
    ApiPath(room_id): ApiPath<String>,
) -> ApiResult<Json<RoomResponse>> {
    let room_id = state.existing_room(&room_id).await?;
    let Json(mut room) = room_response(&state, &room_id).await?;
    room.follower_count = Some(state.follows.follower_count(&room_id).await?);
    Ok(Json(room))
}

/// The room with a short numeric id.
#[utoipa::path(
    get, path = "/v1/rooms/by-short-id/{short_id}", tag = "rooms",
    params(("short_id" = u32, Path, minimum = 100000, maximum = 99999999, description = "6 to 8 digits")),
    responses(
        (status = 200, description = "The room", body = RoomResponse),
        (status = 400, description = "`INVALID_ID`: not a number of 6 to 8 digits", body = ErrorResponse),
        (status = 404, description = "`ROOM_NOT_FOUND`", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn get_room_by_short_id(
    State(state): State<AppState>,
    Auth(_): Auth,
    ApiPath(short_id): ApiPath<String>,
) -> ApiResult<Json<RoomResponse>> {
    let short_id = short_id
        .parse::<u32>()
        .ok()
        .filter(|id| (100_000..=99_999_999).contains(id))
        .ok_or_else(|| ApiError::of(ApiCode::InvalidId, "a short id has 6 to 8 digits"))?;
    let view = state.service.get_room_by_short_id(short_id).await?;
    Ok(Json(view.into()))
}

/// Changes the profile and settings (owner, admins). `password: null` unlocks.
#[utoipa::path(
    patch, path = "/v1/rooms/{room_id}", tag = "rooms",
    params(("room_id" = crate::dto::Id, Path, description = "The room id")),
    request_body = PatchRoomRequest,
    responses(
        (status = 200, description = "The room after the change", body = RoomResponse),
        (status = 400, description = "Bad input: `MALFORMED_JSON`, `INVALID_BODY`, `INVALID_ID`, `INVALID_PASSWORD`, `FIELD_EMPTY`, `FIELD_TOO_LONG`, `FIELD_INVALID_CHARACTER`, `INVALID_URL`", body = ErrorResponse),
        (status = 403, description = "`FORBIDDEN` (not the owner or an admin) or `VIP_BACKGROUND` (a background a VIP level above the caller's lists; nothing of the patch applied)", body = ErrorResponse),
        (status = 404, description = "`ROOM_NOT_FOUND`", body = ErrorResponse),
        (status = 409, description = "`COVER_IN_USE`: another open room shows this cover", body = ErrorResponse),
        (status = 422, description = "A room rule refused it, e.g. `ROOM_CLOSED`", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn patch_room(
    State(state): State<AppState>,
    Auth(actor): Auth,
    key: IdempotencyKey,
    ApiPath(room_id): ApiPath<String>,
    ApiJson(request): ApiJson<PatchRoomRequest>,
) -> ApiResult<Json<RoomResponse>> {
    let room_id = state.existing_room(&room_id).await?;
    if let Some(Some(password)) = &request.password {
        let chars = password.chars().count();
        if chars == 0 || chars > MAX_PASSWORD_CHARS {
            return Err(ApiError::of(
                ApiCode::InvalidPassword,
                format!("a room password has 1 to {MAX_PASSWORD_CHARS} characters"),
            ));
        }
    }
    let patch = RoomPatch {
        name: request.name,
        notice: request.notice,
        cover_url: request.cover_url,
        background_url: request.background_url,
        chat_enabled: request.chat_enabled,
        password: request.password,
    };
    let view = state
        .service
        .update_room(&actor, &room_id, patch, key.get())
        .await?;
    Ok(Json(view.into()))
}

/// Closes the room for good (owner, platform admins).
#[utoipa::path(
    post, path = "/v1/rooms/{room_id}/close", tag = "rooms",
    params(("room_id" = crate::dto::Id, Path, description = "The room id")),
    responses(
        (status = 204, description = "Closed"),
        (status = 403, description = "`FORBIDDEN`: not the owner or a platform admin", body = ErrorResponse),
        (status = 404, description = "`ROOM_NOT_FOUND`", body = ErrorResponse),
        (status = 422, description = "`ROOM_CLOSED`: already closed", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn close_room(
    State(state): State<AppState>,
    Auth(actor): Auth,
    key: IdempotencyKey,
    ApiPath(room_id): ApiPath<String>,
) -> ApiResult<StatusCode> {
    let room_id = state.existing_room(&room_id).await?;
    state
        .service
        .close_room(&actor, &room_id, key.get())
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Joins the room (then leaves the room the caller was in) and returns its snapshot.
#[utoipa::path(
    post, path = "/v1/rooms/{room_id}/join", tag = "rooms",
    params(("room_id" = crate::dto::Id, Path, description = "The room id")),
    request_body(content = Option<JoinRequest>, description = "Optional: the password of a locked room"),
    responses(
        (status = 200, description = "The room", body = RoomResponse),
        (status = 400, description = "Bad input: `MALFORMED_JSON`, `INVALID_BODY`, `INVALID_ID`, `INVALID_PASSWORD`", body = ErrorResponse),
        (status = 403, description = "`BANNED` or `WRONG_PASSWORD`", body = ErrorResponse),
        (status = 404, description = "`ROOM_NOT_FOUND`", body = ErrorResponse),
        (status = 422, description = "`ROOM_CLOSED` or `ROOM_FULL`", body = ErrorResponse),
        (status = 429, description = "`TOO_MANY_ATTEMPTS`: 5 wrong passwords of this user for this room within a minute, refused until the minute ends; or another limit (`ROOM_OVERLOADED`, ...). `retryable: true`; retry after `Retry-After` seconds", body = ErrorResponse,
            headers(("Retry-After" = u32, description = "Seconds to wait before retrying"))),
    ),
    security(("bearer" = []))
)]
pub async fn join_room(
    State(state): State<AppState>,
    Auth(actor): Auth,
    key: IdempotencyKey,
    ApiPath(room_id): ApiPath<String>,
    OptionalJson(request): OptionalJson<JoinRequest>,
) -> ApiResult<Json<RoomResponse>> {
    let room_id = state.existing_room(&room_id).await?;
    if request
        .password
        .as_ref()
        .is_some_and(|p| p.chars().count() > MAX_PASSWORD_CHARS)
    {
        return Err(ApiError::of(
            ApiCode::InvalidPassword,
            format!("a room password has 1 to {MAX_PASSWORD_CHARS} characters"),
        ));
    }
    let view = state
        .service
        .join(&actor, &room_id, request.password, key.get())
        .await?;
    Ok(Json(view.into()))
}

/// Leaves the room.
#[utoipa::path(
    post, path = "/v1/rooms/{room_id}/leave", tag = "rooms",
    params(("room_id" = crate::dto::Id, Path, description = "The room id")),
    responses(
        (status = 204, description = "Left"),
        (status = 404, description = "`ROOM_NOT_FOUND`", body = ErrorResponse),
        (status = 422, description = "`NOT_A_MEMBER`, or another room rule", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn leave_room(
    State(state): State<AppState>,
    Auth(actor): Auth,
    key: IdempotencyKey,
    ApiPath(room_id): ApiPath<String>,
) -> ApiResult<StatusCode> {
    let room_id = state.existing_room(&room_id).await?;
    state.service.leave(&actor, &room_id, key.get()).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Tells the room the caller is still there; members without a heartbeat for 90 s are
/// evicted.
#[utoipa::path(
    post, path = "/v1/rooms/{room_id}/heartbeat", tag = "rooms",
    params(("room_id" = crate::dto::Id, Path, description = "The room id")),
    responses(
        (status = 204, description = "Recorded"),
        (status = 404, description = "`ROOM_NOT_FOUND`", body = ErrorResponse),
        (status = 422, description = "`NOT_A_MEMBER` (also when the user's current room is another one, or none: they are taken out of this room's online list), or another room rule", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn heartbeat(
    State(state): State<AppState>,
    Auth(actor): Auth,
    // Checked like on every mutating route; a heartbeat is the same whenever it repeats.
    _key: IdempotencyKey,
    ApiPath(room_id): ApiPath<String>,
) -> ApiResult<StatusCode> {
    let room_id = state.existing_room(&room_id).await?;
    state.service.heartbeat(&actor, &room_id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Members present, by user id.
#[utoipa::path(
    get, path = "/v1/rooms/{room_id}/online-users", tag = "rooms",
    params(
        ("room_id" = crate::dto::Id, Path, description = "The room id"),
        ("limit" = Option<u32>, Query, minimum = 1, maximum = 100, description = "Items per page, 1 to 100 (default 20)"),
        ("cursor" = Option<String>, Query, max_length = 64, pattern = r"^[\u0021-\u002e\u0030-\u007e\u00a1-\u00ac\u00ae-\u034e\u0350-\u05ff\u0606-\u061b\u061d-\u06dc\u06de-\u070e\u0710-\u088f\u0892-\u08e1\u08e3-\u115e\u1161-\u167f\u1681-\u17b3\u17b6-\u180a\u1810-\u1fff\u2010-\u2027\u2030-\u205e\u2070-\u2fff\u3001-\u3163\u3165-\ud7ff\ue000-\ufdcf\ufdf0-\ufdff\ufe10-\ufefe\uff00-\uff9f\uffa1-\uffef\ufffc-\ufffd]*$", description = "The `next_cursor` of the previous page"),
    ),
    responses(
        (status = 200, description = "A page of members", body = OnlineUsersResponse),
        (status = 400, description = "`INVALID_ID`, `INVALID_QUERY`, `INVALID_LIMIT` or `INVALID_CURSOR`", body = ErrorResponse),
        (status = 404, description = "`ROOM_NOT_FOUND`", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn online_users(
    State(state): State<AppState>,
    Auth(_): Auth,
    ApiPath(room_id): ApiPath<String>,
    ApiQuery(query): ApiQuery<PageQuery>,
) -> ApiResult<Json<OnlineUsersResponse>> {
    let room_id = state.existing_room(&room_id).await?;
    let limit = page_limit(query.limit)?;
    let cursor = match query.cursor.as_deref() {
        None | Some("") => None,
        Some(cursor) => Some(UserId::new(cursor).map_err(|_| {
            ApiError::of(
                ApiCode::InvalidCursor,
                "the cursor is not one this API gave",
            )
        })?),
    };
    let users = state.service.online_users(&room_id, cursor, limit).await?;
    let next_cursor = (users.len() == limit as usize)
        .then(|| users.last().map(|u| u.user_id.to_string()))
        .flatten();
    Ok(Json(OnlineUsersResponse {
        users: users.into_iter().map(Into::into).collect(),
        next_cursor,
    }))
}

async fn seat_command(
    state: &AppState,
    actor: &room_domain::UserActor,
    key: &IdempotencyKey,
    room_id: &str,
    seat: &str,
    kind: impl FnOnce(SeatIndex) -> CommandKind,
) -> ApiResult<Json<RoomResponse>> {
    let room_id = state.existing_room(room_id).await?;
    let seat = seat_index(seat)?;
    state
        .service
        .command(actor, &room_id, kind(seat), key.get())
        .await?;
    room_response(state, &room_id).await
}

/// Takes a seat (moving from another seat if the caller sits on one).
#[utoipa::path(
    post, path = "/v1/rooms/{room_id}/seats/{seat}/take", tag = "seats",
    params(("room_id" = crate::dto::Id, Path, description = "The room id"), ("seat" = u8, Path, minimum = 0, maximum = 255, description = "Seat index, from 0 (400 `INVALID_SEAT` for a seat the room does not have)")),
    responses(
        (status = 200, description = "The room after the change", body = RoomResponse),
        (status = 400, description = "`INVALID_ID`, `INVALID_SEAT` (a seat the room does not have))", body = ErrorResponse),
        (status = 403, description = "`FORBIDDEN`, `BANNED` or `VIP_SEAT` (a seat reserved for VIP, and the caller's level has no seat priority)", body = ErrorResponse),
        (status = 404, description = "`ROOM_NOT_FOUND`", body = ErrorResponse),
        (status = 409, description = "`SEAT_OCCUPIED` or `SEAT_HELD` (held for an invitee)", body = ErrorResponse),
        (status = 422, description = "`SEAT_LOCKED`, `NOT_A_MEMBER`, `ROOM_CLOSED`, ...", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn take_seat(
    State(state): State<AppState>,
    Auth(actor): Auth,
    key: IdempotencyKey,
    ApiPath((room_id, seat)): ApiPath<(String, String)>,
) -> ApiResult<Json<RoomResponse>> {
    seat_command(&state, &actor, &key, &room_id, &seat, |seat| {
        CommandKind::TakeSeat { seat }
    })
    .await
}

/// Leaves a seat.
#[utoipa::path(
    post, path = "/v1/rooms/{room_id}/seats/{seat}/leave", tag = "seats",
    params(("room_id" = crate::dto::Id, Path, description = "The room id"), ("seat" = u8, Path, minimum = 0, maximum = 255, description = "Seat index, from 0 (400 `INVALID_SEAT` for a seat the room does not have)")),
    responses(
        (status = 200, description = "The room after the change", body = RoomResponse),
        (status = 400, description = "`INVALID_ID`, `INVALID_SEAT` (a seat the room does not have))", body = ErrorResponse),
        (status = 403, description = "`FORBIDDEN`", body = ErrorResponse),
        (status = 404, description = "`ROOM_NOT_FOUND`", body = ErrorResponse),
        (status = 422, description = "`NOT_ON_SEAT`, `NOT_A_MEMBER`, `ROOM_CLOSED`, ...", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn leave_seat(
    State(state): State<AppState>,
    Auth(actor): Auth,
    key: IdempotencyKey,
    ApiPath((room_id, seat)): ApiPath<(String, String)>,
) -> ApiResult<Json<RoomResponse>> {
    seat_command(&state, &actor, &key, &room_id, &seat, |seat| {
        CommandKind::LeaveSeat { seat }
    })
    .await
}

/// Locks (freeing it) or unlocks a seat (owner, admins).
#[utoipa::path(
    post, path = "/v1/rooms/{room_id}/seats/{seat}/lock", tag = "seats",
    params(("room_id" = crate::dto::Id, Path, description = "The room id"), ("seat" = u8, Path, minimum = 0, maximum = 255, description = "Seat index, from 0 (400 `INVALID_SEAT` for a seat the room does not have)")),
    request_body = LockSeatRequest,
    responses(
        (status = 200, description = "The room after the change", body = RoomResponse),
        (status = 400, description = "`INVALID_ID`, `INVALID_SEAT` (a seat the room does not have), `MALFORMED_JSON`, `INVALID_BODY`)", body = ErrorResponse),
        (status = 403, description = "`FORBIDDEN`: not the owner or an admin", body = ErrorResponse),
        (status = 404, description = "`ROOM_NOT_FOUND`", body = ErrorResponse),
        (status = 422, description = "`NOT_A_MEMBER`, `ROOM_CLOSED`, ...", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn lock_seat(
    State(state): State<AppState>,
    Auth(actor): Auth,
    key: IdempotencyKey,
    ApiPath((room_id, seat)): ApiPath<(String, String)>,
    ApiJson(request): ApiJson<LockSeatRequest>,
) -> ApiResult<Json<RoomResponse>> {
    seat_command(&state, &actor, &key, &room_id, &seat, |seat| {
        CommandKind::LockSeat {
            seat,
            locked: request.locked,
        }
    })
    .await
}

/// Mutes or unmutes a seat (owner, admins, or its holder).
#[utoipa::path(
    post, path = "/v1/rooms/{room_id}/seats/{seat}/mute", tag = "seats",
    params(("room_id" = crate::dto::Id, Path, description = "The room id"), ("seat" = u8, Path, minimum = 0, maximum = 255, description = "Seat index, from 0 (400 `INVALID_SEAT` for a seat the room does not have)")),
    request_body = MuteSeatRequest,
    responses(
        (status = 200, description = "The room after the change", body = RoomResponse),
        (status = 400, description = "`INVALID_ID`, `INVALID_SEAT` (a seat the room does not have), `MALFORMED_JSON`, `INVALID_BODY`)", body = ErrorResponse),
        (status = 403, description = "`FORBIDDEN`: not the holder, the owner or an admin", body = ErrorResponse),
        (status = 404, description = "`ROOM_NOT_FOUND`", body = ErrorResponse),
        (status = 422, description = "`SEAT_EMPTY`, `SEAT_MUTED_BY_MODERATOR`, `NOT_A_MEMBER`, `ROOM_CLOSED`, ...", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn mute_seat(
    State(state): State<AppState>,
    Auth(actor): Auth,
    key: IdempotencyKey,
    ApiPath((room_id, seat)): ApiPath<(String, String)>,
    ApiJson(request): ApiJson<MuteSeatRequest>,
) -> ApiResult<Json<RoomResponse>> {
    seat_command(&state, &actor, &key, &room_id, &seat, |seat| {
        CommandKind::MuteSeat {
            seat,
            muted: request.muted,
        }
    })
    .await
}

/// Takes the holder off a seat (owner, admins).
#[utoipa::path(
    post, path = "/v1/rooms/{room_id}/seats/{seat}/remove", tag = "seats",
    params(("room_id" = crate::dto::Id, Path, description = "The room id"), ("seat" = u8, Path, minimum = 0, maximum = 255, description = "Seat index, from 0 (400 `INVALID_SEAT` for a seat the room does not have)")),
    responses(
        (status = 200, description = "The room after the change", body = RoomResponse),
        (status = 400, description = "`INVALID_ID`, `INVALID_SEAT` (a seat the room does not have))", body = ErrorResponse),
        (status = 403, description = "`FORBIDDEN`, `CANNOT_MODERATE` or `VIP_PROTECTED`", body = ErrorResponse),
        (status = 404, description = "`ROOM_NOT_FOUND`", body = ErrorResponse),
        (status = 422, description = "`SEAT_EMPTY`, `NOT_A_MEMBER`, `ROOM_CLOSED`, ...", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn remove_from_seat(
    State(state): State<AppState>,
    Auth(actor): Auth,
    key: IdempotencyKey,
    ApiPath((room_id, seat)): ApiPath<(String, String)>,
) -> ApiResult<Json<RoomResponse>> {
    seat_command(&state, &actor, &key, &room_id, &seat, |seat| {
        CommandKind::RemoveFromSeat { seat }
    })
    .await
}

async fn moderate(
    state: &AppState,
    actor: &room_domain::UserActor,
    key: &IdempotencyKey,
    room_id: &str,
    kind: CommandKind,
) -> ApiResult<StatusCode> {
    let room_id = state.existing_room(room_id).await?;
    state
        .service
        .command(actor, &room_id, kind, key.get())
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Reserves a seat for VIP, or opens it to everyone again (owner, admins). Only users whose
/// VIP level gives seat priority take a reserved seat (403 `VIP_SEAT` for others); its
/// holder stays.
#[utoipa::path(
    post, path = "/v1/rooms/{room_id}/seats/{seat}/vip", tag = "seats",
    params(("room_id" = crate::dto::Id, Path, description = "The room id"), ("seat" = u8, Path, minimum = 0, maximum = 255, description = "Seat index, from 0 (400 `INVALID_SEAT` for a seat the room does not have)")),
    request_body = SeatVipRequest,
    responses(
        (status = 200, description = "The room after the change", body = RoomResponse),
        (status = 400, description = "`INVALID_ID`, `INVALID_SEAT` (a seat the room does not have), `MALFORMED_JSON`, `INVALID_BODY`", body = ErrorResponse),
        (status = 403, description = "`FORBIDDEN`: not the owner or an admin", body = ErrorResponse),
        (status = 404, description = "`ROOM_NOT_FOUND`", body = ErrorResponse),
        (status = 422, description = "`ROOM_CLOSED`, ...", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn seat_vip(
    State(state): State<AppState>,
    Auth(actor): Auth,
    key: IdempotencyKey,
    ApiPath((room_id, seat)): ApiPath<(String, String)>,
    ApiJson(request): ApiJson<SeatVipRequest>,
) -> ApiResult<Json<RoomResponse>> {
    seat_command(&state, &actor, &key, &room_id, &seat, |seat| {
        CommandKind::SetSeatVip {
            seat,
            vip_only: request.vip_only,
        }
    })
    .await
}

/// Invites a user to the room, or to a seat held for them (owner, admins), for the room
/// rules' `invite_ttl_secs`. The invitee sees a `RoomUserInvited` event on
/// `GET /v1/me/events` (and the room on its stream); until the invite expires they join
/// without the password, and nobody else may take the held seat. Inviting the same user
/// again replaces their invite.
#[utoipa::path(
    post, path = "/v1/rooms/{room_id}/invites", tag = "moderation",
    params(("room_id" = crate::dto::Id, Path, description = "The room id")),
    request_body = InviteRequest,
    responses(
        (status = 200, description = "The invite", body = InviteResponse),
        (status = 400, description = "`MALFORMED_JSON`, `INVALID_BODY`, `INVALID_ID`, `INVALID_SEAT` (a seat the room does not have)", body = ErrorResponse),
        (status = 403, description = "`FORBIDDEN` (not the owner or an admin) or `BANNED` (the invitee is banned from the room)", body = ErrorResponse),
        (status = 404, description = "`ROOM_NOT_FOUND`", body = ErrorResponse),
        (status = 409, description = "`SEAT_OCCUPIED` or `SEAT_HELD` (held for another invitee)", body = ErrorResponse),
        (status = 422, description = "`SEAT_LOCKED`, `TOO_MANY_INVITES` (the rules' `max_invites` open ones), `ROOM_CLOSED`, ...", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn invite(
    State(state): State<AppState>,
    Auth(actor): Auth,
    key: IdempotencyKey,
    ApiPath(room_id): ApiPath<String>,
    ApiJson(request): ApiJson<InviteRequest>,
) -> ApiResult<Json<InviteResponse>> {
    let user = parse_id("user_id", &request.user_id)?;
    let seat = request
        .seat
        .map(|seat| seat_index(&seat.to_string()))
        .transpose()?;
    let room_id = state.existing_room(&room_id).await?;
    let invite = state
        .service
        .invite(&actor, &room_id, user, seat, key.get())
        .await?;
    Ok(Json(invite.into()))
}

/// Removes a member, optionally banning them (owner, admins). A room admin may not kick or
/// ban a user whose VIP level has the kick shield (403 `VIP_PROTECTED`).
#[utoipa::path(
    post, path = "/v1/rooms/{room_id}/kick", tag = "moderation",
    params(("room_id" = crate::dto::Id, Path, description = "The room id")),
    request_body = KickRequest,
    responses(
        (status = 204, description = "Kicked"),
        (status = 400, description = "`MALFORMED_JSON`, `INVALID_BODY`, `INVALID_ID`", body = ErrorResponse),
        (status = 403, description = "`FORBIDDEN`, `CANNOT_MODERATE` or `VIP_PROTECTED`", body = ErrorResponse),
        (status = 404, description = "`ROOM_NOT_FOUND`", body = ErrorResponse),
        (status = 422, description = "`NOT_A_MEMBER` (and no ban asked), `ROOM_CLOSED`, ...", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn kick(
    State(state): State<AppState>,
    Auth(actor): Auth,
    key: IdempotencyKey,
    ApiPath(room_id): ApiPath<String>,
    ApiJson(request): ApiJson<KickRequest>,
) -> ApiResult<StatusCode> {
    let user = parse_id("user_id", &request.user_id)?;
    let kind = CommandKind::Kick {
        user,
        ban_seconds: request.ban_seconds,
    };
    moderate(&state, &actor, &key, &room_id, kind).await
}

/// Lifts a ban (owner, admins).
#[utoipa::path(
    post, path = "/v1/rooms/{room_id}/unban", tag = "moderation",
    params(("room_id" = crate::dto::Id, Path, description = "The room id")),
    request_body = UnbanRequest,
    responses(
        (status = 204, description = "Unbanned"),
        (status = 400, description = "`MALFORMED_JSON`, `INVALID_BODY`, `INVALID_ID`", body = ErrorResponse),
        (status = 403, description = "`FORBIDDEN`, `CANNOT_MODERATE` or `VIP_PROTECTED`", body = ErrorResponse),
        (status = 404, description = "`ROOM_NOT_FOUND`", body = ErrorResponse),
        (status = 422, description = "`NOT_BANNED`, `ROOM_CLOSED`, ...", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn unban(
    State(state): State<AppState>,
    Auth(actor): Auth,
    key: IdempotencyKey,
    ApiPath(room_id): ApiPath<String>,
    ApiJson(request): ApiJson<UnbanRequest>,
) -> ApiResult<StatusCode> {
    let user = parse_id("user_id", &request.user_id)?;
    moderate(&state, &actor, &key, &room_id, CommandKind::Unban { user }).await
}

/// Mutes a member on the public screen for `seconds`; 0 unmutes (owner, admins). A room
/// admin may not mute a member whose VIP level has the mute shield (403 `VIP_PROTECTED`).
#[utoipa::path(
    post, path = "/v1/rooms/{room_id}/mute", tag = "moderation",
    params(("room_id" = crate::dto::Id, Path, description = "The room id")),
    request_body = ChatMuteRequest,
    responses(
        (status = 204, description = "Muted or unmuted"),
        (status = 400, description = "`MALFORMED_JSON`, `INVALID_BODY`, `INVALID_ID`", body = ErrorResponse),
        (status = 403, description = "`FORBIDDEN`, `CANNOT_MODERATE` or `VIP_PROTECTED`", body = ErrorResponse),
        (status = 404, description = "`ROOM_NOT_FOUND`", body = ErrorResponse),
        (status = 422, description = "`NOT_A_MEMBER`, `ROOM_CLOSED`, ...", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn chat_mute(
    State(state): State<AppState>,
    Auth(actor): Auth,
    key: IdempotencyKey,
    ApiPath(room_id): ApiPath<String>,
    ApiJson(request): ApiJson<ChatMuteRequest>,
) -> ApiResult<StatusCode> {
    let user = parse_id("user_id", &request.user_id)?;
    let kind = CommandKind::ChatMute {
        user,
        seconds: request.seconds,
    };
    moderate(&state, &actor, &key, &room_id, kind).await
}

/// Bans in force (owner, admins).
#[utoipa::path(
    get, path = "/v1/rooms/{room_id}/banned-users", tag = "moderation",
    params(("room_id" = crate::dto::Id, Path, description = "The room id")),
    responses(
        (status = 200, description = "Bans in force", body = BannedUsersResponse),
        (status = 403, description = "`FORBIDDEN`: not the owner or an admin", body = ErrorResponse),
        (status = 404, description = "`ROOM_NOT_FOUND`", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn banned_users(
    State(state): State<AppState>,
    Auth(actor): Auth,
    ApiPath(room_id): ApiPath<String>,
) -> ApiResult<Json<BannedUsersResponse>> {
    let room_id = state.existing_room(&room_id).await?;
    let users = state.service.banned_users(&actor, &room_id).await?;
    Ok(Json(BannedUsersResponse {
        users: users.into_iter().map(Into::into).collect(),
    }))
}

/// Appoints an admin (owner).
#[utoipa::path(
    put, path = "/v1/rooms/{room_id}/admins/{user_id}", tag = "moderation",
    params(("room_id" = crate::dto::Id, Path, description = "The room id"), ("user_id" = crate::dto::Id, Path, description = "Who")),
    responses(
        (status = 204, description = "Appointed"),
        (status = 403, description = "`FORBIDDEN`: not the owner or a platform admin", body = ErrorResponse),
        (status = 404, description = "`ROOM_NOT_FOUND`", body = ErrorResponse),
        (status = 422, description = "`TOO_MANY_ADMINS`, `NOT_A_MEMBER`, `ROOM_CLOSED`, ...", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn put_admin(
    State(state): State<AppState>,
    Auth(actor): Auth,
    key: IdempotencyKey,
    ApiPath((room_id, user_id)): ApiPath<(String, String)>,
) -> ApiResult<StatusCode> {
    let user = parse_id("user_id", &user_id)?;
    let kind = CommandKind::SetAdmin { user, admin: true };
    moderate(&state, &actor, &key, &room_id, kind).await
}

/// Dismisses an admin (owner).
#[utoipa::path(
    delete, path = "/v1/rooms/{room_id}/admins/{user_id}", tag = "moderation",
    params(("room_id" = crate::dto::Id, Path, description = "The room id"), ("user_id" = crate::dto::Id, Path, description = "Who")),
    responses(
        (status = 204, description = "Dismissed"),
        (status = 403, description = "`FORBIDDEN`: not the owner or a platform admin", body = ErrorResponse),
        (status = 404, description = "`ROOM_NOT_FOUND`", body = ErrorResponse),
        (status = 422, description = "`ROOM_CLOSED`, ...", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn delete_admin(
    State(state): State<AppState>,
    Auth(actor): Auth,
    key: IdempotencyKey,
    ApiPath((room_id, user_id)): ApiPath<(String, String)>,
) -> ApiResult<StatusCode> {
    let user = parse_id("user_id", &user_id)?;
    let kind = CommandKind::SetAdmin { user, admin: false };
    moderate(&state, &actor, &key, &room_id, kind).await
}

/// The top givers of the day or the week in the billing time zone: the first page of the
/// room's board of senders (`GET /v1/rooms/{room_id}/boards/senders`), which trails the gifts
/// by the board consumer's lag.
#[utoipa::path(
    get, path = "/v1/rooms/{room_id}/contribution-rank", tag = "rooms",
    params(
        ("room_id" = crate::dto::Id, Path, description = "The room id"),
        ("period" = Option<PeriodParam>, Query, description = "`day` (default) or `week`"),
        ("limit" = Option<u32>, Query, minimum = 1, maximum = 100, description = "Entries, 1 to 100 (default 20)"),
    ),
    responses(
        (status = 200, description = "The rank", body = RankResponse),
        (status = 400, description = "`INVALID_ID`, `INVALID_QUERY` or `INVALID_LIMIT`", body = ErrorResponse),
        (status = 404, description = "`ROOM_NOT_FOUND`", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn contribution_rank(
    State(state): State<AppState>,
    Auth(_): Auth,
    ApiPath(room_id): ApiPath<String>,
    ApiQuery(query): ApiQuery<RankQuery>,
) -> ApiResult<Json<RankResponse>> {
    let room_id = state.existing_room(&room_id).await?;
    let limit = page_limit(query.limit)?;
    let (period, name) = match query.period.unwrap_or(PeriodParam::Day) {
        PeriodParam::Day => (RankPeriod::Day, "day"),
        PeriodParam::Week => (RankPeriod::Week, "week"),
    };
    let entries = state
        .service
        .contribution_rank(&room_id, period, limit, state.billing_zone.utc_offset_secs)
        .await?;
    Ok(Json(RankResponse {
        period: name.to_owned(),
        entries: entries.into_iter().map(Into::into).collect(),
    }))
}
