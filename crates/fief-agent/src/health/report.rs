//! What the health gate reports: its figures (in-flight tenants, verdicts) on the agent's
//! metrics, and each judged tenant's verdict for `/status`.
//!
//! In: the gate's tracker. Out: the gate's gauges set in [`Metrics`] (at scrape time), a
//! [`HealthStatus`], and for the web view each tenant's verdict and its objects' health;
//! nothing is written anywhere else.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;

use super::{Gate, lock};
use crate::metrics::{Metrics, StateLabel, TenantLabel, gauge_value};
use fief_core::health::{Health, Verdict};
use fief_core::objects::ObjectId;
use fief_core::status::agent::{HealthState, HealthStatus, TenantHealth};

impl Gate {
    /// Set the gate's gauges: tenants in flight, the peak since start, tenants by verdict and
    /// each judged tenant's health. A tenant no longer judged leaves `fief_tenant_healthy`.
    pub fn export(&self, metrics: &Metrics) {
        metrics.tenants_in_flight.set(gauge_value(self.in_flight()));
        metrics
            .tenants_in_flight_peak
            .set(gauge_value(self.peak.load(Ordering::Relaxed)));
        let t = lock(&self.tracker);
        let mut counts: BTreeMap<HealthState, usize> =
            HealthState::ALL.into_iter().map(|s| (s, 0)).collect();
        for v in t.verdicts.values() {
            *counts.entry(HealthState::from(v)).or_default() += 1;
        }
        for (state, n) in counts {
            let label = StateLabel {
                state: state.as_str(),
            };
            metrics
                .tenants_health
                .get_or_create(&label)
                .set(gauge_value(n));
        }
        metrics.tenant_healthy.clear();
        for (tenant, v) in &t.verdicts {
            let label = TenantLabel {
                tenant: tenant.clone(),
            };
            let healthy = i64::from(*v == Verdict::Ready);
            metrics.tenant_healthy.get_or_create(&label).set(healthy);
        }
    }

    /// Each judged tenant's verdict, for `/status`.
    pub fn status(&self) -> HealthStatus {
        let t = lock(&self.tracker);
        HealthStatus {
            max_in_flight: self.max,
            in_flight: self.in_flight(),
            in_flight_peak: self.peak.load(Ordering::Relaxed),
            tenants: t
                .verdicts
                .iter()
                .map(|(tenant, v)| (tenant.clone(), TenantHealth::from(v)))
                .collect(),
        }
    }

    /// Tenants applied and not yet judged, and the bound on them.
    pub fn status_figures(&self) -> (usize, usize) {
        (self.in_flight(), self.max)
    }

    /// Each judged tenant's verdict, by name only.
    pub fn verdict_states(&self) -> HashMap<String, HealthState> {
        let t = lock(&self.tracker);
        t.verdicts
            .iter()
            .map(|(tenant, v)| (tenant.clone(), HealthState::from(v)))
            .collect()
    }

    /// One tenant's verdict with the objects that keep it from `ready` (none: not judged).
    pub fn verdict_of(&self, tenant: &str) -> Option<TenantHealth> {
        lock(&self.tracker)
            .verdicts
            .get(tenant)
            .map(TenantHealth::from)
    }

    /// The health the watches last saw of each of `ids` (`None`: not seen).
    pub fn health_of(&self, ids: &[ObjectId]) -> Vec<Option<Health>> {
        let t = lock(&self.tracker);
        let interned: Vec<_> = {
            let interner = self.ids.lock();
            ids.iter().map(|id| interner.find(id)).collect()
        };
        ids.iter()
            .zip(interned)
            .map(|(id, interned)| {
                let seen = interned
                    .is_some_and(|i| t.unhashed.contains_key(&i) || (self.watched)(&i).is_some());
                seen.then(|| t.health(crate::desired::key(id)))
            })
            .collect()
    }
}
