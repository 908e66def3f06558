//! Metrics: what the agent exposes on `/metrics` in Prometheus text format.
//!
//! In: sync outcomes, fetches, queue depth, API request counts. Out: the text exposition.

use std::sync::atomic::{AtomicI64, Ordering};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use fief_kube::counter::RequestStats;

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

/// Every metric of the agent.
pub struct Metrics {
    registry: Registry,
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
    /// Per-tenant sync duration.
    pub tenant_seconds: Family<TenantLabel, Histogram>,
    /// 1 when the tenant's last sync succeeded, else 0.
    pub tenant_ready: Family<TenantLabel, Gauge>,
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
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("fief");
        let syncs = Family::<ResultLabel, Counter>::default();
        registry.register("tenant_syncs", "Tenant syncs by result", syncs.clone());
        let applied = Counter::default();
        registry.register(
            "objects_applied",
            "Objects server-side applied",
            applied.clone(),
        );
        let pruned = Counter::default();
        registry.register("objects_pruned", "Objects pruned", pruned.clone());
        let drift = Counter::default();
        registry.register(
            "drift_detected",
            "Hand edits of fields fief owns, detected by watches",
            drift.clone(),
        );
        let batch_seconds = Histogram::new(exponential_buckets(0.005, 2.0, 14));
        registry.register(
            "sync_batch_duration_seconds",
            "Duration of a sync batch",
            batch_seconds.clone(),
        );
        let fetches = Family::<ResultLabel, Counter>::default();
        registry.register("git_fetches", "Git fetches by result", fetches.clone());
        let queue_depth = Gauge::default();
        registry.register(
            "queue_depth",
            "Tenants waiting for a sync",
            queue_depth.clone(),
        );
        let fetch_last = Gauge::default();
        registry.register(
            "git_last_fetch_timestamp_seconds",
            "Unix time of the last successful git fetch (0: none yet)",
            fetch_last.clone(),
        );
        let tenant_seconds = Family::<TenantLabel, Histogram>::new_with_constructor(
            tenant_histogram as fn() -> Histogram,
        );
        registry.register(
            "tenant_reconcile_duration_seconds",
            "Duration of one tenant's sync",
            tenant_seconds.clone(),
        );
        let tenant_ready = Family::<TenantLabel, Gauge>::default();
        registry.register(
            "tenant_ready",
            "1 when the tenant's last sync succeeded, else 0",
            tenant_ready.clone(),
        );
        let failures = Family::<CategoryLabel, Counter>::default();
        registry.register(
            "tenant_failures",
            "Failed tenant syncs by category",
            failures.clone(),
        );
        let api_requests = Family::<VerbLabel, Counter>::default();
        registry.register(
            "api_requests",
            "Kubernetes API requests sent, by verb",
            api_requests.clone(),
        );
        let tenants_loaded = Counter::default();
        registry.register(
            "tenants_loaded",
            "Tenant files parsed for new commits (unchanged files are not parsed again)",
            tenants_loaded.clone(),
        );
        let tenants_hashed = Counter::default();
        registry.register(
            "tenants_hashed",
            "Tenant input hashes computed for new commits (only tenants whose inputs changed)",
            tenants_hashed.clone(),
        );
        let tenants_rendered = Counter::default();
        registry.register(
            "tenants_rendered",
            "Tenants rendered and validated",
            tenants_rendered.clone(),
        );
        let tenants_verified = Counter::default();
        registry.register(
            "tenants_verified",
            "Tenants found as last applied (recorded inputs current, live objects unchanged by anyone else), neither rendered nor synced",
            tenants_verified.clone(),
        );
        Metrics {
            registry,
            tenants_verified,
            tenants_loaded,
            tenants_hashed,
            tenants_rendered,
            syncs,
            applied,
            pruned,
            drift,
            batch_seconds,
            fetches,
            queue_depth,
            fetch_last,
            api_requests,
            tenant_seconds,
            tenant_ready,
            failures,
            last_fetch_unix: AtomicI64::new(0),
        }
    }
}

fn tenant_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.005, 2.0, 12))
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
        self.tenant_seconds
            .get_or_create(&TenantLabel {
                tenant: tenant.to_string(),
            })
            .observe(seconds);
    }

    /// Set whether a tenant is ready.
    pub fn tenant_ready(&self, tenant: &str, ready: bool) {
        self.tenant_ready
            .get_or_create(&TenantLabel {
                tenant: tenant.to_string(),
            })
            .set(i64::from(ready));
    }

    /// Count a failed sync by category.
    pub fn failure(&self, category: &str) {
        self.failures
            .get_or_create(&CategoryLabel {
                category: category.to_string(),
            })
            .inc();
    }

    /// The text exposition, with scrape-time gauges refreshed.
    pub fn encode(&self, requests: RequestStats) -> String {
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
        // Sized first, then written once: at 1,000 tenants the text is over 1 MB (a
        // histogram per tenant), and a String grown by doubling would hold its old and new
        // buffers at once on every scrape.
        let mut size = Count(0);
        let _ = prometheus_client::encoding::text::encode(&mut size, &self.registry);
        let mut out = String::with_capacity(size.0);
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}

/// A writer that only counts the bytes written to it.
struct Count(usize);

impl std::fmt::Write for Count {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0 += s.len();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exposition_is_written_once_into_a_buffer_of_its_size() {
        let metrics = Metrics::default();
        for n in 0..200 {
            let tenant = format!("tenant-{n:04}");
            metrics.observe_tenant(&tenant, 0.02 * f64::from(n));
            metrics.tenant_ready(&tenant, n % 3 != 0);
        }
        let text = metrics.encode(RequestStats::default());
        assert!(text.len() > 200 * 1000, "a histogram per tenant");
        assert!(text.contains("fief_tenant_reconcile_duration_seconds_bucket{"));
        assert!(text.contains("fief_tenant_ready{tenant=\"tenant-0003\"} 0"));
        assert!(text.ends_with("# EOF\n"));
        assert_eq!(text.capacity(), text.len(), "sized before it was written");
    }
}
