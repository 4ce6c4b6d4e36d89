//! [`ApiError`]: every error the API answers, as `{"error":{"code","message","retryable"}}`
//! with a fitting status. Codes are [`ApiCode`]s, stable, each with its status and
//! retryability in one table; internal causes are logged, never sent.

mod code;

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use room_domain::{Rejection, RejectionKind};
use serde::Serialize;
use utoipa::ToSchema;

pub use code::ApiCode;

/// An error answer.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// The HTTP status: the code's, unless the error stands for a status made elsewhere.
    pub status: StatusCode,
    /// The stable code.
    pub code: ApiCode,
    /// A human-readable explanation.
    pub message: String,
    /// Whether the same request may succeed later.
    pub retryable: bool,
}

/// The body of every error answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ErrorResponse {
    /// What went wrong.
    pub error: ErrorBody,
}

/// What went wrong.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ErrorBody {
    /// Stable, machine-readable code, e.g. `ROOM_CLOSED`, `INVALID_BODY`, `INSUFFICIENT_COINS`.
    pub code: ApiCode,
    /// Explanation for people; may change.
    pub message: String,
    /// Whether the same request may succeed later (retry with the same ids).
    pub retryable: bool,
}

impl ApiError {
    /// An error of `code`, with the code's status and retryability.
    pub fn of(code: ApiCode, message: impl Into<String>) -> Self {
        ApiError {
            status: code.status(),
            code,
            message: message.into(),
            retryable: code.is_retryable(),
        }
    }

    /// 401 `UNAUTHENTICATED`.
    pub fn unauthenticated(message: impl Into<String>) -> Self {
        Self::of(ApiCode::Unauthenticated, message)
    }

    /// 403 `FORBIDDEN`.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::of(ApiCode::Forbidden, message)
    }

    /// The same error with another status.
    pub fn with_status(mut self, status: StatusCode) -> Self {
        self.status = status;
        self
    }

    /// The same error with another message (the code and status stay).
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = message.into();
        self
    }

    /// Marks the error retryable.
    pub fn retryable(mut self) -> Self {
        self.retryable = true;
        self
    }

    /// The error's body.
    pub fn body(&self) -> ErrorResponse {
        ErrorResponse {
            error: ErrorBody {
                code: self.code,
                message: self.message.clone(),
                retryable: self.retryable,
            },
        }
    }

    /// The error a room's refusal maps to: the code of the same string, with its status.
    pub fn from_rejection(rejection: &Rejection) -> Self {
        match ApiCode::parse(rejection.code()) {
            Some(code) => Self::of(code, rejection.to_string()),
            None => {
                // Every refusal has its code in the table (a test checks the domain's whole
                // list); a refusal added without one is still answered by its kind.
                tracing::error!(code = rejection.code(), "a refusal without an API code");
                let (code, status) = match rejection.kind() {
                    RejectionKind::BadInput => (ApiCode::InvalidRequest, StatusCode::BAD_REQUEST),
                    RejectionKind::Forbidden => (ApiCode::Forbidden, StatusCode::FORBIDDEN),
                    RejectionKind::NotFound => (ApiCode::NotFound, StatusCode::NOT_FOUND),
                    RejectionKind::Conflict => (ApiCode::Conflict, StatusCode::CONFLICT),
                    RejectionKind::Rule => (ApiCode::Conflict, StatusCode::UNPROCESSABLE_ENTITY),
                };
                Self::of(code, rejection.to_string()).with_status(status)
            }
        }
    }

    /// A generic answer for a status produced outside the handlers (a layer, a fallback); it
    /// keeps that status.
    pub fn from_status(status: StatusCode) -> Self {
        let (code, message) = match status {
            StatusCode::NOT_FOUND => (ApiCode::NotFound, "no such route"),
            StatusCode::METHOD_NOT_ALLOWED => (
                ApiCode::MethodNotAllowed,
                "the route does not take this method",
            ),
            StatusCode::PAYLOAD_TOO_LARGE => (
                ApiCode::PayloadTooLarge,
                "the request body is larger than 64 KiB",
            ),
            StatusCode::UNSUPPORTED_MEDIA_TYPE => (
                ApiCode::UnsupportedMediaType,
                "send the body as application/json",
            ),
            StatusCode::REQUEST_TIMEOUT | StatusCode::GATEWAY_TIMEOUT => (
                ApiCode::Timeout,
                "the request took too long; retry with the same ids",
            ),
            StatusCode::SERVICE_UNAVAILABLE => (ApiCode::Unavailable, "try again shortly"),
            status if status.is_server_error() => (ApiCode::Internal, "internal error"),
            _ => (ApiCode::BadRequest, "the request cannot be served"),
        };
        Self::of(code, message).with_status(status)
    }
}

impl From<Rejection> for ApiError {
    fn from(rejection: Rejection) -> Self {
        Self::from_rejection(&rejection)
    }
}

impl From<room_app::Error> for ApiError {
    fn from(error: room_app::Error) -> Self {
        use room_app::Error as E;
        match error {
            E::Rejected(rejection) => Self::from_rejection(&rejection),
            E::NotFound(what) => Self::of(ApiCode::NotFound, format!("not found: {what}")),
            E::AlreadyExists(what) => {
                Self::of(ApiCode::AlreadyExists, format!("already exists: {what}"))
            }
            E::InsufficientFunds { balance } => Self::of(
                ApiCode::InsufficientCoins,
                format!("not enough coins (balance {balance})"),
            ),
            E::Invalid(message) => Self::of(ApiCode::InvalidRequest, message),
            E::InvalidProfile(message) => Self::of(ApiCode::InvalidProfile, message),
            E::InvalidVipGrant(message) => Self::of(ApiCode::InvalidVipGrant, message),
            E::CoverInUse(message) => Self::of(ApiCode::CoverInUse, message),
            E::InvalidVipLevels(message) => Self::of(ApiCode::InvalidVipLevels, message),
            E::GiftNotFound(gift_id) => Self::of(
                ApiCode::GiftNotFound,
                format!("no such gift to send: {gift_id}"),
            ),
            E::OrderIdReused(order_id) => Self::of(
                ApiCode::OrderIdReused,
                format!("order id {order_id} was already used for another gift"),
            ),
            E::TooManyAttempts { retry_at } => Self::of(
                ApiCode::TooManyAttempts,
                format!(
                    "too many wrong passwords for this room; try again after {} (ms since the epoch)",
                    retry_at.0
                ),
            ),
            E::OrderInProgress(order_id) => Self::of(
                ApiCode::OrderInProgress,
                format!(
                    "order {order_id} is being served already; retry shortly with the same order_id"
                ),
            ),
            E::Overloaded(_) => Self::of(
                ApiCode::RoomOverloaded,
                "the room is busy; retry shortly with the same ids",
            ),
            E::NotOwner(_) => Self::of(
                ApiCode::NotOwner,
                "the room is moving; retry shortly with the same ids",
            ),
            E::Cancelled => Self::of(
                ApiCode::ShuttingDown,
                "the service is shutting down; retry with the same ids",
            ),
            E::Unavailable(cause) => {
                tracing::warn!(cause = %cause, "backend unavailable");
                Self::of(
                    ApiCode::Unavailable,
                    "a backend is unavailable; retry with the same ids",
                )
            }
            E::Conflict(cause) => {
                // A conditional write lost a race (or an operation id was reused): the caller
                // may look again and retry.
                tracing::info!(cause = %cause, "conflict");
                Self::of(
                    ApiCode::Conflict,
                    "the request conflicts with the current state",
                )
            }
            other => {
                tracing::error!(error = %other, "internal error");
                Self::of(ApiCode::Internal, "internal error")
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, Json(self.body())).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if self.status == StatusCode::TOO_MANY_REQUESTS || self.retryable {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        response
    }
}

/// The result type of handlers.
pub type ApiResult<T> = Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use room_domain::{GiftId, OrderId, SeatIndex, UserId};

    use super::*;

    /// The status a refusal of `kind` is answered with.
    fn kind_status(kind: RejectionKind) -> StatusCode {
        match kind {
            RejectionKind::BadInput => StatusCode::BAD_REQUEST,
            RejectionKind::Forbidden => StatusCode::FORBIDDEN,
            RejectionKind::NotFound => StatusCode::NOT_FOUND,
            RejectionKind::Conflict => StatusCode::CONFLICT,
            RejectionKind::Rule => StatusCode::UNPROCESSABLE_ENTITY,
        }
    }

    #[test]
    fn rejections_map_by_kind() {
        let cases = [
            (Rejection::RoomNotFound, 404),
            (Rejection::Forbidden, 403),
            (Rejection::SeatOccupied { seat: SeatIndex(1) }, 409),
            (Rejection::InvalidGiftCount { count: 0, max: 9 }, 400),
            (
                Rejection::NotAMember {
                    user: UserId::new("u").unwrap(),
                },
                422,
            ),
        ];
        for (rejection, status) in cases {
            let error = ApiError::from(rejection.clone());
            assert_eq!(error.status.as_u16(), status, "{rejection:?}");
            assert_eq!(error.code.as_str(), rejection.code());
            assert!(!error.retryable);
        }
    }

    /// Every code the domain can refuse with, read from its serialized form's tags: a new
    /// refusal without a code in the table fails here.
    fn domain_codes() -> Vec<String> {
        let error = serde_json::from_value::<Rejection>(serde_json::json!({"code": "\u{0}"}))
            .expect_err("no refusal has an empty code")
            .to_string();
        let (_, expected) = error
            .split_once("expected one of")
            .unwrap_or_else(|| panic!("serde lists the refusals: {error}"));
        expected
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn every_refusal_of_the_domain_has_its_code_with_the_status_of_its_kind() {
        let codes = domain_codes();
        assert!(codes.len() >= 30, "{codes:?}");
        for code in &codes {
            let api = ApiCode::parse(code).unwrap_or_else(|| panic!("{code} is not an ApiCode"));
            // The refusal itself, to read its kind: the tag with the fields it needs.
            let status = match serde_json::from_value::<Rejection>(serde_json::json!({
                "code": code,
                "max": 1, "user": "u", "until": 1, "target": "u", "vip_level": 1,
                "seat": 1, "seat_count": 1, "launch_at": 1, "deadline": 1,
                "field": "name", "character": 1, "count": 1,
            })) {
                Ok(rejection) => {
                    assert_eq!(rejection.code(), code.as_str());
                    kind_status(rejection.kind())
                }
                Err(error) => panic!("{code}: {error}"),
            };
            assert_eq!(api.status(), status, "{code}");
            assert!(!api.is_retryable(), "{code}");
        }
    }

    #[test]
    fn retryable_errors_say_so_and_hide_their_cause() {
        let error = ApiError::from(room_app::Error::Unavailable("db at 10.0.0.1 down".into()));
        assert_eq!(error.status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(error.retryable);
        assert!(!error.message.contains("10.0.0.1"));
        let error = ApiError::from(room_app::Error::Overloaded("r".into()));
        assert_eq!(error.status, StatusCode::TOO_MANY_REQUESTS);
        assert!(error.retryable);
        let error = ApiError::from(room_app::Error::Corrupt("bad row".into()));
        assert_eq!(error.status, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(!error.message.contains("bad row"));
    }

    #[test]
    fn only_gift_errors_get_gift_codes() {
        let code = |error: room_app::Error| {
            let error = ApiError::from(error);
            assert!(!error.retryable);
            (error.status.as_u16(), error.code)
        };
        let gift = GiftId::new("tulip").unwrap();
        let order = OrderId::new("o-1").unwrap();
        assert_eq!(
            code(room_app::Error::GiftNotFound(gift)),
            (404, ApiCode::GiftNotFound)
        );
        assert_eq!(
            code(room_app::Error::OrderIdReused(order)),
            (409, ApiCode::OrderIdReused)
        );
        // Other absences and bad input keep their generic codes.
        assert_eq!(
            code(room_app::Error::NotFound("order o-1".into())),
            (404, ApiCode::NotFound)
        );
        assert_eq!(
            code(room_app::Error::Invalid("negative credit -1".into())),
            (400, ApiCode::InvalidRequest)
        );
    }
}
