//! HTTP: `/healthz`, `/readyz`, `/metrics`, `/status`, the push webhook `POST /hooks/git`,
//! and with `--web` the read-only web view under `/ui/` ([`crate::web`]).
//!
//! In: HTTP requests on the agent's port. Out: health and readiness, the OpenMetrics text
//! exposition of the agent's one registry (the gauges read at scrape time set first), the
//! agent's view as JSON (`/status`: an [`AgentStatus`](fief_core::status::agent::AgentStatus)),
//! and for a correctly signed push to the watched branch, a fetch trigger. A bad or missing
//! signature gets 401 and triggers nothing.

use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};

use super::Shared;
use crate::webhook;

/// The agent's routes.
pub fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route("/status", get(status))
        .route("/hooks/git", post(hook))
        .merge(crate::web::routes(&shared))
        .with_state(shared)
}

async fn readyz(State(shared): State<Arc<Shared>>) -> (StatusCode, String) {
    let (ready, why) = shared.readiness();
    let code = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (code, why)
}

async fn status(State(shared): State<Arc<Shared>>) -> (StatusCode, HeaderMap, String) {
    let mut headers = HeaderMap::new();
    if let Ok(v) = "application/json".parse() {
        headers.insert(axum::http::header::CONTENT_TYPE, v);
    }
    match serde_json::to_string(&shared.status()) {
        Ok(body) => (StatusCode::OK, headers, body),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            HeaderMap::new(),
            e.to_string(),
        ),
    }
}

/// `/metrics`: the text exposition, encoded on a blocking thread and sent in chunks as it is
/// written ([`crate::metrics::streamed`]), so a scrape holds a chunk, not the whole text.
async fn metrics(State(shared): State<Arc<Shared>>) -> (StatusCode, HeaderMap, Body) {
    let mut headers = HeaderMap::new();
    if let Ok(v) = "application/openmetrics-text; version=1.0.0; charset=utf-8".parse() {
        headers.insert(axum::http::header::CONTENT_TYPE, v);
    }
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(1);
    let handle = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        let wait = crate::metrics::streamed::SCRAPE_WAIT;
        let mut out = crate::metrics::streamed::Chunks::new(tx, handle, wait);
        let depth = shared.work.queue_len();
        let written = shared.cluster.metrics().encode_to(
            shared.cluster.counter().stats(),
            |m| refresh(&shared, m, depth),
            &mut out,
        );
        if written.and_then(|()| out.flush()).is_err() {
            tracing::debug!("a /metrics scrape ended before its text was sent");
        }
    });
    let chunks = futures::stream::unfold(rx, |mut rx| async move {
        let chunk = rx.recv().await?;
        Some((Ok::<_, std::convert::Infallible>(chunk), rx))
    });
    (StatusCode::OK, headers, Body::from_stream(chunks))
}

/// The gauges read at scrape time, set from the agent's state.
fn refresh(shared: &Shared, m: &crate::metrics::Metrics, depth: usize) {
    m.queue_depth.set(crate::metrics::gauge_value(depth));
    m.leader.set(i64::from(shared.report.leading()));
    if let Some(own) = &shared.shards {
        m.shards_held
            .set(crate::metrics::gauge_value(own.held().len()));
        m.shards_ready
            .set(crate::metrics::gauge_value(own.ready().len()));
    }
    shared.gate.export(m);
    shared.rollout.read(|r| super::rollout::export(m, r));
}

async fn hook(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, &'static str) {
    let Some(secret) = shared.source.webhook_secret() else {
        return (StatusCode::NOT_FOUND, "no webhook secret configured");
    };
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let signed = webhook::verify_github(secret, &body, header("x-hub-signature-256"))
        || webhook::verify_gitlab(secret, header("x-gitlab-token"));
    if !signed {
        tracing::warn!("webhook with a bad or missing signature refused");
        return (StatusCode::UNAUTHORIZED, "bad or missing signature");
    }
    match webhook::pushed_branch(&body) {
        Some(branch) if branch != shared.source.branch() => {
            (StatusCode::ACCEPTED, "other branch; ignored")
        }
        _ => {
            tracing::info!("push webhook: fetching now");
            shared.source.request_fetch();
            (StatusCode::ACCEPTED, "fetch triggered")
        }
    }
}
