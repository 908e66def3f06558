//! A `fief reconcile` request: fetch git, wait until the fetched commit is read, queue the
//! asked tenants.
//!
//! In: the request (its ConfigMap, tenant or all, the time asked) and the revisions the
//! source task publishes. Out: the request pending on its tenants (answered by
//! [`super::after_batch`] once they have all synced), each queued for a sync now; or its
//! ConfigMap answered `Failed: ...` when git cannot be fetched or read in time or the tenant
//! has no file.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::{Pending, answer, answer_all, resync_now, take_done};
use crate::{Shared, lock};
use fief_source::revision::Revision;

fn fetches(shared: &Shared) -> u64 {
    use crate::metrics::ResultLabel;
    ["success", "failure"]
        .iter()
        .map(|r| {
            shared
                .cluster
                .metrics()
                .fetches
                .get_or_create(&ResultLabel {
                    result: (*r).to_string(),
                })
                .get()
        })
        .sum()
}

/// Handle one reconcile request: fetch git, wait until the fetched commit is read, queue the
/// asked tenants (with `release`, a person's release of the tenant's held mass prune, for the
/// sync that answers it); [`after_batch`] answers once they have all synced.
pub(super) async fn handle(
    shared: Arc<Shared>,
    revisions: Option<watch::Receiver<Option<Arc<Revision>>>>,
    namespace: String,
    configmap: String,
    tenant: Option<String>,
    at: String,
    release: Option<String>,
) {
    tracing::info!(
        configmap,
        requested_at = at,
        "reconcile requested: fetching git"
    );
    let before = fetches(&shared);
    shared.source.request_fetch();
    let deadline = Instant::now() + Duration::from_secs(300);
    let fail = |why: String| {
        let (client, ns, cm, at) = (
            shared.cluster.client().clone(),
            namespace.clone(),
            configmap.clone(),
            at.clone(),
        );
        async move { answer(&client, &ns, &cm, &at, &format!("Failed: {why}")).await }
    };
    let rev = match fetched_revision(&shared, revisions.as_ref(), before, deadline).await {
        Ok(rev) => rev,
        Err(why) => return fail(why).await,
    };
    let tenants: Vec<String> = match &tenant {
        Some(t) if !rev.hashes.contains_key(t) => {
            return fail(format!(
                "tenant {t} has no tenant file in git at commit {}",
                rev.commit
            ))
            .await;
        }
        // With shards, the replica that syncs the tenant answers for it.
        Some(t) if !shared.owns(t) => return,
        Some(t) => vec![t.clone()],
        None => rev
            .hashes
            .keys()
            .filter(|t| shared.owns(t))
            .cloned()
            .collect(),
    };
    if let (Some(t), Some(note)) = (&tenant, release) {
        // Honoured by the sync that answers this request, and dropped once it is answered.
        tracing::info!(
            tenant = t.as_str(),
            released = note.as_str(),
            "held mass prune released by a person for this request"
        );
        lock(&shared.work.requests().inner)
            .releases
            .insert(t.clone(), note);
    }
    queue(&shared, &namespace, configmap, at, &rev.commit, tenants);
}

/// The revision of the commit the fetch after `before` fetches, once the source loop has read
/// it; or why not (the fetch failed, or `deadline` passed).
async fn fetched_revision(
    shared: &Shared,
    revisions: Option<&watch::Receiver<Option<Arc<Revision>>>>,
    before: u64,
    deadline: Instant,
) -> Result<Arc<Revision>, String> {
    let fetched = shared
        .work
        .wait_for(deadline, shared.cluster.shutdown(), || {
            fetches(shared) > before
        })
        .await;
    if !fetched {
        return Err("the git fetch did not finish in time".to_string());
    }
    let mut found: Result<Option<Arc<Revision>>, String> = Ok(None);
    shared
        .work
        .wait_for(deadline, shared.cluster.shutdown(), || {
            found = read_revision(shared, revisions);
            !matches!(found, Ok(None))
        })
        .await;
    found.and_then(|rev| rev.ok_or_else(|| "the fetched commit was not read in time".to_string()))
}

/// The published revision when it is the last fetched commit's (`None`: not read yet), or
/// why the fetch failed.
fn read_revision(
    shared: &Shared,
    revisions: Option<&watch::Receiver<Option<Arc<Revision>>>>,
) -> Result<Option<Arc<Revision>>, String> {
    let (commit, error) = shared.report.last_fetch();
    if let Some(e) = error {
        return Err(format!("git fetch failed: {e}"));
    }
    let current = revisions.and_then(|r| r.borrow().clone());
    Ok(match (current, commit) {
        (Some(rev), Some(c)) if rev.commit == c => Some(rev),
        _ => None,
    })
}

/// Record the request as pending on `tenants` (suspended ones are skipped) and queue each
/// for a sync now; answer the requests that are already done.
fn queue(
    shared: &Arc<Shared>,
    namespace: &str,
    configmap: String,
    at: String,
    commit: &str,
    tenants: Vec<String>,
) {
    let mut inner = lock(&shared.work.requests().inner);
    let mut p = Pending {
        configmap,
        at,
        commit: commit.to_string(),
        after_batch: inner.batches,
        remaining: BTreeSet::new(),
        synced: 0,
        failed: Vec::new(),
        skipped: Vec::new(),
    };
    for t in tenants {
        match inner.suspended.get(&t) {
            Some(why) => p.skipped.push(format!("{t} (suspended {why})")),
            None => {
                p.remaining.insert(t.clone());
                resync_now(shared, &t, "reconcile");
            }
        }
    }
    inner.pending.push(p);
    let done = take_done(&mut inner);
    drop(inner);
    answer_all(shared, namespace, done);
}

#[cfg(test)]
#[path = "requests_tests.rs"]
mod tests;
