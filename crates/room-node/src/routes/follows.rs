//! Following rooms: `PUT`/`DELETE /v1/rooms/{room_id}/follow` and
//! `GET /v1/me/followed-rooms`.

// utoipa's `params(...)` expands to fully qualified paths.
#![allow(unused_qualifications)]

use axum::Json;
use axum::extract::State;
use room_app::follows::FollowedCursor;
use room_app::ports::FollowOutcome;

use super::rooms::{PageQuery, page_limit};
use crate::auth::Auth;
use crate::dto::{FollowResponse, FollowedRoomItem, FollowedRoomsResponse};
use crate::error::{ApiCode, ApiError, ApiResult, ErrorResponse};
use crate::extract::{ApiPath, ApiQuery};
use crate::state::AppState;

/// Follows a room (open or closed). Idempotent: following a room followed already answers
/// the same. A caller who follows `[lists] max_follows_per_user` rooms (default 1000) is
/// answered 409 `FOLLOW_LIMIT`.
#[utoipa::path(
    put, path = "/v1/rooms/{room_id}/follow", tag = "rooms",
    params(("room_id" = crate::dto::Id, Path, description = "The room id")),
    responses(
        (status = 200, description = "The caller follows the room", body = FollowResponse),
        (status = 404, description = "`ROOM_NOT_FOUND`: no room was ever created with this id", body = ErrorResponse),
        (status = 409, description = "`FOLLOW_LIMIT`: the caller follows `ROOM__LISTS__MAX_FOLLOWS_PER_USER` rooms (default 1000) already; unfollow one first", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn follow_room(
    State(state): State<AppState>,
    Auth(actor): Auth,
    ApiPath(room_id): ApiPath<String>,
    _key: crate::extract::IdempotencyKey,
) -> ApiResult<Json<FollowResponse>> {
    let room_id = state.existing_room(&room_id).await?;
    match state.follows.follow(&actor.user_id, &room_id).await? {
        FollowOutcome::Followed | FollowOutcome::AlreadyFollowing => Ok(Json(FollowResponse {
            room_id: room_id.to_string(),
            following: true,
        })),
        FollowOutcome::LimitReached => Err(ApiError::of(
            ApiCode::FollowLimit,
            format!(
                "you follow {} rooms, the most you may: unfollow one first",
                state.follows.max_follows()
            ),
        )),
    }
}

/// Stops following a room. Idempotent: unfollowing a room not followed answers the same.
#[utoipa::path(
    delete, path = "/v1/rooms/{room_id}/follow", tag = "rooms",
    params(("room_id" = crate::dto::Id, Path, description = "The room id")),
    responses(
        (status = 200, description = "The caller does not follow the room", body = FollowResponse),
        (status = 404, description = "`ROOM_NOT_FOUND`: no room was ever created with this id", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn unfollow_room(
    State(state): State<AppState>,
    Auth(actor): Auth,
    ApiPath(room_id): ApiPath<String>,
    _key: crate::extract::IdempotencyKey,
) -> ApiResult<Json<FollowResponse>> {
    let room_id = state.existing_room(&room_id).await?;
    state.follows.unfollow(&actor.user_id, &room_id).await?;
    Ok(Json(FollowResponse {
        room_id: room_id.to_string(),
        following: false,
    }))
}

/// The rooms the caller follows: open ones first, then newest follow first, each with its
/// live status (open, online count, name) from the room directory.
#[utoipa::path(
    get, path = "/v1/me/followed-rooms", tag = "me",
    params(
        ("limit" = Option<u32>, Query, minimum = 1, maximum = 100, description = "Items per page, 1 to 100 (default 20)"),
        ("cursor" = Option<String>, Query, max_length = 21, pattern = r"^([01]\.[0-9]{1,19})?$", description = "The `next_cursor` of the previous page"),
    ),
    responses(
        (status = 200, description = "A page of the rooms the caller follows (at most `ROOM__LISTS__MAX_FOLLOWS_PER_USER` in all)", body = FollowedRoomsResponse),
        (status = 400, description = "`INVALID_QUERY`, `INVALID_LIMIT` or `INVALID_CURSOR`", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn followed_rooms(
    State(state): State<AppState>,
    Auth(actor): Auth,
    ApiQuery(query): ApiQuery<PageQuery>,
) -> ApiResult<Json<FollowedRoomsResponse>> {
    let limit = page_limit(query.limit)?;
    let cursor = match query.cursor.as_deref() {
        None | Some("") => None,
        Some(cursor) => Some(parse_followed_cursor(cursor)?),
    };
    let rooms = state
        .follows
        .followed_rooms(&actor.user_id, cursor, limit)
        .await?;
    let next_cursor = (rooms.len() == limit as usize)
        .then(|| {
            rooms
                .last()
                .map(|r| format!("{}.{}", u8::from(r.cursor.open), r.cursor.seq))
        })
        .flatten();
    Ok(Json(FollowedRoomsResponse {
        rooms: rooms
            .into_iter()
            .map(|room| FollowedRoomItem {
                room_id: room.room_id.to_string(),
                name: room.name,
                open: room.open,
                online_count: room.online,
                followed_at: room.followed_at.0,
            })
            .collect(),
        next_cursor,
    }))
}

/// `"{open: 0 or 1}.{seq}"`.
/// A `following` cursor: `"{open}.{seq}"` (open is 0 or 1).
pub(super) fn parse_followed_cursor(cursor: &str) -> ApiResult<FollowedCursor> {
    let bad = || {
        ApiError::of(
            ApiCode::InvalidCursor,
            "the cursor is not one this API gave",
        )
    };
    let (open, seq) = cursor.split_once('.').ok_or_else(bad)?;
    let open = match open {
        "0" => false,
        "1" => true,
        _ => return Err(bad()),
    };
    let seq = seq
        .parse::<i64>()
        .ok()
        .filter(|seq| *seq >= 0)
        .ok_or_else(bad)?;
    Ok(FollowedCursor { open, seq })
}
