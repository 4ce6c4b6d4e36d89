//! [`run`]: what every binary's `main` does to serve a node: logging, the async runtime, the
//! listener, and a graceful stop on SIGINT or SIGTERM.

use anyhow::Context;

use crate::app::App;
use crate::config::Settings;
use crate::role::Role;

/// Serves a node of `role` built from `settings` on `http.addr` until SIGINT or SIGTERM, then
/// stops it gracefully. Logs go to stdout, filtered by `RUST_LOG` (default `info`).
pub fn run(settings: Settings, role: Role) -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,tower_http=warn".into()),
        )
        .init();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        tracing::info!(settings = ?settings, role = role.binary(), "starting");
        let addr = settings.http.addr;
        let app = App::build_as(settings, role).await?;
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr}"))?;
        app.serve(listener, stop_signal()).await
    })
}

/// Completes on SIGINT (Ctrl-C) or SIGTERM.
async fn stop_signal() {
    let interrupt = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %error, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::error!(error = %error, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => tracing::info!("SIGINT received"),
        () = terminate => tracing::info!("SIGTERM received"),
    }
}
