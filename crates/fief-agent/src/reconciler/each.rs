//! One chunk's sync: each tenant through [`sync_with`] and then the health gate, several at once,
//! never one started after `stop`, then the orphan report when it is due.
//!
//! In: the chunk's renders, the cluster's state for them, the loop state (each tenant's
//! revision; whether orphans are due). Out: the chunk's reports and inventories.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Instant;

use futures::stream::{self, StreamExt};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::super::{LoopState, Shared};
use fief_core::render::TenantRender;
use fief_kube::Resources;
use fief_kube::sync::{ClusterState, SyncOptions, SyncResult, sync_with};
use fief_source::revision::Revision;

/// What [`sync_each`] runs with.
pub(super) struct Each<'a> {
    pub(super) shared: &'a Shared,
    pub(super) resources: &'a Resources,
    pub(super) cs: &'a ClusterState,
    pub(super) sync_options: &'a SyncOptions,
    pub(super) concurrency: usize,
    pub(super) stop: &'a CancellationToken,
    pub(super) triggers: &'a HashMap<String, &'static str>,
}

/// Sync the renders one tenant at a time (`concurrency` at once), never starting one after
/// `stop`; then report orphaned inventories when due.
pub(super) async fn sync_each(
    ctx: &Each<'_>,
    state: &mut LoopState,
    renders: &[TenantRender],
) -> SyncResult {
    let known = known_for_orphans(ctx, state);
    // Each tenant's revision: its status records that commit, its health uses that repo.
    let revs: HashMap<String, Arc<Revision>> = renders
        .iter()
        .filter_map(|r| {
            Some((
                r.tenant.clone(),
                super::super::rollout::revision_for(state, &r.tenant)?,
            ))
        })
        .collect();
    let parts: Vec<SyncResult> = stream::iter(renders.iter())
        .map(|r| sync_one(ctx, r, revs.get(&r.tenant), &known))
        .buffer_unordered(ctx.concurrency.max(1))
        .filter_map(|x| async move { x })
        .collect()
        .await;
    let mut result = SyncResult::default();
    for p in parts {
        result.reports.extend(p.reports);
        result.inventories.extend(p.inventories);
    }
    if state.check_orphans && !ctx.stop.is_cancelled() {
        let p = sync_with(ctx.resources, &[], ctx.cs, &known, true, ctx.sync_options).await;
        result.reports.extend(p.reports);
        state.check_orphans = false;
    }
    result.reports.sort_by(|a, b| a.tenant.cmp(&b.tenant));
    result
}

/// Every tenant in git, for the orphan report only: a chunk without it needs none (and
/// building it would cost each chunk a pass over the fleet). With shards, other replicas'
/// tenants count as known: theirs to report.
fn known_for_orphans(ctx: &Each<'_>, state: &LoopState) -> BTreeSet<String> {
    if !state.check_orphans {
        return BTreeSet::new();
    }
    let mut known: BTreeSet<String> = match &state.rev {
        Some(r) => r.hashes.keys().cloned().collect(),
        None => BTreeSet::new(),
    };
    known.extend(
        ctx.cs
            .inventories
            .keys()
            .filter(|t| !ctx.shared.owns(t))
            .cloned(),
    );
    known
}

/// Sync one tenant at `rev` (its revision, when a rollout holds it at another than the
/// batch's) while this replica owns it; `None` when it was not started.
async fn sync_one(
    ctx: &Each<'_>,
    r: &TenantRender,
    rev: Option<&Arc<Revision>>,
    known: &BTreeSet<String>,
) -> Option<SyncResult> {
    let held;
    let sync_options = match rev {
        Some(rev) if ctx.sync_options.commit.as_deref() != Some(rev.commit.as_str()) => {
            held = SyncOptions {
                commit: Some(rev.commit.clone()),
                ..ctx.sync_options.clone()
            };
            &held
        }
        _ => ctx.sync_options,
    };
    if ctx.stop.is_cancelled() {
        return None;
    }
    if !ctx.shared.start_sync(&r.tenant) {
        // Its shard was handed back meanwhile: the new holder syncs it.
        return None;
    }
    // Never waits: another tenant's health does not hold up this apply.
    let permit = ctx.shared.gate.admit(&r.tenant);
    let trigger = ctx.triggers.get(&r.tenant).copied().unwrap_or("commit");
    let span = tracing::info_span!(
        "sync",
        tenant = r.tenant.as_str(),
        commit = sync_options.commit.as_deref().unwrap_or(""),
        trigger = trigger,
    );
    let timer = Instant::now();
    let one = std::slice::from_ref(r);
    let out = sync_with(ctx.resources, one, ctx.cs, known, false, sync_options)
        .instrument(span)
        .await;
    ctx.shared
        .cluster
        .metrics()
        .observe_tenant(&r.tenant, timer.elapsed().as_secs_f64());
    let repo = rev.map(|r| r.repo.as_ref());
    ctx.shared.gate.after_sync(repo, r, &out, permit);
    Some(out)
}
