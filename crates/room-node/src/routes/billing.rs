//! Billing routes: the billing policy (platform admins), and income (a user's own, and any
//! user's for platform admins).

// utoipa's `params(IncomePageQuery)` expands to fully qualified paths.
#![allow(unused_qualifications)]

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use room_app::income::{change_billing, income_page};
use room_domain::{GiftId, MAX_BILLING_OVERRIDES, UserId};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::auth::{Auth, PlatformAdmin};
use crate::dto::{BillingPolicyResponse, IncomeResponse, PutBillingRequest};
use crate::error::{ApiCode, ApiError, ApiResult, ErrorResponse};
use crate::extract::{ApiJson, ApiPath, ApiQuery, parse_id};
use crate::state::AppState;

/// The current billing policy: how a paid gift's value (unit price × count, per recipient)
/// is split between the recipient, the room's owner, the recipient's agency and the platform.
#[utoipa::path(
    get, path = "/v1/admin/billing", tag = "admin",
    responses(
        (status = 200, description = "The current policy", body = BillingPolicyResponse),
        (status = 403, description = "`FORBIDDEN`: not a platform admin", body = ErrorResponse),
        (status = 404, description = "`NOT_FOUND`: no policy is stored (the service stores version 1 at start-up)", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn get_billing(
    State(state): State<AppState>,
    PlatformAdmin(_): PlatformAdmin,
) -> ApiResult<Json<BillingPolicyResponse>> {
    let policy = state
        .service
        .ports()
        .billing
        .current_policy()
        .await?
        .ok_or_else(|| ApiError::of(ApiCode::NotFound, "no billing policy is stored"))?;
    Ok(Json(policy.into()))
}

/// Stores a new version of the billing policy, if the current one is still
/// `expected_version`. Orders placed before keep the version they were placed under; orders
/// placed on other nodes within 5 seconds of the change may still take the version before it.
#[utoipa::path(
    put, path = "/v1/admin/billing", tag = "admin",
    request_body = PutBillingRequest,
    responses(
        (status = 200, description = "The new version", body = BillingPolicyResponse),
        (status = 400, description = "`MALFORMED_JSON`, `INVALID_BODY`, or `INVALID_BILLING_POLICY` (a share (or `turnover_bp`) outside 0..=10000 basis points, shares adding up to more than 10000, an invalid gift id, more than 1,000 overrides)", body = ErrorResponse),
        (status = 403, description = "`FORBIDDEN`: not a platform admin", body = ErrorResponse),
        (status = 409, description = "`BILLING_VERSION_STALE`: the current version is not `expected_version`", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn put_billing(
    State(state): State<AppState>,
    PlatformAdmin(_): PlatformAdmin,
    // Checked like on every mutating route; the route is idempotent by `expected_version`.
    _key: crate::extract::IdempotencyKey,
    ApiJson(request): ApiJson<PutBillingRequest>,
) -> ApiResult<Json<BillingPolicyResponse>> {
    let invalid = |message: String| ApiError::of(ApiCode::InvalidBillingPolicy, message);
    if request.overrides.len() > MAX_BILLING_OVERRIDES {
        return Err(invalid(format!(
            "{} overrides: at most {MAX_BILLING_OVERRIDES}",
            request.overrides.len()
        )));
    }
    let mut overrides = BTreeMap::new();
    for (gift_id, shares) in request.overrides {
        let gift = GiftId::new(&gift_id)
            .map_err(|e| invalid(format!("override gift id {gift_id:?}: {e}")))?;
        overrides.insert(gift, shares.into());
    }
    let shares = room_domain::BillingShares {
        recipient_bp: request.recipient_bp,
        owner_bp: request.owner_bp,
        agency_bp: request.agency_bp,
    };
    let ports = state.service.ports();
    // Absent, the turnover share stays what the version replaced had.
    let turnover_bp = match request.turnover_bp {
        Some(bp) => bp,
        None => ports
            .billing
            .current_policy()
            .await?
            .map(|current| current.turnover_bp)
            .unwrap_or_default(),
    };
    let policy = change_billing(
        &ports.billing,
        request.expected_version,
        shares,
        overrides,
        turnover_bp,
    )
    .await
    .map_err(|error| match error {
        room_app::Error::Invalid(message) => invalid(message),
        room_app::Error::Conflict(message) => ApiError::of(ApiCode::BillingVersionStale, message),
        other => other.into(),
    })?;
    // Orders placed on this node from now on take the new version.
    state.service.gifts().forget_billing();
    Ok(Json(policy.into()))
}

/// `limit` and `cursor` of an income ledger page.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct IncomePageQuery {
    /// Entries per page, 1 to 100 (default 20).
    #[param(minimum = 1, maximum = 100)]
    limit: Option<u32>,
    /// The `next_cursor` of the previous page.
    #[param(pattern = r"^[1-9][0-9]{0,17}$")]
    cursor: Option<String>,
}

/// The income of `user`: the balance and a page of the ledger.
async fn income(
    state: &AppState,
    user: &UserId,
    query: IncomePageQuery,
) -> ApiResult<IncomeResponse> {
    let limit = super::rooms::page_limit(query.limit)?;
    let cursor =
        match query.cursor.as_deref() {
            None => None,
            Some(cursor) => Some(cursor.parse::<i64>().ok().filter(|id| *id > 0).ok_or_else(
                || {
                    ApiError::of(
                        ApiCode::InvalidCursor,
                        "cursor is not a next_cursor of this list",
                    )
                },
            )?),
        };
    let page = income_page(&state.service.ports().income, user, cursor, limit).await?;
    Ok(IncomeResponse {
        user_id: user.to_string(),
        balance: page.balance.0,
        entries: page.entries.into_iter().map(Into::into).collect(),
        next_cursor: page.next_cursor.map(|id| id.to_string()),
    })
}

/// The caller's income: what gifts paid them (as recipient, room owner or agency), newest
/// first. Income is credited shortly after each gift is applied, exactly once; it is not
/// coins and cannot be spent on gifts.
#[utoipa::path(
    get, path = "/v1/me/income", tag = "me",
    params(IncomePageQuery),
    responses(
        (status = 200, description = "The balance and a page of the ledger", body = IncomeResponse),
        (status = 400, description = "`INVALID_QUERY`, `INVALID_LIMIT` or `INVALID_CURSOR`", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn my_income(
    State(state): State<AppState>,
    Auth(actor): Auth,
    ApiQuery(query): ApiQuery<IncomePageQuery>,
) -> ApiResult<Json<IncomeResponse>> {
    income(&state, &actor.user_id, query).await.map(Json)
}

/// A user's income, as `GET /v1/me/income` answers the user.
#[utoipa::path(
    get, path = "/v1/admin/users/{user_id}/income", tag = "admin",
    params(("user_id" = crate::dto::Id, Path, description = "Whose income"), IncomePageQuery),
    responses(
        (status = 200, description = "The balance and a page of the ledger", body = IncomeResponse),
        (status = 400, description = "`INVALID_ID`, `INVALID_QUERY`, `INVALID_LIMIT` or `INVALID_CURSOR`", body = ErrorResponse),
        (status = 403, description = "`FORBIDDEN`: not a platform admin", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn user_income(
    State(state): State<AppState>,
    PlatformAdmin(_): PlatformAdmin,
    ApiPath(user_id): ApiPath<String>,
    ApiQuery(query): ApiQuery<IncomePageQuery>,
) -> ApiResult<Json<IncomeResponse>> {
    let user: UserId = parse_id("user_id", &user_id)?;
    income(&state, &user, query).await.map(Json)
}
