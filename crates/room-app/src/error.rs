//! The errors ports return and the runtime answers with.

use room_domain::Rejection;

/// What went wrong outside the domain. Every variant says whether a retry can help
/// ([`Error::is_retryable`]); the gift saga decides between retry and compensation from that
/// and from nothing else.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The room refused the command: a definite answer.
    #[error("rejected: {0}")]
    Rejected(#[from] Rejection),
    /// Something asked for does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// A create for something that exists (a duplicate key).
    #[error("already exists: {0}")]
    AlreadyExists(String),
    /// A conditional write found another state than expected (version, status).
    #[error("conflict: {0}")]
    Conflict(String),
    /// A robot room configuration names a robot that another robot room's pool holds: the
    /// store's unique key on the robot refused the claim, and nothing was written.
    #[error("{robot} is in the pool of robot room {room_id}")]
    RobotTaken {
        /// The robot.
        robot: room_domain::UserId,
        /// The robot room whose pool holds it.
        room_id: room_domain::RoomId,
    },
    /// This node does not own the room (lease lost, epoch fenced, cell stopped). Retryable:
    /// the owner, or this node after it reclaims the room, can do it.
    #[error("this node does not own room {0}")]
    NotOwner(String),
    /// The room's mailbox is full: try again shortly.
    #[error("room {0} is overloaded")]
    Overloaded(String),
    /// A backend is down or timed out.
    #[error("unavailable: {0}")]
    Unavailable(String),
    /// The wallet refused a debit.
    #[error("insufficient funds: balance {balance}")]
    InsufficientFunds {
        /// The balance at the time.
        balance: room_domain::Coins,
    },
    /// The request does not make sense (bad input).
    #[error("invalid: {0}")]
    Invalid(String),
    /// A profile value that breaks its field's rule, or a batch of profiles over its bound
    /// (the message names the field, and in a batch the entry): nothing was written.
    #[error("invalid profile: {0}")]
    InvalidProfile(String),
    /// A VIP grant of a level the level table does not have, or with an expiry not after
    /// now: nothing was written.
    #[error("invalid VIP grant: {0}")]
    InvalidVipGrant(String),
    /// A VIP level table that breaks a rule (too many levels, a bad id; the message names
    /// the level and the field): nothing was written.
    #[error("invalid VIP levels: {0}")]
    InvalidVipLevels(String),
    /// A gift request names a gift the catalog does not have, or has disabled.
    #[error("no such gift: {0}")]
    GiftNotFound(room_domain::GiftId),
    /// A gift request reuses an order id that names another gift request (room, sender, gift,
    /// count or recipients differ). The stored order is untouched.
    #[error("order id {0} was already used for another gift")]
    OrderIdReused(room_domain::OrderId),
    /// Requests for this gift order are already being served on this node, as many as may
    /// wait for it: retry with the same order id shortly. Nothing moved.
    #[error("order {0} is in progress")]
    OrderInProgress(room_domain::OrderId),
    /// A commit would apply a gift order that no longer awaits its room
    /// ([`GiftOrder::awaits_room`](room_domain::GiftOrder::awaits_room)): another drive of the
    /// order (on another node) recorded the room's refusal or ended it meanwhile. Nothing was
    /// written; the order's stored state is the answer.
    #[error("gift order {0} was settled by another drive")]
    OrderSettled(room_domain::OrderId),
    /// A fault of this service: a store refused what the service sent it (a statement that
    /// cannot run, a value it cannot hold). Not the caller's fault and not retryable; needs a
    /// person.
    #[error("internal: {0}")]
    Internal(String),
    /// Stored data cannot be read: a bug or a manual edit. Needs a person.
    #[error("corrupt data: {0}")]
    Corrupt(String),
    /// The service is shutting down.
    #[error("cancelled")]
    Cancelled,
    /// Too many wrong passwords for one room: joins of it are refused until `retry_at`.
    #[error("too many wrong passwords; try again at {retry_at}")]
    TooManyAttempts {
        /// When the user may try again.
        retry_at: room_domain::Timestamp,
    },
    /// Another open room shows the cover picture a room was to set: nothing was changed.
    #[error("the cover is in use by another room: {0}")]
    CoverInUse(String),
}

impl Error {
    /// Whether trying again later can succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Error::NotOwner(_)
                | Error::Overloaded(_)
                | Error::Unavailable(_)
                | Error::Cancelled
                | Error::OrderInProgress(_)
        )
    }

    /// Builds [`Error::Unavailable`] from any displayable cause.
    pub fn unavailable(cause: impl std::fmt::Display) -> Self {
        Error::Unavailable(cause.to_string())
    }

    /// Builds [`Error::Internal`] from any displayable cause.
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        Error::Internal(cause.to_string())
    }

    /// Builds [`Error::Corrupt`] from any displayable cause.
    pub fn corrupt(cause: impl std::fmt::Display) -> Self {
        Error::Corrupt(cause.to_string())
    }
}

/// An [`Error`] as it crosses between nodes: the answer of a forwarded request, in JSON. A
/// room's definite rejection travels as itself, so that the gift saga on the sending node
/// compensates exactly when the owner's room refused; every error whose outcome is unknown
/// stays retryable on the way back.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RemoteError {
    /// [`Error::Rejected`].
    Rejected {
        /// The room's answer.
        rejection: Rejection,
    },
    /// [`Error::NotOwner`], and [`Error::Cancelled`] of an owner that is stopping: the sender
    /// looks the owner up again.
    NotOwner,
    /// [`Error::Overloaded`].
    Overloaded,
    /// [`Error::TooManyAttempts`].
    TooManyAttempts {
        /// When the user may try again.
        retry_at: room_domain::Timestamp,
    },
    /// [`Error::InsufficientFunds`].
    InsufficientFunds {
        /// The balance at the time.
        balance: room_domain::Coins,
    },
    /// [`Error::Invalid`].
    Invalid {
        /// What was wrong.
        message: String,
    },
    /// [`Error::NotFound`].
    NotFound {
        /// What was missing.
        message: String,
    },
    /// [`Error::OrderSettled`].
    OrderSettled {
        /// The order.
        order_id: room_domain::OrderId,
    },
    /// Every other error that a retry cannot mend ([`Error::Internal`], [`Error::Corrupt`],
    /// [`Error::Conflict`], ...): the owner logged it; the sender answers it as its own
    /// fault.
    Internal {
        /// The owner's description.
        message: String,
    },
    /// Every other retryable error ([`Error::Unavailable`], ...).
    Unavailable {
        /// The owner's description.
        message: String,
    },
}

impl From<&Error> for RemoteError {
    fn from(error: &Error) -> Self {
        match error {
            Error::Rejected(rejection) => RemoteError::Rejected {
                rejection: rejection.clone(),
            },
            Error::NotOwner(_) | Error::Cancelled => RemoteError::NotOwner,
            Error::Overloaded(_) => RemoteError::Overloaded,
            Error::TooManyAttempts { retry_at } => RemoteError::TooManyAttempts {
                retry_at: *retry_at,
            },
            Error::InsufficientFunds { balance } => {
                RemoteError::InsufficientFunds { balance: *balance }
            }
            Error::Invalid(message) => RemoteError::Invalid {
                message: message.clone(),
            },
            Error::NotFound(message) => RemoteError::NotFound {
                message: message.clone(),
            },
            Error::OrderSettled(order_id) => RemoteError::OrderSettled {
                order_id: order_id.clone(),
            },
            other if other.is_retryable() => RemoteError::Unavailable {
                message: other.to_string(),
            },
            other => RemoteError::Internal {
                message: other.to_string(),
            },
        }
    }
}

impl RemoteError {
    /// The error on the sending node, for a request about `room_id`.
    pub fn into_error(self, room_id: &room_domain::RoomId) -> Error {
        match self {
            RemoteError::Rejected { rejection } => Error::Rejected(rejection),
            RemoteError::NotOwner => Error::NotOwner(room_id.to_string()),
            RemoteError::Overloaded => Error::Overloaded(room_id.to_string()),
            RemoteError::TooManyAttempts { retry_at } => Error::TooManyAttempts { retry_at },
            RemoteError::InsufficientFunds { balance } => Error::InsufficientFunds { balance },
            RemoteError::Invalid { message } => Error::Invalid(message),
            RemoteError::NotFound { message } => Error::NotFound(message),
            RemoteError::OrderSettled { order_id } => Error::OrderSettled(order_id),
            RemoteError::Internal { message } => {
                Error::Internal(format!("the owner of room {room_id}: {message}"))
            }
            RemoteError::Unavailable { message } => {
                Error::Unavailable(format!("the owner of room {room_id}: {message}"))
            }
        }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;
    use room_domain::{RoomId, SeatIndex};

    #[test]
    fn errors_keep_their_meaning_across_nodes() {
        let room = RoomId::new("r1").unwrap();
        let through = |error: Error| {
            let json = serde_json::to_string(&RemoteError::from(&error)).unwrap();
            serde_json::from_str::<RemoteError>(&json)
                .unwrap()
                .into_error(&room)
        };
        let seat = Rejection::SeatOccupied { seat: SeatIndex(2) };
        assert!(matches!(through(Error::Rejected(seat.clone())), Error::Rejected(r) if r == seat));
        for retryable in [
            Error::NotOwner("r1".into()),
            Error::Cancelled,
            Error::Overloaded("r1".into()),
            Error::Unavailable("disk".into()),
            Error::OrderInProgress(room_domain::OrderId::new("o1").unwrap()),
        ] {
            let after = through(retryable.clone());
            assert!(after.is_retryable(), "{retryable:?} became {after:?}");
            assert!(!matches!(after, Error::Rejected(_)));
        }
        for definite in [
            Error::Internal("bug".into()),
            Error::Corrupt("row".into()),
            Error::Conflict("version".into()),
            Error::AlreadyExists("cmd".into()),
            Error::OrderSettled(room_domain::OrderId::new("o1").unwrap()),
        ] {
            let after = through(definite.clone());
            assert!(!after.is_retryable(), "{definite:?} became {after:?}");
            assert!(
                !matches!(after, Error::Rejected(_)),
                "{definite:?} became {after:?}"
            );
        }
    }
}
