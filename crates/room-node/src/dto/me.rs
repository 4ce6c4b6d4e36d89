//! The bodies of the caller's own routes besides the wallet: the room they are in and their
//! IM credentials.

use serde::Serialize;
use utoipa::ToSchema;

/// `GET /v1/me/current-room`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CurrentRoomResponse {
    /// The room the user is in, if any.
    pub room_id: Option<String>,
}

/// `GET /v1/me/im-credentials`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ImCredentialsResponse {
    /// The Tencent IM (and TRTC) application.
    pub sdk_app_id: u64,
    /// The caller's IM account: their user id.
    pub user_id: String,
    /// The caller's UserSig.
    pub user_sig: String,
    /// When the UserSig expires (ms since the epoch); fetch a new one before.
    pub expires_at: i64,
}
