//! The agent: the in-cluster loop from `git push` to applied, with drift repair and status.
//!
//! In: a git remote (fetched on its own task, on an interval with jitter and at once on a
//! signed push webhook), the cluster (discovery, kube-runtime watches, inventories). Out:
//! per-tenant syncs of exactly the tenants whose inputs changed or drifted, through a
//! deduplicated queue with backoff; `/healthz`, `/readyz`, `/metrics`, `/status`, and with
//! `--web` a read-only web view under `/ui/` ([`web`]). Leader
//! election makes two replicas safe: losing the Lease or SIGTERM cancels the batch between
//! tenants, SIGTERM releases the Lease, and the leader labels its own Pod so the Service routes
//! webhooks to it.

mod desired;
pub mod drift;
mod events;
mod fetches;
pub mod health;
pub mod http;
mod inventories;
mod leader;
pub mod memory;
pub mod metrics;
pub mod notify;
mod outcome;
mod parts;
pub mod queue;
mod reconciler;
mod requests;
mod rollout;
mod run;
mod shards;
mod source_loop;
pub use run::run;
mod verify;
pub mod web;
pub mod webhook;

#[cfg(test)]
#[path = "heap_tests.rs"]
mod heap_tests;
#[cfg(test)]
#[path = "inventories_tests.rs"]
mod inventories_tests;
#[cfg(test)]
#[path = "kit_tests.rs"]
mod kit;
#[cfg(test)]
#[path = "kit_repo_tests.rs"]
mod kit_repo;
#[cfg(test)]
#[path = "outcome_tests.rs"]
mod outcome_tests;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock, RwLockWriteGuard};
use std::time::Duration;

use fief_core::inventory::{Inventory, InventoryError};
use fief_core::status::agent::AgentStatus;
use fief_kube::ClusterError;
use fief_source::git::GitAuth;
use fief_source::revision::Revision;

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
    /// Full resync period (jitter of up to 10 % is added).
    pub resync_interval: Duration,
    /// How long a clone or fetch may take before it is reported as failed.
    pub git_timeout: Duration,
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
    pub age_keys: Option<Arc<fief_core::secrets::Keys>>,
    /// Tenants applied but not yet healthy at once (others wait).
    pub max_in_flight: usize,
    /// How long a component without `health.timeout` may take to become healthy.
    pub health_timeout: Duration,
    /// Serve the read-only web view under `/ui/` (none: off).
    pub web: Option<web::WebOptions>,
    /// Split the tenants into this many shards, each a Lease, so every replica works on its
    /// share (0 or 1: no shards; one leader does all the work).
    pub shards: u32,
    /// How `/metrics` keeps tenant sync durations: a histogram per tenant, or one for the fleet.
    pub sync_durations: metrics::SyncDurations,
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
    /// Leader election failed or the lease was lost.
    #[error("leader election: {0}")]
    Leadership(String),
}

/// What a kind's watch knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchState {
    /// The initial list is under way.
    Listing,
    /// The initial list is done; events keep the live hashes current.
    Synced,
    /// The kind cannot be listed or watched (e.g. 403); the tenants using it are degraded.
    Failed(String),
}

/// A tenant's last sync attempt, as `/status` shows it.
pub use fief_core::status::agent::Attempt;

/// State shared by the loop, the source task, the watches and the HTTP handlers: its parts,
/// each the owner of its own state (the `parts` module says which holds what).
pub struct Shared {
    /// The handles on the cluster.
    cluster: parts::cluster::Cluster,
    /// What the source task follows.
    source: parts::source::Source,
    /// The queue, the syncs in flight and the day-2 requests.
    work: parts::work::Work,
    /// What the renders and the watches know of the objects.
    index: parts::index::LiveIndex,
    /// Health gating: the in-flight bound and each tenant's health verdict.
    gate: Arc<health::Gate>,
    /// The rollout as last published (see [`rollout`]).
    rollout: rollout::RolloutState,
    /// What the agent reports about itself, and through what.
    report: parts::report::Report,
    /// With `--shards`: the shards this replica holds (see [`shards`]).
    shards: Option<Arc<shards::Ownership>>,
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|e| e.into_inner())
}

fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(|e| e.into_inner())
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    /// Whether this replica syncs `tenant` (always, without shards).
    fn owns(&self, tenant: &str) -> bool {
        self.shards.as_ref().is_none_or(|o| o.owns(tenant))
    }

    /// Mark `tenant` in flight if this replica syncs it, atomically with the ownership check
    /// (a shard handed back waits for its tenants in flight). Returns whether it was marked.
    fn start_sync(&self, tenant: &str) -> bool {
        self.work.start_sync(tenant, || self.owns(tenant))
    }

    /// The agent's view for `fief status` (`GET /status`): last fetched commit, last fetch
    /// error, each tenant's last attempt, the health gate and the rollout.
    pub fn status(&self) -> AgentStatus {
        let own = self.report.status();
        AgentStatus {
            fetched_at: self
                .cluster
                .metrics()
                .last_fetch_unix
                .load(std::sync::atomic::Ordering::Relaxed),
            health: self.gate.status(),
            rollout: self.rollout.current(),
            shards: self
                .shards
                .as_ref()
                .map(|o| fief_core::status::agent::ShardStatus {
                    replica: leader::identity(),
                    count: o.count(),
                    held: o.held().into_iter().collect(),
                    ready: o.ready().into_iter().collect(),
                }),
            ..own
        }
    }

    /// Readiness and its reason: ready once a revision is loaded and, on the leader, the first
    /// full pass is done. A standby with a revision is ready (it serves health and follows).
    pub fn readiness(&self) -> (bool, String) {
        self.report.readiness()
    }
}

/// What the loop knows between iterations.
#[derive(Default)]
struct LoopState {
    rev: Option<Arc<Revision>>,
    /// Input hash each tenant was last synced (or found invalid) at.
    synced: BTreeMap<String, fief_core::inputs::InputHash>,
    /// Tenant files removed since the last orphan report.
    check_orphans: bool,
    /// The agent namespace exists.
    namespace_ready: bool,
    /// Inventories as they stand after the last batch (`None`: read them afresh), but for
    /// the `evicted` tenants'.
    inventories: Option<BTreeMap<String, Result<Inventory, InventoryError>>>,
    /// Tenants whose inventory is not held (found as last applied, see [`verify`]): read
    /// again before they are next synced, or when orphans are looked for.
    evicted: std::collections::BTreeSet<String>,
    /// The revision each tenant was last synced (or found invalid) at, for the tenants not
    /// settled at the head: a settled tenant's is the head ([`LoopState::record_synced`]).
    synced_rev: BTreeMap<String, Arc<Revision>>,
    /// Every tenant whose synced input hash may differ from the head's (queued, failing,
    /// held by a rollout); the others are synced at the head's hash. A new commit looks at
    /// these and at the tenants whose hash the commit changed, not at the whole fleet.
    unsettled: std::collections::BTreeSet<String>,
    /// The progressive rollout, if one is under way.
    rollout: Option<rollout::Active>,
    /// With `--shards`: the shards taken and not yet ready, and those known.
    shards: shards::Follow,
}

impl LoopState {
    /// Record `tenant` as synced (or found invalid) at input hash `hash` of revision `rev`.
    /// At the head's hash it is settled: its revision is the head's from then on (older
    /// revisions are freed). Otherwise (a rollout holds it at `rev`) it stays unsettled.
    fn record_synced(
        &mut self,
        tenant: &str,
        hash: fief_core::inputs::InputHash,
        rev: Arc<Revision>,
    ) {
        self.synced.insert(tenant.to_string(), hash);
        let head = self.rev.as_ref().and_then(|r| r.hashes.get(tenant));
        if head == Some(&hash) {
            self.synced_rev.remove(tenant);
            self.unsettled.remove(tenant);
        } else {
            self.synced_rev.insert(tenant.to_string(), rev);
            self.unsettled.insert(tenant.to_string());
        }
    }
}

/// The agent namespace a revision names (fief.yaml `agentNamespace`), or `--lease-namespace`
/// when its fief.yaml does not parse.
fn agent_namespace(rev: &Revision, options: &AgentOptions) -> String {
    rev.repo
        .config
        .as_ref()
        .map(|c| c.agent_namespace.clone())
        .unwrap_or_else(|_| options.lease_namespace.clone())
}

/// Up to 10 % of `interval`, random (`fastrand`), so replicas and agents spread out.
pub(crate) fn jitter(interval: Duration) -> Duration {
    interval.mul_f64(fastrand::f64() / 10.0)
}

/// The delays of a retry loop: `first`, doubling up to `max`, without end (`backon`'s
/// exponential backoff, no jitter).
pub(crate) fn doubling(first: Duration, max: Duration) -> impl Iterator<Item = Duration> {
    use backon::BackoffBuilder;
    backon::ExponentialBuilder::new()
        .with_min_delay(first)
        .with_max_delay(max)
        .with_factor(2.0)
        .without_max_times()
        .build()
}
