//! The agent: the in-cluster loop from `git push` to applied, with drift repair and status.
//!
//! In: a git remote (fetched on an interval with jitter, and at once on a signed push
//! webhook), the cluster (discovery, watches, inventories). Out: per-tenant syncs of exactly
//! the tenants whose inputs changed or drifted, through a deduplicated queue with backoff;
//! `/healthz`, `/readyz`, `/metrics`. Leader election makes two replicas safe; SIGTERM lets the
//! batch in flight finish, so a prune is never left half done.

pub mod drift;
mod events;
pub mod http;
mod leader;
pub mod metrics;
pub mod queue;
mod reconciler;
mod source_loop;
pub mod webhook;

use events::publish_events;
use leader::lead;
use reconciler::batch;
use source_loop::fetch;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockWriteGuard};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::Notify;

use crate::core::inventory::{Inventory, InventoryError};
use crate::core::model::Repo;
use crate::core::objects::ObjectId;
use crate::core::render::TenantRender;
use crate::kube::counter::RequestCounter;
use crate::kube::inventory_store::load_inventories;
use crate::kube::observe::ensure_namespace;
use crate::kube::sync::{ClusterState, SyncOptions, sync_with};
use crate::kube::{ClusterError, Resources};
use crate::source::git::{GitAuth, GitSource};
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
    /// age identities that decrypt the repo's SOPS secrets (none: tenants reading them fail).
    pub age_keys: Option<Arc<crate::core::secrets::Keys>>,
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
    age_keys: Option<Arc<crate::core::secrets::Keys>>,
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
    let (client, counter) = crate::kube::connect(
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
        age_keys: options.age_keys.clone(),
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
