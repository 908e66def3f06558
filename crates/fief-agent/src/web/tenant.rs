//! A tenant's page: what git says it is, what the agent last did with it, and what its objects
//! look like now.
//!
//! In: the tenant's row, the revision (its tenant file, components, pins), one render of the
//! tenant at that revision (on a blocking thread: its objects and its errors with file and
//! line), the health gate's verdict and per-object health, the tenant's history, and the
//! Events of its namespaces. Out: a [`TenantView`] for the template. Objects appear by kind,
//! namespace and name only; a Secret's data never leaves the render.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;

use super::history::Entry;
use super::table::{Row, kind_str};
use super::view::{ago, short};
use crate::Shared;
use fief_core::health::Health;
use fief_core::model::{Repo, Tenant};
use fief_core::render::TenantRender;
use fief_source::revision::Revision;

/// The page's data.
#[derive(Debug, Serialize)]
pub(super) struct TenantView {
    /// The tenant's row (state, cluster, wave, last sync).
    pub row: Row<'static>,
    /// The commit the page renders the tenant at.
    pub commit: Option<String>,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// Its owner (`email`, `organization`).
    pub owner: Option<(String, String)>,
    /// `spec.state`.
    pub lifecycle: Option<fief_core::model::TenantState>,
    /// A spare, kept ready for `fief allocate`.
    pub spare: bool,
    /// Environment → namespace.
    pub namespaces: Vec<(String, String)>,
    /// Its components.
    pub components: Vec<ComponentView>,
    /// Its objects as rendered, with their health.
    pub objects: Vec<ObjectView>,
    /// The health gate's verdict (`ready`, `reconciling`, `stalled`).
    pub verdict: Option<&'static str>,
    /// What keeps it from ready: (object, why).
    pub unhealthy: Vec<(String, String)>,
    /// The render's errors with file and line.
    pub diagnostics: Vec<DiagnosticView>,
    /// The last sync's first error, as the agent recorded it.
    pub last_error: Option<String>,
    /// The recent syncs, newest first.
    pub history: Vec<HistoryView>,
    /// The newest Events of its namespaces.
    pub events: Vec<super::events::EventRow>,
    /// Why Events of a namespace could not be listed.
    pub events_errors: Vec<String>,
}

/// A component of the tenant.
#[derive(Debug, Serialize)]
pub(super) struct ComponentView {
    name: String,
    version: Option<String>,
    /// The git ref it is pinned to.
    git_ref: Option<String>,
    /// What the ref resolved to (a tree id), or why it could not be read.
    resolved: Option<String>,
    resolve_error: Option<String>,
}

/// One rendered object.
#[derive(Debug, Serialize)]
pub(super) struct ObjectView {
    kind: String,
    namespace: String,
    name: String,
    component: String,
    /// The template and line it came from.
    source: String,
    /// `current`, `in progress`, `failed` or `unknown` (not seen by a watch).
    health: &'static str,
    reason: String,
}

/// One render error.
#[derive(Debug, Serialize)]
pub(super) struct DiagnosticView {
    file: String,
    line: Option<usize>,
    message: String,
}

/// One history entry.
#[derive(Debug, Serialize)]
pub(super) struct HistoryView {
    commit: String,
    at: String,
    ago: String,
    outcome: &'static str,
    created: usize,
    configured: usize,
    unchanged: usize,
    pruned: usize,
    failed: usize,
    repeats: u32,
    error: Option<String>,
}

/// Render `name` at `rev` (on a blocking thread).
pub(super) async fn render(rev: &Arc<Revision>, name: &str) -> Option<TenantRender> {
    let repo = rev.repo.clone();
    let only = vec![name.to_string()];
    tokio::task::spawn_blocking(move || fief_core::pipeline::render_all(&repo, &only).pop())
        .await
        .ok()
        .flatten()
}

/// The page of the tenant of `row`.
pub(super) async fn view(
    shared: &Shared,
    web: &super::Web,
    row: Row<'static>,
    rev: Option<Arc<Revision>>,
) -> TenantView {
    let name = row.name.to_string();
    let parsed: Option<Arc<Tenant>> = rev
        .as_ref()
        .and_then(|r| r.repo.tenants.get(&name)?.as_ref().ok().cloned());
    let rendered = match &rev {
        Some(r) if r.repo.tenants.contains_key(&name) => render(r, &name).await,
        _ => None,
    };
    let namespaces: Vec<(String, String)> = rendered
        .as_ref()
        .map(|r| r.namespaces.clone().into_iter().collect())
        .unwrap_or_default();
    let own: Vec<String> = namespaces.iter().map(|(_, ns)| ns.clone()).collect();
    let (events, events_errors) = super::events::recent(&web.client, &own).await;
    let verdict = shared.gate.verdict_of(&name);
    let entries = super::lock(&web.history).of(&name);
    let now = crate::metrics::unix_now();
    TenantView {
        commit: rev.as_ref().map(|r| r.commit.clone()),
        labels: parsed
            .as_ref()
            .map(|t| t.metadata.labels.clone())
            .unwrap_or_default(),
        owner: parsed.as_ref().map(|t| {
            let o = &t.spec.owner;
            (o.email.clone(), o.organization.clone())
        }),
        lifecycle: parsed.as_ref().map(|t| t.spec.state),
        spare: parsed.as_ref().is_some_and(|t| t.spec.spare),
        namespaces,
        components: match (&rev, &parsed) {
            (Some(r), Some(t)) => components(r, &r.repo, t),
            _ => Vec::new(),
        },
        objects: rendered
            .as_ref()
            .map(|r| objects(shared, r))
            .unwrap_or_default(),
        verdict: verdict.as_ref().map(|v| v.health.as_str()),
        unhealthy: verdict
            .map(|v| {
                v.objects
                    .into_iter()
                    .map(|o| (o.object, o.reason))
                    .collect()
            })
            .unwrap_or_default(),
        diagnostics: rendered
            .as_ref()
            .map(|r| {
                r.errors
                    .iter()
                    .map(|d| DiagnosticView {
                        file: d.file.clone(),
                        line: d.line,
                        message: format!("{}\nhint: {}", d.problem, d.problem.hint()),
                    })
                    .collect()
            })
            .unwrap_or_default(),
        last_error: entries
            .first()
            .and_then(|e| e.error.as_deref())
            .map(str::to_string),
        history: entries.iter().map(|e| history(e, now)).collect(),
        events,
        events_errors,
        row,
    }
}

fn components(rev: &Revision, repo: &Repo, tenant: &Tenant) -> Vec<ComponentView> {
    tenant
        .spec
        .components
        .iter()
        .map(|c| {
            let meta_version = repo
                .components
                .get(&c.key())
                .and_then(|p| p.as_ref().ok())
                .and_then(|m| m.meta.version.clone());
            let pin = c
                .git_ref
                .as_ref()
                .and_then(|r| rev.pins.get(&(c.name.clone(), r.clone())));
            ComponentView {
                name: c.name.clone(),
                version: c.version.clone().or(meta_version),
                git_ref: c.git_ref.clone(),
                resolved: pin.and_then(|p| p.as_ref().ok()).map(|t| short(t)),
                resolve_error: pin.and_then(|p| p.as_ref().err()).cloned(),
            }
        })
        .collect()
}

fn objects(shared: &Shared, render: &TenantRender) -> Vec<ObjectView> {
    let ids: Vec<_> = render.objects.iter().map(|o| o.id.clone()).collect();
    let health = shared.gate.health_of(&ids);
    render
        .objects
        .iter()
        .zip(health)
        .map(|(o, h)| {
            let (health, reason) = match h {
                Some(Health::Current) => ("current", String::new()),
                Some(Health::InProgress(why)) => ("in progress", why),
                Some(Health::Failed(why)) => ("failed", why),
                None => ("unknown", String::new()),
            };
            let kind = if o.id.group.is_empty() {
                o.id.kind.clone()
            } else {
                format!("{}.{}", o.id.kind, o.id.group)
            };
            ObjectView {
                kind,
                namespace: o.id.namespace.clone(),
                name: o.id.name.clone(),
                component: o.component.clone(),
                source: o.source.to_string(),
                health,
                reason,
            }
        })
        .collect()
}

fn history(e: &Entry, now: i64) -> HistoryView {
    let c = &e.counts;
    HistoryView {
        commit: short(&e.commit),
        at: super::view::rfc3339(e.at),
        ago: ago(now, e.at),
        outcome: kind_str(e.kind),
        created: c.created,
        configured: c.configured,
        unchanged: c.unchanged,
        pruned: c.pruned,
        failed: c.failed,
        repeats: e.repeats,
        error: e.error.as_deref().map(|e| {
            e.lines()
                .next()
                .unwrap_or_default()
                .chars()
                .take(200)
                .collect()
        }),
    }
}
