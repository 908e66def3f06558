//! The reconciler: verify, render the due tenants and sync them one by one, stopping between
//! tenants when told to.
//!
//! In: due tenant names with what queued them, the loop state (revision, inventories) and the
//! watches' live hashes; a cancellation token (shutdown or lost Lease). Out: tenants found as
//! last applied taken as synced without a render ([`super::verify`]); for the others applies,
//! prunes, inventory writes, Events and metrics; failed and cancelled tenants back on the
//! queue. Rendering runs on a blocking thread, the next chunk's while this one syncs. Every
//! rendered tenant's desired objects (and every candidate's recorded versions) are known
//! before the watches' lists are used, so a start on an applied cluster finds every live hash
//! and sends nothing. A tenant using a kind that cannot be watched is degraded (reported on
//! it, nothing applied or pruned); the others go on. A tenant whose last sync was interrupted
//! (`Reconciling=True` with reason `Progressing`, e.g. after SIGKILL) is applied again in full
//! so its sync is finished; one waiting for health is not (its sync finished).

use std::sync::Arc;
use std::time::Duration;

use super::{LoopState, Shared};
use fief_core::render::TenantRender;
use fief_source::revision::Revision;

mod batch;
mod each;
mod kinds;
pub(super) use batch::batch;

/// How long a batch waits for the initial list of a kind before degrading its tenants.
const LIST_WAIT: Duration = Duration::from_secs(30);

/// A chunk's renders with their desired shapes, not yet recorded.
type Rendered = Vec<(
    Vec<TenantRender>,
    Vec<(String, Vec<super::desired::Shaped>)>,
)>;

/// Group the due tenants by their revision (the head, or the one a rollout holds it at).
fn by_revision(state: &LoopState, due: Vec<String>) -> Vec<(Arc<Revision>, Vec<String>)> {
    let mut groups: Vec<(Arc<Revision>, Vec<String>)> = Vec::new();
    for t in due {
        let Some(rev) = super::rollout::revision_for(state, &t) else {
            continue;
        };
        match groups.iter_mut().find(|(r, _)| Arc::ptr_eq(r, &rev)) {
            Some((_, ts)) => ts.push(t),
            None => groups.push((rev, vec![t])),
        }
    }
    groups
}

/// Render each group at its revision on a blocking thread, with the desired shapes of the
/// renders; nothing is recorded yet (see [`record_rendered`]).
async fn compute(groups: Vec<(Arc<Revision>, Vec<String>)>) -> Rendered {
    let mut out = Vec::new();
    for (rev, due) in groups {
        let due: Vec<String> = due
            .into_iter()
            .filter(|t| rev.hashes.contains_key(t))
            .collect();
        if due.is_empty() {
            continue;
        }
        let batch = fief_core::fleet::BatchRenders::from_repo(
            rev.repo.clone(),
            Arc::new(fief_core::scope::EnvScope::All),
            Arc::new(rev.hashes.clone()),
        );
        let rendered = tokio::task::spawn_blocking(move || {
            let renders = batch.batch(&due);
            let shapes: Vec<(String, Vec<super::desired::Shaped>)> = renders
                .iter()
                .map(|r| (r.tenant.clone(), super::desired::shapes_of(r)))
                .collect();
            (renders, shapes)
        })
        .await;
        match rendered {
            Ok(r) => out.push(r),
            Err(e) => tracing::error!(error = %e, "render task failed"),
        }
    }
    out
}

/// Record rendered tenants' desired objects; returns the renders.
fn record_rendered(shared: &Shared, rendered: Rendered) -> Vec<TenantRender> {
    let mut out = Vec::new();
    let mut all = Vec::new();
    for (renders, shapes) in rendered {
        shared
            .cluster
            .metrics()
            .tenants_rendered
            .inc_by(renders.len() as u64);
        all.extend(shapes);
        out.extend(renders);
    }
    let shapes = shared.index.replace_desired(all);
    tracing::debug!(shapes, "desired shapes held");
    out
}

/// Render the due tenants, each at its revision; record their desired objects.
async fn render(shared: &Shared, state: &LoopState, due: Vec<String>) -> Vec<TenantRender> {
    record_rendered(shared, compute(by_revision(state, due)).await)
}

/// Tenants rendered at once: bounds the memory a batch holds at thousands of tenants (two
/// chunks' renders are held: one syncing, the next rendered ahead). Equal to the default
/// `--concurrency`, so a chunk's tenants all sync at once; a larger chunk raises the peak
/// memory without shortening a shared change (docs/src/performance.md).
const CHUNK: usize = 8;

#[cfg(test)]
#[path = "prune_tests.rs"]
mod prune_tests;
