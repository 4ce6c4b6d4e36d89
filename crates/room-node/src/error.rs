//! [`ApiError`]: every error the API answers, as `{"error":{"code","message","retryable"}}`
//! with a fitting status. Codes are stable; internal causes are logged, never sent.

use std::borrow::Cow;

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use room_domain::{Rejection, RejectionKind};
use serde::Serialize;
use utoipa::ToSchema;

/// An error answer.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// The stable code (`"ROOM_CLOSED"`).
    pub code: Cow<'static, str>,
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
    #[schema(example = "ROOM_CLOSED")]
    pub code: String,
    /// Explanation for people; may change.
    pub message: String,
    /// Whether the same request may succeed later (retry with the same ids).
    pub retryable: bool,
}

impl ApiError {
    /// An error with the given status, code and message, not retryable.
    pub fn new(
        status: StatusCode,
        code: impl Into<Cow<'static, str>>,
        message: impl Into<String>,
    ) -> Self {
        ApiError {
            status,
            code: code.into(),
            message: message.into(),
            retryable: false,
        }
    }

    /// 400 with `code`.
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    /// 401 `UNAUTHENTICATED`.
    pub fn unauthenticated(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "UNAUTHENTICATED", message)
    }

    /// 403 `FORBIDDEN`.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "FORBIDDEN", message)
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
                code: self.code.to_string(),
                message: self.message.clone(),
                retryable: self.retryable,
            },
        }
    }

    /// The error a room's refusal maps to.
    pub fn from_rejection(rejection: &Rejection) -> Self {
        let status = match rejection.kind() {
            RejectionKind::BadInput => StatusCode::BAD_REQUEST,
            RejectionKind::Forbidden => StatusCode::FORBIDDEN,
            RejectionKind::NotFound => StatusCode::NOT_FOUND,
            RejectionKind::Conflict => StatusCode::CONFLICT,
            RejectionKind::Rule => StatusCode::UNPROCESSABLE_ENTITY,
        };
        Self::new(status, rejection.code(), rejection.to_string())
    }

    /// A generic answer for a status produced outside the handlers (a layer, a fallback).
    pub fn from_status(status: StatusCode) -> Self {
        let (code, message, retryable) = match status {
            StatusCode::NOT_FOUND => ("NOT_FOUND", "no such route", false),
            StatusCode::METHOD_NOT_ALLOWED => (
                "METHOD_NOT_ALLOWED",
                "the route does not take this method",
                false,
            ),
            StatusCode::PAYLOAD_TOO_LARGE => (
                "PAYLOAD_TOO_LARGE",
                "the request body is larger than 64 KiB",
                false,
            ),
            StatusCode::UNSUPPORTED_MEDIA_TYPE => (
                "UNSUPPORTED_MEDIA_TYPE",
                "send the body as application/json",
                false,
            ),
            StatusCode::REQUEST_TIMEOUT | StatusCode::GATEWAY_TIMEOUT => (
                "TIMEOUT",
                "the request took too long; retry with the same ids",
                true,
            ),
            StatusCode::SERVICE_UNAVAILABLE => ("UNAVAILABLE", "try again shortly", true),
            status if status.is_server_error() => ("INTERNAL", "internal error", false),
            _ => ("BAD_REQUEST", "the request cannot be served", false),
        };
        ApiError {
            status,
            code: Cow::Borrowed(code),
            message: message.into(),
            retryable,
        }
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
            E::NotFound(what) => Self::new(
                StatusCode::NOT_FOUND,
                "NOT_FOUND",
                format!("not found: {what}"),
            ),
            E::AlreadyExists(what) => Self::new(
                StatusCode::CONFLICT,
                "ALREADY_EXISTS",
                format!("already exists: {what}"),
            ),
            E::InsufficientFunds { balance } => Self::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "INSUFFICIENT_COINS",
                format!("not enough coins (balance {balance})"),
            ),
            E::Invalid(message) => Self::new(StatusCode::BAD_REQUEST, "INVALID_REQUEST", message),
            E::GiftNotFound(gift_id) => Self::new(
                StatusCode::NOT_FOUND,
                "GIFT_NOT_FOUND",
                format!("no such gift to send: {gift_id}"),
            ),
            E::OrderIdReused(order_id) => Self::new(
                StatusCode::CONFLICT,
                "ORDER_ID_REUSED",
                format!("order id {order_id} was already used for another gift"),
            ),
            E::TooManyAttempts { retry_at } => Self::new(
                StatusCode::TOO_MANY_REQUESTS,
                "TOO_MANY_ATTEMPTS",
                format!(
                    "too many wrong passwords for this room; try again after {} (ms since the epoch)",
                    retry_at.0
                ),
            )
            .retryable(),
            E::OrderInProgress(order_id) => Self::new(
                StatusCode::TOO_MANY_REQUESTS,
                "ORDER_IN_PROGRESS",
                format!("order {order_id} is being served already; retry shortly with the same order_id"),
            )
            .retryable(),
            E::Overloaded(_) => Self::new(
                StatusCode::TOO_MANY_REQUESTS,
                "ROOM_OVERLOADED",
                "the room is busy; retry shortly with the same ids",
            )
            .retryable(),
            E::NotOwner(_) => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "NOT_OWNER",
                "the room is moving; retry shortly with the same ids",
            )
            .retryable(),
            E::Cancelled => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "SHUTTING_DOWN",
                "the service is shutting down; retry with the same ids",
            )
            .retryable(),
            E::Unavailable(cause) => {
                tracing::warn!(cause = %cause, "backend unavailable");
                Self::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "UNAVAILABLE",
                    "a backend is unavailable; retry with the same ids",
                )
                .retryable()
            }
            E::Conflict(cause) => {
                // A conditional write lost a race (or an operation id was reused): the caller
                // may look again and retry.
                tracing::info!(cause = %cause, "conflict");
                Self::new(
                    StatusCode::CONFLICT,
                    "CONFLICT",
                    "the request conflicts with the current state",
                )
            }
            other => {
                tracing::error!(error = %other, "internal error");
                Self::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "INTERNAL",
                    "internal error",
                )
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
        if self.status == StatusCode::TOO_MANY_REQUESTS
            || (self.retryable && self.status == StatusCode::SERVICE_UNAVAILABLE)
        {
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
    use super::*;
    use room_domain::{GiftId, OrderId, SeatIndex, UserId};

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
            assert_eq!(error.code, rejection.code());
            assert!(!error.retryable);
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
            (error.status.as_u16(), error.code.into_owned())
        };
        let gift = GiftId::new("tulip").unwrap();
        let order = OrderId::new("o-1").unwrap();
        assert_eq!(
            code(room_app::Error::GiftNotFound(gift)),
            (404, "GIFT_NOT_FOUND".into())
        );
        assert_eq!(
            code(room_app::Error::OrderIdReused(order)),
            (409, "ORDER_ID_REUSED".into())
        );
        // Other absences and bad input keep their generic codes.
        assert_eq!(
            code(room_app::Error::NotFound("order o-1".into())),
            (404, "NOT_FOUND".into())
        );
        assert_eq!(
            code(room_app::Error::Invalid("negative credit -1".into())),
            (400, "INVALID_REQUEST".into())
        );
    }
}
