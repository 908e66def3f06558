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

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::stream::{self, StreamExt};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::source_loop::Revision;
use super::{AgentOptions, LoopState, Shared, lock, outcome, write};
use fief_core::render::TenantRender;
use fief_kube::Resources;
use fief_kube::observe::ensure_namespace;
use fief_kube::sync::{ClusterState, SyncOptions, SyncResult, sync_with};

mod kinds;
use kinds::{degrade, kinds_of, set_degraded, watch_kinds};

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
        let repo = rev.repo.clone();
        let rendered = tokio::task::spawn_blocking(move || {
            let mut renders = fief_core::pipeline::render_all(&repo, &due);
            fief_core::inputs::stamp(&mut renders, &rev.hashes);
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
    let mut desired = write(&shared.desired);
    let mut ids = lock(&shared.ids);
    for (renders, shapes) in rendered {
        shared.metrics.tenants_rendered.inc_by(renders.len() as u64);
        for (tenant, objects) in shapes {
            desired.replace(&tenant, objects, &mut ids);
        }
        out.extend(renders);
    }
    drop(ids);
    desired.drop_unused_shapes();
    tracing::debug!(shapes = desired.shapes(), "desired shapes held");
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

/// Render and sync the due tenants, a chunk at a time; stop between tenants when `stop` is
/// cancelled. Tenants queued by a commit whose inventories stand for a render at their inputs
/// are first checked against the watches' lists ([`super::verify`]): those found as last
/// applied are neither rendered nor synced. Every other due tenant's desired objects are
/// recorded before the watches' first lists are used, so their live hashes are all known (no
/// re-apply on start).
#[allow(clippy::too_many_lines)]
pub(super) async fn batch(
    shared: &Arc<Shared>,
    resources: &Resources,
    options: &AgentOptions,
    state: &mut LoopState,
    due: Vec<String>,
    stop: &CancellationToken,
) {
    let Some(rev) = state.rev.clone() else { return };
    let (due, ticket) = super::requests::admit(shared, &rev, options, due).await;
    let _syncing = shared.events.syncing();
    let started = Instant::now();
    let triggers: HashMap<String, &'static str> = {
        let mut q = lock(&shared.queue);
        due.iter().map(|t| (t.clone(), q.take_trigger(t))).collect()
    };
    let config = rev.repo.config.as_ref().ok();
    let agent_namespace = config
        .map(|c| c.agent_namespace.clone())
        .unwrap_or_else(|| options.lease_namespace.clone());
    shared.gate.set_namespace(&agent_namespace);
    let sync_options = SyncOptions {
        agent_namespace: agent_namespace.clone(),
        concurrency: 1,
        object_concurrency: 8,
        allow_mass_prune: false,
        guard: config.map(|c| c.prune_guard).unwrap_or_default(),
        cluster: options.cluster.clone(),
        commit: Some(rev.commit.clone()),
        progress: None,
    };
    if !state.namespace_ready {
        match ensure_namespace(resources.client(), &agent_namespace).await {
            Ok(()) => state.namespace_ready = true,
            Err(e) => tracing::error!(error = %e, "cannot create the agent namespace"),
        }
    }
    // Candidates for verification: their objects are judged by version from the lists on,
    // and their inventories are not kept (at start, dropped page by page as they are read).
    let mut seeder = super::verify::Seeder::new(state, &due, &triggers);
    super::inventories::offer(shared, resources, state, &agent_namespace, &mut seeder).await;
    let mut kinds = std::mem::take(&mut seeder.kinds);
    let candidates = seeder.candidates.len();
    let rest: Vec<String> = due
        .iter()
        .filter(|t| !seeder.candidates.contains_key(*t))
        .cloned()
        .collect();
    let mut chunks: Vec<Vec<String>> = rest.chunks(CHUNK).map(<[String]>::to_vec).collect();
    // Until the first full pass is done, every tenant to render has its desired shapes
    // recorded before the watches' first lists are used: render every chunk once for
    // that. After it, the watches hold every live hash already, so each chunk is rendered
    // once, and only a kind not watched yet waits for its list.
    let prepass = chunks.len() > 1 && !lock(&shared.health).first_pass_done;
    let mut first = None;
    let mut degraded = BTreeMap::new();
    if prepass || chunks.len() == 1 || candidates > 0 {
        if prepass || chunks.len() == 1 {
            for chunk in &chunks {
                let renders = render(shared, state, chunk.clone()).await;
                kinds_of(&renders, &mut kinds);
                if chunks.len() == 1 {
                    first = Some(renders);
                }
            }
        }
        tracing::debug!(
            tenants = due.len(),
            candidates,
            seconds = started.elapsed().as_secs_f64(),
            "batch: rendered; verification candidates seeded"
        );
        if candidates > 0 && lock(&shared.health).first_pass_done {
            kinds::relist_now(shared);
        }
        degraded = watch_kinds(shared, resources, &kinds, stop).await;
        set_degraded(shared, &due, &degraded);
        tracing::debug!(
            seconds = started.elapsed().as_secs_f64(),
            "batch: watches listed"
        );
    }
    let (verified, fallen) = seeder.judge(shared, &degraded);
    super::verify::account(shared, state, &verified);
    // Chunks rendered in the prepass had their kinds listed there; the others list theirs.
    let listed = if prepass { chunks.len() } else { 0 };
    chunks.extend(fallen.chunks(CHUNK).map(<[String]>::to_vec));
    if chunks.is_empty() && state.check_orphans {
        // Nothing to sync, but the orphan report is due.
        chunks.push(Vec::new());
    }
    let mut cancelled: Vec<String> = Vec::new();
    // The next chunk renders (on a blocking thread) while this one syncs; its desired objects
    // are recorded only when its turn comes.
    let mut next: Option<tokio::task::JoinHandle<Rendered>> = None;
    // Likewise its evicted inventories are read while this one syncs.
    let mut ahead: Option<super::inventories::Ahead> = None;
    for (i, chunk) in chunks.iter().enumerate() {
        let rendering = next.take();
        if stop.is_cancelled() {
            if let Some(h) = rendering {
                h.abort();
            }
            if let Some(a) = ahead.take() {
                a.abort();
            }
            cancelled.extend(chunk.iter().cloned());
            continue;
        }
        let mut renders = match first.take() {
            Some(r) => r,
            None => {
                let rendered = match rendering {
                    Some(h) => match h.await {
                        Ok(r) => r,
                        Err(e) => {
                            tracing::error!(error = %e, "render task failed");
                            Vec::new()
                        }
                    },
                    None => compute(by_revision(state, chunk.clone())).await,
                };
                let renders = record_rendered(shared, rendered);
                if i >= listed {
                    let mut kinds = BTreeMap::new();
                    kinds_of(&renders, &mut kinds);
                    let now = watch_kinds(shared, resources, &kinds, stop).await;
                    set_degraded(shared, chunk, &now);
                    degraded.retain(|t, _| !chunk.contains(t));
                    degraded.extend(now);
                }
                renders
            }
        };
        let read_ahead = ahead.take();
        if let Some(c) = chunks.get(i + 1)
            && !stop.is_cancelled()
        {
            next = Some(tokio::spawn(compute(by_revision(state, c.clone()))));
            ahead = super::inventories::read_ahead(resources, state, c, &agent_namespace);
        }
        for r in renders.iter_mut() {
            if let Some(why) = degraded.get(&r.tenant) {
                degrade(r, why);
            }
        }
        let Some(cs) = super::inventories::cluster_state(
            shared,
            resources,
            state,
            &renders,
            &sync_options,
            read_ahead,
        )
        .await
        else {
            let now = Instant::now();
            let mut q = lock(&shared.queue);
            for t in chunk {
                q.failed(t, now);
            }
            continue;
        };
        let ctx = Each {
            shared,
            resources,
            cs: &cs,
            sync_options: &sync_options,
            concurrency: options.concurrency,
            stop,
            triggers: &triggers,
        };
        let result = sync_each(&ctx, state, &renders).await;
        cancelled.extend(
            renders
                .iter()
                .map(|r| r.tenant.clone())
                .filter(|t| !result.reports.iter().any(|rep| &rep.tenant == t)),
        );
        outcome::record(shared, state, cs, &result, &degraded);
        super::requests::after_batch(shared, ticket, &result.reports);
        shared.events.send(&agent_namespace, &result);
        shared.notify.synced(&result.reports, &rev.commit);
    }
    let now = Instant::now();
    for t in &cancelled {
        lock(&shared.queue).push(t, now);
    }
    if !cancelled.is_empty() {
        tracing::info!(
            left = cancelled.len(),
            "batch stopped between tenants; the rest is left for the next run"
        );
    }
    shared
        .metrics
        .batch_seconds
        .observe(started.elapsed().as_secs_f64());
    let mut h = lock(&shared.health);
    if !h.first_pass_done && cancelled.is_empty() {
        h.first_pass_done = true;
        tracing::info!(
            tenants = rev.hashes.len(),
            verified = verified.len(),
            seconds = started.elapsed().as_secs_f64(),
            "first full sync done; ready"
        );
    }
}

/// What [`sync_each`] runs with.
struct Each<'a> {
    shared: &'a Shared,
    resources: &'a Resources,
    cs: &'a ClusterState,
    sync_options: &'a SyncOptions,
    concurrency: usize,
    stop: &'a CancellationToken,
    triggers: &'a HashMap<String, &'static str>,
}

/// Sync the renders one tenant at a time (`concurrency` at once), never starting one after
/// `stop`; then report orphaned inventories when due.
#[allow(clippy::too_many_lines)]
async fn sync_each(ctx: &Each<'_>, state: &mut LoopState, renders: &[TenantRender]) -> SyncResult {
    // Every tenant in git, for the orphan report only: a chunk without it needs none (and
    // building it would cost each chunk a pass over the fleet).
    let mut known: BTreeSet<String> = match &state.rev {
        Some(r) if state.check_orphans => r.hashes.keys().cloned().collect(),
        _ => BTreeSet::new(),
    };
    if state.check_orphans {
        // Other replicas' tenants are theirs to report.
        known.extend(
            ctx.cs
                .inventories
                .keys()
                .filter(|t| !ctx.shared.owns(t))
                .cloned(),
        );
    }
    // Each tenant's revision: its status records that commit, its health uses that repo.
    let revs: HashMap<String, Arc<Revision>> = renders
        .iter()
        .filter_map(|r| {
            Some((
                r.tenant.clone(),
                super::rollout::revision_for(state, &r.tenant)?,
            ))
        })
        .collect();
    let parts: Vec<SyncResult> = stream::iter(renders.iter())
        .map(|r| {
            let known = &known;
            let rev = revs.get(&r.tenant);
            let repo = rev.map(|r| r.repo.as_ref());
            async move {
                let held;
                let sync_options = match rev {
                    Some(rev)
                        if ctx.sync_options.commit.as_deref() != Some(rev.commit.as_str()) =>
                    {
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
                let permit = ctx.shared.gate.admit(&r.tenant, ctx.stop).await?;
                if !ctx.shared.start_sync(&r.tenant) {
                    // Its shard was handed back meanwhile: the new holder syncs it.
                    return None;
                }
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
                    .metrics
                    .observe_tenant(&r.tenant, timer.elapsed().as_secs_f64());
                ctx.shared.gate.after_sync(repo, r, &out, permit);
                Some(out)
            }
        })
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
