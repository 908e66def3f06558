//! The recent Kubernetes Events of a tenant's namespaces, for its page.
//!
//! In: a client and the tenant's namespaces. Out: the newest Events (at most [`SHOWN`]), and
//! for each namespace whose LIST failed or took longer than [`TIMEOUT`], why. One LIST per
//! namespace (at most [`LIMIT`] Events each), all at once; read only.

use futures::future::join_all;
use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, ListParams};
use serde::Serialize;

/// How long a namespace's LIST may take.
const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);
/// Events listed per namespace.
const LIMIT: u32 = 200;
/// Events shown.
pub(super) const SHOWN: usize = 30;

/// One Event as the page shows it.
#[derive(Debug, Clone, Serialize)]
pub(super) struct EventRow {
    /// Unix time of its last occurrence (0: unknown).
    #[serde(skip)]
    pub at: i64,
    /// How long ago.
    pub ago: String,
    /// `Normal` or `Warning`.
    pub kind: String,
    /// Its reason.
    pub reason: String,
    /// The object it is about (`Kind namespace/name`).
    pub object: String,
    /// Its message.
    pub message: String,
    /// How many times it happened.
    pub count: i32,
}

/// The newest Events of `namespaces`, with an error line per namespace that failed.
pub(super) async fn recent(
    client: &kube::Client,
    namespaces: &[String],
) -> (Vec<EventRow>, Vec<String>) {
    let lists = namespaces.iter().map(|ns| async move {
        let api: Api<Event> = Api::namespaced(client.clone(), ns);
        let params = ListParams::default().limit(LIMIT);
        match tokio::time::timeout(TIMEOUT, api.list(&params)).await {
            Ok(Ok(list)) => Ok(list.items),
            Ok(Err(e)) => Err(format!("Events of {ns}: {e}")),
            Err(_) => Err(format!(
                "Events of {ns}: no answer within {}s",
                TIMEOUT.as_secs()
            )),
        }
    });
    let now = crate::metrics::unix_now();
    let mut rows = Vec::new();
    let mut errors = Vec::new();
    for listed in join_all(lists).await {
        match listed {
            Ok(items) => rows.extend(items.iter().map(|e| row(e, now))),
            Err(e) => errors.push(e),
        }
    }
    rows.sort_by_key(|r| std::cmp::Reverse(r.at));
    rows.truncate(SHOWN);
    (rows, errors)
}

fn row(e: &Event, now: i64) -> EventRow {
    let at = e
        .series
        .as_ref()
        .and_then(|s| s.last_observed_time.as_ref().map(|t| t.0))
        .or_else(|| e.last_timestamp.as_ref().map(|t| t.0))
        .or_else(|| e.event_time.as_ref().map(|t| t.0))
        .or_else(|| e.first_timestamp.as_ref().map(|t| t.0))
        .map_or(0, |t| t.as_second());
    let o = &e.involved_object;
    let object = format!(
        "{} {}/{}",
        o.kind.as_deref().unwrap_or_default(),
        o.namespace.as_deref().unwrap_or_default(),
        o.name.as_deref().unwrap_or_default()
    );
    EventRow {
        at,
        ago: super::view::ago(now, at),
        kind: e.type_.clone().unwrap_or_default(),
        reason: e.reason.clone().unwrap_or_default(),
        object,
        message: e.message.clone().unwrap_or_default(),
        count: e
            .series
            .as_ref()
            .and_then(|s| s.count)
            .or(e.count)
            .unwrap_or(1),
    }
}
