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

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
