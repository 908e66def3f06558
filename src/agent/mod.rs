//! The agent: the in-cluster loop from `git push` to applied, with drift repair and status.
//!
//! In: a git remote (fetched on an interval with jitter, and at once on a signed push
//! webhook), the cluster (discovery, watches, inventories). Out: per-tenant syncs of exactly
//! the tenants whose inputs changed or drifted, through a deduplicated queue with backoff;
//! `/healthz`, `/readyz`, `/metrics`. Leader election makes two replicas safe; SIGTERM lets the
//! batch in flight finish, so a prune is never left half done.

pub mod drift;
pub mod http;
pub mod metrics;
pub mod queue;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockWriteGuard};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::Notify;

use crate::cluster::counter::RequestCounter;
use crate::cluster::sync::{
    ClusterState, SyncOptions, ensure_namespace, load_inventories, sync_with,
};
use crate::cluster::{self, ClusterError, Resources};
use crate::git::{GitAuth, GitSource};
use crate::inventory::{Inventory, InventoryError};
use crate::model::Repo;
use crate::objects::ObjectId;
use crate::render::TenantRender;
use metrics::Metrics;
use queue::Queue;

/// How the agent runs.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// Git URL of the tenants repo.
    pub repo: String,
    /// Branch to follow.
    pub branch: String,
    /// Only tenants whose `spec.cluster` is this.
    pub cluster: String,
    /// Fetch interval (jitter of up to 10 % is added).
    pub interval: Duration,
    /// Where the clone is cached.
    pub cache_dir: PathBuf,
    /// HTTP address for webhook, health and metrics.
    pub listen: SocketAddr,
    /// HMAC secret of the push webhook (none: webhook disabled).
    pub webhook_secret: Option<Vec<u8>>,
    /// Git credentials.
    pub auth: GitAuth,
    /// Tenants synced at once.
    pub concurrency: usize,
    /// Use a Lease so only one replica syncs.
    pub leader_election: bool,
    /// Namespace of the Lease (and fallback for inventories).
    pub lease_namespace: String,
    /// Kubeconfig file (default: in-cluster or the usual places).
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context.
    pub context: Option<String>,
    /// Client-side limit on API requests per second.
    pub api_qps: u32,
}

/// Why the agent stopped.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The cluster could not be used at start.
    #[error(transparent)]
    Cluster(#[from] Box<ClusterError>),
    /// The HTTP port could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The git cache could not be opened or cloned at start.
    #[error("git: {0}")]
    Git(String),
    /// Leader election failed or the lease was lost.
    #[error("leader election: {0}")]
    Leadership(String),
}

/// State shared by the loop, the watches and the HTTP handlers.
pub struct Shared {
    client: kube::Client,
    counter: RequestCounter,
    metrics: Metrics,
    ready: AtomicBool,
    fetch_now: Notify,
    wake: Notify,
    queue: Mutex<Queue>,
    /// Desired objects of the last render: tenant and compact JSON.
    desired: RwLock<HashMap<ObjectId, (String, Arc<str>)>>,
    /// Live hashes from the watches.
    live: RwLock<HashMap<ObjectId, String>>,
    /// Live hashes recorded in the inventories after apply, with their tenant.
    recorded: RwLock<HashMap<ObjectId, (String, String)>>,
    watched: Mutex<HashSet<String>>,
    watches_pending: AtomicUsize,
    webhook_secret: Option<Vec<u8>>,
    branch: String,
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|e| e.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    fn enqueue(&self, tenant: &str) {
        self.enqueue_at(tenant, Instant::now());
    }

    fn enqueue_at(&self, tenant: &str, at: Instant) {
        self.queue
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(tenant, at);
        self.wake.notify_one();
    }

    fn queue_len(&self) -> usize {
        self.queue.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    fn desired_of(&self, id: &ObjectId) -> Option<(String, Value)> {
        let desired = read(&self.desired);
        let (tenant, json) = desired.get(id)?;
        let value = serde_json::from_str(json).ok()?;
        Some((tenant.clone(), value))
    }

    fn tenant_of(&self, id: &ObjectId) -> Option<String> {
        read(&self.desired).get(id).map(|(t, _)| t.clone())
    }

    fn recorded_live(&self, id: &ObjectId) -> Option<String> {
        read(&self.recorded).get(id).map(|(_, h)| h.clone())
    }

    fn write_live(&self) -> RwLockWriteGuard<'_, HashMap<ObjectId, String>> {
        write(&self.live)
    }
}

/// What the loop knows between iterations.
#[derive(Default)]
struct LoopState {
    commit: Option<String>,
    repo: Option<Arc<Repo>>,
    /// Input hash of each tenant at the current commit.
    hashes: BTreeMap<String, String>,
    /// Input hash each tenant was last synced (or found invalid) at.
    synced: BTreeMap<String, String>,
    /// Tenants of the repo at the current commit.
    known: BTreeSet<String>,
    /// Tenant files removed since the last orphan report.
    check_orphans: bool,
    /// The agent namespace exists.
    namespace_ready: bool,
    /// Inventories read at the start of the current batch, updated chunk by chunk.
    inventories: Option<BTreeMap<String, Result<Inventory, InventoryError>>>,
}

fn jitter(interval: Duration) -> Duration {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    interval.mul_f64(f64::from(nanos % 1000) / 10_000.0)
}

/// Run the agent until SIGTERM/SIGINT.
pub async fn run(options: AgentOptions) -> Result<(), AgentError> {
    let (client, counter) = cluster::connect(
        options.kubeconfig.as_deref(),
        options.context.as_deref(),
        options.api_qps,
    )
    .await
    .map_err(|e| AgentError::Cluster(Box::new(e)))?;
    let resources = Resources::discover(client.clone())
        .await
        .map_err(|e| AgentError::Cluster(Box::new(e)))?;
    let shared = Arc::new(Shared {
        client: client.clone(),
        counter,
        metrics: Metrics::default(),
        ready: AtomicBool::new(false),
        fetch_now: Notify::new(),
        wake: Notify::new(),
        queue: Mutex::new(Queue::default()),
        desired: RwLock::new(HashMap::new()),
        live: RwLock::new(HashMap::new()),
        recorded: RwLock::new(HashMap::new()),
        watched: Mutex::new(HashSet::new()),
        watches_pending: AtomicUsize::new(0),
        webhook_secret: options.webhook_secret.clone(),
        branch: options.branch.clone(),
    });
    let listener = tokio::net::TcpListener::bind(options.listen)
        .await
        .map_err(|source| AgentError::Listen {
            addr: options.listen,
            source,
        })?;
    tracing::info!(addr = %options.listen, "serving /healthz /readyz /metrics /hooks/git");
    let router = http::router(shared.clone());
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, router).await {
            tracing::error!(error = %e, "HTTP server stopped");
        }
    });

    let mut leader = if options.leader_election {
        Some(lead(&client, &options).await?)
    } else {
        None
    };

    let git = {
        let (url, branch, dir, auth) = (
            options.repo.clone(),
            options.branch.clone(),
            options.cache_dir.clone(),
            options.auth.clone(),
        );
        tokio::task::spawn_blocking(move || GitSource::open_or_clone(&url, &branch, &dir, auth))
            .await
            .map_err(|e| AgentError::Git(e.to_string()))?
            .map_err(|e| AgentError::Git(e.to_string()))?
    };
    let git = Arc::new(Mutex::new(git));

    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| AgentError::Leadership(format!("cannot handle SIGTERM: {e}")))?;
    let mut state = LoopState::default();
    let mut next_fetch = Instant::now();
    loop {
        let now = Instant::now();
        let due = shared
            .queue
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .next_due();
        let wake_at = due.map_or(next_fetch, |d| d.min(next_fetch)).max(now);
        tokio::select! {
            _ = tokio::time::sleep_until(wake_at.into()) => {}
            _ = shared.fetch_now.notified() => next_fetch = Instant::now(),
            _ = shared.wake.notified() => {}
            _ = sigterm.recv() => break,
            _ = tokio::signal::ctrl_c() => break,
            lost = async {
                match leader.as_mut() {
                    Some(rx) => { let _ = rx.changed().await; !*rx.borrow() }
                    None => std::future::pending().await,
                }
            } => if lost {
                return Err(AgentError::Leadership("lost the lease; exiting so a replica takes over".into()));
            }
        }
        if Instant::now() >= next_fetch {
            fetch(&shared, &git, &mut state).await;
            next_fetch = Instant::now() + options.interval + jitter(options.interval);
        }
        if state.repo.is_some() && shared.watches_pending.load(Ordering::SeqCst) == 0 {
            let due = shared
                .queue
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take_due(Instant::now());
            if !due.is_empty() || state.check_orphans {
                batch(&shared, &resources, &options, &mut state, due).await;
            }
        }
    }
    tracing::info!("shutting down: no sync in flight");
    Ok(())
}

/// Wait until this replica holds the Lease; returns the channel that says if it still does.
async fn lead(
    client: &kube::Client,
    options: &AgentOptions,
) -> Result<tokio::sync::watch::Receiver<bool>, AgentError> {
    let identity = std::env::var("POD_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| format!("fief-{}", std::process::id()));
    let manager = kube_lease_manager::LeaseManagerBuilder::new(client.clone(), "fief-agent")
        .with_namespace(options.lease_namespace.clone())
        .with_identity(identity.clone())
        .with_duration(15)
        .with_grace(5)
        .build()
        .await
        .map_err(|e| AgentError::Leadership(e.to_string()))?;
    let (mut rx, _task) = manager.watch().await;
    tracing::info!(identity, "waiting to become the leader");
    while !*rx.borrow_and_update() {
        rx.changed()
            .await
            .map_err(|e| AgentError::Leadership(e.to_string()))?;
    }
    tracing::info!(identity, "leading");
    Ok(rx)
}

/// Fetch; on a new commit, read it and queue the tenants whose inputs changed. A failed fetch
/// keeps the last good revision and prunes nothing.
async fn fetch(shared: &Arc<Shared>, git: &Arc<Mutex<GitSource>>, state: &mut LoopState) {
    let g = git.clone();
    let fetched =
        tokio::task::spawn_blocking(move || g.lock().unwrap_or_else(|e| e.into_inner()).fetch())
            .await;
    let commit = match fetched {
        Ok(Ok(commit)) => {
            shared.metrics.fetch_result(true);
            commit
        }
        Ok(Err(e)) => {
            shared.metrics.fetch_result(false);
            tracing::error!(error = %e, commit = ?state.commit, "git fetch failed; keeping the last good revision");
            return;
        }
        Err(e) => {
            shared.metrics.fetch_result(false);
            tracing::error!(error = %e, "git fetch task failed");
            return;
        }
    };
    if state.commit.as_deref() == Some(commit.as_str()) {
        return;
    }
    let g = git.clone();
    let c = commit.clone();
    let snapshot = tokio::task::spawn_blocking(move || {
        g.lock().unwrap_or_else(|e| e.into_inner()).snapshot(&c)
    })
    .await;
    let snapshot = match snapshot {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            tracing::error!(error = %e, commit, "cannot read the commit; keeping the last good revision");
            return;
        }
        Err(e) => {
            tracing::error!(error = %e, "snapshot task failed");
            return;
        }
    };
    let repo = Repo::load(Arc::new(snapshot));
    let hashes = crate::inputs::tenant_hashes(&repo);
    let known: BTreeSet<String> = hashes.keys().cloned().collect();
    let now = Instant::now();
    let mut changed = 0;
    for (tenant, hash) in &hashes {
        if state.synced.get(tenant) != Some(hash) {
            shared
                .queue
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(tenant, now);
            changed += 1;
        }
    }
    let removed: Vec<&String> = state.known.difference(&known).collect();
    if !removed.is_empty() || state.commit.is_none() {
        state.check_orphans = true;
    }
    for t in &removed {
        shared
            .queue
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .forget(t);
        state.synced.remove(*t);
    }
    tracing::info!(commit, changed, removed = removed.len(), "new commit");
    state.commit = Some(commit);
    state.repo = Some(Arc::new(repo));
    state.hashes = hashes;
    state.known = known;
}

/// Tenants rendered and synced together; bounds the agent's memory at thousands of tenants.
const BATCH_TENANTS: usize = 50;

/// Render and sync the due tenants, a bounded batch at a time.
async fn batch(
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

async fn sync_batch(
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
        crate::render::render_all(&repo, &due)
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

/// Status as Kubernetes Events on each tenant's inventory ConfigMap: one when a sync changed
/// something, one when it failed. An unchanged tenant gets none (steady state writes nothing).
async fn publish_events(
    shared: &Shared,
    agent_namespace: &str,
    reports: &[crate::cluster::sync::TenantReport],
) {
    use kube::runtime::events::{Event, EventType, Recorder, Reporter};
    let reporter = Reporter {
        controller: "fief-agent".to_string(),
        instance: std::env::var("POD_NAME").ok(),
    };
    let recorder = Recorder::new(shared.client.clone(), reporter);
    for r in reports {
        let c = &r.counts;
        let event = if !r.is_ok() {
            let note = r
                .errors
                .first()
                .cloned()
                .or_else(|| r.prune_held.clone())
                .unwrap_or_else(|| r.outcome.clone());
            Event {
                type_: EventType::Warning,
                reason: if r.outcome == "invalid" {
                    "RenderFailed"
                } else {
                    "SyncFailed"
                }
                .to_string(),
                note: Some(note.chars().take(1000).collect()),
                action: "Sync".to_string(),
                secondary: None,
            }
        } else if c.created + c.configured + c.pruned > 0 || r.prune_held.is_some() {
            let mut note = format!(
                "{} created, {} configured, {} pruned, {} unchanged",
                c.created, c.configured, c.pruned, c.unchanged
            );
            if let Some(hold) = &r.prune_held {
                note = format!("{note}; {hold}");
            }
            Event {
                type_: EventType::Normal,
                reason: if r.outcome == "purged" {
                    "Purged"
                } else {
                    "Applied"
                }
                .to_string(),
                note: Some(note.chars().take(1000).collect()),
                action: "Sync".to_string(),
                secondary: None,
            }
        } else {
            continue;
        };
        let reference = k8s_openapi::api::core::v1::ObjectReference {
            api_version: Some("v1".to_string()),
            kind: Some("ConfigMap".to_string()),
            name: Some(crate::objects::inventory_name(&r.tenant)),
            namespace: Some(agent_namespace.to_string()),
            ..Default::default()
        };
        if let Err(e) = recorder.publish(&event, &reference).await {
            tracing::debug!(tenant = r.tenant, error = %e, "cannot publish an event");
        }
    }
}
