//! Metrics: every metric the agent exposes on `/metrics`, in one prometheus-client registry.
//!
//! In: sync outcomes (with each tenant's prune hold), fetches and API request counts as they
//! happen; at scrape time the queue depth, leadership, the health gate's figures and the
//! rollout's. Out: the OpenMetrics text exposition,
//! and the metrics reference page built from the same registry ([`reference_markdown`]).

use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use fief_kube::counter::RequestStats;

mod durations;
mod held;
mod reference;
pub(crate) mod streamed;

pub use durations::Durations;
pub use held::{HoldReason, ReasonLabel};
pub use reference::reference_markdown;

/// A result label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabel {
    /// `success` or `failure`.
    pub result: String,
}

/// A verb label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct VerbLabel {
    /// HTTP verb.
    pub verb: String,
}

/// A tenant label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TenantLabel {
    /// Tenant name.
    pub tenant: String,
}

/// A failure category label (low cardinality: watch, render, forbidden, inventory, prune, apply).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CategoryLabel {
    /// The category.
    pub category: String,
}

/// A state label (low cardinality: health verdicts, rollout tenant states).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StateLabel {
    /// The state.
    pub state: &'static str,
}

/// A notification label: the channel's provider type and what became of the message.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct NotificationLabel {
    /// `webhook`, `slack`, `teams` or `alertmanager`.
    pub provider: String,
    /// `sent`, `failed` (every attempt failed or the receiver refused it), `suppressed`
    /// (the channel's rate limit) or `dropped` (the channel's queue was full).
    pub result: &'static str,
}

/// How `fief_tenant_reconcile_duration_seconds` is kept.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SyncDurations {
    /// A histogram per tenant (label `tenant`): each tenant's own sync times, 15 series per
    /// tenant.
    #[default]
    PerTenant,
    /// One histogram of every tenant's syncs, without the `tenant` label: for fleets whose
    /// per-tenant series would make every scrape megabytes. Fleet-wide queries (`sum by (le)`)
    /// read the same.
    Fleet,
}

/// Every metric of the agent, in one registry.
pub struct Metrics {
    registry: Registry,
    /// Held for a scrape: the gauges set at scrape time are filled and encoded together.
    scrape: Mutex<()>,
    /// Tenant syncs by result.
    pub syncs: Family<ResultLabel, Counter>,
    /// Objects applied (created or configured).
    pub applied: Counter,
    /// Objects pruned.
    pub pruned: Counter,
    /// Hand edits (drift) detected.
    pub drift: Counter,
    /// Duration of sync batches.
    pub batch_seconds: Histogram,
    /// Git fetches by result.
    pub fetches: Family<ResultLabel, Counter>,
    /// Tenants waiting in the queue.
    pub queue_depth: Gauge,
    /// Unix time of the last successful fetch (0: none yet).
    pub fetch_last: Gauge,
    /// API requests by verb (a counter, read at scrape time from the client's counter).
    pub api_requests: Family<VerbLabel, Counter>,
    /// How tenant sync durations are kept.
    durations: SyncDurations,
    /// Per-tenant sync duration ([`SyncDurations::PerTenant`]).
    pub tenant_seconds: Family<TenantLabel, Durations>,
    /// Every tenant's sync duration in one histogram ([`SyncDurations::Fleet`]).
    pub fleet_seconds: Histogram,
    /// 1 when the tenant's last sync succeeded, else 0.
    pub tenant_ready: Family<TenantLabel, Gauge>,
    /// 1 while this replica holds the Lease (set at scrape time).
    pub leader: Gauge,
    /// With shards: the shards this replica holds, and of them the ones it syncs (set at
    /// scrape time).
    pub shards_held: Gauge,
    /// See [`Metrics::shards_held`].
    pub shards_ready: Gauge,
    /// Tenants whose prune is held, by reason (set at scrape time from `holds`).
    pub prune_held: Family<ReasonLabel, Gauge>,
    /// Each tenant's last prune hold.
    holds: held::Holds,
    /// Failed tenant syncs by category.
    pub failures: Family<CategoryLabel, Counter>,
    /// Unix time of the last successful fetch.
    pub last_fetch_unix: AtomicI64,
    /// Tenant files parsed for new commits (unchanged ones are reused).
    pub tenants_loaded: Counter,
    /// Tenant input hashes computed for new commits (unchanged ones are reused).
    pub tenants_hashed: Counter,
    /// Tenants rendered (and validated).
    pub tenants_rendered: Counter,
    /// Tenants found as last applied (recorded inputs current, live objects unchanged):
    /// neither rendered nor synced.
    pub tenants_verified: Counter,
    /// Tenants applied and not yet judged healthy or stalled (set at scrape time).
    pub tenants_in_flight: Gauge,
    /// The highest `tenants_in_flight` since start (set at scrape time).
    pub tenants_in_flight_peak: Gauge,
    /// Tenants by health verdict (`ready`, `reconciling`, `stalled`; set at scrape time).
    pub tenants_health: Family<StateLabel, Gauge>,
    /// 1 when a judged tenant's objects are healthy, else 0 (set at scrape time).
    pub tenant_healthy: Family<TenantLabel, Gauge>,
    /// The rollout's current wave, 1-based; 0: no rollout (set at scrape time).
    pub rollout_wave: Gauge,
    /// Waves of the current rollout (set at scrape time).
    pub rollout_waves: Gauge,
    /// 1 while the rollout is halted (set at scrape time).
    pub rollout_halted: Gauge,
    /// Tenants of the current rollout by state (`updated`, `pending`, `held`; set at scrape
    /// time).
    pub rollout_tenants: Family<StateLabel, Gauge>,
    /// Notifications by provider type and result.
    pub notifications: Family<NotificationLabel, Counter>,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new(SyncDurations::default())
    }
}

impl Metrics {
    /// Every metric, registered; tenant sync durations kept as `durations` says.
    pub fn new(durations: SyncDurations) -> Self {
        let mut metrics = Metrics {
            registry: Registry::default(),
            scrape: Mutex::new(()),
            syncs: Family::default(),
            applied: Counter::default(),
            pruned: Counter::default(),
            drift: Counter::default(),
            batch_seconds: Histogram::new(exponential_buckets(0.005, 2.0, 14)),
            fetches: Family::default(),
            queue_depth: Gauge::default(),
            fetch_last: Gauge::default(),
            api_requests: Family::default(),
            durations,
            tenant_seconds: Family::default(),
            fleet_seconds: Histogram::new(durations::bounds()),
            tenant_ready: Family::default(),
            leader: Gauge::default(),
            shards_held: Gauge::default(),
            shards_ready: Gauge::default(),
            prune_held: Family::default(),
            holds: held::Holds::default(),
            failures: Family::default(),
            last_fetch_unix: AtomicI64::new(0),
            tenants_loaded: Counter::default(),
            tenants_hashed: Counter::default(),
            tenants_rendered: Counter::default(),
            tenants_verified: Counter::default(),
            tenants_in_flight: Gauge::default(),
            tenants_in_flight_peak: Gauge::default(),
            tenants_health: Family::default(),
            tenant_healthy: Family::default(),
            rollout_wave: Gauge::default(),
            rollout_waves: Gauge::default(),
            rollout_halted: Gauge::default(),
            rollout_tenants: Family::default(),
            notifications: Family::default(),
        };
        let mut registry = Registry::with_prefix("fief");
        metrics.register_syncs(&mut registry);
        metrics.register_tenants(&mut registry);
        metrics.register_health(&mut registry);
        metrics.register_rollout(&mut registry);
        metrics.registry = registry;
        metrics
    }
}

impl Metrics {
    /// Syncs, objects, git and the queue.
    fn register_syncs(&self, r: &mut Registry) {
        r.register("tenant_syncs", "Tenant syncs by result", self.syncs.clone());
        r.register(
            "objects_applied",
            "Objects server-side applied",
            self.applied.clone(),
        );
        r.register("objects_pruned", "Objects pruned", self.pruned.clone());
        r.register(
            "drift_detected",
            "Hand edits of fields fief owns, detected by watches",
            self.drift.clone(),
        );
        r.register(
            "sync_batch_duration_seconds",
            "Duration of a sync batch",
            self.batch_seconds.clone(),
        );
        r.register("git_fetches", "Git fetches by result", self.fetches.clone());
        r.register(
            "queue_depth",
            "Tenants waiting for a sync",
            self.queue_depth.clone(),
        );
        r.register(
            "git_last_fetch_timestamp_seconds",
            "Unix time of the last successful git fetch (0: none yet)",
            self.fetch_last.clone(),
        );
        r.register(
            "leader",
            "1 while this replica holds the Lease and reconciles (always without leader election), 0 on a standby",
            self.leader.clone(),
        );
        r.register(
            "shards_held",
            "With --shards: the shards whose Leases this replica holds (0 without shards)",
            self.shards_held.clone(),
        );
        r.register(
            "shards_ready",
            "With --shards: the held shards whose tenants this replica syncs (a shard just taken waits for a fresh fetch)",
            self.shards_ready.clone(),
        );
    }

    /// Per-tenant syncs, API requests and the work new commits cost.
    fn register_tenants(&self, r: &mut Registry) {
        const DURATION: &str = "tenant_reconcile_duration_seconds";
        const HELP: &str = "Duration of one tenant's sync";
        match self.durations {
            SyncDurations::PerTenant => r.register(DURATION, HELP, self.tenant_seconds.clone()),
            SyncDurations::Fleet => r.register(DURATION, HELP, self.fleet_seconds.clone()),
        }
        r.register(
            "tenant_ready",
            "1 when the tenant's last sync succeeded, else 0",
            self.tenant_ready.clone(),
        );
        r.register(
            "tenant_failures",
            "Failed tenant syncs by category",
            self.failures.clone(),
        );
        r.register(
            "api_requests",
            "Kubernetes API requests sent, by verb",
            self.api_requests.clone(),
        );
        r.register(
            "tenants_loaded",
            "Tenant files parsed for new commits (unchanged files are not parsed again)",
            self.tenants_loaded.clone(),
        );
        r.register(
            "tenants_hashed",
            "Tenant input hashes computed for new commits (only tenants whose inputs changed)",
            self.tenants_hashed.clone(),
        );
        r.register(
            "tenants_rendered",
            "Tenants rendered and validated",
            self.tenants_rendered.clone(),
        );
        r.register(
            "tenants_verified",
            "Tenants found as last applied (recorded inputs current, live objects unchanged by anyone else), neither rendered nor synced",
            self.tenants_verified.clone(),
        );
    }

    /// The health gate's figures.
    fn register_health(&self, r: &mut Registry) {
        r.register(
            "tenants_in_flight",
            "Tenants of a rollout's current wave released and not yet healthy, stalled or failed (bounded by --max-in-flight; other syncs never wait)",
            self.tenants_in_flight.clone(),
        );
        r.register(
            "tenants_in_flight_peak",
            "Highest fief_tenants_in_flight since start",
            self.tenants_in_flight_peak.clone(),
        );
        r.register(
            "tenants_health",
            "Tenants by health verdict after their last apply",
            self.tenants_health.clone(),
        );
        r.register(
            "tenant_healthy",
            "1 when the tenant's applied objects are healthy, 0 while waiting or stalled",
            self.tenant_healthy.clone(),
        );
        r.register(
            "tenants_prune_held",
            "Tenants whose last sync held back a prune git asks for (objects that left git still run), by reason",
            self.prune_held.clone(),
        );
    }

    /// The rollout's figures.
    fn register_rollout(&self, r: &mut Registry) {
        r.register(
            "rollout_wave",
            "The rollout's current wave (1-based; 0: no rollout)",
            self.rollout_wave.clone(),
        );
        r.register(
            "rollout_waves",
            "Waves of the current rollout",
            self.rollout_waves.clone(),
        );
        r.register(
            "rollout_halted",
            "1 while the rollout is halted by an unhealthy or failed tenant",
            self.rollout_halted.clone(),
        );
        r.register(
            "rollout_tenants",
            "Tenants of the current rollout: updated (earlier waves), pending (current wave), held (later waves)",
            self.rollout_tenants.clone(),
        );
        r.register(
            "notifications",
            "Notifications by channel provider type and result (sent, failed, suppressed by the rate limit, dropped on a full queue)",
            self.notifications.clone(),
        );
    }
}

/// A count as a gauge value.
pub fn gauge_value(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Seconds since the Unix epoch.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

impl Metrics {
    /// Count a sync result.
    pub fn sync_result(&self, ok: bool) {
        let result = if ok { "success" } else { "failure" }.to_string();
        self.syncs.get_or_create(&ResultLabel { result }).inc();
    }

    /// Count a fetch result.
    pub fn fetch_result(&self, ok: bool) {
        let result = if ok { "success" } else { "failure" }.to_string();
        self.fetches.get_or_create(&ResultLabel { result }).inc();
        if ok {
            self.last_fetch_unix.store(unix_now(), Ordering::Relaxed);
        }
    }

    /// Record one tenant's sync duration.
    pub fn observe_tenant(&self, tenant: &str, seconds: f64) {
        match self.durations {
            SyncDurations::PerTenant => self
                .tenant_seconds
                .get_or_create(&TenantLabel {
                    tenant: tenant.to_string(),
                })
                .observe(seconds),
            SyncDurations::Fleet => self.fleet_seconds.observe(seconds),
        }
    }

    /// Set whether a tenant is ready.
    pub fn tenant_ready(&self, tenant: &str, ready: bool) {
        self.tenant_ready
            .get_or_create(&TenantLabel {
                tenant: tenant.to_string(),
            })
            .set(i64::from(ready));
    }

    /// Take a tenant's prune hold in (none clears it).
    pub fn prune_hold(&self, tenant: &str, held: Option<&fief_core::status::PruneHeld>) {
        self.holds.record(tenant, held);
    }

    /// Count a failed sync by category.
    pub fn failure(&self, category: &str) {
        self.failures
            .get_or_create(&CategoryLabel {
                category: category.to_string(),
            })
            .inc();
    }

    /// The text exposition, whole. `refresh` sets the gauges read at scrape time first (see
    /// [`Metrics::encode_to`]).
    pub fn encode(&self, requests: RequestStats, refresh: impl FnOnce(&Metrics)) -> String {
        let mut out = String::new();
        if self.encode_to(requests, refresh, &mut out).is_err() {
            out.clear();
        }
        out
    }

    /// Write the text exposition into `out` as it is encoded (`/metrics` sends it in chunks:
    /// [`streamed`]). `refresh` sets the gauges read at scrape time first; one scrape runs at
    /// a time, so a family cleared and refilled by `refresh` is encoded whole.
    pub fn encode_to(
        &self,
        requests: RequestStats,
        refresh: impl FnOnce(&Metrics),
        out: &mut impl std::fmt::Write,
    ) -> std::fmt::Result {
        let _one = self.scrape.lock().unwrap_or_else(|e| e.into_inner());
        refresh(self);
        self.holds.export(&self.prune_held);
        self.fetch_last
            .set(self.last_fetch_unix.load(Ordering::Relaxed));
        for (verb, n) in [
            ("GET", requests.get),
            ("POST", requests.post),
            ("PUT", requests.put),
            ("PATCH", requests.patch),
            ("DELETE", requests.delete),
        ] {
            let counter = self.api_requests.get_or_create(&VerbLabel {
                verb: verb.to_string(),
            });
            let seen = counter.get();
            counter.inc_by(n.saturating_sub(seen));
        }
        prometheus_client::encoding::text::encode(out, &self.registry)
    }
}

#[cfg(test)]
mod tests;
