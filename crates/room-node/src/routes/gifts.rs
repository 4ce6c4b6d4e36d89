//! Gifts, the catalog, and the caller's wallet and room.
//!
//! # How a gift is answered
//!
//! An order is the sender's: its `order_id` is unique per sender, and another user's order with
//! the same id is another order. The answer depends only on how the order ended, so every
//! repeat of one `order_id` by one sender gets the same status code and body (a repeat of a
//! finished order is answered from the stored order and moves nothing):
//!
//! - `COMPLETED`: 200 with `{order_id, status, coin_balance_after, lucky?}`.
//! - `FAILED` (nothing was debited): an error answer, `{"error":{...},"order":{...}}` —
//!   422 `INSUFFICIENT_COINS` when the balance was too low, 409 `ORDER_FAILED` when recovery
//!   voided an order whose debit never happened.
//! - `COMPENSATED` (debited, then refused by the room, then refunded): the room's refusal as
//!   the error (e.g. 422 `NOT_A_MEMBER` for a recipient who left), with the order; its
//!   `coin_balance_after` includes the refund.
//! - A request refused before an order exists (unknown gift, bad count, closed room, the sender
//!   among the recipients: 422 `SELF_GIFT`) is a plain error and leaves no order behind.
//! - An outcome not known yet (the room is busy or moving): 429/503 with `retryable: true`;
//!   retry with the same `order_id`. So is a repeat of an unfinished order while as many
//!   requests for it as may wait are waiting already: 429 `ORDER_IN_PROGRESS`.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use room_app::{GiftReceipt, SendGift};
use room_domain::{FailReason, OrderId, OrderStatus, UserId};

use crate::auth::Auth;
use crate::dto::{
    CurrentRoomResponse, GiftCatalogResponse, GiftErrorResponse, GiftResponse,
    ImCredentialsResponse, RecipientsField, SendGiftRequest, WalletResponse,
};
use crate::error::{ApiCode, ApiError, ApiResult, ErrorResponse};
use crate::extract::{ApiJson, ApiPath, parse_id};
use crate::state::AppState;

/// Sends a gift from the caller to other members of the room. Idempotent by the caller's
/// `order_id`.
#[utoipa::path(
    post, path = "/v1/rooms/{room_id}/gifts", tag = "gifts",
    params(("room_id" = crate::dto::Id, Path, description = "The room id")),
    request_body = SendGiftRequest,
    responses(
        (status = 200, description = "Sent (`COMPLETED`)", body = GiftResponse),
        (status = 400, description = "Bad input, no order stored: `MALFORMED_JSON`, `INVALID_BODY`, `INVALID_ID`, `INVALID_REQUEST` (an order id starting with `sys-`), `INVALID_GIFT_COUNT`, `INVALID_RECIPIENT_COUNT`, `DUPLICATE_RECIPIENT`, `INVALID_GIFT`, `AMOUNT_OVERFLOW`. With `order` when the room refused the order after the debit (`COMPENSATED`)", body = GiftErrorResponse),
        (status = 403, description = "The room refused the sender or a recipient (`BANNED`, `FORBIDDEN`); with `order` when it refused after the debit (`COMPENSATED`)", body = GiftErrorResponse),
        (status = 404, description = "`ROOM_NOT_FOUND` or `GIFT_NOT_FOUND`; no order stored", body = GiftErrorResponse),
        (status = 409, description = "`ORDER_ID_REUSED` (the caller used the order id for another gift; no `order`), or `ORDER_FAILED` with `order` (`FAILED`: recovery found it never debited; send again with a new order id)", body = GiftErrorResponse),
        (status = 422, description = "With `order`: `FAILED` (`INSUFFICIENT_COINS`, nothing debited) or `COMPENSATED` (the room refused it after the debit, e.g. `NOT_A_MEMBER` for a recipient who left; refunded). Without `order`: refused before any coin moved (`SELF_GIFT`, `ROOM_CLOSED`, `NOT_A_MEMBER`, ...)", body = GiftErrorResponse),
        (status = 429, description = "`ROOM_OVERLOADED`, `ORDER_IN_PROGRESS` (the same order is being served already), `RATE_LIMITED`; the outcome is not known yet: retry with the same `order_id` after `Retry-After` seconds", body = ErrorResponse,
            headers(("Retry-After" = u32, description = "Seconds to wait before retrying"))),
        (status = 503, description = "The outcome is not known yet, `retryable: true`: `GIFT_PENDING` with `order` (debited or not, not settled), or `TIMEOUT`, `UNAVAILABLE`, `NOT_OWNER`, `SHUTTING_DOWN` without; retry with the same `order_id`", body = GiftErrorResponse,
            headers(("Retry-After" = u32, description = "Seconds to wait before retrying"))),
    ),
    security(("bearer" = []))
)]
pub async fn send_gift(
    State(state): State<AppState>,
    Auth(actor): Auth,
    ApiPath(room_id): ApiPath<String>,
    // Checked like on every mutating route; the route is idempotent by its own ids.
    _key: crate::extract::IdempotencyKey,
    ApiJson(request): ApiJson<SendGiftRequest>,
) -> ApiResult<Response> {
    // The ranges (count, recipients) are the domain's to check, in the saga's pre-check,
    // after a repeat of an accepted order was recognised; here only the type must fit.
    let rules = state.service.runtime().rules();
    let count = u32::try_from(request.count).map_err(|_| {
        ApiError::of(
            ApiCode::InvalidGiftCount,
            format!(
                "gift count {} is outside 1..={}",
                request.count, rules.max_gift_count
            ),
        )
    })?;
    let order_id: OrderId = parse_id("order_id", &request.order_id)?;
    let gift_id = parse_id("gift_id", &request.gift_id)?;
    let (recipients, scope) = match &request.recipients {
        RecipientsField::Listed(users) => (
            users
                .iter()
                .map(|user| parse_id::<UserId>("recipients", user))
                .collect::<ApiResult<Vec<_>>>()?,
            None,
        ),
        RecipientsField::Scope(field) => (Vec::new(), Some(field.scope)),
    };
    let room_id = state.existing_room(&room_id).await?;
    let request = SendGift {
        room_id,
        sender: actor.user_id,
        order_id,
        gift_id,
        count,
        recipients,
        scope,
    };
    // The saga runs in its own task: a client that hangs up, or the request timeout, must not
    // cut it between two steps (recovery would settle the order, but only minutes later).
    let service = state.service.clone();
    let result = tokio::spawn(async move { service.send_gift(request).await })
        .await
        .map_err(|error| {
            tracing::error!(error = %error, "the gift task failed");
            ApiError::of(ApiCode::Internal, "internal error")
        })?;
    let receipt = result?;
    Ok(gift_answer(&receipt))
}

fn gift_answer(receipt: &GiftReceipt) -> Response {
    let order = GiftResponse::from(receipt);
    let error = match (receipt.status, &receipt.rejection) {
        (OrderStatus::Completed | OrderStatus::Applied, _) => {
            return (StatusCode::OK, Json(order)).into_response();
        }
        (OrderStatus::Compensated | OrderStatus::Failed, Some(rejection)) => {
            ApiError::from_rejection(rejection)
        }
        (OrderStatus::Failed, None) => failure_reason(receipt),
        // The saga returns an unfinished order only with an error; answer like that error
        // would be answered, so the client retries.
        (OrderStatus::Pending | OrderStatus::Debited | OrderStatus::Compensated, _) => {
            ApiError::of(
                ApiCode::GiftPending,
                "the gift is not settled yet; retry with the same order_id",
            )
        }
    };
    let body = GiftErrorResponse {
        error: error.body().error,
        order: Some(order),
    };
    (error.status, Json(body)).into_response()
}

/// Why a FAILED order failed.
fn failure_reason(receipt: &GiftReceipt) -> ApiError {
    match receipt.fail_reason.clone() {
        Some(FailReason::InsufficientFunds { balance }) => ApiError::of(
            ApiCode::InsufficientCoins,
            format!("not enough coins (balance {balance})"),
        ),
        Some(FailReason::Rejected { rejection }) => ApiError::from_rejection(&rejection),
        Some(FailReason::NotDebited) | None => ApiError::of(
            ApiCode::OrderFailed,
            "the order was never debited and is void; send the gift again with a new order_id",
        ),
    }
}

/// The gift catalog.
#[utoipa::path(
    get, path = "/v1/gifts", tag = "gifts",
    responses((status = 200, description = "Every gift", body = GiftCatalogResponse)),
    security(("bearer" = []))
)]
pub async fn list_gifts(
    State(state): State<AppState>,
    Auth(_): Auth,
) -> ApiResult<Json<GiftCatalogResponse>> {
    let gifts = state.service.list_gifts().await?;
    Ok(Json(GiftCatalogResponse {
        gifts: gifts.into_iter().map(Into::into).collect(),
    }))
}

/// The caller's coin balance.
#[utoipa::path(
    get, path = "/v1/me/wallet", tag = "me",
    responses((status = 200, description = "The balance", body = WalletResponse)),
    security(("bearer" = []))
)]
pub async fn my_wallet(
    State(state): State<AppState>,
    Auth(actor): Auth,
) -> ApiResult<Json<WalletResponse>> {
    let balance = state.service.balance(&actor.user_id).await?;
    Ok(Json(WalletResponse {
        user_id: actor.user_id.to_string(),
        balance: balance.0,
    }))
}

/// The room the caller is in.
#[utoipa::path(
    get, path = "/v1/me/current-room", tag = "me",
    responses((status = 200, description = "The room, if any", body = CurrentRoomResponse)),
    security(("bearer" = []))
)]
pub async fn my_current_room(
    State(state): State<AppState>,
    Auth(actor): Auth,
) -> ApiResult<Json<CurrentRoomResponse>> {
    let room = state.service.current_room(&actor.user_id).await?;
    Ok(Json(CurrentRoomResponse {
        room_id: room.map(|r| r.to_string()),
    }))
}

/// The caller's Tencent IM credentials: the app id, their IM user id and a UserSig, with which
/// the client logs in to IM (the room groups' messages) and TRTC (the audio). 404
/// `IM_DISABLED` when the service runs without IM.
#[utoipa::path(
    get, path = "/v1/me/im-credentials", tag = "me",
    responses(
        (status = 200, description = "The credentials", body = ImCredentialsResponse),
        (status = 404, description = "IM is off (`IM_DISABLED`)", body = ErrorResponse),
    ),
    security(("bearer" = []))
)]
pub async fn my_im_credentials(
    State(state): State<AppState>,
    Auth(actor): Auth,
) -> ApiResult<Json<ImCredentialsResponse>> {
    let Some(im) = &state.im else {
        return Err(ApiError::of(
            ApiCode::ImDisabled,
            "this service runs without Tencent IM",
        ));
    };
    let (user_sig, expires_at) = im.sign_user(&actor.user_id);
    Ok(Json(ImCredentialsResponse {
        sdk_app_id: im.sdk_app_id(),
        user_id: actor.user_id.to_string(),
        user_sig,
        expires_at: expires_at.0,
    }))
}
