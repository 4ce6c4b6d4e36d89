//! The bodies of the wallet routes: a user's balance, and a platform admin's credit.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::fields::whole;
use super::schema::Id;

/// `GET /v1/me/wallet`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WalletResponse {
    /// Whose.
    pub user_id: String,
    /// Coins.
    pub balance: i64,
}

/// `POST /v1/admin/wallets/{user_id}/credit`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreditRequest {
    /// Idempotency key (1 to 64 characters): a repeat credits once and gets the same balance.
    #[schema(value_type = Id)]
    pub op_id: String,
    /// Coins to add, 1 to 10^12.
    #[serde(deserialize_with = "whole::i64")]
    #[schema(minimum = 1, maximum = 1_000_000_000_000_i64)]
    pub amount: i64,
}

/// The answer to a credit.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CreditResponse {
    /// Whose.
    pub user_id: String,
    /// The operation.
    pub op_id: String,
    /// The balance right after this credit.
    pub balance: i64,
}
