//! Day-2 requests to the agent through the cluster: suspended tenants and `fief reconcile`.
//!
//! In: a metadata watch on the ConfigMaps labelled `app.kubernetes.io/managed-by=fief` in the
//! agent namespace (each tenant's inventory, and `fief-reconcile`), the revisions the source
//! task publishes, and each batch's reports. Out: the due tenants minus the suspended ones
//! ([`admit`]: nothing of a suspended tenant is applied, repaired or pruned); a resumed tenant
//! queued at once; for a reconcile request, a git fetch, the asked tenants queued (backoff
//! skipped), and once they have all synced, `fief.dev/lastHandledReconcileAt` and
//! `fief.dev/reconcileResult` written on the ConfigMap that carried the request.
//!
//! Here: the watch, suspended tenants and the answers; a reconcile request's fetch and queue
//! in `reconcile`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use kube::core::PartialObjectMeta;
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::watch;

use super::{AgentOptions, Shared, lock};
use fief_core::objects;
use fief_core::status::{
    ANNOTATION_ALLOW_MASS_PRUNE, ANNOTATION_HANDLED_AT, ANNOTATION_RECONCILE_RESULT, Flags,
    RECONCILE_ALL, TenantReport,
};
use fief_kube::sync::PruneRelease;
use fief_source::revision::Revision;

mod reconcile;

use reconcile::handle;

/// How long a batch waits for the first list of the agent namespace's ConfigMaps.
const LIST_WAIT: Duration = Duration::from_secs(30);
/// Field manager of the agent's answers.
const MANAGER: &str = "fief-agent";

/// What the agent knows of the day-2 requests.
#[derive(Default)]
pub(super) struct Requests {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// The namespace watched (set by the first batch).
    namespace: Option<String>,
    /// The first list of that namespace is done.
    listed: bool,
    /// Why the watch fails, if it does.
    error: Option<String>,
    /// Suspended tenants: who, when, why.
    suspended: BTreeMap<String, String>,
    /// Held mass prunes released by a person with a pending request: tenant → who, when.
    releases: BTreeMap<String, String>,
    /// Tenants whose inventory was deleted since the last batch (`fief retire`, by hand):
    /// the loop reads them back before it trusts a copy it holds.
    deleted: BTreeSet<String>,
    /// Requests seen (ConfigMap name, requestedAt): each is handled once.
    seen: BTreeSet<(String, String)>,
    /// Requests whose tenants are queued and not all synced yet.
    pending: Vec<Pending>,
    /// Batches admitted so far: a request counts only reports of batches admitted after it
    /// was registered (so after the loop took the fetched commit).
    batches: u64,
    /// The source task's revisions (for a request: wait until the fetched commit is read).
    revisions: Option<watch::Receiver<Option<Arc<Revision>>>>,
}

/// A reconcile request in progress.
struct Pending {
    configmap: String,
    at: String,
    commit: String,
    /// `batches` when registered.
    after_batch: u64,
    remaining: BTreeSet<String>,
    synced: usize,
    failed: Vec<String>,
    /// Suspended tenants the request covered: left alone, not a failure.
    skipped: Vec<String>,
}

/// The held mass prunes people released (`fief reconcile --allow-mass-prune`) among `due`:
/// tenant → who and when. Each stands until its tenant's request is answered.
pub(super) fn releases(shared: &Shared, due: &[String]) -> PruneRelease {
    let inner = lock(&shared.work.requests().inner);
    let notes: BTreeMap<String, String> = due
        .iter()
        .filter_map(|t| Some((t.clone(), inner.releases.get(t)?.clone())))
        .collect();
    if notes.is_empty() {
        PruneRelease::None
    } else {
        PruneRelease::Tenants(notes)
    }
}

/// Hand the source task's revision channel to the request handler (once, at start).
pub(super) fn set_revisions(shared: &Shared, rx: watch::Receiver<Option<Arc<Revision>>>) {
    lock(&shared.work.requests().inner).revisions = Some(rx);
}

/// The due tenants that may be synced now: suspended tenants are dropped (and logged). Starts
/// the watch of `namespace`'s ConfigMaps on first use and waits (bounded) for its first list,
/// so a suspended tenant is never synced at start.
pub(super) async fn admit(
    shared: &Arc<Shared>,
    rev: &Revision,
    options: &AgentOptions,
    due: Vec<String>,
) -> (Vec<String>, u64) {
    let namespace = super::agent_namespace(rev, options);
    let start = {
        let mut inner = lock(&shared.work.requests().inner);
        if inner.namespace.as_deref() == Some(namespace.as_str()) {
            false
        } else {
            inner.namespace = Some(namespace.clone());
            inner.listed = false;
            inner.suspended.clear();
            true
        }
    };
    if start {
        let shared = shared.clone();
        let ns = namespace.clone();
        tokio::spawn(async move { run_watch(shared, ns).await });
    }
    // At start, wait (bounded) for the watch's first list; later, a watch that has not
    // listed (it is failing) is replaced by one metadata LIST for this batch.
    let deadline = Instant::now() + if start { LIST_WAIT } else { Duration::ZERO };
    let listed = shared
        .work
        .wait_for(deadline, shared.cluster.shutdown(), || {
            lock(&shared.work.requests().inner).listed
        })
        .await;
    if !listed {
        fallback_list(shared, &namespace).await;
    }
    let mut inner = lock(&shared.work.requests().inner);
    inner.batches += 1;
    let ticket = inner.batches;
    let mut admitted = Vec::with_capacity(due.len());
    for t in due {
        match inner.suspended.get(&t).cloned() {
            Some(why) => {
                tracing::info!(
                    tenant = t,
                    suspended = why.as_str(),
                    "suspended; not synced"
                );
                for p in inner.pending.iter_mut() {
                    if p.remaining.remove(&t) {
                        p.skipped.push(format!("{t} (suspended {why})"));
                    }
                }
            }
            None => admitted.push(t),
        }
    }
    let done = take_done(&mut inner);
    drop(inner);
    answer_all(shared, &namespace, done);
    (admitted, ticket)
}

/// The tenants whose inventory ConfigMap was deleted since the last call.
pub(super) fn take_deleted(shared: &Shared) -> BTreeSet<String> {
    std::mem::take(&mut lock(&shared.work.requests().inner).deleted)
}

/// Whether `tenant` is suspended now (a rollout does not wait for it).
pub(super) fn is_suspended(shared: &Shared, tenant: &str) -> bool {
    lock(&shared.work.requests().inner)
        .suspended
        .contains_key(tenant)
}

/// The suspended tenants now: tenant → who, when and why.
pub(super) fn suspended(shared: &Shared) -> BTreeMap<String, String> {
    lock(&shared.work.requests().inner).suspended.clone()
}

/// The watch has not listed: read the suspensions with a metadata LIST instead. When that
/// fails too, suspensions are unknown and the batch goes on (its inventory reads need the same
/// right, so the batch itself will report the failure).
async fn fallback_list(shared: &Shared, namespace: &str) {
    // Only the suspended tenants are kept, a page of metadata at a time.
    let mut suspended = BTreeMap::new();
    let client = shared.cluster.client();
    let read = fief_kube::tenant_flags::each_flags(client, namespace, |tenant, flags| {
        if let Some(note) = flags.suspended {
            suspended.insert(tenant, note);
        }
    });
    match read.await {
        Ok(()) => lock(&shared.work.requests().inner).suspended = suspended,
        Err(e) => tracing::error!(
            namespace,
            error = %e,
            "cannot read the agent namespace's ConfigMaps; suspensions are not known, syncing as usual"
        ),
    }
}

/// After a batch: count its reports against the requests in progress; answer the finished.
pub(super) fn after_batch(shared: &Arc<Shared>, ticket: u64, reports: &[TenantReport]) {
    let mut inner = lock(&shared.work.requests().inner);
    let mut released = Vec::new();
    for p in inner.pending.iter_mut().filter(|p| ticket > p.after_batch) {
        for r in reports {
            if !p.remaining.remove(&r.tenant) {
                continue;
            }
            released.push(r.tenant.clone());
            if r.is_ok() {
                p.synced += 1;
            } else {
                let why = r
                    .first_error()
                    .map(str::to_string)
                    .or_else(|| r.prune_held.as_ref().map(ToString::to_string))
                    .unwrap_or_else(|| r.outcome.to_string());
                p.failed.push(format!("{}: {why}", r.tenant));
            }
        }
    }
    for t in released {
        inner.releases.remove(&t);
    }
    let done = take_done(&mut inner);
    let namespace = inner.namespace.clone().unwrap_or_default();
    drop(inner);
    answer_all(shared, &namespace, done);
}

/// The requests whose tenants have all been synced, with their answers.
fn take_done(inner: &mut Inner) -> Vec<(String, String, String)> {
    let (done, left): (Vec<Pending>, Vec<Pending>) = std::mem::take(&mut inner.pending)
        .into_iter()
        .partition(|p| p.remaining.is_empty());
    inner.pending = left;
    done.into_iter()
        .map(|p| {
            let commit: String = p.commit.chars().take(12).collect();
            let skipped = if p.skipped.is_empty() {
                String::new()
            } else {
                format!("; left alone: {}", p.skipped.join(", "))
            };
            let result = if !p.failed.is_empty() {
                format!(
                    "Failed: {} of {} tenant(s) not synced at commit {commit}; {}{skipped}",
                    p.failed.len(),
                    p.failed.len() + p.synced,
                    p.failed.join("; ")
                )
            } else if p.synced == 0 && !p.skipped.is_empty() {
                format!("Suspended: nothing synced{skipped}")
            } else {
                format!(
                    "Ready: {} tenant(s) synced at commit {commit}{skipped}",
                    p.synced
                )
            };
            (p.configmap, p.at, result)
        })
        .collect()
}

fn answer_all(shared: &Arc<Shared>, namespace: &str, done: Vec<(String, String, String)>) {
    for (configmap, at, result) in done {
        let client = shared.cluster.client().clone();
        let ns = namespace.to_string();
        tokio::spawn(async move { answer(&client, &ns, &configmap, &at, &result).await });
    }
}

/// Write the answer to a request on the ConfigMap that carried it.
async fn answer(client: &kube::Client, namespace: &str, configmap: &str, at: &str, result: &str) {
    let result: String = result.chars().take(1000).collect();
    tracing::info!(
        configmap,
        requested_at = at,
        result,
        "reconcile request handled"
    );
    let written = fief_kube::tenant_flags::annotate(
        client,
        namespace,
        configmap,
        &[
            (ANNOTATION_HANDLED_AT, Some(at)),
            (ANNOTATION_RECONCILE_RESULT, Some(&result)),
            // A release is for the request it came with: the next request needs its own.
            (ANNOTATION_ALLOW_MASS_PRUNE, None),
        ],
        MANAGER,
    )
    .await;
    if let Err(e) = written {
        tracing::error!(error = %e, configmap, "cannot record the reconcile answer");
    }
}

/// Watch the agent namespace's fief ConfigMaps (metadata only) until shutdown or until the
/// namespace watched changes.
async fn run_watch(shared: Arc<Shared>, namespace: String) {
    let api: Api<PartialObjectMeta<ConfigMap>> =
        Api::namespaced(shared.cluster.client().clone(), &namespace);
    let config = watcher::Config::default().labels(&format!("{}=fief", objects::LABEL_MANAGED_BY));
    let mut stream = watcher(api, config).default_backoff().boxed();
    let mut seen_in_list: BTreeSet<String> = BTreeSet::new();
    loop {
        let event = tokio::select! {
            e = stream.next() => e,
            _ = shared.cluster.shutdown().cancelled() => return,
        };
        let Some(event) = event else { return };
        let mut inner = lock(&shared.work.requests().inner);
        if inner.namespace.as_deref() != Some(namespace.as_str()) {
            return;
        }
        match event {
            Ok(watcher::Event::Init) => seen_in_list.clear(),
            Ok(watcher::Event::InitApply(m)) => {
                if let Some(t) = tenant_of(&m) {
                    seen_in_list.insert(t);
                }
                seen(&shared, &mut inner, &namespace, &m);
            }
            Ok(watcher::Event::InitDone) => {
                // Inventories deleted during a gap: no longer suspended.
                let gone: Vec<String> = inner
                    .suspended
                    .keys()
                    .filter(|t| !seen_in_list.contains(*t))
                    .cloned()
                    .collect();
                for t in gone {
                    inner.suspended.remove(&t);
                }
                inner.listed = true;
                inner.error = None;
                shared.work.changed();
            }
            Ok(watcher::Event::Apply(m)) => seen(&shared, &mut inner, &namespace, &m),
            Ok(watcher::Event::Delete(m)) => {
                if let Some(t) = tenant_of(&m) {
                    inner.suspended.remove(&t);
                    inner.deleted.insert(t);
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, namespace, "watch of the agent namespace's ConfigMaps failed; retrying");
                inner.error = Some(e.to_string());
            }
        }
    }
}

fn tenant_of(m: &PartialObjectMeta<ConfigMap>) -> Option<String> {
    let name = m.metadata.name.as_deref()?;
    let tenant = m.metadata.labels.as_ref()?.get(objects::LABEL_TENANT)?;
    (name == objects::inventory_name(tenant)).then(|| tenant.clone())
}

/// One ConfigMap as it now stands: suspension changes and new reconcile requests.
fn seen(
    shared: &Arc<Shared>,
    inner: &mut Inner,
    namespace: &str,
    m: &PartialObjectMeta<ConfigMap>,
) {
    let Some(name) = m.metadata.name.clone() else {
        return;
    };
    let flags = Flags::from_annotations(&m.metadata.annotations.clone().unwrap_or_default());
    let tenant = tenant_of(m);
    if tenant.is_none() && name != RECONCILE_ALL {
        return;
    }
    if let Some(t) = &tenant {
        match &flags.suspended {
            Some(why) => {
                if inner.suspended.insert(t.clone(), why.clone()).is_none() {
                    tracing::info!(
                        tenant = t.as_str(),
                        suspended = why.as_str(),
                        "tenant suspended"
                    );
                }
            }
            None => {
                if inner.suspended.remove(t).is_some() {
                    tracing::info!(tenant = t.as_str(), "tenant resumed; syncing it now");
                    resync_now(shared, t, "resume");
                }
            }
        }
    }
    if let Some(at) = flags.pending_request()
        && inner.seen.insert((name.clone(), at.to_string()))
    {
        let shared = shared.clone();
        let (ns, at) = (namespace.to_string(), at.to_string());
        let revisions = inner.revisions.clone();
        // A person's release of a held prune goes with a request for one tenant only.
        let release = tenant.as_ref().and(flags.allow_mass_prune.clone());
        tokio::spawn(async move { handle(shared, revisions, ns, name, tenant, at, release).await });
    }
}

/// Queue a tenant now, skipping any backoff it is waiting out.
fn resync_now(shared: &Shared, tenant: &str, trigger: &'static str) {
    shared.work.queue(|q| {
        q.forget(tenant);
        q.push_for(tenant, Instant::now(), trigger);
    });
    shared.work.wake();
}
