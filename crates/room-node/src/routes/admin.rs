//! Platform admin routes: wallet credits, the gift catalog, robot rooms and the outbox's dead
//! letters.

// utoipa's `params(RobotPageQuery)` expands to fully qualified paths.
#![allow(unused_qualifications)]

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use room_app::ports::{CatalogGift, GiftShare};
use room_app::robot_admin::{
    CreateRobotRoom, PatchRobotRoom, ProfileInput, ProfilePatch, RobotAdminError, RobotRoom,
};
use room_app::{MessageTarget, RobotRoomAdmin};
use room_domain::{Coins, CommandId, GiftId, RoomId, RoomResource, UserId};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::auth::PlatformAdmin;
use crate::dto::{
    CreateRobotRoomRequest, CreditRequest, CreditResponse, DeadLetterListResponse,
    DeadLetterResponse, GiftCatalogEntry, GiftShareRequest, PatchRobotRoomRequest, PutGiftRequest,
    RevokeRequest, RobotProfileRequest, RobotRoomListResponse, RobotRoomResponse, RoomResponse,
    SystemMessageRequest, SystemMessageResponse, TargetField,
};
use crate::error::{ApiCode, ApiError, ApiResult, ErrorResponse};
use crate::extract::{ApiJson, ApiPath, ApiQuery, IdempotencyKey, parse_id};
use crate::state::AppState;

/// Credits coins to a user's wallet. Idempotent by `op_id`: a repeat credits nothing more and
/// answers the balance of the first credit.
#[utoipa::path(
    post, path = "/v1/admin/wallets/{user_id}/credit", tag = "admin",
    params(("user_id" = crate::dto::Id, Path, description = "Whose wallet")),
    request_body = CreditRequest,
    responses(
        (status = 200, description = "Credited", body = CreditResponse),
        (status = 400, description = "`MALFORMED_JSON`, `INVALID_BODY`, `INVALID_ID`, or `INVALID_AMOUNT` (outside 1..=1,000,000,000,000)", body = ErrorResponse),
        (status = 403, description = "`FORBIDDEN`: not a platform admin", body = ErrorResponse),
        (status = 409, description = "`OP_ID_REUSED`: the op_id was used for another credit", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn credit_wallet(
    State(state): State<AppState>,
    PlatformAdmin(_): PlatformAdmin,
    ApiPath(user_id): ApiPath<String>,
    // Checked like on every mutating route; the route is idempotent by its own ids.
    _key: crate::extract::IdempotencyKey,
    ApiJson(request): ApiJson<CreditRequest>,
) -> ApiResult<Json<CreditResponse>> {
    let user: UserId = parse_id("user_id", &user_id)?;
    // Operation ids follow the rules of every other id (1 to 64 characters, no whitespace).
    //
    // Unlike gift order ids, `op_id` is not scoped by the credited user: only platform admins
    // choose it, so no user can claim or probe one, and it names one operation of the admin
    // tooling. Reused for another user or amount, it is far likelier a tooling fault than a
    // second credit: the wallet answers 409 OP_ID_REUSED instead of minting coins twice. (Its
    // kind, an admin credit, keeps it apart from gift operations and rewards.)
    let op_id: CommandId = parse_id("op_id", &request.op_id)?;
    if !(1..=room_app::MAX_ADMIN_CREDIT).contains(&request.amount) {
        return Err(ApiError::of(
            ApiCode::InvalidAmount,
            format!("amount must be 1 to {} coins", room_app::MAX_ADMIN_CREDIT),
        ));
    }
    let balance = state
        .service
        .admin_credit(op_id.as_str(), &user, Coins(request.amount))
        .await
        .map_err(|error| match error {
            room_app::Error::Conflict(_) | room_app::Error::AlreadyExists(_) => ApiError::of(
                ApiCode::OpIdReused,
                "op_id was already used for another credit",
            ),
            other => other.into(),
        })?;
    Ok(Json(CreditResponse {
        user_id: user.to_string(),
        op_id: op_id.to_string(),
        balance: balance.0,
    }))
}

/// Creates or replaces a catalog gift.
#[utoipa::path(
    put, path = "/v1/admin/gifts/{gift_id}", tag = "admin",
    params(("gift_id" = crate::dto::Id, Path, description = "The gift id")),
    request_body = PutGiftRequest,
    responses(
        (status = 200, description = "Stored", body = GiftCatalogEntry),
        (status = 400, description = "`MALFORMED_JSON`, `INVALID_BODY`, `INVALID_ID`, or `INVALID_GIFT` (a name that is blank or longer than 64 characters; a price, heat or fuel outside 0..=1,000,000,000)", body = ErrorResponse),
        (status = 403, description = "`FORBIDDEN`: not a platform admin", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn put_gift(
    State(state): State<AppState>,
    PlatformAdmin(_): PlatformAdmin,
    ApiPath(gift_id): ApiPath<String>,
    // Checked like on every mutating route; the route is idempotent by its own ids.
    _key: crate::extract::IdempotencyKey,
    ApiJson(request): ApiJson<PutGiftRequest>,
) -> ApiResult<Json<GiftCatalogEntry>> {
    let gift_id: GiftId = parse_id("gift_id", &gift_id)?;
    let gift = CatalogGift {
        gift_id,
        name: request.name,
        price: Coins(request.price),
        heat: request.heat,
        fuel: request.fuel,
        lucky: request.lucky,
        enabled: request.enabled,
    };
    if let Some(problem) = gift.problem() {
        return Err(ApiError::of(ApiCode::InvalidGift, problem));
    }
    state.service.put_gift(gift.clone()).await?;
    Ok(Json(gift.into()))
}

/// The robot-room use case over this node's service and configurations.
fn robot_rooms(state: &AppState) -> RobotRoomAdmin {
    RobotRoomAdmin::new(
        state.service.clone(),
        state.robots.clone(),
        state.robot_id_prefix.clone(),
    )
}

/// The answer to a refusal or failure of the robot-room use case.
fn refusal(error: RobotAdminError) -> ApiError {
    // Retryable failures after a first write say that the same request finishes the work.
    let unfinished = |error: room_app::Error, message: &str| {
        let error = ApiError::from(error);
        if error.retryable {
            error.with_message(message)
        } else {
            error
        }
    };
    match error {
        RobotAdminError::InvalidUrl(problem) => {
            ApiError::of(ApiCode::InvalidUrl, problem.to_string())
        }
        RobotAdminError::Invalid(problem) => {
            ApiError::of(ApiCode::InvalidRobotRoom, problem.to_string())
        }
        error @ RobotAdminError::NotFound(_) => {
            ApiError::of(ApiCode::RobotRoomNotFound, error.to_string())
        }
        error @ RobotAdminError::Exists { .. } => ApiError::of(
            ApiCode::RobotRoomExists,
            format!("{error}: send another Idempotency-Key for another room"),
        ),
        error @ RobotAdminError::Changed(_) => {
            ApiError::of(ApiCode::RobotRoomChanged, error.to_string())
        }
        // The status the room itself gives a change to a closed room.
        error @ RobotAdminError::RoomClosed(_) => {
            ApiError::of(ApiCode::RoomClosed, error.to_string())
        }
        RobotAdminError::ConfigNotStored(error) => unfinished(
            error,
            "the room was created but its robot configuration not stored yet; retry the same \
             request",
        ),
        RobotAdminError::ProfileNotShown(error) => unfinished(
            error,
            "the configuration is stored but the room does not show its profile yet; retry \
             the same request",
        ),
        RobotAdminError::Service(error) => error.into(),
        other => {
            tracing::error!(error = %other, "unmapped robot room refusal");
            ApiError::of(ApiCode::Internal, "internal error")
        }
    }
}

fn response(room: RobotRoom) -> RobotRoomResponse {
    RobotRoomResponse::new(room.config, room.running_on)
}

fn robots_of(robots: &[String]) -> ApiResult<Vec<UserId>> {
    robots
        .iter()
        .enumerate()
        .map(|(i, id)| parse_id(&format!("robots[{i}]"), id))
        .collect()
}

fn gift_mix_of(mix: &[GiftShareRequest]) -> ApiResult<Vec<GiftShare>> {
    mix.iter()
        .enumerate()
        .map(|(i, share)| {
            Ok(GiftShare {
                gift_id: parse_id(&format!("gift_mix[{i}].gift_id"), &share.gift_id)?,
                weight: share.weight,
            })
        })
        .collect()
}

/// Creates a robot room: an ordinary room, created by the pool's first robot (its owner)
/// through the room's own commands, and its configuration.
///
/// Idempotent: the room id comes from the `Idempotency-Key` header (scoped to the calling
/// admin), or without one from the request's content. The room is looked up first, and
/// before anything is written it must be open and be what the request asks for (name, seat
/// count, region, owner), and any configuration it has must say what the request says; else
/// 409 `ROBOT_ROOM_EXISTS`. So a retry after a retryable error (the room was created, its
/// configuration not yet stored) finishes the same room and answers 201 with its
/// configuration, however long after.
///
/// What remains: a room, once made, is what its key or content names for good. After its
/// room is closed, the same key or content answers 409 `ROBOT_ROOM_EXISTS` (send another key);
/// after a `DELETE` of the configuration, the same request configures the same room again
/// while it is open.
#[utoipa::path(
    post, path = "/v1/admin/robot-rooms", tag = "admin",
    request_body = CreateRobotRoomRequest,
    responses(
        (status = 201, description = "The new robot room's configuration (or, for a repeat, the configuration the first request stored)", body = RobotRoomResponse),
        (status = 400, description = "`MALFORMED_JSON`, `INVALID_BODY`, `INVALID_ID`, `INVALID_IDEMPOTENCY_KEY`, `INVALID_URL` (`profile.cover_url`), or `INVALID_ROBOT_ROOM`: a rule of the configuration is broken, the message names the field (`profile.name`, `seat_count`, `region`, `robots[3]`, `audience[7]`, `seats`, `gift_rate_per_minute`, `gift_mix[0].gift_id` for a gift that is not in the catalog or is disabled, ...)", body = ErrorResponse),
        (status = 403, description = "`FORBIDDEN`: not a platform admin", body = ErrorResponse),
        (status = 409, description = "`ROBOT_ROOM_EXISTS`: the key (from this admin) or the content names a room that is closed, differs from the request (name, seat count, region, owner), or has a configuration that differs; nothing was written. `COVER_IN_USE`: another open room shows the profile's cover; nothing was written", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn create_robot_room(
    State(state): State<AppState>,
    PlatformAdmin(admin): PlatformAdmin,
    key: crate::extract::IdempotencyKey,
    ApiJson(request): ApiJson<CreateRobotRoomRequest>,
) -> ApiResult<impl IntoResponse> {
    let RobotProfileRequest {
        name,
        notice,
        cover_url,
    } = request.profile;
    let input = CreateRobotRoom {
        admin: admin.user_id,
        idempotency_key: key.get().map(|key| key.key().to_owned()),
        profile: ProfileInput {
            name,
            notice,
            cover_url,
        },
        seat_count: request.seat_count,
        region: request.region.unwrap_or_default(),
        robots: robots_of(&request.robots)?,
        audience: request.audience,
        seats: request.seats,
        gift_rate_per_minute: request.gift_rate_per_minute,
        gift_mix: gift_mix_of(&request.gift_mix)?,
        enabled: request.enabled,
    };
    let room = robot_rooms(&state).create(input).await.map_err(refusal)?;
    Ok((StatusCode::CREATED, Json(response(room))))
}

/// `limit` and `cursor` of the robot room list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RobotPageQuery {
    /// Items per page, 1 to 100 (default 20).
    #[param(minimum = 1, maximum = 100)]
    limit: Option<u32>,
    /// The `next_cursor` of the previous page.
    #[param(value_type = Option<crate::dto::Id>)]
    cursor: Option<String>,
}

/// Robot rooms by room id, each with the node running it.
#[utoipa::path(
    get, path = "/v1/admin/robot-rooms", tag = "admin",
    params(RobotPageQuery),
    responses(
        (status = 200, description = "A page of robot rooms", body = RobotRoomListResponse),
        (status = 400, description = "`INVALID_QUERY`, `INVALID_LIMIT` or `INVALID_CURSOR`", body = ErrorResponse),
        (status = 403, description = "`FORBIDDEN`: not a platform admin", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn list_robot_rooms(
    State(state): State<AppState>,
    PlatformAdmin(_): PlatformAdmin,
    ApiQuery(query): ApiQuery<RobotPageQuery>,
) -> ApiResult<Json<RobotRoomListResponse>> {
    let limit = super::rooms::page_limit(query.limit)?;
    let after = match query.cursor {
        None => None,
        Some(cursor) => Some(RoomId::new(cursor).map_err(|_| {
            ApiError::of(
                ApiCode::InvalidCursor,
                "cursor is not a next_cursor of this list",
            )
        })?),
    };
    let page = robot_rooms(&state)
        .list(after, limit)
        .await
        .map_err(refusal)?;
    Ok(Json(RobotRoomListResponse {
        robot_rooms: page.robot_rooms.into_iter().map(response).collect(),
        next_cursor: page.next_cursor.map(|room_id| room_id.to_string()),
    }))
}

/// A robot room's configuration, with the node running it.
#[utoipa::path(
    get, path = "/v1/admin/robot-rooms/{room_id}", tag = "admin",
    params(("room_id" = crate::dto::Id, Path, description = "The room")),
    responses(
        (status = 200, description = "The configuration", body = RobotRoomResponse),
        (status = 403, description = "`FORBIDDEN`: not a platform admin", body = ErrorResponse),
        (status = 404, description = "`ROBOT_ROOM_NOT_FOUND`: the room has no robot configuration", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn get_robot_room(
    State(state): State<AppState>,
    PlatformAdmin(_): PlatformAdmin,
    ApiPath(room_id): ApiPath<String>,
) -> ApiResult<Json<RobotRoomResponse>> {
    let room_id: RoomId = parse_id("room_id", &room_id)?;
    let room = robot_rooms(&state).get(&room_id).await.map_err(refusal)?;
    Ok(Json(response(room)))
}

/// Changes a robot room's configuration: absent fields stay, and the result is checked as a
/// whole. A changed profile is applied to the room as well, by its owner.
///
/// The configuration is stored first, conditionally on its version: a change that loses a
/// race writes nothing anywhere. The room then gets the profile under ids derived from the
/// new version, so a retry converges: a change already in effect answers 200 with the
/// configuration (whatever `version` says) and finishes showing its profile in the room.
#[utoipa::path(
    patch, path = "/v1/admin/robot-rooms/{room_id}", tag = "admin",
    params(("room_id" = crate::dto::Id, Path, description = "The room")),
    request_body = PatchRobotRoomRequest,
    responses(
        (status = 200, description = "The new configuration (or, for a change already in effect, the configuration as it is)", body = RobotRoomResponse),
        (status = 400, description = "`MALFORMED_JSON`, `INVALID_BODY`, `INVALID_ID`, `INVALID_IDEMPOTENCY_KEY`, `INVALID_URL` (`profile.cover_url`), or `INVALID_ROBOT_ROOM` (the message names the field: `version` for 0, `gift_mix[0].gift_id` for a gift that is not in the catalog or is disabled, ...)", body = ErrorResponse),
        (status = 403, description = "`FORBIDDEN`: not a platform admin", body = ErrorResponse),
        (status = 404, description = "`ROBOT_ROOM_NOT_FOUND`: the room has no robot configuration", body = ErrorResponse),
        (status = 409, description = "`ROBOT_ROOM_CHANGED`: the configuration is not at the `version` given, or changed meanwhile; nothing was written. `COVER_IN_USE`: another open room shows the new cover; nothing was written", body = ErrorResponse),
        (status = 422, description = "`ROOM_CLOSED`: the profile would change, but the room is closed; nothing was written (unless the room closed while the change was applied: then the configuration is stored, and the room keeps its profile)", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn patch_robot_room(
    State(state): State<AppState>,
    PlatformAdmin(_): PlatformAdmin,
    ApiPath(room_id): ApiPath<String>,
    _key: crate::extract::IdempotencyKey,
    ApiJson(request): ApiJson<PatchRobotRoomRequest>,
) -> ApiResult<Json<RobotRoomResponse>> {
    let room_id: RoomId = parse_id("room_id", &room_id)?;
    let input = PatchRobotRoom {
        room_id,
        profile: request.profile.map(|profile| ProfilePatch {
            name: profile.name,
            notice: profile.notice,
            cover_url: profile.cover_url,
        }),
        robots: request.robots.as_deref().map(robots_of).transpose()?,
        audience: request.audience,
        seats: request.seats,
        gift_rate_per_minute: request.gift_rate_per_minute,
        gift_mix: request.gift_mix.as_deref().map(gift_mix_of).transpose()?,
        enabled: request.enabled,
        version: request.version,
    };
    let room = robot_rooms(&state).patch(input).await.map_err(refusal)?;
    Ok(Json(response(room)))
}

/// Deletes a robot room's configuration; the room itself stays, an ordinary room. A repeat
/// answers 404 `ROBOT_ROOM_NOT_FOUND`.
#[utoipa::path(
    delete, path = "/v1/admin/robot-rooms/{room_id}", tag = "admin",
    params(("room_id" = crate::dto::Id, Path, description = "The room")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 403, description = "`FORBIDDEN`: not a platform admin", body = ErrorResponse),
        (status = 404, description = "`ROBOT_ROOM_NOT_FOUND`: the room has no robot configuration (or no longer: a repeat of a delete)", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn delete_robot_room(
    State(state): State<AppState>,
    PlatformAdmin(_): PlatformAdmin,
    ApiPath(room_id): ApiPath<String>,
    _key: crate::extract::IdempotencyKey,
) -> ApiResult<StatusCode> {
    let room_id: RoomId = parse_id("room_id", &room_id)?;
    robot_rooms(&state)
        .delete(&room_id)
        .await
        .map_err(refusal)?;
    Ok(StatusCode::NO_CONTENT)
}

#[cfg(test)]
mod tests {
    use room_app::ports::RobotRoomProblem;
    use room_app::robot_admin::ExistsReason;

    use super::*;

    #[test]
    fn robot_room_refusals_keep_their_status_code_and_message() {
        let room = RoomId::new("rk1").unwrap();
        let answer = |error: RobotAdminError| {
            let error = refusal(error);
            (
                error.status.as_u16(),
                error.code.as_str().to_owned(),
                error.message,
            )
        };
        let invalid = RobotRoomProblem {
            field: "robots[3]".into(),
            reason: "is in the pool twice".into(),
        };
        assert_eq!(
            answer(RobotAdminError::Invalid(invalid)),
            (
                400,
                "INVALID_ROBOT_ROOM".into(),
                "robots[3]: is in the pool twice".into()
            )
        );
        assert_eq!(
            answer(RobotAdminError::NotFound(room.clone())),
            (
                404,
                "ROBOT_ROOM_NOT_FOUND".into(),
                "room rk1 has no robot room configuration".into()
            )
        );
        assert_eq!(
            answer(RobotAdminError::Exists {
                room_id: room.clone(),
                why: ExistsReason::Closed,
            }),
            (
                409,
                "ROBOT_ROOM_EXISTS".into(),
                "this key or content was used before for room rk1, which is closed: send \
                 another Idempotency-Key for another room"
                    .into()
            )
        );
        assert_eq!(
            answer(RobotAdminError::Changed(room.clone())),
            (
                409,
                "ROBOT_ROOM_CHANGED".into(),
                "robot room rk1 changed meanwhile: read it again".into()
            )
        );
        assert_eq!(
            answer(RobotAdminError::RoomClosed(room)),
            (
                422,
                "ROOM_CLOSED".into(),
                "room rk1 is closed: its profile cannot change".into()
            )
        );
        // A retryable failure after a first write says the same request finishes it; any
        // other failure answers as the error itself would.
        let unfinished = refusal(RobotAdminError::ConfigNotStored(
            room_app::Error::unavailable("db down"),
        ));
        assert!(unfinished.retryable);
        assert_eq!(unfinished.status.as_u16(), 503);
        assert_eq!(
            unfinished.message,
            "the room was created but its robot configuration not stored yet; retry the same \
             request"
        );
        let unfinished = refusal(RobotAdminError::ProfileNotShown(
            room_app::Error::unavailable("db down"),
        ));
        assert!(
            unfinished
                .message
                .starts_with("the configuration is stored but")
        );
        let failed = refusal(RobotAdminError::ProfileNotShown(room_app::Error::internal(
            "bug",
        )));
        assert_eq!(
            (
                failed.status.as_u16(),
                failed.code.as_str(),
                failed.retryable
            ),
            (500, "INTERNAL", false)
        );
    }
}

/// `limit` and `cursor` of the dead letter list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DeadLetterPageQuery {
    /// Items per page, 1 to 100 (default 20).
    #[param(minimum = 1, maximum = 100)]
    limit: Option<u32>,
    /// The `next_cursor` of the previous page.
    #[param(pattern = r"^[1-9][0-9]{0,17}$")]
    cursor: Option<String>,
}

/// An outbox id from a cursor or a path: digits of a positive 64-bit integer.
fn outbox_id(raw: &str) -> Option<i64> {
    raw.parse::<i64>().ok().filter(|id| *id > 0)
}

/// The durable facts the broker refused for good (too large, invalid), which the outbox
/// publisher set aside so that their rooms' later facts go on, oldest first.
#[utoipa::path(
    get, path = "/v1/admin/outbox/dead-letters", tag = "admin",
    params(DeadLetterPageQuery),
    responses(
        (status = 200, description = "A page of dead letters", body = DeadLetterListResponse),
        (status = 400, description = "`INVALID_QUERY`, `INVALID_LIMIT` or `INVALID_CURSOR`", body = ErrorResponse),
        (status = 403, description = "`FORBIDDEN`: not a platform admin", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn list_dead_letters(
    State(state): State<AppState>,
    PlatformAdmin(_): PlatformAdmin,
    ApiQuery(query): ApiQuery<DeadLetterPageQuery>,
) -> ApiResult<Json<DeadLetterListResponse>> {
    let limit = super::rooms::page_limit(query.limit)?;
    let after = match query.cursor.as_deref() {
        None => 0,
        Some(cursor) => outbox_id(cursor).ok_or_else(|| {
            ApiError::of(
                ApiCode::InvalidCursor,
                "cursor is not a next_cursor of this list",
            )
        })?,
    };
    let page = room_app::dead_letters::list_dead_letters(&state.outbox, after, limit).await?;
    Ok(Json(DeadLetterListResponse {
        dead_letters: page
            .dead_letters
            .into_iter()
            .map(|dead| DeadLetterResponse {
                id: dead.id.to_string(),
                room_id: dead.envelope.room_id.to_string(),
                seq: dead.envelope.seq,
                event_id: dead.envelope.event_id.clone(),
                event_type: dead.envelope.event.type_name().to_owned(),
                reason: dead.reason,
                dead_at: dead.dead_at.0,
                envelope: serde_json::to_value(&dead.envelope).unwrap_or_default(),
            })
            .collect(),
        next_cursor: page.next_after.map(|id| id.to_string()),
    }))
}

/// Puts a dead letter back in the outbox under its own id: the publisher publishes it again
/// (after the broker's limit or the fact's cause was fixed). A fact refused again becomes a
/// dead letter again.
#[utoipa::path(
    post, path = "/v1/admin/outbox/dead-letters/{id}/replay", tag = "admin",
    params(("id" = String, Path, description = "The dead letter's id", pattern = r"^[1-9][0-9]{0,17}$")),
    responses(
        (status = 204, description = "Back in the outbox"),
        (status = 400, description = "`INVALID_ID`: not an outbox id", body = ErrorResponse),
        (status = 403, description = "`FORBIDDEN`: not a platform admin", body = ErrorResponse),
        (status = 404, description = "`NOT_FOUND`: no dead letter has that id (never, or replayed already)", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn replay_dead_letter(
    State(state): State<AppState>,
    PlatformAdmin(_): PlatformAdmin,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<StatusCode> {
    let id = outbox_id(&id)
        .ok_or_else(|| ApiError::of(ApiCode::InvalidId, format!("{id:?} is not an outbox id")))?;
    if room_app::dead_letters::replay_dead_letter(&state.outbox, id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::of(
            ApiCode::NotFound,
            format!("no dead letter has id {id}"),
        ))
    }
}

/// Resets parts of a room's profile to their defaults, with a reason the room is shown
/// (`RoomResourcesRevoked`, in the event stream and in IM): the name becomes the configured
/// `default_room_name`, the notice empty, the cover and the background none. A revoked cover
/// may be shown by another room. Answers the room.
#[utoipa::path(
    post, path = "/v1/admin/rooms/{room_id}/revoke", tag = "admin",
    params(("room_id" = crate::dto::Id, Path, description = "The room id")),
    request_body = RevokeRequest,
    responses(
        (status = 200, description = "Revoked", body = RoomResponse),
        (status = 400, description = "`MALFORMED_JSON`, `INVALID_BODY` (no resource, more than 4, an unknown one), `INVALID_ID`, `FIELD_EMPTY`, `FIELD_TOO_LONG`, `FIELD_INVALID_CHARACTER` (the reason)", body = ErrorResponse),
        (status = 403, description = "`FORBIDDEN`: not a platform admin", body = ErrorResponse),
        (status = 404, description = "`ROOM_NOT_FOUND`", body = ErrorResponse),
        (status = 422, description = "`ROOM_CLOSED`", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn revoke_resources(
    State(state): State<AppState>,
    PlatformAdmin(actor): PlatformAdmin,
    key: IdempotencyKey,
    ApiPath(room_id): ApiPath<String>,
    ApiJson(request): ApiJson<RevokeRequest>,
) -> ApiResult<Json<RoomResponse>> {
    if request.resources.len() > 4 {
        return Err(ApiError::of(
            ApiCode::InvalidBody,
            "resources: name 1 to 4 resources",
        ));
    }
    let mut resources: Vec<RoomResource> = Vec::with_capacity(4);
    for resource in request.resources {
        let resource = RoomResource::from(resource);
        if !resources.contains(&resource) {
            resources.push(resource);
        }
    }
    if resources.is_empty() {
        return Err(ApiError::of(
            ApiCode::InvalidBody,
            "resources: name 1 to 4 resources",
        ));
    }
    let room_id = state.existing_room(&room_id).await?;
    let view = state
        .service
        .revoke_resources(&actor, &room_id, resources, request.reason, key.get())
        .await?;
    Ok(Json(view.into()))
}

/// Sends a message from the platform to one room, to every open room of a region, or to
/// every open room. Each room shows it as a `RoomSystemMessage` event (SSE, IM) and keeps it
/// in its log and in the durable facts with who sent it. One room answers as any room command
/// (404 `ROOM_NOT_FOUND`, 422 `ROOM_CLOSED`); many are sent to 16 at a time and answered
/// with how many show it, had closed, or could not be reached now. With an
/// `Idempotency-Key`, a repeat is shown once in each room.
#[utoipa::path(
    post, path = "/v1/admin/system-messages", tag = "admin",
    request_body = SystemMessageRequest,
    responses(
        (status = 200, description = "Sent", body = SystemMessageResponse),
        (status = 400, description = "`MALFORMED_JSON`, `INVALID_BODY` (a target not of one of the three forms), `INVALID_ID`, `FIELD_EMPTY`, `FIELD_TOO_LONG`, `FIELD_INVALID_CHARACTER` (the text, the region)", body = ErrorResponse),
        (status = 403, description = "`FORBIDDEN`: not a platform admin", body = ErrorResponse),
        (status = 404, description = "`ROOM_NOT_FOUND` (one room)", body = ErrorResponse),
        (status = 422, description = "`ROOM_CLOSED` (one room)", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn send_system_message(
    State(state): State<AppState>,
    PlatformAdmin(actor): PlatformAdmin,
    key: IdempotencyKey,
    ApiJson(request): ApiJson<SystemMessageRequest>,
) -> ApiResult<Json<SystemMessageResponse>> {
    let target = match request.target {
        TargetField::Room(room_id) => MessageTarget::Room(state.existing_room(&room_id).await?),
        TargetField::Region(region) => {
            room_domain::Field::Region
                .check(&region)
                .map_err(|rejection| ApiError::from_rejection(&rejection))?;
            MessageTarget::Region(region)
        }
        TargetField::All => MessageTarget::All,
    };
    let report = state
        .service
        .send_system_message(&actor, target, request.text, key.get())
        .await?;
    Ok(Json(report.into()))
}
