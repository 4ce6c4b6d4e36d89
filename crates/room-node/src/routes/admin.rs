//! Platform admin routes: wallet credits, the gift catalog and robot rooms.

// utoipa's `params(RobotPageQuery)` expands to fully qualified paths.
#![allow(unused_qualifications)]

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use room_app::ports::{CatalogGift, GiftShare, RobotProfile, RobotRoomConfig, RobotRoomProblem};
use room_app::{RoomPatch, RoomView};
use room_domain::{Coins, CommandId, GiftId, Rejection, RoomId, RoomStatus, UserActor, UserId};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::auth::PlatformAdmin;
use crate::dto::{
    CreateRobotRoomRequest, CreditRequest, CreditResponse, GiftCatalogEntry, GiftShareRequest,
    PatchRobotRoomRequest, PutGiftRequest, RobotProfileRequest, RobotRoomListResponse,
    RobotRoomResponse,
};
use crate::error::{ApiError, ApiResult, ErrorResponse};
use crate::extract::{ApiJson, ApiPath, ApiQuery, parse_id};
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
        return Err(ApiError::bad_request(
            "INVALID_AMOUNT",
            format!("amount must be 1 to {} coins", room_app::MAX_ADMIN_CREDIT),
        ));
    }
    let balance = state
        .service
        .admin_credit(op_id.as_str(), &user, Coins(request.amount))
        .await
        .map_err(|error| match error {
            room_app::Error::Conflict(_) | room_app::Error::AlreadyExists(_) => ApiError::new(
                StatusCode::CONFLICT,
                "OP_ID_REUSED",
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
        return Err(ApiError::bad_request("INVALID_GIFT", problem));
    }
    state.service.put_gift(gift.clone()).await?;
    Ok(Json(gift.into()))
}

/// 400 `INVALID_ROBOT_ROOM`, naming the field and the rule.
fn invalid(problem: RobotRoomProblem) -> ApiError {
    ApiError::bad_request("INVALID_ROBOT_ROOM", problem.to_string())
}

fn problem(field: impl Into<String>, reason: impl Into<String>) -> ApiError {
    invalid(RobotRoomProblem {
        field: field.into(),
        reason: reason.into(),
    })
}

/// 404 `ROBOT_ROOM_NOT_FOUND`.
fn not_found(room_id: &RoomId) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "ROBOT_ROOM_NOT_FOUND",
        format!("room {room_id} has no robot room configuration"),
    )
}

/// 409 `ROBOT_ROOM_EXISTS`: a creation's key or content names a room that is not the one it
/// asks for.
fn exists(room_id: &RoomId, why: &str) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "ROBOT_ROOM_EXISTS",
        format!(
            "this key or content was used before for room {room_id}, which {why}: send \
             another Idempotency-Key for another room"
        ),
    )
}

/// 422 `ROOM_CLOSED`, the status the room itself gives a change to a closed room.
fn room_closed(room_id: &RoomId) -> ApiError {
    ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "ROOM_CLOSED",
        format!("room {room_id} is closed: its profile cannot change"),
    )
}

/// A profile as stored: the name as the room keeps it (trimmed), a blank cover URL is no
/// cover.
fn profile_of(name: String, notice: Option<String>, cover_url: Option<String>) -> RobotProfile {
    RobotProfile {
        name: name.trim().to_owned(),
        notice: notice.unwrap_or_default(),
        cover_url: cover_url
            .map(|url| url.trim().to_owned())
            .filter(|url| !url.is_empty()),
    }
}

fn robots_of(robots: &[String]) -> ApiResult<Vec<UserId>> {
    robots
        .iter()
        .enumerate()
        .map(|(i, id)| parse_id(&format!("robots[{i}]"), id))
        .collect()
}

fn seats_of(seats: i64) -> ApiResult<u8> {
    u8::try_from(seats).map_err(|_| {
        problem(
            "seats",
            format!("{seats} is outside 0 to the seat count less one"),
        )
    })
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

/// Checks a configuration's rules, then that every gift of its mix is in the catalog and
/// enabled (robots send gifts like users do, and a disabled gift cannot be sent).
async fn check(state: &AppState, config: &RobotRoomConfig) -> ApiResult<()> {
    config.validate(&state.robot_id_prefix).map_err(invalid)?;
    let catalog = state.service.list_gifts().await?;
    for (i, share) in config.gift_mix.iter().enumerate() {
        let field = || format!("gift_mix[{i}].gift_id");
        match catalog.iter().find(|gift| gift.gift_id == share.gift_id) {
            None => {
                return Err(problem(
                    field(),
                    format!("{} is not in the gift catalog", share.gift_id),
                ));
            }
            Some(gift) if !gift.enabled => {
                return Err(problem(
                    field(),
                    format!("{} is disabled in the gift catalog", share.gift_id),
                ));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// Refuses a pool that shares a robot with another robot room's (a robot is in one room at a
/// time): every other configuration is read, page by page. Two writes at the same moment may
/// both pass.
async fn check_pool(state: &AppState, room_id: &RoomId, robots: &[UserId]) -> ApiResult<()> {
    let pool: std::collections::HashMap<&UserId, usize> = robots
        .iter()
        .enumerate()
        .map(|(i, robot)| (robot, i))
        .collect();
    let mut after = None;
    loop {
        let page = state
            .robots
            .list(after.clone(), room_app::ports::MAX_ROBOT_ROOM_PAGE)
            .await?;
        let Some(last) = page.last() else { break };
        after = Some(last.room_id.clone());
        for other in page.iter().filter(|other| other.room_id != *room_id) {
            if let Some(i) = other
                .robots
                .iter()
                .filter_map(|robot| pool.get(robot))
                .min()
            {
                let i = *i;
                return Err(problem(
                    format!("robots[{i}]"),
                    format!(
                        "{} is in the pool of robot room {} (a robot is in one room at a time)",
                        robots[i], other.room_id
                    ),
                ));
            }
        }
        if page.len() < room_app::ports::MAX_ROBOT_ROOM_PAGE as usize {
            break;
        }
    }
    Ok(())
}

async fn respond(state: &AppState, config: RobotRoomConfig) -> ApiResult<RobotRoomResponse> {
    let running_on = state.service.runtime().running_on(&config.room_id).await?;
    Ok(RobotRoomResponse::new(config, running_on))
}

/// Whether two configurations say the same (their room, version and times aside).
fn same_content(a: &RobotRoomConfig, b: &RobotRoomConfig) -> bool {
    content(a) == content(b)
}

/// What a configuration asks for, without its bookkeeping (room, version, times). Taken
/// apart whole, so that a field added to [`RobotRoomConfig`] must be placed here.
type Content<'a> = (
    &'a RobotProfile,
    u8,
    &'a [UserId],
    &'a [u32],
    u8,
    u32,
    &'a [room_app::ports::GiftShare],
    bool,
);

fn content(config: &RobotRoomConfig) -> Content<'_> {
    let RobotRoomConfig {
        room_id: _,
        profile,
        seat_count,
        robots,
        audience,
        seats,
        gift_rate_per_minute,
        gift_mix,
        enabled,
        version: _,
        created_at: _,
        updated_at: _,
    } = config;
    (
        profile,
        *seat_count,
        robots,
        audience,
        *seats,
        *gift_rate_per_minute,
        gift_mix,
        *enabled,
    )
}

/// Whether `room` shows `profile`.
fn shows(room: &RoomView, profile: &RobotProfile) -> bool {
    room.name == profile.name
        && room.notice == profile.notice
        && room.cover_url == profile.cover_url
}

/// Whether `room` is the room a creation of `config` in `region` makes: open, owned by the
/// pool's first robot, with the configuration's name and seat count and the region.
fn is_room_of(room: &RoomView, config: &RobotRoomConfig, region: &str) -> bool {
    room.status == RoomStatus::Open
        && room.owner.as_ref() == config.robots.first()
        && room.name == config.profile.name
        && room.seats.len() == usize::from(config.seat_count)
        && room.region == region
}

/// 48 hex digits of SHA-256 over `parts`, each length-prefixed so that no two tuples hash
/// the same input.
fn digest<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> String {
    room_app::digest::hex(&room_app::digest::length_prefixed_sha256(parts)[..24])
}

/// The route robot room creations are keyed under.
const CREATE_ROUTE: &str = "POST /v1/admin/robot-rooms";

/// The idempotency key of a creation, which names its room.
///
/// A client's key is scoped to the admin who sent it: another admin's request with the same
/// key is another request, and gets another room. Without a key, one is derived from what the
/// request asks for, so that a plain retry lands on the same room. The two kinds live under
/// routes of their own (`... key by <admin>` and `... content`, hashed length-prefixed into
/// every id), so no client key can spell a content key.
fn creation_key(
    admin: &UserId,
    key: &crate::extract::IdempotencyKey,
    config: &RobotRoomConfig,
    region: &str,
) -> ApiResult<room_app::IdempotencyKey> {
    if let Some(key) = key.get() {
        return Ok(room_app::IdempotencyKey::new(
            format!("{CREATE_ROUTE} key by {admin}"),
            key.key(),
        )?);
    }
    // The region sits after the seat count: the order keys of stored rooms were made in.
    let (profile, seat_count, robots, audience, seats, rate, mix, enabled) = content(config);
    let content = serde_json::to_vec(&(
        profile, seat_count, region, robots, audience, seats, rate, mix, enabled,
    ))
    .map_err(|e| room_app::Error::internal(format!("encoding a robot room: {e}")))?;
    Ok(room_app::IdempotencyKey::new(
        format!("{CREATE_ROUTE} content"),
        &digest([content.as_slice()]),
    )?)
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
        (status = 400, description = "`MALFORMED_JSON`, `INVALID_BODY`, `INVALID_ID`, `INVALID_IDEMPOTENCY_KEY`, or `INVALID_ROBOT_ROOM`: a rule of the configuration is broken, the message names the field (`profile.name`, `seat_count`, `region`, `robots[3]`, `audience[7]`, `seats`, `gift_rate_per_minute`, `gift_mix[0].gift_id` for a gift that is not in the catalog or is disabled, ...)", body = ErrorResponse),
        (status = 403, description = "`FORBIDDEN`: not a platform admin", body = ErrorResponse),
        (status = 409, description = "`ROBOT_ROOM_EXISTS`: the key (from this admin) or the content names a room that is closed, differs from the request (name, seat count, region, owner), or has a configuration that differs; nothing was written", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn create_robot_room(
    State(state): State<AppState>,
    PlatformAdmin(admin): PlatformAdmin,
    key: crate::extract::IdempotencyKey,
    ApiJson(request): ApiJson<CreateRobotRoomRequest>,
) -> ApiResult<impl IntoResponse> {
    let seat_count = match request.seat_count {
        None => state.service.runtime().rules().default_seat_count,
        Some(count) => u8::try_from(count)
            .ok()
            .filter(|count| (1..=room_domain::MAX_SEATS).contains(count))
            .ok_or_else(|| {
                problem(
                    "seat_count",
                    format!("{count} is outside 1 to {}", room_domain::MAX_SEATS),
                )
            })?,
    };
    let region = request.region.unwrap_or_default();
    if region.chars().count() > 32
        || region.chars().any(|c| {
            c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
        })
    {
        return Err(problem(
            "region",
            "must have up to 32 characters, no control character or bidirectional override",
        ));
    }
    let robots = robots_of(&request.robots)?;
    let now = state.service.ports().clock.now();
    let RobotProfileRequest {
        name,
        notice,
        cover_url,
    } = request.profile;
    let mut config = RobotRoomConfig {
        // Replaced by the room's id; a placeholder the checks do not look at.
        room_id: RoomId::new("pending").map_err(room_app::Error::corrupt)?,
        profile: profile_of(name, notice, cover_url),
        seat_count,
        robots,
        audience: request.audience,
        seats: seats_of(request.seats)?,
        gift_rate_per_minute: request.gift_rate_per_minute,
        gift_mix: gift_mix_of(&request.gift_mix)?,
        enabled: request.enabled,
        version: 1,
        created_at: now,
        updated_at: now,
    };
    check(&state, &config).await?;

    let key = creation_key(&admin.user_id, &key, &config, &region)?;
    let owner = UserActor {
        user_id: config.robots[0].clone(),
        vip_level: 0,
        platform_admin: false,
    };
    let room_id = key.room_id(&owner.user_id)?;
    check_pool(&state, &room_id, &config.robots).await?;
    // Looked up before it is created: a repeat must not count on the creation command
    // answering again (the command log forgets old commands, and the room then refuses a
    // second creation), and a room made before is reused only while it is open.
    let room = match state.service.get_room(&room_id).await {
        Ok(room) => room,
        Err(room_app::Error::Rejected(Rejection::RoomNotFound)) => state
            .service
            .create_room(
                &owner,
                config.profile.name.clone(),
                Some(seat_count),
                region.clone(),
                Some(&key),
            )
            .await
            .map_err(|error| match error {
                // A concurrent repeat won, long ago by the command log's measure, or the
                // room was closed meanwhile.
                room_app::Error::Rejected(Rejection::RoomAlreadyExists | Rejection::RoomClosed) => {
                    exists(&room_id, "was created or closed meanwhile")
                }
                other => other.into(),
            })?,
        Err(other) => return Err(other.into()),
    };
    // Nothing is written into a room that is not the one this request asks for.
    if !is_room_of(&room, &config, &region) {
        return Err(if room.status == RoomStatus::Open {
            exists(&room_id, "has another name, seat count, region or owner")
        } else {
            exists(&room_id, "is closed")
        });
    }
    config.room_id = room.room_id.clone();
    let differs = || exists(&room_id, "is a robot room configured otherwise");
    if let Some(stored) = state.robots.get(&config.room_id).await? {
        if !same_content(&stored, &config) {
            return Err(differs());
        }
        return Ok((StatusCode::CREATED, Json(respond(&state, stored).await?)));
    }
    if !shows(&room, &config.profile) {
        state
            .service
            .update_room(
                &owner,
                &config.room_id,
                RoomPatch {
                    notice: Some(config.profile.notice.clone()),
                    cover_url: Some(config.profile.cover_url.clone().unwrap_or_default()),
                    ..RoomPatch::default()
                },
                Some(&key),
            )
            .await
            .map_err(|error| match error {
                room_app::Error::Rejected(Rejection::RoomClosed) => {
                    exists(&room_id, "was closed meanwhile")
                }
                other => other.into(),
            })?;
    }
    let stored = match state.robots.create(&config).await {
        Ok(()) => config,
        Err(room_app::Error::AlreadyExists(_)) => {
            let stored =
                state.robots.get(&config.room_id).await?.ok_or_else(|| {
                    room_app::Error::unavailable("the robot room was just deleted")
                })?;
            if !same_content(&stored, &config) {
                return Err(differs());
            }
            stored
        }
        Err(error) => {
            let error = ApiError::from(error);
            return Err(if error.retryable {
                error.with_message(
                    "the room was created but its robot configuration not stored yet; retry \
                     the same request",
                )
            } else {
                error
            });
        }
    };
    Ok((StatusCode::CREATED, Json(respond(&state, stored).await?)))
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
            ApiError::bad_request("INVALID_CURSOR", "cursor is not a next_cursor of this list")
        })?),
    };
    let configs = state.robots.list(after, limit).await?;
    let next_cursor = (configs.len() == limit as usize)
        .then(|| configs.last().map(|c| c.room_id.to_string()))
        .flatten();
    // Concurrently: a page is at most `MAX_PAGE` (100) rooms, which bounds the lookups.
    let robot_rooms =
        futures_util::future::join_all(configs.into_iter().map(|config| respond(&state, config)))
            .await
            .into_iter()
            .collect::<ApiResult<Vec<_>>>()?;
    Ok(Json(RobotRoomListResponse {
        robot_rooms,
        next_cursor,
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
    let config = state
        .robots
        .get(&room_id)
        .await?
        .ok_or_else(|| not_found(&room_id))?;
    Ok(Json(respond(&state, config).await?))
}

/// The idempotency key the room's profile is changed under for version `config.version` of
/// its configuration: derived from the room, the configuration's creation (a configuration
/// deleted and made again starts at version 1 again) and the version, so that a retry, or a
/// late concurrent attempt, repeats the same command and changes nothing more.
fn profile_key(config: &RobotRoomConfig) -> ApiResult<room_app::IdempotencyKey> {
    Ok(room_app::IdempotencyKey::new(
        "PATCH /v1/admin/robot-rooms/{room_id} profile",
        &digest([
            config.room_id.as_str().as_bytes(),
            &config.created_at.0.to_be_bytes(),
            &config.version.to_be_bytes(),
        ]),
    )?)
}

/// Makes the room show the profile of its configuration as stored now, as its owner. Reading
/// the configuration again, rather than applying the caller's, makes concurrent changes
/// converge on the latest one (but for a change that reads the configuration before another
/// is stored and reaches the room after it).
async fn show_profile(state: &AppState, room_id: &RoomId) -> ApiResult<()> {
    let Some(config) = state.robots.get(room_id).await? else {
        // Deleted meanwhile: the room is an ordinary room now.
        return Ok(());
    };
    let room = state.service.get_room(room_id).await?;
    if shows(&room, &config.profile) {
        return Ok(());
    }
    let owner = match room.owner {
        Some(owner) if room.status == RoomStatus::Open => owner,
        _ => return Err(room_closed(room_id)),
    };
    let owner = UserActor {
        user_id: owner,
        vip_level: 0,
        platform_admin: false,
    };
    state
        .service
        .update_room(
            &owner,
            room_id,
            RoomPatch {
                name: Some(config.profile.name.clone()),
                notice: Some(config.profile.notice.clone()),
                cover_url: Some(config.profile.cover_url.clone().unwrap_or_default()),
                ..RoomPatch::default()
            },
            Some(&profile_key(&config)?),
        )
        .await?;
    Ok(())
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
        (status = 400, description = "`MALFORMED_JSON`, `INVALID_BODY`, `INVALID_ID`, `INVALID_IDEMPOTENCY_KEY`, or `INVALID_ROBOT_ROOM` (the message names the field: `version` for 0, `gift_mix[0].gift_id` for a gift that is not in the catalog or is disabled, ...)", body = ErrorResponse),
        (status = 403, description = "`FORBIDDEN`: not a platform admin", body = ErrorResponse),
        (status = 404, description = "`ROBOT_ROOM_NOT_FOUND`: the room has no robot configuration", body = ErrorResponse),
        (status = 409, description = "`ROBOT_ROOM_CHANGED`: the configuration is not at the `version` given, or changed meanwhile; nothing was written", body = ErrorResponse),
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
    if request.version == Some(0) {
        return Err(problem("version", "versions start at 1"));
    }
    let stored = state
        .robots
        .get(&room_id)
        .await?
        .ok_or_else(|| not_found(&room_id))?;
    let changed = || {
        ApiError::new(
            StatusCode::CONFLICT,
            "ROBOT_ROOM_CHANGED",
            format!("robot room {room_id} changed meanwhile: read it again"),
        )
    };
    let mut config = stored.clone();
    if let Some(profile) = request.profile {
        let current = config.profile.clone();
        config.profile = profile_of(
            profile.name.unwrap_or(current.name),
            Some(profile.notice.unwrap_or(current.notice)),
            match profile.cover_url {
                Some(url) => Some(url),
                None => current.cover_url,
            },
        );
    }
    if let Some(robots) = &request.robots {
        config.robots = robots_of(robots)?;
    }
    if let Some(audience) = request.audience {
        config.audience = audience;
    }
    if let Some(seats) = request.seats {
        config.seats = seats_of(seats)?;
    }
    if let Some(rate) = request.gift_rate_per_minute {
        config.gift_rate_per_minute = rate;
    }
    if let Some(enabled) = request.enabled {
        config.enabled = enabled;
    }
    if let Some(mix) = &request.gift_mix {
        config.gift_mix = gift_mix_of(mix)?;
    }
    check(&state, &config).await?;
    if config.robots != stored.robots {
        check_pool(&state, &room_id, &config.robots).await?;
    }
    if same_content(&config, &stored) {
        // In effect already, perhaps by a first attempt of this very request that stored the
        // configuration and then failed to reach the room: finish that.
        show_profile(&state, &room_id).await?;
        return Ok(Json(respond(&state, stored).await?));
    }
    if request.version.is_some_and(|v| v != stored.version) {
        return Err(changed());
    }
    let profile_changed = config.profile != stored.profile;
    if profile_changed {
        // Refused before anything is written: a closed room shows no new profile.
        let room = state.service.get_room(&room_id).await?;
        if room.status != RoomStatus::Open {
            return Err(room_closed(&room_id));
        }
    }
    config.version = stored.version + 1;
    config.updated_at = state.service.ports().clock.now();
    // The configuration first: if it lost a race, nothing was written to the room either.
    state
        .robots
        .update(&config, stored.version)
        .await
        .map_err(|error| match error {
            room_app::Error::Conflict(_) => changed(),
            room_app::Error::NotFound(_) => not_found(&room_id),
            other => other.into(),
        })?;
    if profile_changed {
        show_profile(&state, &room_id).await.map_err(|error| {
            if error.retryable {
                error.with_message(
                    "the configuration is stored but the room does not show its profile yet; \
                     retry the same request",
                )
            } else {
                error
            }
        })?;
    }
    Ok(Json(respond(&state, config).await?))
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
    if state.robots.delete(&room_id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(not_found(&room_id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::IdempotencyKey;

    fn config() -> RobotRoomConfig {
        let now = room_domain::Timestamp(0);
        RobotRoomConfig {
            room_id: RoomId::new("pending").unwrap(),
            profile: profile_of("Night owls".into(), None, None),
            seat_count: 8,
            robots: vec![UserId::new("robot-0").unwrap()],
            audience: vec![1; 24],
            seats: 1,
            gift_rate_per_minute: 3,
            gift_mix: vec![GiftShare {
                gift_id: GiftId::new("rose").unwrap(),
                weight: 1,
            }],
            enabled: true,
            version: 1,
            created_at: now,
            updated_at: now,
        }
    }

    fn client(key: &str) -> IdempotencyKey {
        IdempotencyKey(Some(
            room_app::IdempotencyKey::new(CREATE_ROUTE, key).unwrap(),
        ))
    }

    #[test]
    fn creation_keys_are_scoped_to_the_admin_and_apart_from_content_keys() {
        let (config, robot) = (config(), UserId::new("robot-0").unwrap());
        let (alice, bob) = (UserId::new("alice").unwrap(), UserId::new("bob").unwrap());
        let room = |admin: &UserId, key: &IdempotencyKey| {
            creation_key(admin, key, &config, "eu")
                .unwrap()
                .room_id(&robot)
                .unwrap()
        };
        assert_eq!(room(&alice, &client("k")), room(&alice, &client("k")));
        assert_ne!(
            room(&alice, &client("k")),
            room(&bob, &client("k")),
            "another admin's key is another room"
        );
        let content = creation_key(&alice, &IdempotencyKey(None), &config, "eu").unwrap();
        assert_eq!(
            room(&alice, &IdempotencyKey(None)),
            room(&bob, &IdempotencyKey(None)),
            "the content names the room"
        );
        for spelled in [
            content.key().to_owned(),
            format!("content-{}", content.key()),
        ] {
            assert_ne!(
                room(&alice, &client(&spelled)),
                room(&alice, &IdempotencyKey(None)),
                "a client key spelled {spelled} names no content's room"
            );
        }
    }
}
