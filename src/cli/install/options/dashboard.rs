//! The agent's Grafana dashboard as a ConfigMap for Grafana's dashboard sidecar (the label
//! `grafana_dashboard: "1"`), as `fief install --grafana-dashboard` makes it.
//!
//! In: the agent's namespace and the [`GrafanaDashboard`] settings. Out: the ConfigMap holding
//! `deploy/monitoring/grafana-dashboard.json` (built into the binary) under
//! [`DASHBOARD_KEY`]. The chart's `templates/grafana-dashboard.yaml` renders the same object
//! from its copy of the file (tests/agent/monitoring.rs keeps the copies equal). Pure.

use serde_json::{Value, json};

use super::{Labels, metadata};

/// The dashboard (Grafana JSON model), one file for the plain install, the chart and here.
pub const DASHBOARD_JSON: &str =
    include_str!("../../../../deploy/monitoring/grafana-dashboard.json");

/// The ConfigMap's key holding the dashboard (the file name Grafana's sidecar writes).
pub const DASHBOARD_KEY: &str = "fief-agent.json";

/// The ConfigMap's name.
pub const DASHBOARD_CONFIGMAP: &str = "fief-agent-dashboard";

/// The dashboard ConfigMap's settings.
#[derive(Debug, Clone, Default)]
pub struct GrafanaDashboard {
    /// Where the ConfigMap goes (`None`: the agent's namespace), for a sidecar that watches
    /// one namespace.
    pub namespace: Option<String>,
    /// Extra labels (e.g. what your sidecar selects on, besides `grafana_dashboard`).
    pub labels: Labels,
}

/// The ConfigMap, in `d.namespace` or the agent's namespace `ns`.
pub(super) fn grafana_dashboard(ns: &str, d: &GrafanaDashboard) -> Value {
    let mut labels = Labels::from([("grafana_dashboard".to_string(), "1".to_string())]);
    labels.extend(d.labels.clone());
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(d.namespace.as_deref().unwrap_or(ns), DASHBOARD_CONFIGMAP, &labels),
        "data": {DASHBOARD_KEY: DASHBOARD_JSON},
    })
}
