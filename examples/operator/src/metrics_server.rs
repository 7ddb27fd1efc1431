//! `/metrics` (Prometheus text format of the operator's `prometheus-client` registry) and
//! `/healthz` (`ok` while the process serves), on axum.

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;

/// The content type of the OpenMetrics text format `prometheus-client` writes.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The routes: `GET /metrics` and `GET /healthz`.
pub fn router(registry: Arc<Registry>) -> Router {
    Router::new()
        .route(
            "/metrics",
            get(move || {
                let registry = registry.clone();
                async move {
                    let mut text = String::new();
                    match prometheus_client::encoding::text::encode(&mut text, &registry) {
                        Ok(()) => ([(header::CONTENT_TYPE, OPENMETRICS)], text).into_response(),
                        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
                    }
                }
            }),
        )
        .route("/healthz", get(|| async { "ok" }))
}

/// Serves [`router`] on `listener` until `shutdown` resolves.
///
/// # Errors
/// The server's I/O error.
pub async fn serve(
    listener: TcpListener,
    registry: Arc<Registry>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_router(listener, router(registry), shutdown).await
}

/// Serves `routes` (for example [`router`] merged with the webhook's) on `listener` until
/// `shutdown` resolves.
///
/// # Errors
/// The server's I/O error.
pub async fn serve_router(
    listener: TcpListener,
    routes: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, routes)
        .with_graceful_shutdown(shutdown)
        .await
}
