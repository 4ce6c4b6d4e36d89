//! Operational routes: liveness, readiness and Prometheus metrics.

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use room_domain::UserId;

use crate::dto::HealthResponse;
use crate::state::AppState;

fn health(status: StatusCode, text: &str) -> (StatusCode, Json<HealthResponse>) {
    (
        status,
        Json(HealthResponse {
            status: text.to_owned(),
        }),
    )
}

/// Liveness: the process answers.
#[utoipa::path(
    get, path = "/healthz", tag = "ops",
    responses((status = 200, description = "Alive", body = HealthResponse))
)]
pub async fn healthz() -> impl IntoResponse {
    health(StatusCode::OK, "ok")
}

/// Readiness: start-up recovery is done, the service is not stopping, and storage answers.
#[utoipa::path(
    get, path = "/readyz", tag = "ops",
    responses(
        (status = 200, description = "Ready", body = HealthResponse),
        (status = 503, description = "Starting, stopping, or storage down", body = HealthResponse),
    )
)]
pub async fn readyz(State(state): State<AppState>) -> impl IntoResponse {
    if state.shutdown.is_cancelled() {
        return health(StatusCode::SERVICE_UNAVAILABLE, "stopping");
    }
    if !state.is_ready() {
        return health(StatusCode::SERVICE_UNAVAILABLE, "starting");
    }
    let probe = UserId::new("readyz-probe").expect("a valid id");
    let storage = tokio::time::timeout(
        Duration::from_secs(2),
        state.service.ports().wallet.balance(&probe),
    )
    .await;
    match storage {
        Ok(Ok(_)) => health(StatusCode::OK, "ok"),
        _ => health(StatusCode::SERVICE_UNAVAILABLE, "storage unavailable"),
    }
}

/// Prometheus metrics, text format.
#[utoipa::path(
    get, path = "/metrics", tag = "ops",
    responses((status = 200, description = "Prometheus text exposition", content_type = "text/plain", body = String))
)]
pub async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    state.metrics.run_upkeep();
    metrics::gauge!("room_cells_active").set(state.service.runtime().active_rooms() as f64);
    metrics::gauge!("room_sse_channels").set(state.messenger.channel_count() as f64);
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        state.metrics.render(),
    )
}
