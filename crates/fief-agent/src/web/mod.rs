//! The read-only web view (`fief agent --web`): server-side HTML under `/ui/` on the agent's
//! own listener.
//!
//! In: GET requests (and the login form's POST when `--web-token-file` is set); what the agent
//! holds in memory (the fetched revision, each tenant's recent syncs, the health gate's
//! verdicts, suspended tenants, the rollout); for the tenant page only, one render of that
//! tenant and a LIST of the Events in its namespaces (bounded by a short timeout). Out: three
//! pages — the overview, the tenant table (search, filters, sort, 100 rows a page) and a
//! tenant's page — plus a login form and a 404 page. Nothing is written anywhere: no cluster
//! request but the Events LIST, no git call. Objects are shown by kind, namespace, name and
//! health only, never their data; render errors come from the render, which scrubs secret
//! values from them.

mod auth;
mod events;
mod fleet;
pub mod history;
mod overview;
mod pages;
pub mod table;
mod tenant;
mod view;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use axum::Router;
use axum::routing::get;
use tokio::sync::watch;

use super::{Shared, lock};
use fief_core::status::TenantReport;
use fief_source::revision::Revision;

pub use view::{View, render_table};

/// How the web view is served.
#[derive(Clone, Default)]
pub struct WebOptions {
    /// The token every request must carry (`None`: the view is open to whoever reaches the
    /// port).
    pub token: Option<Vec<u8>>,
}

impl std::fmt::Debug for WebOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebOptions")
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// Each tenant's wave, for one commit.
type Waves = Arc<HashMap<String, Arc<str>>>;

/// What the web view holds.
pub(crate) struct Web {
    access: auth::Access,
    /// This agent's cluster (`--cluster`).
    cluster: String,
    /// A client for the Events LIST, outside the syncs' rate limit.
    client: kube::Client,
    /// The source task's revisions.
    revisions: OnceLock<watch::Receiver<Option<Arc<Revision>>>>,
    /// Each tenant's recent syncs.
    history: Mutex<history::History>,
    /// Each tenant's wave under fief.yaml `rollout.waves`, for the commit it was worked out at.
    waves: Mutex<Option<(String, Waves)>>,
    view: View,
}

impl Web {
    /// The web view of an agent for `cluster`, listing Events with `client`.
    pub(crate) fn new(options: &WebOptions, cluster: &str, client: kube::Client) -> Web {
        Web {
            access: auth::Access::new(options.token.clone()),
            cluster: cluster.to_string(),
            client,
            revisions: OnceLock::new(),
            history: Mutex::default(),
            waves: Mutex::default(),
            view: View::new(),
        }
    }

    /// Hand over the source task's revision channel (once, at start).
    pub(crate) fn set_revisions(&self, rx: watch::Receiver<Option<Arc<Revision>>>) {
        let _ = self.revisions.set(rx);
    }

    /// The last revision read from git.
    fn revision(&self) -> Option<Arc<Revision>> {
        self.revisions.get().and_then(|rx| rx.borrow().clone())
    }

    /// Each tenant's wave at `rev` (worked out once per commit).
    fn waves(&self, rev: Option<&Revision>) -> Waves {
        let Some(rev) = rev else {
            return Waves::default();
        };
        let mut cached = lock(&self.waves);
        if let Some((commit, waves)) = cached.as_ref()
            && *commit == rev.commit
        {
            return waves.clone();
        }
        let waves: Waves = Arc::new(assign_waves(rev));
        *cached = Some((rev.commit.clone(), waves.clone()));
        waves
    }
}

/// Each tenant's wave under the revision's fief.yaml `rollout.waves` (none without waves).
fn assign_waves(rev: &Revision) -> HashMap<String, Arc<str>> {
    let Some(config) = rev
        .repo
        .config
        .as_ref()
        .ok()
        .and_then(|c| c.rollout.as_ref())
    else {
        return HashMap::new();
    };
    let labels = rev
        .repo
        .tenants
        .iter()
        .map(|(t, p)| {
            let l = p
                .as_ref()
                .map(|t| t.metadata.labels.clone())
                .unwrap_or_default();
            (t.clone(), l)
        })
        .collect();
    let mut out = HashMap::new();
    for wave in fief_core::rollout::assign(config, &labels) {
        let name: Arc<str> = wave.name.as_str().into();
        for t in wave.tenants {
            out.insert(t, name.clone());
        }
    }
    out
}

/// Record a sync report made at `commit` in the tenant's history (with the view on).
pub(crate) fn record(shared: &Shared, report: &TenantReport, commit: &str) {
    if let Some(web) = shared.report.web() {
        lock(&web.history).record(report, commit, crate::metrics::unix_now());
    }
}

/// Record a tenant found as last applied at `commit` (with the view on).
pub(crate) fn verified(shared: &Shared, tenant: &str, commit: &str) {
    if let Some(web) = shared.report.web() {
        lock(&web.history).verified(tenant, commit, crate::metrics::unix_now());
    }
}

/// The view's routes (none when it is off).
pub(crate) fn routes(shared: &Shared) -> Router<Arc<Shared>> {
    if shared.report.web().is_none() {
        return Router::new();
    }
    Router::new()
        .route("/", get(pages::root_to_overview))
        .route("/ui", get(pages::to_overview))
        .route("/ui/", get(pages::overview))
        .route("/ui/tenants", get(pages::tenants))
        .route("/ui/tenants/{name}", get(pages::tenant))
        .route("/ui/login", get(pages::login_form).post(pages::login))
        .route("/ui/{*rest}", get(pages::not_found))
}
