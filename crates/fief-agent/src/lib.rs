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
mod pins;
pub mod queue;
mod reconciler;
mod requests;
mod rollout;
mod run;
mod shards;
mod source_loop;
pub use run::run;
pub use source_loop::{ReadCache, Revision, read_commit};
mod verify;
pub mod web;
pub mod webhook;

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

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock, RwLockWriteGuard};
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use fief_core::digest::Digest;
use fief_core::inventory::{Inventory, InventoryError};
use fief_core::objects::ObjectId;
use fief_core::status::agent::AgentStatus;
use fief_kube::ClusterError;
use fief_kube::counter::RequestCounter;
use fief_source::git::GitAuth;
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

/// What the agent reports about itself (readiness, `/readyz`, status).
#[derive(Debug, Default)]
struct Health {
    /// Why the cluster cannot be used yet (its API resources cannot be read at start), if so.
    cluster_problem: Option<String>,
    /// Why there is no revision to serve yet (git unreachable at start), if so.
    source_problem: Option<String>,
    /// A revision was read from git.
    has_revision: bool,
    /// This replica holds the Lease (always true without leader election).
    leading: bool,
    /// The leader finished its first full pass over every tenant.
    first_pass_done: bool,
    /// Last fetched commit and last fetch error.
    last_commit: Option<String>,
    last_fetch_error: Option<String>,
    /// Tenants not synced because a kind they use cannot be watched: tenant → reason.
    degraded: BTreeMap<String, String>,
    /// Each tenant's last sync attempt.
    attempts: BTreeMap<String, Attempt>,
}

/// A tenant's last sync attempt, as `/status` shows it.
pub use fief_core::status::agent::Attempt;

/// State shared by the loop, the source task, the watches and the HTTP handlers.
pub struct Shared {
    client: kube::Client,
    counter: RequestCounter,
    metrics: Metrics,
    health: Mutex<Health>,
    fetch_now: Notify,
    wake: Notify,
    /// Notified when state another task waits on changes: a watch listed or failed, the
    /// requests watch listed, a fetch finished or a revision was published (see
    /// [`wait_for`]).
    changed: Notify,
    queue: Mutex<Queue>,
    /// Desired objects of the last render: tenant and interned shape.
    desired: RwLock<desired::Desired>,
    /// Every object id the agent holds, allocated once (a leaf lock: nothing is locked
    /// while it is held).
    ids: Mutex<desired::Interner>,
    /// Live hashes from the watches (keyed on the desired objects' interned ids).
    live: RwLock<HashMap<desired::Id, Digest>>,
    /// The drift baseline: per object, what fief last applied (see [`verify::Recorded`]).
    recorded: RwLock<HashMap<desired::Id, verify::Recorded>>,
    /// One watch per kind: its state.
    watches: Mutex<HashMap<String, WatchState>>,
    /// Tenants being synced now: their objects' events are fief's own writes, not drift.
    in_flight: Mutex<HashSet<String>>,
    /// When each tenant's last sync ended: a relist that began before holds objects that may
    /// predate that sync's writes, which are not drift.
    synced_at: Mutex<HashMap<String, Instant>>,
    webhook_secret: Option<Vec<u8>>,
    branch: String,
    /// Cancelled on SIGTERM/SIGINT.
    shutdown: CancellationToken,
    /// Bumped by the periodic resync: every watch lists afresh and diffs against what it knew.
    relist: tokio::sync::watch::Sender<u64>,
    age_keys: Option<Arc<fief_core::secrets::Keys>>,
    /// Health gating: the in-flight bound and each tenant's health verdict.
    gate: Arc<health::Gate>,
    /// Suspended tenants and `fief reconcile` requests (see [`requests`]).
    requests: requests::Requests,
    /// The rollout as last published (see [`rollout`]).
    rollout: Mutex<Option<fief_core::rollout::Record>>,
    /// The rollout record last written to the cluster (held while writing: one write at once).
    rollout_written: tokio::sync::Mutex<Option<fief_core::rollout::Record>>,
    /// The last write of the rollout record failed: write it again.
    rollout_retry: std::sync::atomic::AtomicBool,
    /// Status Events, sent behind the syncs.
    events: events::Events,
    /// Notifications to the platform's and the tenants' channels.
    notify: notify::Notifier,
    /// The read-only web view, when it is on (see [`web`]).
    web: Option<web::Web>,
    /// With `--shards`: the shards this replica holds (see [`shards`]).
    shards: Option<Arc<shards::Ownership>>,
    /// The fetches started and finished (a shard taken waits for a fresh one).
    fetches: fetches::FetchClock,
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

/// Wait until `ready()` holds, `deadline` passes or `stop` is cancelled; whether it held.
/// `ready` is checked again each time [`Shared::changed`] is notified, which every change it
/// may read notifies; the waiter is registered before each check, so no change is missed.
async fn wait_for(
    shared: &Shared,
    deadline: Instant,
    stop: &CancellationToken,
    mut ready: impl FnMut() -> bool,
) -> bool {
    loop {
        let notified = shared.changed.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if ready() {
            return true;
        }
        if Instant::now() >= deadline || stop.is_cancelled() {
            return false;
        }
        tokio::select! {
            _ = &mut notified => {}
            _ = tokio::time::sleep_until(deadline.into()) => {}
            _ = stop.cancelled() => {}
        }
    }
}

impl Shared {
    fn enqueue_for(&self, tenant: &str, trigger: &'static str) {
        lock(&self.queue).push_for(tenant, Instant::now(), trigger);
        self.wake.notify_one();
    }

    fn queue_len(&self) -> usize {
        lock(&self.queue).len()
    }

    /// The agent's one allocation of `id` (see [`desired::Interner`]).
    fn intern(&self, id: &ObjectId) -> desired::Id {
        lock(&self.ids).intern(id)
    }

    fn find_desired(&self, id: &ObjectId) -> Option<desired::Found> {
        read(&self.desired).find(id)
    }

    /// The tenant of a desired object, or of an object judged by its version (its tenant
    /// not rendered since it was verified).
    fn tenant_of(&self, id: &ObjectId) -> Option<Arc<str>> {
        if let Some((t, _)) = read(&self.desired).get(id) {
            return Some(t);
        }
        read(&self.recorded)
            .get(id)
            .filter(|r| r.version.is_some())
            .map(|r| r.tenant.clone())
    }

    fn recorded_live(&self, id: &ObjectId) -> Option<Digest> {
        read(&self.recorded).get(id).map(|r| r.live)
    }

    /// Whether this replica syncs `tenant` (always, without shards).
    fn owns(&self, tenant: &str) -> bool {
        self.shards.as_ref().is_none_or(|o| o.owns(tenant))
    }

    /// Mark `tenant` in flight if this replica syncs it, atomically with the ownership check
    /// (a shard handed back waits for its tenants in flight). Returns whether it was marked.
    fn start_sync(&self, tenant: &str) -> bool {
        let mut in_flight = lock(&self.in_flight);
        if !self.owns(tenant) {
            return false;
        }
        in_flight.insert(tenant.to_string());
        true
    }

    /// When `tenant`'s last sync ended.
    fn synced_at(&self, tenant: &str) -> Option<Instant> {
        lock(&self.synced_at).get(tenant).copied()
    }

    fn is_in_flight(&self, tenant: &str) -> bool {
        lock(&self.in_flight).contains(tenant)
    }

    fn write_live(&self) -> RwLockWriteGuard<'_, HashMap<desired::Id, Digest>> {
        write(&self.live)
    }

    /// The agent's view for `fief status` (`GET /status`): last fetched commit, last fetch
    /// error, each tenant's last attempt, the health gate and the rollout.
    pub fn status(&self) -> AgentStatus {
        let (leading, fetched_commit, fetch_error, tenants) = {
            let h = lock(&self.health);
            let attempts = h.attempts.clone();
            (
                h.leading,
                h.last_commit.clone(),
                h.last_fetch_error.clone(),
                attempts,
            )
        };
        AgentStatus {
            leading,
            fetched_commit,
            fetched_at: self
                .metrics
                .last_fetch_unix
                .load(std::sync::atomic::Ordering::Relaxed),
            fetch_error,
            tenants,
            health: self.gate.status(),
            rollout: lock(&self.rollout).clone(),
            shards: self
                .shards
                .as_ref()
                .map(|o| fief_core::status::agent::ShardStatus {
                    replica: leader::identity(),
                    count: o.count(),
                    held: o.held().into_iter().collect(),
                    ready: o.ready().into_iter().collect(),
                }),
        }
    }

    /// Readiness and its reason: ready once a revision is loaded and, on the leader, the first
    /// full pass is done. A standby with a revision is ready (it serves health and follows).
    pub fn readiness(&self) -> (bool, String) {
        let h = lock(&self.health);
        let degraded = if h.degraded.is_empty() {
            String::new()
        } else {
            let list: Vec<String> = h
                .degraded
                .iter()
                .map(|(t, why)| format!("  {t}: {why}"))
                .collect();
            format!(
                "\n{} tenant(s) degraded (not synced):\n{}",
                h.degraded.len(),
                list.join("\n")
            )
        };
        if let Some(why) = &h.cluster_problem {
            return (false, format!("not ready: {why}"));
        }
        if !h.has_revision {
            let why = h
                .source_problem
                .clone()
                .unwrap_or_else(|| "waiting for the first git fetch".to_string());
            return (false, format!("not ready: {why}"));
        }
        if h.leading && !h.first_pass_done {
            return (false, "not ready: first full sync in progress".to_string());
        }
        let role = if h.leading { "leader" } else { "standby" };
        let fetch = match &h.last_fetch_error {
            Some(e) => format!("\nlast fetch failed: {e}"),
            None => String::new(),
        };
        (true, format!("ready ({role}){fetch}{degraded}"))
    }
}

/// What the loop knows between iterations.
#[derive(Default)]
struct LoopState {
    rev: Option<Arc<Revision>>,
    /// Input hash each tenant was last synced (or found invalid) at.
    synced: BTreeMap<String, String>,
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
    fn record_synced(&mut self, tenant: &str, hash: &str, rev: Arc<Revision>) {
        self.synced.insert(tenant.to_string(), hash.to_string());
        let head = self.rev.as_ref().and_then(|r| r.hashes.get(tenant));
        if head.is_some_and(|h| h == hash) {
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
