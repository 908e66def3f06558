//! What the health gate reports: its figures (in-flight tenants, verdicts) on the agent's
//! metrics, and each judged tenant's verdict for `/status`.
//!
//! In: the gate's tracker. Out: the gate's gauges set in [`Metrics`] (at scrape time) and a
//! [`HealthStatus`]; nothing is written anywhere else.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use super::{Gate, lock};
use crate::metrics::{Metrics, StateLabel, TenantLabel, gauge_value};
use fief_core::health::Verdict;
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
}
