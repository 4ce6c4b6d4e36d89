//! The answers to machines: health probes and TRTC's callbacks.

use serde::Serialize;
use utoipa::ToSchema;

/// The answer to TRTC.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RtcAck {
    /// 0: handled (or ignored).
    pub code: i32,
}

/// `GET /healthz` and `GET /readyz`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct HealthResponse {
    /// `ok`, `starting` or `stopping`.
    pub status: String,
}
