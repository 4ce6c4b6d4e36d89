//! [`ApiCode`]: every error code the API answers, in one table with its HTTP status, whether a
//! retry can help, and what it means. The domain's refusals have their codes here too, under
//! the strings [`Rejection::code`](room_domain::Rejection::code) gives them.

use std::borrow::Cow;
use std::fmt;

use axum::http::StatusCode;
use serde::{Serialize, Serializer};
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::{PartialSchema, ToSchema};

/// Writes [`ApiCode`] and its table from one list: each code's variant, its string on the
/// wire, its status, whether it is retryable, and its `///` line (kept for the OpenAPI
/// document).
macro_rules! api_codes {
    ($($(#[doc = $doc:literal])+ $variant:ident = $code:literal, $status:ident, $retryable:literal;)+) => {
        /// A stable, machine-readable error code: the `code` of every error answer
        /// (`{"error":{"code","message","retryable"}}`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ApiCode {
            $($(#[doc = $doc])+ $variant,)+
        }

        impl ApiCode {
            /// Every code, in the table's order.
            pub const ALL: &'static [ApiCode] = &[$(ApiCode::$variant,)+];

            /// The code as the API sends it (`"ROOM_CLOSED"`).
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(ApiCode::$variant => $code,)+
                }
            }

            /// The status an error of this code is answered with. A few generic codes also
            /// stand for statuses made outside the handlers, which keep their own status
            /// ([`ApiError::from_status`](super::ApiError::from_status)).
            pub const fn status(self) -> StatusCode {
                match self {
                    $(ApiCode::$variant => StatusCode::$status,)+
                }
            }

            /// Whether the same request may succeed later (retry with the same ids).
            pub const fn is_retryable(self) -> bool {
                match self {
                    $(ApiCode::$variant => $retryable,)+
                }
            }

            /// What the code means, for people.
            pub fn description(self) -> String {
                let lines: &[&str] = match self {
                    $(ApiCode::$variant => &[$($doc),+],)+
                };
                lines.iter().map(|line| line.trim()).collect::<Vec<_>>().join(" ")
            }

            /// The code whose string is `code`.
            pub fn parse(code: &str) -> Option<ApiCode> {
                match code {
                    $($code => Some(ApiCode::$variant),)+
                    _ => None,
                }
            }
        }
    };
}

api_codes! {
    // Requests the API cannot read.
    /// The request cannot be served (an answer made outside the handlers, with its own 4xx
    /// status).
    BadRequest = "BAD_REQUEST", BAD_REQUEST, false;
    /// The body is not JSON.
    MalformedJson = "MALFORMED_JSON", BAD_REQUEST, false;
    /// The body is JSON of the wrong shape: a missing or unknown field, a value of the wrong
    /// type or out of its type's range.
    InvalidBody = "INVALID_BODY", BAD_REQUEST, false;
    /// An id that breaks the id rule, in the path, the query or the body.
    InvalidId = "INVALID_ID", BAD_REQUEST, false;
    /// A path value that cannot be read.
    InvalidPath = "INVALID_PATH", BAD_REQUEST, false;
    /// A query string that cannot be read.
    InvalidQuery = "INVALID_QUERY", BAD_REQUEST, false;
    /// An `Idempotency-Key` header that is not 1 to 64 printable ASCII characters.
    InvalidIdempotencyKey = "INVALID_IDEMPOTENCY_KEY", BAD_REQUEST, false;
    /// A request the use case finds invalid.
    InvalidRequest = "INVALID_REQUEST", BAD_REQUEST, false;
    /// A page `limit` out of its range.
    InvalidLimit = "INVALID_LIMIT", BAD_REQUEST, false;
    /// A `cursor` that this API did not give.
    InvalidCursor = "INVALID_CURSOR", BAD_REQUEST, false;
    /// A `day` that is not a calendar date written `YYYY-MM-DD` (years 1 to 9999).
    InvalidDay = "INVALID_DAY", BAD_REQUEST, false;
    /// A room password of the wrong length.
    InvalidPassword = "INVALID_PASSWORD", BAD_REQUEST, false;
    /// A credit amount out of its range.
    InvalidAmount = "INVALID_AMOUNT", BAD_REQUEST, false;
    /// A robot room configuration that breaks a rule (the message names the field).
    InvalidRobotRoom = "INVALID_ROBOT_ROOM", BAD_REQUEST, false;
    /// A billing policy with a share outside 0..=10000 basis points, shares adding up to more
    /// than 10000, an invalid gift id or too many overrides.
    InvalidBillingPolicy = "INVALID_BILLING_POLICY", BAD_REQUEST, false;
    /// Rocket levels that break a rule the schema cannot state (a 422, since the request is
    /// well formed): fuel not rising from level to level, a pool without winners, and the
    /// bounds the schema states too (none or more than 50 levels, fuel not positive, a
    /// countdown over an hour, a negative pool, more than 10,000 winners, a cap below one
    /// coin). The message names the level. Nothing was written.
    InvalidRocketSettings = "INVALID_ROCKET_SETTINGS", UNPROCESSABLE_ENTITY, false;
    /// Leaderboard reward tables that break a rule: a board and period twice, a table of no
    /// rank or of more than 100, a reward out of 0 to 10^9 coins, more than 9 tables. Nothing
    /// was written.
    InvalidBoardRewards = "INVALID_BOARD_REWARDS", UNPROCESSABLE_ENTITY, false;
    /// A profile value that breaks its field's rule (nickname, avatar URL, region, country,
    /// agency), or a batch of more than 500 users; the message names the field, and in a
    /// batch the entry (`users[3].country`). Nothing was written.
    InvalidProfile = "INVALID_PROFILE", BAD_REQUEST, false;
    /// A VIP level table with more than 32 levels or a bad entry effect or vehicle id (the
    /// message names the level and the field). Nothing was written.
    InvalidVipLevels = "INVALID_VIP_LEVELS", BAD_REQUEST, false;
    /// A pin that breaks a rule: an unknown tab, a scope missing or given to a tab of the
    /// whole app, a position outside 1..=100, a window that does not end after it starts or
    /// has ended; the message names the field. Nothing was written.
    InvalidPin = "INVALID_PIN", BAD_REQUEST, false;
    /// The request body did not arrive within half the request timeout.
    BodyTimeout = "BODY_TIMEOUT", REQUEST_TIMEOUT, false;
    /// The request body is larger than 64 KiB.
    PayloadTooLarge = "PAYLOAD_TOO_LARGE", PAYLOAD_TOO_LARGE, false;
    /// The body is not sent as `application/json`.
    UnsupportedMediaType = "UNSUPPORTED_MEDIA_TYPE", UNSUPPORTED_MEDIA_TYPE, false;
    /// The path exists but does not take this method.
    MethodNotAllowed = "METHOD_NOT_ALLOWED", METHOD_NOT_ALLOWED, false;
    /// The internal link route was called without `Upgrade: room-link/1`.
    UpgradeRequired = "UPGRADE_REQUIRED", UPGRADE_REQUIRED, false;

    // The room's refusals of bad input (`RejectionKind::BadInput`).
    /// No such seat in the room.
    InvalidSeat = "INVALID_SEAT", BAD_REQUEST, false;
    /// A text field that must not be empty is.
    FieldEmpty = "FIELD_EMPTY", BAD_REQUEST, false;
    /// A text field is longer than its limit.
    FieldTooLong = "FIELD_TOO_LONG", BAD_REQUEST, false;
    /// A text field holds a character it may not.
    FieldInvalidCharacter = "FIELD_INVALID_CHARACTER", BAD_REQUEST, false;
    /// An image URL that is not an absolute `http` or `https` URL of the plain shape the rule
    /// asks for, or is over 2,048 bytes (the message names the field).
    InvalidUrl = "INVALID_URL", BAD_REQUEST, false;
    /// A seat count out of its range.
    InvalidSeatCount = "INVALID_SEAT_COUNT", BAD_REQUEST, false;
    /// A gift count out of its range.
    InvalidGiftCount = "INVALID_GIFT_COUNT", BAD_REQUEST, false;
    /// Too few or too many recipients.
    InvalidRecipientCount = "INVALID_RECIPIENT_COUNT", BAD_REQUEST, false;
    /// A resource revoke naming no resource, or one twice.
    InvalidResources = "INVALID_RESOURCES", BAD_REQUEST, false;
    /// A recipient named twice.
    DuplicateRecipient = "DUPLICATE_RECIPIENT", BAD_REQUEST, false;
    /// A gift with a negative price, heat or fuel, or a catalog gift that breaks a rule.
    InvalidGift = "INVALID_GIFT", BAD_REQUEST, false;
    /// An amount that does not fit in 64 bits.
    AmountOverflow = "AMOUNT_OVERFLOW", BAD_REQUEST, false;

    // Who may call.
    /// No `Authorization: Bearer <token>`.
    Unauthenticated = "UNAUTHENTICATED", UNAUTHORIZED, false;
    /// Not a token of this service, or not valid yet.
    InvalidToken = "INVALID_TOKEN", UNAUTHORIZED, false;
    /// The token has expired.
    TokenExpired = "TOKEN_EXPIRED", UNAUTHORIZED, false;
    /// A TRTC callback whose signature does not verify (or no callback key is configured).
    BadSignature = "BAD_SIGNATURE", UNAUTHORIZED, false;
    /// A TRTC callback dated too far from now (a replay).
    CallbackOutOfWindow = "CALLBACK_OUT_OF_WINDOW", UNAUTHORIZED, false;
    /// The caller may not do this.
    Forbidden = "FORBIDDEN", FORBIDDEN, false;
    /// The caller is banned from the room.
    Banned = "BANNED", FORBIDDEN, false;
    /// The room's password is wrong.
    WrongPassword = "WRONG_PASSWORD", FORBIDDEN, false;
    /// The member outranks the caller (the owner, another admin, or the caller themselves).
    CannotModerate = "CANNOT_MODERATE", FORBIDDEN, false;
    /// The member's VIP level protects them from this act of a room admin (a kick or a chat
    /// mute, as the level table says).
    VipProtected = "VIP_PROTECTED", FORBIDDEN, false;
    /// The seat is reserved for VIP, and the caller's level gives no seat priority.
    VipSeat = "VIP_SEAT", FORBIDDEN, false;
    /// The background is exclusive to a VIP level the caller does not have.
    VipBackground = "VIP_BACKGROUND", FORBIDDEN, false;
    /// Only robots send robot gifts, and robots send no other.
    NotARobot = "NOT_A_ROBOT", FORBIDDEN, false;
    /// This node has no internal token: its internal routes are off.
    InternalDisabled = "INTERNAL_DISABLED", FORBIDDEN, false;

    // What does not exist.
    /// No such route, or no such thing.
    NotFound = "NOT_FOUND", NOT_FOUND, false;
    /// The room does not exist.
    RoomNotFound = "ROOM_NOT_FOUND", NOT_FOUND, false;
    /// No board of that name (or no such board in a room).
    BoardNotFound = "BOARD_NOT_FOUND", NOT_FOUND, false;
    /// No such gift to send.
    GiftNotFound = "GIFT_NOT_FOUND", NOT_FOUND, false;
    /// No such robot room.
    RobotRoomNotFound = "ROBOT_ROOM_NOT_FOUND", NOT_FOUND, false;
    /// No such pin.
    PinNotFound = "PIN_NOT_FOUND", NOT_FOUND, false;
    /// Tencent IM is not configured on this service.
    ImDisabled = "IM_DISABLED", NOT_FOUND, false;

    // What conflicts with the current state.
    /// The request conflicts with the current state; look again and retry.
    Conflict = "CONFLICT", CONFLICT, false;
    /// The thing exists already.
    AlreadyExists = "ALREADY_EXISTS", CONFLICT, false;
    /// The room exists already.
    RoomAlreadyExists = "ROOM_ALREADY_EXISTS", CONFLICT, false;
    /// The seat is taken.
    SeatOccupied = "SEAT_OCCUPIED", CONFLICT, false;
    /// The seat is held for an invited user until their invite expires.
    SeatHeld = "SEAT_HELD", CONFLICT, false;
    /// Another open room shows this cover picture (one open room at a time may): choose
    /// another. Nothing was changed.
    CoverInUse = "COVER_IN_USE", CONFLICT, false;
    /// The caller follows as many rooms as they may (`ROOM__LISTS__MAX_FOLLOWS_PER_USER`):
    /// unfollow one first.
    FollowLimit = "FOLLOW_LIMIT", CONFLICT, false;
    /// A timer for a state the room has moved on from.
    StaleTimer = "STALE_TIMER", CONFLICT, false;
    /// The order id was already used for another gift.
    OrderIdReused = "ORDER_ID_REUSED", CONFLICT, false;
    /// The operation id was already used for another credit.
    OpIdReused = "OP_ID_REUSED", CONFLICT, false;
    /// The order was never debited and is void: send the gift again with a new order id.
    OrderFailed = "ORDER_FAILED", CONFLICT, false;
    /// The robot room's key or content names a room configured otherwise, or closed.
    RobotRoomExists = "ROBOT_ROOM_EXISTS", CONFLICT, false;
    /// The robot room changed since the `version` the request names.
    RobotRoomChanged = "ROBOT_ROOM_CHANGED", CONFLICT, false;
    /// The billing policy is no longer at the `expected_version` of the change: read it again.
    BillingVersionStale = "BILLING_VERSION_STALE", CONFLICT, false;
    /// `PUT /v1/admin/rocket` with an `expected_version` that is no longer current.
    RocketVersionStale = "ROCKET_VERSION_STALE", CONFLICT, false;
    /// `PUT /v1/admin/board-rewards` with an `expected_version` that is no longer current.
    BoardRewardsStale = "BOARD_REWARDS_STALE", CONFLICT, false;
    /// The VIP level table is no longer at the `expected_version` of the change: read it
    /// again.
    VipLevelsStale = "VIP_LEVELS_STALE", CONFLICT, false;
    /// A request with this `Idempotency-Key` is running (on this node or another): retry it
    /// shortly, and it gets that request's answer.
    IdempotencyKeyInUse = "IDEMPOTENCY_KEY_IN_USE", CONFLICT, true;

    /// A VIP grant of a level the current level table does not have, or with an expiry not
    /// in the future (both depend on the moment, not on the request's form). Nothing was
    /// written.
    InvalidVipGrant = "INVALID_VIP_GRANT", UNPROCESSABLE_ENTITY, false;
    // The room's rules (`RejectionKind::Rule`) and the wallet.
    /// The room is closed.
    RoomClosed = "ROOM_CLOSED", UNPROCESSABLE_ENTITY, false;
    /// The room is full.
    RoomFull = "ROOM_FULL", UNPROCESSABLE_ENTITY, false;
    /// The user is not in the room.
    NotAMember = "NOT_A_MEMBER", UNPROCESSABLE_ENTITY, false;
    /// The user is not banned.
    NotBanned = "NOT_BANNED", UNPROCESSABLE_ENTITY, false;
    /// The room has as many admins as it may.
    TooManyAdmins = "TOO_MANY_ADMINS", UNPROCESSABLE_ENTITY, false;
    /// The room has as many open invites as its rules allow.
    TooManyInvites = "TOO_MANY_INVITES", UNPROCESSABLE_ENTITY, false;
    /// The seat is locked.
    SeatLocked = "SEAT_LOCKED", UNPROCESSABLE_ENTITY, false;
    /// The seat is empty.
    SeatEmpty = "SEAT_EMPTY", UNPROCESSABLE_ENTITY, false;
    /// The user is not on that seat (or on any seat).
    NotOnSeat = "NOT_ON_SEAT", UNPROCESSABLE_ENTITY, false;
    /// A moderator muted the seat: only a moderator may unmute it.
    SeatMutedByModerator = "SEAT_MUTED_BY_MODERATOR", UNPROCESSABLE_ENTITY, false;
    /// A launch before the rocket's launch time.
    RocketNotReady = "ROCKET_NOT_READY", UNPROCESSABLE_ENTITY, false;
    /// A mic publish timeout before the seat's publish deadline.
    PublishDeadlineAhead = "PUBLISH_DEADLINE_AHEAD", UNPROCESSABLE_ENTITY, false;
    /// A gift cannot be sent to its sender.
    SelfGift = "SELF_GIFT", UNPROCESSABLE_ENTITY, false;
    /// A batch gift found nobody but the sender to receive it.
    NoRecipients = "NO_RECIPIENTS", UNPROCESSABLE_ENTITY, false;
    /// Not enough coins.
    InsufficientCoins = "INSUFFICIENT_COINS", UNPROCESSABLE_ENTITY, false;
    /// The `Idempotency-Key` was used before by this user on this route for another request
    /// (another path or body): send another key.
    IdempotencyKeyReused = "IDEMPOTENCY_KEY_REUSED", UNPROCESSABLE_ENTITY, false;

    // Too many requests: retry after `Retry-After` seconds with the same ids.
    /// The caller's rate limit of this kind of request.
    RateLimited = "RATE_LIMITED", TOO_MANY_REQUESTS, true;
    /// The caller has as many event streams open as they may.
    TooManyStreams = "TOO_MANY_STREAMS", TOO_MANY_REQUESTS, true;
    /// Too many wrong passwords for this room.
    TooManyAttempts = "TOO_MANY_ATTEMPTS", TOO_MANY_REQUESTS, true;
    /// The order is being served already.
    OrderInProgress = "ORDER_IN_PROGRESS", TOO_MANY_REQUESTS, true;
    /// The room's queue is full.
    RoomOverloaded = "ROOM_OVERLOADED", TOO_MANY_REQUESTS, true;

    // Not answered now.
    /// The request took longer than the request timeout; it may still have been applied.
    Timeout = "TIMEOUT", SERVICE_UNAVAILABLE, true;
    /// A backend is unavailable.
    Unavailable = "UNAVAILABLE", SERVICE_UNAVAILABLE, true;
    /// The room is moving to another node.
    NotOwner = "NOT_OWNER", SERVICE_UNAVAILABLE, true;
    /// The service is shutting down.
    ShuttingDown = "SHUTTING_DOWN", SERVICE_UNAVAILABLE, true;
    /// The gift is not settled yet.
    GiftPending = "GIFT_PENDING", SERVICE_UNAVAILABLE, true;
    /// This node serves as many internal links as it may.
    LinksFull = "LINKS_FULL", SERVICE_UNAVAILABLE, false;
    /// An internal request meant for another node (its `room-node` header names another
    /// id): the sender's registry is stale. Not retried as it is: the sender looks the room's
    /// holder up again and sends it there.
    WrongNode = "WRONG_NODE", MISDIRECTED_REQUEST, false;
    /// An internal error; its cause is logged, never sent.
    Internal = "INTERNAL", INTERNAL_SERVER_ERROR, false;
}

impl fmt::Display for ApiCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ApiCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl PartialSchema for ApiCode {
    /// A string enum of every code; the description lists each with its status and meaning.
    fn schema() -> RefOr<Schema> {
        let mut description = String::from(
            "Stable, machine-readable code of an error answer, with the status it is answered \
             with (`BAD_REQUEST`, `TIMEOUT` and `INTERNAL` also stand for statuses made outside \
             the handlers, which keep theirs) and, where a retry with the same ids can help, \
             `retryable`:\n",
        );
        for code in ApiCode::ALL {
            let retry = if code.is_retryable() {
                ", retryable"
            } else {
                ""
            };
            description.push_str(&format!(
                "\n- `{code}` ({}{retry}): {}",
                code.status().as_u16(),
                code.description()
            ));
        }
        ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(ApiCode::ALL.iter().map(|code| code.as_str())))
            .description(Some(description))
            .examples([ApiCode::RoomClosed.as_str()])
            .into()
    }
}

impl ToSchema for ApiCode {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("ApiCode")
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn every_code_is_one_string_that_parses_back() {
        let mut seen = HashSet::new();
        for &code in ApiCode::ALL {
            assert!(seen.insert(code.as_str()), "{code} twice");
            assert_eq!(ApiCode::parse(code.as_str()), Some(code));
            assert!(
                code.as_str()
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c == '_'),
                "{code}"
            );
            assert!(!code.description().is_empty(), "{code}");
            assert!(
                code.status().is_client_error() || code.status().is_server_error(),
                "{code}"
            );
        }
        assert_eq!(ApiCode::parse("NO_SUCH_CODE"), None);
    }

    #[test]
    fn retryable_codes_are_answered_with_429_or_503() {
        for &code in ApiCode::ALL {
            // The one retryable conflict: the same request is running; its answer comes.
            if code.is_retryable() && code != ApiCode::IdempotencyKeyInUse {
                assert!(
                    matches!(
                        code.status(),
                        StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE
                    ),
                    "{code}"
                );
            }
        }
    }

    #[test]
    fn a_code_serializes_as_its_string() {
        assert_eq!(
            serde_json::to_value(ApiCode::RateLimited).unwrap(),
            serde_json::json!("RATE_LIMITED")
        );
    }
}
