//! What the health gate reports: the Prometheus lines of its figures (in-flight tenants,
//! verdicts) and each judged tenant's verdict for `/status`.
//!
//! In: the gate's tracker. Out: exposition text and JSON; nothing is written anywhere.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use serde_json::Value;

use super::{Gate, lock};
use fief_core::health::Verdict;

impl Gate {
    /// Metric lines (Prometheus text): tenants in flight, the peak since start, tenants by
    /// verdict and each judged tenant's health.
    pub fn metrics_text(&self) -> String {
        let t = lock(&self.tracker);
        let mut counts: BTreeMap<&str, usize> = [("ready", 0), ("reconciling", 0), ("stalled", 0)]
            .into_iter()
            .collect();
        for v in t.verdicts.values() {
            *counts.entry(v.name()).or_default() += 1;
        }
        let mut out = String::new();
        out.push_str("# HELP fief_tenants_in_flight Tenants applied and not yet judged healthy or stalled (bounded by --max-in-flight).\n# TYPE fief_tenants_in_flight gauge\n");
        out.push_str(&format!("fief_tenants_in_flight {}\n", self.in_flight()));
        out.push_str("# HELP fief_tenants_in_flight_peak Highest fief_tenants_in_flight since start.\n# TYPE fief_tenants_in_flight_peak gauge\n");
        out.push_str(&format!(
            "fief_tenants_in_flight_peak {}\n",
            self.peak.load(Ordering::Relaxed)
        ));
        out.push_str("# HELP fief_tenants_health Tenants by health verdict after their last apply.\n# TYPE fief_tenants_health gauge\n");
        for (state, n) in counts {
            out.push_str(&format!("fief_tenants_health{{state=\"{state}\"}} {n}\n"));
        }
        out.push_str("# HELP fief_tenant_healthy 1 when the tenant's applied objects are healthy, 0 while waiting or stalled.\n# TYPE fief_tenant_healthy gauge\n");
        for (tenant, v) in &t.verdicts {
            out.push_str(&format!(
                "fief_tenant_healthy{{tenant=\"{tenant}\"}} {}\n",
                i32::from(*v == Verdict::Ready)
            ));
        }
        out
    }

    /// Each judged tenant's verdict, for `/status`.
    pub fn status_json(&self) -> Value {
        let t = lock(&self.tracker);
        let tenants: serde_json::Map<String, Value> = t
            .verdicts
            .iter()
            .map(|(tenant, v)| {
                let objects: Vec<Value> = match v {
                    Verdict::Ready => Vec::new(),
                    Verdict::Reconciling(l) | Verdict::Stalled(l) => l
                        .iter()
                        .map(|(o, why)| serde_json::json!({"object": o, "reason": why}))
                        .collect(),
                };
                (
                    tenant.clone(),
                    serde_json::json!({"health": v.name(), "objects": objects}),
                )
            })
            .collect();
        serde_json::json!({
            "maxInFlight": self.max,
            "inFlight": self.in_flight(),
            "inFlightPeak": self.peak.load(Ordering::Relaxed),
            "tenants": tenants,
        })
    }
}

/// Insert `extra` metric lines before the closing `# EOF` of an OpenMetrics exposition.
pub fn append_metrics(text: &mut String, extra: &str) {
    match text.rfind("# EOF") {
        Some(i) => text.insert_str(i, extra),
        None => text.push_str(extra),
    }
}
