//! One batch of due tenants, step by step: admit them, seed and judge the verification
//! candidates, then render and sync the rest a chunk at a time, then account for what was
//! left.
//!
//! In: the due tenants, the loop state, the cancellation token. Out: as [`batch`] says; each
//! step is one function here, and a chunk's sync is [`super::each`].

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use super::super::inventories::BatchWalk;
use super::super::{AgentOptions, LoopState, Shared, outcome};
use super::each::{Each, sync_each};
use super::kinds::{degrade, kinds_of, set_degraded, watch_kinds};
use super::{CHUNK, Rendered, by_revision, compute, record_rendered, render};
use fief_core::render::TenantRender;
use fief_kube::Resources;
use fief_kube::observe::ensure_namespace;
use fief_kube::sync::{PruneRelease, SyncOptions};
use fief_source::revision::Revision;

/// What every step of one batch shares.
struct Batch<'a> {
    shared: &'a Arc<Shared>,
    resources: &'a Resources,
    options: &'a AgentOptions,
    rev: Arc<Revision>,
    stop: &'a CancellationToken,
    triggers: HashMap<String, &'static str>,
    sync_options: SyncOptions,
    ticket: u64,
    started: Instant,
}

/// The chunks to render and sync, after the verification candidates were judged.
struct Plan {
    chunks: Vec<Vec<String>>,
    /// The renders of the only chunk, when it was rendered before the lists.
    first: Option<Vec<TenantRender>>,
    /// Tenants whose kinds cannot be watched, with why.
    degraded: BTreeMap<String, String>,
    /// The leading chunks whose kinds were listed already.
    listed: usize,
    /// Tenants found as last applied.
    verified: usize,
}

/// Render and sync the due tenants, a chunk at a time; stop between tenants when `stop` is
/// cancelled. Tenants queued by a commit whose inventories stand for a render at their inputs
/// are first checked against the watches' lists ([`super::super::verify`]): those found as
/// last applied are neither rendered nor synced. Every other due tenant's desired objects are
/// recorded before the watches' first lists are used, so their live hashes are all known (no
/// re-apply on start).
pub(in super::super) async fn batch(
    shared: &Arc<Shared>,
    resources: &Resources,
    options: &AgentOptions,
    state: &mut LoopState,
    due: Vec<String>,
    stop: &CancellationToken,
) {
    let Some(rev) = state.rev.clone() else { return };
    let (due, ticket) = super::super::requests::admit(shared, &rev, options, due).await;
    // An inventory deleted by someone else (`fief retire`) is read back before its tenant is
    // synced again, so the copy held here never speaks for it.
    for t in super::super::requests::take_deleted(shared) {
        if let Some(held) = state.inventories.as_mut()
            && held.remove(&t).is_some()
        {
            state.evicted.insert(t);
        }
    }
    let _syncing = shared.report.events().syncing();
    let triggers: HashMap<String, &'static str> = shared
        .work
        .queue(|q| due.iter().map(|t| (t.clone(), q.take_trigger(t))).collect());
    let mut sync_options = sync_options(&rev, options);
    sync_options.release = super::super::requests::releases(shared, &due);
    shared.gate.set_namespace(&sync_options.agent_namespace);
    let b = Batch {
        shared,
        resources,
        options,
        rev,
        stop,
        triggers,
        sync_options,
        ticket,
        started: Instant::now(),
    };
    if !state.namespace_ready {
        match ensure_namespace(resources.client(), &b.sync_options.agent_namespace).await {
            Ok(()) => state.namespace_ready = true,
            Err(e) => tracing::error!(error = %e, "cannot create the agent namespace"),
        }
    }
    let plan = prepare(&b, state, &due).await;
    let verified = plan.verified;
    let cancelled = run_chunks(&b, state, plan).await;
    finish(&b, &cancelled, verified);
}

/// The options of every sync of a batch at `rev`.
fn sync_options(rev: &Revision, options: &AgentOptions) -> SyncOptions {
    let config = rev.repo.config.as_ref().ok();
    SyncOptions {
        agent_namespace: config
            .map(|c| c.agent_namespace.clone())
            .unwrap_or_else(|| options.lease_namespace.clone()),
        concurrency: 1,
        object_concurrency: 8,
        release: PruneRelease::None,
        guard: config.map(|c| c.prune_guard).unwrap_or_default(),
        cluster: options.cluster.clone(),
        commit: Some(rev.commit.clone()),
        progress: None,
        adopt: Default::default(),
    }
}

/// Seed the verification candidates from their inventories, render what must be known before
/// the watches' lists, wait for the lists, judge the candidates; the chunks left to sync.
async fn prepare(b: &Batch<'_>, state: &mut LoopState, due: &[String]) -> Plan {
    let shared = b.shared;
    // Candidates for verification: their objects are judged by version from the lists on,
    // and their inventories are not kept (at start, dropped page by page as they are read).
    let mut seeder = super::super::verify::Seeder::new(state, due, &b.triggers);
    let namespace = &b.sync_options.agent_namespace;
    super::super::inventories::offer(shared, b.resources, state, namespace, &mut seeder).await;
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
    let prepass = chunks.len() > 1 && !shared.report.first_pass_done();
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
            seconds = b.started.elapsed().as_secs_f64(),
            "batch: rendered; verification candidates seeded"
        );
        if candidates > 0 && shared.report.first_pass_done() {
            // Candidates seeded after the watches' first lists (a shard taken mid-run) are
            // judged by what fresh lists see.
            shared.index.relist_now().await;
        }
        degraded = watch_kinds(shared, b.resources, &kinds, b.stop).await;
        set_degraded(shared, due, &degraded);
    }
    let (verified, fallen) = seeder.judge(shared, &degraded);
    super::super::verify::account(shared, state, &verified);
    // Chunks rendered in the prepass had their kinds listed there; the others list theirs.
    let listed = if prepass { chunks.len() } else { 0 };
    chunks.extend(fallen.chunks(CHUNK).map(<[String]>::to_vec));
    if chunks.is_empty() && state.check_orphans {
        // Nothing to sync, but the orphan report is due.
        chunks.push(Vec::new());
    }
    Plan {
        chunks,
        first,
        degraded,
        listed,
        verified: verified.len(),
    }
}

/// What is under way for the chunk after the current one: its render (on a blocking thread)
/// and its evicted inventories' read. Its desired objects are recorded only when its turn
/// comes.
#[derive(Default)]
struct Ahead {
    render: Option<tokio::task::JoinHandle<Rendered>>,
    inventories: Option<super::super::inventories::Ahead>,
}

impl Ahead {
    fn abort(&mut self) {
        if let Some(h) = self.render.take() {
            h.abort();
        }
        if let Some(a) = self.inventories.take() {
            a.abort();
        }
    }
}

/// Sync the plan's chunks one after the other; the tenants left when `stop` came.
async fn run_chunks(b: &Batch<'_>, state: &mut LoopState, mut plan: Plan) -> Vec<String> {
    let mut cancelled: Vec<String> = Vec::new();
    let mut ahead = Ahead::default();
    let chunks = std::mem::take(&mut plan.chunks);
    let namespace = &b.sync_options.agent_namespace;
    let mut walk = BatchWalk::start(b.resources, state, &chunks, namespace);
    for (i, chunk) in chunks.iter().enumerate() {
        if b.stop.is_cancelled() {
            ahead.abort();
            cancelled.extend(chunk.iter().cloned());
            continue;
        }
        let rendering = ahead.render.take();
        let mut renders = renders_of(b, state, &mut plan, i, chunk, rendering).await;
        let mut read_ahead = ahead.inventories.take();
        if let Some(w) = walk.as_mut() {
            match w.take(state, chunk).await {
                Ok(taken) => read_ahead = taken,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot walk the inventories; reading by name");
                    walk = None;
                }
            }
        }
        if let Some(c) = chunks.get(i + 1)
            && !b.stop.is_cancelled()
        {
            ahead.render = Some(tokio::spawn(compute(by_revision(state, c.clone()))));
            if walk.is_none() {
                ahead.inventories =
                    super::super::inventories::read_ahead(b.resources, state, c, namespace);
            }
        }
        for r in renders.iter_mut() {
            if let Some(why) = plan.degraded.get(&r.tenant) {
                degrade(r, why, b.rev.repo.tenant_file(&r.tenant));
            }
        }
        cancelled.extend(sync_chunk(b, state, &plan, chunk, &renders, read_ahead).await);
    }
    cancelled
}

/// The chunk's renders: the one rendered before the lists, or the one rendered ahead (or
/// now), recorded, with its kinds listed when they were not yet.
async fn renders_of(
    b: &Batch<'_>,
    state: &LoopState,
    plan: &mut Plan,
    i: usize,
    chunk: &[String],
    rendering: Option<tokio::task::JoinHandle<Rendered>>,
) -> Vec<TenantRender> {
    if let Some(r) = plan.first.take() {
        return r;
    }
    let rendered = match rendering {
        Some(h) => h.await.unwrap_or_else(|e| {
            tracing::error!(error = %e, "render task failed");
            Vec::new()
        }),
        None => compute(by_revision(state, chunk.to_vec())).await,
    };
    let renders = record_rendered(b.shared, rendered);
    if i >= plan.listed {
        let mut kinds = BTreeMap::new();
        kinds_of(&renders, &mut kinds);
        let now = watch_kinds(b.shared, b.resources, &kinds, b.stop).await;
        set_degraded(b.shared, chunk, &now);
        plan.degraded.retain(|t, _| !chunk.contains(t));
        plan.degraded.extend(now);
    }
    renders
}

/// Read the cluster's state for the chunk and sync it; the tenants it did not reach.
async fn sync_chunk(
    b: &Batch<'_>,
    state: &mut LoopState,
    plan: &Plan,
    chunk: &[String],
    renders: &[TenantRender],
    read_ahead: Option<super::super::inventories::Ahead>,
) -> Vec<String> {
    let shared = b.shared;
    let inventories = super::super::inventories::cluster_state(
        shared,
        b.resources,
        state,
        renders,
        &b.sync_options,
        read_ahead,
    )
    .await;
    let Some(cs) = inventories else {
        let now = Instant::now();
        shared.work.queue(|q| {
            for t in chunk {
                q.failed(t, now);
            }
        });
        return Vec::new();
    };
    let ctx = Each {
        shared,
        resources: b.resources,
        cs: &cs,
        sync_options: &b.sync_options,
        concurrency: b.options.concurrency,
        stop: b.stop,
        triggers: &b.triggers,
    };
    let result = sync_each(&ctx, state, renders).await;
    let left: Vec<String> = renders
        .iter()
        .map(|r| r.tenant.clone())
        .filter(|t| !result.reports.iter().any(|rep| &rep.tenant == t))
        .collect();
    outcome::record(shared, state, cs, &result, &plan.degraded).await;
    super::super::requests::after_batch(shared, b.ticket, &result.reports);
    shared
        .report
        .events()
        .send(&b.sync_options.agent_namespace, &result);
    shared
        .report
        .notifier()
        .synced(&result.reports, &b.rev.commit);
    left
}

/// Queue the tenants left for the next batch, time the batch, and mark the first full pass.
fn finish(b: &Batch<'_>, cancelled: &[String], verified: usize) {
    let shared = b.shared;
    let now = Instant::now();
    for t in cancelled {
        shared.work.queue(|q| q.push(t, now));
    }
    if !cancelled.is_empty() {
        tracing::info!(
            left = cancelled.len(),
            "batch stopped between tenants; the rest is left for the next run"
        );
    }
    shared
        .cluster
        .metrics()
        .batch_seconds
        .observe(b.started.elapsed().as_secs_f64());
    if cancelled.is_empty() && shared.report.finish_first_pass() {
        tracing::info!(
            tenants = b.rev.hashes.len(),
            verified,
            seconds = b.started.elapsed().as_secs_f64(),
            "first full sync done; ready"
        );
    }
}
