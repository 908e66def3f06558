//! Outcomes: a batch's sync results taken into the agent's state.
//!
//! In: the [`SyncResult`] of a batch and the cluster state it ran against. Out: the
//! inventories kept for the next batch (a synced tenant's is not kept but marked evicted:
//! read back before its next sync), the drift baseline (recorded live hashes; the live hashes
//! of the objects the batch wrote, the watches' kept for the others), the queue (success
//! resets backoff, failure backs off), metrics (per-tenant readiness and prune holds, failures
//! by the category their typed [`Failure`] names) and one log line per tenant.

use std::collections::BTreeMap;
use std::time::Instant;

use super::parts::index::feed::LiveWrite;
use super::parts::index::{Baseline, Recorded};
use super::{LoopState, Shared};
use fief_core::digest::Digest;
use fief_core::inventory::{Entry, Inventory};
use fief_core::status::{Failure, Outcome};
use fief_kube::sync::{ClusterState, SyncResult, TenantReport};

/// Take a batch's results in: inventories, the drift baseline, the queue, metrics, logs.
pub(super) async fn record(
    shared: &Shared,
    state: &mut LoopState,
    cs: ClusterState,
    result: &SyncResult,
    degraded: &BTreeMap<String, String>,
) {
    // A synced tenant's inventory is not held: it is read back (one LIST per chunk) before
    // the tenant's next sync, so after a change that synced every tenant the agent does not
    // hold every inventory.
    let mut inventories = cs.inventories;
    // Each synced tenant's inventory as it stood before: its drift baseline to replace (the
    // baseline holds only what its inventory recorded, so a one-tenant sync costs that
    // tenant's objects, not the fleet's), and what its sync left as it was.
    let mut before: BTreeMap<String, Inventory> = BTreeMap::new();
    for (tenant, inv) in &result.inventories {
        if let Some(Ok(old)) = inventories.remove(tenant) {
            before.insert(tenant.clone(), old);
        }
        if inv.is_some() {
            state.evicted.insert(tenant.clone());
        } else {
            state.evicted.remove(tenant);
        }
    }
    state.inventories = Some(inventories);
    rebaseline(shared, result, &before).await;
    drop(before);
    shared.work.finish_syncs(
        result.reports.iter().map(|r| r.tenant.as_str()),
        Instant::now(),
    );
    let now = Instant::now();
    for report in &result.reports {
        account(shared, state, report, degraded, now);
    }
}

/// What each synced tenant's inventory records is its new drift baseline. The live hashes are
/// the watches' unless this sync wrote the object ([`written`]): an object the sync did not
/// touch (its render failed, its sync stopped before it, it was held) keeps the hash the
/// watches reported, so a hand edit made meanwhile is applied over by the next sync instead
/// of being skipped as unchanged. The objects of a tenant whose render failed have no desired
/// shape to hash them by, and a tenant whose sync completed needs none: both are recorded with
/// the version fief applied, and the watches judge them by it ([`super::drift`]), as they
/// judge a tenant verified at the start. So the completed tenants' desired shapes are dropped:
/// the agent holds shapes only for the tenants being synced and those whose last sync did not
/// complete, and a change every tenant takes leaves it holding what it held at the start.
/// The baseline is the sync path's to write; the live hashes are the index task's, handed to
/// it and taken in before this returns (the tenants are still in flight meanwhile, so the
/// watches' events of this sync's writes, sent before, are never drift).
async fn rebaseline(shared: &Shared, result: &SyncResult, before: &BTreeMap<String, Inventory>) {
    let reports: BTreeMap<&str, &TenantReport> = result
        .reports
        .iter()
        .map(|r| (r.tenant.as_str(), r))
        .collect();
    let (writes, completed) = shared
        .index
        .baseline(|recorded| take_in(recorded, result, &reports, before));
    shared.index.written(writes).await;
    shared
        .index
        .replace_desired(completed.into_iter().map(|t| (t, Vec::new())));
}

/// [`rebaseline`] under the lock of the drift baseline; returns the live hashes to hand on and
/// the tenants whose sync completed (judged by their versions from now on).
fn take_in(
    recorded: &mut Baseline<'_>,
    result: &SyncResult,
    reports: &BTreeMap<&str, &TenantReport>,
    before: &BTreeMap<String, Inventory>,
) -> (Vec<LiveWrite>, Vec<String>) {
    let mut writes = Vec::new();
    let mut completed = Vec::new();
    for id in before.values().flat_map(|i| i.entries.keys()) {
        recorded.forget_if(id, |tenant| result.inventories.contains_key(tenant));
    }
    for (tenant, inv) in &result.inventories {
        let Some(inv) = inv else { continue };
        let report = reports.get(tenant.as_str());
        let unrendered = report.is_some_and(|r| r.outcome == Outcome::Invalid);
        // Every object it renders was applied or found as recorded.
        let complete =
            report.is_some_and(|r| r.outcome == Outcome::Applied && r.is_ok() && !r.holds_back());
        if complete {
            completed.push(tenant.clone());
        }
        let by_version = unrendered || complete;
        let old = before.get(tenant);
        let name: std::sync::Arc<str> = tenant.as_str().into();
        for (id, entry) in &inv.entries {
            let id = recorded.intern(id);
            let digest = Digest::from_hex(&entry.live);
            let done = entry.done.is_some();
            let version = (by_version && !done).then(|| entry.version());
            recorded.record(
                id.clone(),
                Recorded {
                    tenant: name.clone(),
                    live: digest,
                    version,
                    done,
                },
            );
            // A done object may be gone: the watches say whether it is there.
            if done {
                continue;
            }
            let wrote = written(
                old.and_then(|o| o.entries.get(&id as &dyn crate::desired::Key)),
                entry,
            );
            if wrote || complete {
                writes.push(LiveWrite {
                    id,
                    hash: digest,
                    wrote,
                });
            }
        }
    }
    (writes, completed)
}

/// Whether a sync wrote the object it records as `now`, recorded as `old` before it: a new
/// entry, or one whose live hash or version moved. An apply that changed nothing returns the
/// object as it was, so an entry left as it was is an object this sync did not change.
fn written(old: Option<&Entry>, now: &Entry) -> bool {
    old.is_none_or(|o| {
        o.live != now.live || o.resource_version != now.resource_version || o.uid != now.uid
    })
}

/// Record one tenant's report: status for the web view, the last attempt, metrics, the
/// queue (succeeded or retried) and the revision it is now synced at.
fn account(
    shared: &Shared,
    state: &mut LoopState,
    report: &TenantReport,
    degraded: &BTreeMap<String, String>,
    now: Instant,
) {
    let ok = report.is_ok();
    let is_degraded = degraded.contains_key(&report.tenant);
    // The revision it was synced at: the head, or its last one while a rollout holds it.
    let rev = super::rollout::revision_for(state, &report.tenant);
    let commit = rev.as_ref().map_or("", |r| r.commit.as_str());
    super::web::record(shared, report, commit);
    if report.outcome != Outcome::Orphaned {
        let attempt = super::Attempt {
            commit: rev.as_ref().map(|r| r.commit.clone()).unwrap_or_default(),
            outcome: report.outcome,
            at: super::metrics::unix_now(),
            error: report.first_error().map(str::to_string),
        };
        shared.report.attempted(&report.tenant, attempt);
    }
    shared.cluster.metrics().sync_result(ok && !is_degraded);
    shared
        .cluster
        .metrics()
        .prune_hold(&report.tenant, report.prune_held.as_ref());
    let c = &report.counts;
    shared
        .cluster
        .metrics()
        .applied
        .inc_by((c.created + c.configured) as u64);
    shared.cluster.metrics().pruned.inc_by(c.pruned as u64);
    let invalid = report.outcome == Outcome::Invalid;
    // Neither orphaned nor moved tenants are this cluster's to be ready.
    if !matches!(report.outcome, Outcome::Orphaned | Outcome::Moved) {
        shared
            .cluster
            .metrics()
            .tenant_ready(&report.tenant, ok && !is_degraded && !invalid);
    }
    shared.work.queue(|q| {
        let done = ok || invalid;
        match report.outcome {
            _ if is_degraded => q.failed(&report.tenant, now),
            Outcome::Invalid
            | Outcome::Skipped
            | Outcome::Moved
            | Outcome::Applied
            | Outcome::Purged
                if done =>
            {
                q.succeeded(&report.tenant);
                if !report.holds_back() {
                    q.settled(&report.tenant);
                } else {
                    q.recheck(&report.tenant, now);
                }
                if let Some(rev) = rev
                    && let Some(h) = rev.hashes.get(&report.tenant).copied()
                {
                    state.record_synced(&report.tenant, h, rev);
                }
            }
            Outcome::Orphaned => {}
            _ => q.failed(&report.tenant, now),
        }
    });
    log_result(shared, report, is_degraded);
}

/// Log a tenant's sync (debug when nothing changed), counting a failure by its category.
fn log_result(shared: &Shared, report: &TenantReport, is_degraded: bool) {
    let ok = report.is_ok();
    let c = &report.counts;
    if ok && c.created + c.configured + c.pruned == 0 {
        tracing::debug!(
            tenant = report.tenant,
            outcome = report.outcome.as_str(),
            "unchanged"
        );
    } else if ok {
        tracing::info!(
            tenant = report.tenant,
            outcome = report.outcome.as_str(),
            created = c.created,
            configured = c.configured,
            pruned = c.pruned,
            "synced"
        );
    } else {
        let first = report.first_error().unwrap_or("");
        shared
            .cluster
            .metrics()
            .failure(failure(report, is_degraded).metric_label());
        tracing::warn!(
            tenant = report.tenant,
            outcome = report.outcome.as_str(),
            errors = report.errors.len(),
            first_error = first,
            "sync failed"
        );
    }
}

/// What a failed sync counts as in the failure metric: a tenant whose watch is down is
/// [`Failure::ClusterAccess`] (`watch`), else what its errors say
/// ([`TenantReport::failure`]); a report with no error is a render's when invalid, else an
/// apply's.
fn failure(report: &TenantReport, degraded: bool) -> Failure {
    if degraded {
        return Failure::ClusterAccess;
    }
    report
        .failure()
        .unwrap_or(if report.outcome == Outcome::Invalid {
            Failure::Render
        } else {
            Failure::Apply
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_failure_metric_category_comes_from_the_typed_error_not_its_message() {
        let mut pruned = TenantReport::new("a", Outcome::Failed);
        pruned.fail(Failure::Prune, "apply of the inventory: 403 forbidden");
        assert_eq!(failure(&pruned, false).metric_label(), "prune");
        assert_eq!(failure(&pruned, true).metric_label(), "watch");
        let mut forbidden = TenantReport::new("b", Outcome::Failed);
        forbidden.fail(Failure::Forbidden, "delete ConfigMap x");
        forbidden.fail(Failure::Inventory, "write inventory");
        assert_eq!(failure(&forbidden, false).metric_label(), "forbidden");
        let invalid = TenantReport::new("c", Outcome::Invalid);
        assert_eq!(failure(&invalid, false).metric_label(), "render");
        let failed = TenantReport::new("d", Outcome::Failed);
        assert_eq!(failure(&failed, false).metric_label(), "apply");
    }
}
