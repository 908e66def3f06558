//! The reconciler: render the due tenants and sync them, a bounded batch at a time.
//!
//! In: due tenant names and the loop state (repo, inventories, live hashes). Out: applies,
//! prunes, inventory writes, Events and metrics; failed tenants back on the queue.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use super::*;
use crate::kube::Resources;

/// Tenants rendered and synced together; bounds the agent's memory at thousands of tenants.
const BATCH_TENANTS: usize = 50;

/// Render and sync the due tenants, a bounded batch at a time.
pub(super) async fn batch(
    shared: &Arc<Shared>,
    resources: &Resources,
    options: &AgentOptions,
    state: &mut LoopState,
    due: Vec<String>,
) {
    if due.is_empty() {
        return sync_batch(shared, resources, options, state, due).await;
    }
    let started = Instant::now();
    state.inventories = None;
    for chunk in due.chunks(BATCH_TENANTS) {
        sync_batch(shared, resources, options, state, chunk.to_vec()).await;
    }
    if !shared.ready.swap(true, Ordering::SeqCst) {
        tracing::info!(
            tenants = state.known.len(),
            seconds = started.elapsed().as_secs_f64(),
            "first full sync done; ready"
        );
    }
}

pub(super) async fn sync_batch(
    shared: &Arc<Shared>,
    resources: &Resources,
    options: &AgentOptions,
    state: &mut LoopState,
    due: Vec<String>,
) {
    let Some(repo) = state.repo.clone() else {
        return;
    };
    let started = Instant::now();
    let due: Vec<String> = due
        .into_iter()
        .filter(|t| state.known.contains(t))
        .collect();
    let renders: Vec<TenantRender> = if due.is_empty() {
        Vec::new()
    } else {
        crate::core::pipeline::render_all(&repo, &due)
    };
    // The desired objects of these tenants replace their previous ones.
    {
        let mut desired = write(&shared.desired);
        let synced: HashSet<&str> = renders.iter().map(|r| r.tenant.as_str()).collect();
        desired.retain(|_, (t, _)| !synced.contains(t.as_str()));
        for r in renders.iter().filter(|r| r.is_ok()) {
            for o in &r.objects {
                let json: Arc<str> = serde_json::to_string(&o.object).unwrap_or_default().into();
                desired.insert(o.id.clone(), (r.tenant.clone(), json));
            }
        }
    }
    // Watch every kind the tenants use; the first batch waits for the initial lists.
    let mut kinds = BTreeSet::new();
    for r in &renders {
        for o in &r.objects {
            let v = o.object["apiVersion"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            kinds.insert((v, o.id.kind.clone()));
        }
    }
    let mut to_watch = Vec::new();
    for (v, k) in &kinds {
        if let Some(resource) = resources.resolve(v, k).await {
            to_watch.push(resource);
        }
    }
    drift::ensure_watches(shared, to_watch);
    let deadline = Instant::now() + Duration::from_secs(60);
    while shared.watches_pending.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let config = repo.config.as_ref().ok();
    let agent_namespace = config
        .map(|c| c.agent_namespace.clone())
        .unwrap_or_else(|| options.lease_namespace.clone());
    let sync_options = SyncOptions {
        agent_namespace: agent_namespace.clone(),
        concurrency: options.concurrency,
        object_concurrency: 8,
        allow_mass_prune: false,
        guard: config.map(|c| c.prune_guard).unwrap_or_default(),
        cluster: options.cluster.clone(),
        commit: state.commit.clone(),
    };
    if !state.namespace_ready {
        match ensure_namespace(resources.client(), &agent_namespace).await {
            Ok(()) => state.namespace_ready = true,
            Err(e) => tracing::error!(error = %e, "cannot create the agent namespace"),
        }
    }
    // Inventories are read once per batch and kept up to date from each chunk's results.
    let inventories = match state.inventories.take() {
        Some(i) => i,
        None => match load_inventories(resources.client(), &agent_namespace).await {
            Ok(i) => i,
            Err(ClusterError::Unreachable {
                source: kube::Error::Api(s),
                ..
            }) if s.code == 404 => BTreeMap::new(),
            Err(e) => {
                tracing::error!(error = %e, "cannot read inventories; retrying later");
                let now = Instant::now();
                let mut q = shared.queue.lock().unwrap_or_else(|e| e.into_inner());
                for t in &due {
                    q.failed(t, now);
                }
                return;
            }
        },
    };
    let live = {
        let live = read(&shared.live);
        let mut mine = HashMap::new();
        for r in &renders {
            for o in &r.objects {
                if let Some(h) = live.get(&o.id) {
                    mine.insert(o.id.clone(), h.clone());
                }
            }
        }
        mine
    };
    let cluster_state = ClusterState { inventories, live };
    let result = sync_with(
        resources,
        &renders,
        &cluster_state,
        &state.known,
        state.check_orphans,
        &sync_options,
    )
    .await;
    state.check_orphans = false;
    let mut inventories = cluster_state.inventories;
    for (tenant, inv) in &result.inventories {
        match inv {
            Some(inv) => inventories.insert(tenant.clone(), Ok(inv.clone())),
            None => inventories.remove(tenant),
        };
    }
    state.inventories = Some(inventories);
    // What was applied is the new baseline for drift detection.
    {
        let mut recorded = write(&shared.recorded);
        let mut live = write(&shared.live);
        recorded.retain(|_, (t, _)| !result.inventories.contains_key(t));
        for (tenant, inv) in &result.inventories {
            for (id, entry) in inv.iter().flat_map(|i| i.entries.iter()) {
                recorded.insert(id.clone(), (tenant.clone(), entry.live.clone()));
                live.insert(id.clone(), entry.live.clone());
            }
        }
    }
    let now = Instant::now();
    for report in &result.reports {
        let ok = report.is_ok();
        shared.metrics.sync_result(ok);
        shared
            .metrics
            .applied
            .inc_by((report.counts.created + report.counts.configured) as u64);
        shared.metrics.pruned.inc_by(report.counts.pruned as u64);
        let mut q = shared.queue.lock().unwrap_or_else(|e| e.into_inner());
        let hash = state.hashes.get(&report.tenant).cloned();
        match report.outcome.as_str() {
            "invalid" | "skipped" | "applied" | "purged" if ok || report.outcome == "invalid" => {
                q.succeeded(&report.tenant);
                if let Some(h) = hash {
                    state.synced.insert(report.tenant.clone(), h);
                }
            }
            "orphaned" => {}
            _ => q.failed(&report.tenant, now),
        }
        drop(q);
        let c = &report.counts;
        if ok && c.created + c.configured + c.pruned == 0 {
            tracing::debug!(
                tenant = report.tenant,
                outcome = report.outcome,
                "unchanged"
            );
        } else if ok {
            tracing::info!(
                tenant = report.tenant,
                outcome = report.outcome,
                created = c.created,
                configured = c.configured,
                pruned = c.pruned,
                "synced"
            );
        } else {
            tracing::warn!(
                tenant = report.tenant,
                outcome = report.outcome,
                errors = ?report.errors,
                "sync failed"
            );
        }
    }
    publish_events(shared, &agent_namespace, &result.reports).await;
    shared
        .metrics
        .batch_seconds
        .observe(started.elapsed().as_secs_f64());
}
