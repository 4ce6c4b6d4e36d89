//! Leaderboards, for any signed-in user: the whole app's boards of senders, receivers and
//! rooms, each room's boards of senders and receivers, and the caller's standing on one; for
//! platform admins, the reward tables and each closed period's payouts.

// utoipa's `params(BoardQuery)` expands to fully qualified paths.
#![allow(unused_qualifications)]

use std::collections::HashMap;

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use room_app::boards::rewards::change_board_rewards;
use room_app::boards::{BoardCursor, BoardPage, board_at, first_day, read_board};
use room_app::ports::{BoardId, BoardKind, BoardPeriod, BoardStanding};
use room_domain::{DayKey, RoomId, UserId};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::auth::{Auth, PlatformAdmin};
use crate::dto::{
    BoardItem, BoardOf, BoardPayoutsResponse, BoardResponse, BoardRewardsResponse,
    BoardStandingResponse, PutBoardRewardsRequest,
};
use crate::error::{ApiCode, ApiError, ApiResult, ErrorResponse};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::state::AppState;

use super::rooms::page_limit;

/// Which period of a board, and which page.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct BoardQuery {
    /// `day` (the default), `week` (Monday to Sunday) or `month`, in the billing time zone
    /// (`ROOM__BILLING__TIME_ZONE`).
    #[param(pattern = r"^(day|week|month)$")]
    period: Option<String>,
    /// A day of the period, `YYYY-MM-DD` in the billing time zone; today when absent. A
    /// closed period's board stays readable for `ROOM__BOARDS__KEEP_DAYS`, `_WEEKS` and
    /// `_MONTHS` periods.
    #[param(pattern = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")]
    at: Option<String>,
    /// Items per page, 1 to 100 (default 20).
    #[param(minimum = 1, maximum = 100)]
    limit: Option<u32>,
    /// The `next_cursor` of the previous page.
    #[param(
        max_length = 500,
        pattern = r"^([0-9]{1,20}\.[0-9]{1,19}\.-?[0-9]{1,19}\.([0-9a-f]{2}){1,200})?$"
    )]
    cursor: Option<String>,
}

/// Which period of a board.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PeriodQuery {
    /// `day` (the default), `week` (Monday to Sunday) or `month`, in the billing time zone
    /// (`ROOM__BILLING__TIME_ZONE`).
    #[param(pattern = r"^(day|week|month)$")]
    period: Option<String>,
    /// A day of the period, `YYYY-MM-DD` in the billing time zone; today when absent.
    #[param(pattern = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")]
    at: Option<String>,
}

impl From<PeriodQuery> for BoardQuery {
    fn from(query: PeriodQuery) -> Self {
        BoardQuery {
            period: query.period,
            at: query.at,
            limit: None,
            cursor: None,
        }
    }
}

impl BoardQuery {
    fn period(&self) -> ApiResult<BoardPeriod> {
        match self.period.as_deref() {
            None => Ok(BoardPeriod::Day),
            Some(text) => BoardPeriod::parse(text).ok_or_else(|| {
                ApiError::of(
                    ApiCode::InvalidQuery,
                    format!("period {text:?} is none of day, week and month"),
                )
            }),
        }
    }

    fn day(&self) -> ApiResult<Option<DayKey>> {
        self.at
            .as_deref()
            .map(|text| {
                DayKey::parse(text).ok_or_else(|| {
                    ApiError::of(
                        ApiCode::InvalidDay,
                        format!("at {text:?} is not a calendar date written YYYY-MM-DD"),
                    )
                })
            })
            .transpose()
    }

    fn cursor(&self) -> ApiResult<Option<BoardCursor>> {
        match self.cursor.as_deref() {
            None | Some("") => Ok(None),
            Some(text) => BoardCursor::parse(text).map(Some).ok_or_else(|| {
                ApiError::of(
                    ApiCode::InvalidCursor,
                    "the cursor is not one this API gave",
                )
            }),
        }
    }
}

/// The board named `name` (in `room`, when given) of the query's period.
fn board(
    state: &AppState,
    name: &str,
    room: Option<RoomId>,
    query: &BoardQuery,
) -> ApiResult<BoardId> {
    let kind = BoardKind::parse(name)
        .filter(|kind| room.is_none() || *kind != BoardKind::Rooms)
        .ok_or_else(|| {
            let names = if room.is_some() {
                "senders and receivers"
            } else {
                "senders, receivers and rooms"
            };
            ApiError::of(
                ApiCode::BoardNotFound,
                format!("no board {name:?}: the boards are {names}"),
            )
        })?;
    let now = state.service.ports().clock.now();
    Ok(board_at(
        kind,
        room,
        query.period()?,
        query.day()?,
        now,
        state.billing_zone.utc_offset_secs,
    )?)
}

fn board_of(state: &AppState, board: &BoardId) -> BoardOf {
    BoardOf {
        board: board.kind.as_str().to_owned(),
        room_id: board.room.as_ref().map(ToString::to_string),
        period: board.period.as_str().to_owned(),
        period_start: first_day(board).to_string(),
        time_zone: state.billing_zone.name.clone(),
    }
}

/// A page with the display fields of its users (profiles) or rooms (the room directory).
async fn page_body(state: &AppState, page: BoardPage) -> ApiResult<BoardResponse> {
    let next_cursor = page.next.as_ref().map(BoardCursor::encode);
    let of = board_of(state, &page.board);
    let mut items: Vec<BoardItem> = page
        .entries
        .iter()
        .map(|ranked| BoardItem {
            rank: ranked.rank,
            user_id: None,
            room_id: None,
            score: ranked.entry.score.0,
            reached_at_ms: ranked.entry.reached_at.0,
            nickname: None,
            avatar_url: None,
            name: None,
            cover_url: None,
        })
        .collect();
    if page.board.kind == BoardKind::Rooms {
        let rooms: Vec<RoomId> = page
            .entries
            .iter()
            .filter_map(|ranked| RoomId::new(&ranked.entry.subject).ok())
            .collect();
        let summaries: HashMap<RoomId, _> = state
            .service
            .ports()
            .directory
            .get_summaries(&rooms)
            .await?
            .into_iter()
            .map(|summary| (summary.room_id.clone(), summary))
            .collect();
        for (item, ranked) in items.iter_mut().zip(&page.entries) {
            item.room_id = Some(ranked.entry.subject.clone());
            if let Some(summary) = RoomId::new(&ranked.entry.subject)
                .ok()
                .and_then(|room| summaries.get(&room))
            {
                item.name = Some(summary.name.clone());
                item.cover_url = summary.cover_url.clone();
            }
        }
    } else {
        let users: Vec<UserId> = page
            .entries
            .iter()
            .filter_map(|ranked| UserId::new(&ranked.entry.subject).ok())
            .collect();
        let displays = state.service.profiles().displays(&users).await;
        for (item, ranked) in items.iter_mut().zip(&page.entries) {
            item.user_id = Some(ranked.entry.subject.clone());
            if let Some(display) = UserId::new(&ranked.entry.subject)
                .ok()
                .and_then(|user| displays.get(&user))
            {
                item.nickname = display.nickname.clone();
                item.avatar_url = display.avatar_url.clone();
            }
        }
    }
    Ok(BoardResponse {
        of,
        items,
        next_cursor,
    })
}

fn standing_body(
    state: &AppState,
    board: &BoardId,
    user: &UserId,
    standing: Option<BoardStanding>,
) -> BoardStandingResponse {
    BoardStandingResponse {
        of: board_of(state, board),
        user_id: user.to_string(),
        rank: standing.as_ref().map(|standing| standing.rank),
        rank_beyond: standing.as_ref().is_some_and(BoardStanding::beyond),
        score: standing
            .as_ref()
            .map_or(0, |standing| standing.entry.score.0),
        reached_at_ms: standing.map(|standing| standing.entry.reached_at.0),
    }
}

/// A page of `board` after the query's cursor, with display fields: from the node's cache of
/// pages when it answered the same page less than `boards.page_cache_ms` ago.
async fn page_of(state: &AppState, board: BoardId, query: &BoardQuery) -> ApiResult<Response> {
    let limit = page_limit(query.limit)?;
    let cursor = query.cursor()?;
    let key = format!(
        "{}|{}|{}|{}|{limit}|{}",
        board.kind.as_str(),
        board.room_key(),
        board.period.as_str(),
        board.number,
        cursor.as_ref().map(BoardCursor::encode).unwrap_or_default()
    );
    let body = match state.board_pages.get(&key) {
        Some(body) => body,
        None => {
            let page = read_board(&state.service.ports().boards, board, cursor, limit).await?;
            let body = Bytes::from(
                serde_json::to_vec(&page_body(state, page).await?)
                    .map_err(|e| room_app::Error::corrupt(format!("a board page: {e}")))?,
            );
            state.board_pages.put(key, body.clone());
            body
        }
    };
    Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
}

/// `user`'s standing on `board`.
async fn standing_of(
    state: &AppState,
    board: BoardId,
    user: &UserId,
) -> ApiResult<Json<BoardStandingResponse>> {
    let standing = state
        .service
        .ports()
        .boards
        .board_standing(&board, user.as_str())
        .await?;
    Ok(Json(standing_body(state, &board, user, standing)))
}

/// A page of one of the whole app's boards: `senders` (the coin value of the paid gifts each
/// user sent), `receivers` (what each user received) or `rooms` (what was sent in each
/// room), in one day, week or month of the billing time zone. Ranked by score, then by who
/// reached it first; robot gifts never count. A gift shows on the boards shortly after it is
/// applied.
#[utoipa::path(
    get, path = "/v1/boards/{board}", tag = "boards",
    params(
        ("board" = String, Path, pattern = r"^(senders|receivers|rooms)$", description = "`senders`, `receivers` or `rooms`"),
        BoardQuery,
    ),
    responses(
        (status = 200, description = "A page of the board", body = BoardResponse),
        (status = 400, description = "`INVALID_QUERY`, `INVALID_DAY`, `INVALID_LIMIT` or `INVALID_CURSOR`", body = ErrorResponse),
        (status = 404, description = "`BOARD_NOT_FOUND`: no board of that name", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn app_board(
    State(state): State<AppState>,
    Auth(_): Auth,
    ApiPath(name): ApiPath<String>,
    ApiQuery(query): ApiQuery<BoardQuery>,
) -> ApiResult<Response> {
    let board = board(&state, &name, None, &query)?;
    page_of(&state, board, &query).await
}

/// The caller's rank and score on one of the whole app's boards of users (`senders` or
/// `receivers`), also when they are far from the top.
#[utoipa::path(
    get, path = "/v1/boards/{board}/me", tag = "boards",
    params(
        ("board" = String, Path, pattern = r"^(senders|receivers)$", description = "`senders` or `receivers`"),
        PeriodQuery,
    ),
    responses(
        (status = 200, description = "The caller's standing (no rank and score 0 without one)", body = BoardStandingResponse),
        (status = 400, description = "`INVALID_QUERY` or `INVALID_DAY`", body = ErrorResponse),
        (status = 404, description = "`BOARD_NOT_FOUND`: no board of users of that name", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn my_app_standing(
    State(state): State<AppState>,
    Auth(actor): Auth,
    ApiPath(name): ApiPath<String>,
    ApiQuery(query): ApiQuery<PeriodQuery>,
) -> ApiResult<Json<BoardStandingResponse>> {
    let query = BoardQuery::from(query);
    if name == BoardKind::Rooms.as_str() {
        return Err(ApiError::of(
            ApiCode::BoardNotFound,
            "the board of rooms ranks no user: ask senders or receivers",
        ));
    }
    let board = board(&state, &name, None, &query)?;
    standing_of(&state, board, &actor.user_id).await
}

/// A page of one room's board: `senders` (the coin value of the paid gifts each user sent in
/// the room: its contribution board) or `receivers` (what each user received in it: its
/// charm board), in one day, week or month of the billing time zone.
#[utoipa::path(
    get, path = "/v1/rooms/{room_id}/boards/{board}", tag = "boards",
    params(
        ("room_id" = crate::dto::Id, Path, description = "The room"),
        ("board" = String, Path, pattern = r"^(senders|receivers)$", description = "`senders` or `receivers`"),
        BoardQuery,
    ),
    responses(
        (status = 200, description = "A page of the board", body = BoardResponse),
        (status = 400, description = "`INVALID_ID`, `INVALID_QUERY`, `INVALID_DAY`, `INVALID_LIMIT` or `INVALID_CURSOR`", body = ErrorResponse),
        (status = 404, description = "`ROOM_NOT_FOUND` or `BOARD_NOT_FOUND`", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn room_board(
    State(state): State<AppState>,
    Auth(_): Auth,
    ApiPath((room_id, name)): ApiPath<(String, String)>,
    ApiQuery(query): ApiQuery<BoardQuery>,
) -> ApiResult<Response> {
    let room = state.existing_room(&room_id).await?;
    let board = board(&state, &name, Some(room), &query)?;
    page_of(&state, board, &query).await
}

/// The caller's rank and score on one room's board.
#[utoipa::path(
    get, path = "/v1/rooms/{room_id}/boards/{board}/me", tag = "boards",
    params(
        ("room_id" = crate::dto::Id, Path, description = "The room"),
        ("board" = String, Path, pattern = r"^(senders|receivers)$", description = "`senders` or `receivers`"),
        PeriodQuery,
    ),
    responses(
        (status = 200, description = "The caller's standing (no rank and score 0 without one)", body = BoardStandingResponse),
        (status = 400, description = "`INVALID_ID`, `INVALID_QUERY` or `INVALID_DAY`", body = ErrorResponse),
        (status = 404, description = "`ROOM_NOT_FOUND` or `BOARD_NOT_FOUND`", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn my_room_standing(
    State(state): State<AppState>,
    Auth(actor): Auth,
    ApiPath((room_id, name)): ApiPath<(String, String)>,
    ApiQuery(query): ApiQuery<PeriodQuery>,
) -> ApiResult<Json<BoardStandingResponse>> {
    let query = BoardQuery::from(query);
    let room = state.existing_room(&room_id).await?;
    let board = board(&state, &name, Some(room), &query)?;
    standing_of(&state, board, &actor.user_id).await
}

/// The leaderboards' reward tables: what each board of the whole app pays its top ranks when
/// a period closes.
#[utoipa::path(
    get, path = "/v1/admin/board-rewards", tag = "admin",
    responses(
        (status = 200, description = "The current tables", body = BoardRewardsResponse),
        (status = 403, description = "`FORBIDDEN`: not a platform admin", body = ErrorResponse),
        (status = 404, description = "`NOT_FOUND`: no tables are stored (the service stores version 1 at start-up)", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn get_board_rewards(
    State(state): State<AppState>,
    PlatformAdmin(_): PlatformAdmin,
) -> ApiResult<Json<BoardRewardsResponse>> {
    let tables = state
        .service
        .ports()
        .board_rewards
        .current_board_rewards()
        .await?
        .ok_or_else(|| ApiError::of(ApiCode::NotFound, "no board rewards are stored"))?;
    Ok(Json(tables.into()))
}

/// Stores the next version of the reward tables, if the current one is still
/// `expected_version`. A period pays by the tables current when its rewards are recorded
/// (`boards.reward_delay_secs` after it closes); periods recorded before keep what they
/// recorded.
#[utoipa::path(
    put, path = "/v1/admin/board-rewards", tag = "admin",
    request_body = PutBoardRewardsRequest,
    responses(
        (status = 200, description = "The new version", body = BoardRewardsResponse),
        (status = 400, description = "`MALFORMED_JSON` or `INVALID_BODY`", body = ErrorResponse),
        (status = 403, description = "`FORBIDDEN`: not a platform admin", body = ErrorResponse),
        (status = 409, description = "`BOARD_REWARDS_STALE`: the current version is not `expected_version`", body = ErrorResponse),
        (status = 422, description = "`INVALID_BOARD_REWARDS`: a board and period given twice, a table of no rank or more than 100, a reward out of 0 to 10^9, more than 9 tables; nothing stored", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn put_board_rewards(
    State(state): State<AppState>,
    PlatformAdmin(_): PlatformAdmin,
    // Checked like on every mutating route; the route is idempotent by `expected_version`.
    _key: crate::extract::IdempotencyKey,
    ApiJson(request): ApiJson<PutBoardRewardsRequest>,
) -> ApiResult<Json<BoardRewardsResponse>> {
    let tables = request.tables.into_iter().map(Into::into).collect();
    let stored = change_board_rewards(
        &state.service.ports().board_rewards,
        request.expected_version,
        tables,
    )
    .await
    .map_err(|error| match error {
        room_app::Error::Invalid(message) => ApiError::of(ApiCode::InvalidBoardRewards, message),
        room_app::Error::Conflict(message) => ApiError::of(ApiCode::BoardRewardsStale, message),
        other => other.into(),
    })?;
    Ok(Json(stored.into()))
}

/// What one board of the whole app paid, or owes, for a closed period.
#[utoipa::path(
    get, path = "/v1/admin/boards/{board}/payouts", tag = "admin",
    params(
        ("board" = String, Path, pattern = r"^(senders|receivers|rooms)$", description = "`senders`, `receivers` or `rooms`"),
        PeriodQuery,
    ),
    responses(
        (status = 200, description = "The period's payouts (`recorded` false until it closed and the delay passed)", body = BoardPayoutsResponse),
        (status = 400, description = "`INVALID_QUERY` or `INVALID_DAY`", body = ErrorResponse),
        (status = 403, description = "`FORBIDDEN`: not a platform admin", body = ErrorResponse),
        (status = 404, description = "`BOARD_NOT_FOUND`", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn board_payouts(
    State(state): State<AppState>,
    PlatformAdmin(_): PlatformAdmin,
    ApiPath(name): ApiPath<String>,
    ApiQuery(query): ApiQuery<PeriodQuery>,
) -> ApiResult<Json<BoardPayoutsResponse>> {
    let query = BoardQuery::from(query);
    let board = board(&state, &name, None, &query)?;
    let payouts = state
        .service
        .ports()
        .board_rewards
        .board_payouts(&board)
        .await?;
    Ok(Json(BoardPayoutsResponse {
        of: board_of(&state, &board),
        recorded: payouts.is_some(),
        payouts: payouts
            .unwrap_or_default()
            .into_iter()
            .map(Into::into)
            .collect(),
    }))
}
