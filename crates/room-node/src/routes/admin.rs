//! Platform admin routes: wallet credits and the gift catalog.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use room_app::ports::CatalogGift;
use room_domain::{Coins, CommandId, GiftId, UserId};

use crate::auth::PlatformAdmin;
use crate::dto::{CreditRequest, CreditResponse, GiftCatalogEntry, PutGiftRequest};
use crate::error::{ApiError, ApiResult, ErrorResponse};
use crate::extract::{ApiJson, ApiPath, parse_id};
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
