//! What `fief install` sets beyond the files of `deploy/`: the agent container's resources,
//! and the objects made only when asked for (a NetworkPolicy for the agent's Pods, a
//! prometheus-operator ServiceMonitor, a PrometheusRule with the agent's alerts, a ConfigMap
//! with its Grafana dashboard), as the Helm chart (deploy/chart/fief) renders them for the
//! same settings.
//!
//! In: [`Resources`], [`Optional`] (which objects, their labels, peers and thresholds) and the
//! agent's namespace; for the parsers, the options' text. Out: the container's `resources`,
//! the objects in apply order (NetworkPolicy, ServiceMonitor, PrometheusRule, dashboard
//! ConfigMap), or the reason an option's text is refused. Pure: nothing is read or sent here.

mod alerts;
mod args;
mod dashboard;

use std::collections::BTreeMap;

use serde_json::{Value, json};

pub use alerts::PrometheusRule;
pub use args::from_args;
pub use dashboard::GrafanaDashboard;

/// The API group of the prometheus-operator's kinds (served only where its CRDs are).
pub const MONITORING_GROUP: &str = "monitoring.coreos.com";

/// Labels, as given (`KEY=VALUE`).
pub type Labels = BTreeMap<String, String>;

/// The optional objects asked for (`None`: not made).
#[derive(Debug, Clone, Default)]
pub struct Optional {
    /// A NetworkPolicy admitting ingress to port 8080 only.
    pub network_policy: Option<NetworkPolicy>,
    /// A ServiceMonitor scraping the leader's /metrics.
    pub service_monitor: Option<ServiceMonitor>,
    /// A PrometheusRule with the agent's alerts.
    pub prometheus_rule: Option<PrometheusRule>,
    /// A ConfigMap with the agent's Grafana dashboard.
    pub grafana_dashboard: Option<GrafanaDashboard>,
}

impl Optional {
    /// Every optional object with the defaults (what `fief uninstall` looks for).
    pub fn all() -> Self {
        Self {
            network_policy: Some(NetworkPolicy::default()),
            service_monitor: Some(ServiceMonitor::default()),
            prometheus_rule: Some(PrometheusRule::default()),
            grafana_dashboard: Some(GrafanaDashboard::default()),
        }
    }
}

/// The NetworkPolicy's peers.
#[derive(Debug, Clone, Default)]
pub struct NetworkPolicy {
    /// Namespace label selectors allowed to reach port 8080 (empty: anyone).
    pub from_namespaces: Vec<Labels>,
}

/// The ServiceMonitor's settings.
#[derive(Debug, Clone)]
pub struct ServiceMonitor {
    /// The scrape interval (a Prometheus duration).
    pub interval: String,
    /// Extra labels for Prometheus to select it by.
    pub labels: Labels,
}

impl Default for ServiceMonitor {
    fn default() -> Self {
        Self {
            interval: "30s".into(),
            labels: Labels::new(),
        }
    }
}

/// The agent container's requests and limits (`None`: left out). The default is
/// `deploy/agent.yaml`'s.
#[derive(Debug, Clone, PartialEq)]
pub struct Resources {
    /// `requests.cpu`.
    pub cpu_request: Option<String>,
    /// `requests.memory`.
    pub memory_request: Option<String>,
    /// `limits.cpu`.
    pub cpu_limit: Option<String>,
    /// `limits.memory`.
    pub memory_limit: Option<String>,
}

impl Default for Resources {
    fn default() -> Self {
        Self {
            cpu_request: Some("100m".into()),
            memory_request: Some("128Mi".into()),
            cpu_limit: Some("1".into()),
            memory_limit: Some("512Mi".into()),
        }
    }
}

impl Resources {
    /// The container's `resources` (`None` when nothing is set): a side with neither value
    /// is left out.
    pub fn to_value(&self) -> Option<Value> {
        let side = |cpu: &Option<String>, memory: &Option<String>| {
            let mut map = serde_json::Map::new();
            for (key, value) in [("cpu", cpu), ("memory", memory)] {
                if let Some(v) = value {
                    map.insert(key.into(), json!(v));
                }
            }
            map
        };
        let mut out = serde_json::Map::new();
        for (key, map) in [
            ("requests", side(&self.cpu_request, &self.memory_request)),
            ("limits", side(&self.cpu_limit, &self.memory_limit)),
        ] {
            if !map.is_empty() {
                out.insert(key.into(), Value::Object(map));
            }
        }
        (!out.is_empty()).then_some(Value::Object(out))
    }
}

/// The objects asked for, in the agent's `namespace`.
pub fn objects(namespace: &str, optional: &Optional) -> Vec<Value> {
    let mut out = Vec::new();
    if let Some(p) = &optional.network_policy {
        out.push(network_policy(namespace, p));
    }
    if let Some(m) = &optional.service_monitor {
        out.push(service_monitor(namespace, m));
    }
    if let Some(r) = &optional.prometheus_rule {
        out.push(alerts::prometheus_rule(namespace, r));
    }
    if let Some(d) = &optional.grafana_dashboard {
        out.push(dashboard::grafana_dashboard(namespace, d));
    }
    out
}

/// The metadata every optional object has: its name, namespace and labels (the agent's, then
/// `extra`).
fn metadata(namespace: &str, name: &str, extra: &Labels) -> Value {
    let mut labels = serde_json::Map::new();
    labels.insert("app.kubernetes.io/name".into(), json!("fief-agent"));
    labels.insert("app.kubernetes.io/part-of".into(), json!("fief"));
    for (k, v) in extra {
        labels.insert(k.clone(), json!(v));
    }
    json!({"name": name, "namespace": namespace, "labels": labels})
}

/// Ingress only on the port `http` (8080), from the peers given; egress is not restricted.
fn network_policy(namespace: &str, p: &NetworkPolicy) -> Value {
    let mut rule = json!({"ports": [{"port": "http", "protocol": "TCP"}]});
    if !p.from_namespaces.is_empty() {
        let peers: Vec<Value> = p
            .from_namespaces
            .iter()
            .map(|labels| json!({"namespaceSelector": {"matchLabels": labels}}))
            .collect();
        rule["from"] = json!(peers);
    }
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": metadata(namespace, "fief-agent", &Labels::new()),
        "spec": {
            "podSelector": {"matchLabels": {"app.kubernetes.io/name": "fief-agent"}},
            "policyTypes": ["Ingress"],
            "ingress": [rule],
        },
    })
}

/// /metrics through the Service `fief-agent`, which selects the leader alone.
fn service_monitor(namespace: &str, m: &ServiceMonitor) -> Value {
    json!({
        "apiVersion": format!("{MONITORING_GROUP}/v1"),
        "kind": "ServiceMonitor",
        "metadata": metadata(namespace, "fief-agent", &m.labels),
        "spec": {
            "selector": {"matchLabels": {"app.kubernetes.io/name": "fief-agent"}},
            "namespaceSelector": {"matchNames": [namespace]},
            "endpoints": [{"port": "http", "path": "/metrics", "interval": m.interval}],
        },
    })
}

/// `KEY=VALUE[,KEY=VALUE]` as labels; `option` names the flag in the error.
pub fn parse_labels(text: &str, option: &str) -> Result<Labels, String> {
    let mut labels = Labels::new();
    for pair in text.split(',') {
        match pair.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => {
                labels.insert(k.trim().to_string(), v.trim().to_string());
            }
            _ => {
                return Err(format!(
                    "--{option} {text}: not KEY=VALUE (e.g. team=platform)"
                ));
            }
        }
    }
    Ok(labels)
}

/// Whether `text` is a Prometheus duration built of the `units` (`30s`, `1h30m`).
pub fn is_prometheus_duration(text: &str, units: &[&str]) -> bool {
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 {
            return false;
        }
        rest = &rest[digits..];
        // The longest unit first, so `ms` is not read as `m` then `s`.
        let Some(unit) = units
            .iter()
            .filter(|u| rest.starts_with(**u))
            .max_by_key(|u| u.len())
        else {
            return false;
        };
        rest = &rest[unit.len()..];
    }
    !text.is_empty()
}

/// A Kubernetes quantity (`100m`, `1`, `0.5`, `128Mi`, `1e3`), or `None` for `none` (left
/// out); `option` names the flag in the error.
pub fn parse_quantity(text: &str, option: &str) -> Result<Option<String>, String> {
    if text == "none" {
        return Ok(None);
    }
    let number_end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(number_end);
    let number = number.strip_prefix('+').unwrap_or(number);
    let number_ok = !number.is_empty()
        && number != "."
        && number.matches('.').count() <= 1
        && number.chars().all(|c| c.is_ascii_digit() || c == '.');
    let binary = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    let decimal = ["", "n", "u", "m", "k", "M", "G", "T", "P", "E"];
    let exponent = suffix
        .strip_prefix(['e', 'E'])
        .map(|e| e.strip_prefix(['+', '-']).unwrap_or(e))
        .is_some_and(|e| !e.is_empty() && e.chars().all(|c| c.is_ascii_digit()));
    if number_ok && (binary.contains(&suffix) || decimal.contains(&suffix) || exponent) {
        Ok(Some(text.to_string()))
    } else {
        Err(format!(
            "--{option} {text}: not a Kubernetes quantity (e.g. 100m, 1, 128Mi, 1Gi) or none"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::dashboard::{DASHBOARD_CONFIGMAP, DASHBOARD_JSON, DASHBOARD_KEY};
    use super::*;

    #[test]
    fn nothing_is_made_unless_asked_and_each_object_is_in_the_namespace() {
        assert!(objects("gitops", &Optional::default()).is_empty());
        let all = objects("gitops", &Optional::all());
        let kinds: Vec<&str> = all.iter().filter_map(|o| o["kind"].as_str()).collect();
        assert_eq!(
            kinds,
            [
                "NetworkPolicy",
                "ServiceMonitor",
                "PrometheusRule",
                "ConfigMap"
            ]
        );
        for o in &all {
            assert_eq!(o["metadata"]["namespace"], "gitops", "{o}");
        }
        assert_eq!(all[3]["metadata"]["name"], DASHBOARD_CONFIGMAP);
        assert_eq!(all[3]["metadata"]["labels"]["grafana_dashboard"], "1");
        assert_eq!(all[3]["data"][DASHBOARD_KEY], DASHBOARD_JSON);
        assert!(
            all[0]["spec"]["ingress"][0].get("from").is_none(),
            "no peers given: from anywhere"
        );
        let rules = all[2].to_string();
        assert!(
            rules.contains(r#"fief_tenant_ready{namespace=\"gitops\"} == 0"#),
            "{rules}"
        );
        assert!(rules.contains("> 600"), "{rules}");
        let alerts: Vec<&str> = all[2]["spec"]["groups"][0]["rules"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["alert"].as_str())
            .collect();
        assert_eq!(
            alerts,
            [
                "FiefAgentNotScraped",
                "FiefNoLeader",
                "FiefRepoNotFetched",
                "FiefGitFetchFailing",
                "FiefTenantNotReady",
                "FiefTenantsStalled",
                "FiefRolloutHalted",
                "FiefPruneHeld"
            ]
        );
    }

    #[test]
    fn the_dashboard_goes_where_its_sidecar_looks_with_the_labels_given() {
        let optional = Optional {
            grafana_dashboard: Some(GrafanaDashboard {
                namespace: Some("monitoring".into()),
                labels: parse_labels("grafana_dashboard=fief,team=platform", "x").unwrap(),
            }),
            ..Optional::default()
        };
        let made = objects("fief-system", &optional);
        let metadata = &made[0]["metadata"];
        assert_eq!(metadata["namespace"], "monitoring");
        assert_eq!(
            metadata["labels"]["grafana_dashboard"], "fief",
            "a label given wins"
        );
        assert_eq!(metadata["labels"]["team"], "platform");
        assert_eq!(metadata["labels"]["app.kubernetes.io/name"], "fief-agent");
        let dashboard: Value = serde_json::from_str(DASHBOARD_JSON).unwrap();
        assert_eq!(dashboard["uid"], "fief-agent");
    }

    #[test]
    fn peers_and_labels_reach_their_objects() {
        let optional = Optional {
            network_policy: Some(NetworkPolicy {
                from_namespaces: vec![parse_labels("team=platform,env=prod", "x").unwrap()],
            }),
            service_monitor: Some(ServiceMonitor {
                interval: "1m".into(),
                labels: parse_labels("release=prom", "x").unwrap(),
            }),
            prometheus_rule: None,
            grafana_dashboard: None,
        };
        let objects = objects("fief-system", &optional);
        let from = &objects[0]["spec"]["ingress"][0]["from"][0];
        assert_eq!(from["namespaceSelector"]["matchLabels"]["env"], "prod");
        assert_eq!(objects[1]["metadata"]["labels"]["release"], "prom");
        assert_eq!(
            objects[1]["metadata"]["labels"]["app.kubernetes.io/name"],
            "fief-agent"
        );
        assert_eq!(objects[1]["spec"]["endpoints"][0]["interval"], "1m");
    }

    #[test]
    fn option_text_is_checked_and_a_refusal_names_the_option() {
        assert!(
            parse_labels("team", "service-monitor-label")
                .is_err_and(|e| e.contains("--service-monitor-label team: not KEY=VALUE"))
        );
        assert!(parse_labels("=x", "x").is_err());
        for good in ["30s", "1m", "1h30m", "250ms", "15m"] {
            assert!(
                is_prometheus_duration(good, &["ms", "s", "m", "h"]),
                "{good}"
            );
        }
        for bad in ["", "30", "m", "1.5m", "30 s", "1d"] {
            assert!(
                !is_prometheus_duration(bad, &["ms", "s", "m", "h"]),
                "{bad}"
            );
        }
        for good in ["100m", "1", "0.5", "128Mi", "1Gi", "1e3", "2k", "+1"] {
            assert_eq!(parse_quantity(good, "x"), Ok(Some(good.to_string())));
        }
        assert_eq!(parse_quantity("none", "x"), Ok(None));
        for bad in ["", "1 Gi", "1GB", "a", ".", "1.2.3", "-1", "1e"] {
            assert!(
                parse_quantity(bad, "cpu-limit").is_err_and(|e| e.contains("--cpu-limit")),
                "{bad}"
            );
        }
    }
}
