//! The optional objects `fief install` was asked for, from its arguments.
//!
//! In: [`InstallArgs`]. Out: the [`Optional`] objects with their labels, peers and thresholds,
//! or a usage error naming the option whose text is refused. Pure.

use super::{
    GrafanaDashboard, Labels, NetworkPolicy, Optional, PrometheusRule, ServiceMonitor,
    is_prometheus_duration, parse_labels,
};
use crate::cli::{CliError, InstallArgs};

/// The units of an alert's `for` (every unit Prometheus reads).
const FOR_UNITS: [&str; 7] = ["ms", "s", "m", "h", "d", "w", "y"];

/// The labels of a repeatable `KEY=VALUE` option, merged.
fn labels(given: &[String], option: &str) -> Result<Labels, CliError> {
    let mut all = Labels::new();
    for text in given {
        all.extend(parse_labels(text, option).map_err(CliError::Usage)?);
    }
    Ok(all)
}

/// `text` if it is a Prometheus duration of `units`, else a usage error naming `--option`.
fn duration(text: &str, option: &str, units: &[&str]) -> Result<String, CliError> {
    if is_prometheus_duration(text, units) {
        Ok(text.to_string())
    } else {
        Err(CliError::Usage(format!(
            "--{option} {text}: not a Prometheus duration (a number and {}, e.g. 30s or 1m)",
            units.join(", ")
        )))
    }
}

/// The optional objects asked for, their options checked.
pub fn from_args(args: &InstallArgs) -> Result<Optional, CliError> {
    let mut optional = Optional::default();
    if args.network_policy {
        let from_namespaces = args
            .network_policy_from_namespace
            .iter()
            .map(|text| parse_labels(text, "network-policy-from-namespace"))
            .collect::<Result<_, _>>()
            .map_err(CliError::Usage)?;
        optional.network_policy = Some(NetworkPolicy { from_namespaces });
    }
    if args.service_monitor {
        optional.service_monitor = Some(ServiceMonitor {
            interval: duration(
                &args.service_monitor_interval,
                "service-monitor-interval",
                &["ms", "s", "m", "h"],
            )?,
            labels: labels(&args.service_monitor_label, "service-monitor-label")?,
        });
    }
    if args.prometheus_rule {
        optional.prometheus_rule = Some(prometheus_rule(args)?);
    }
    if args.grafana_dashboard {
        let namespace = args.grafana_dashboard_namespace.clone();
        if let Some(ns) = namespace
            .as_deref()
            .filter(|ns| !crate::core::model::is_dns_label(ns))
        {
            return Err(CliError::Usage(format!(
                "--grafana-dashboard-namespace {ns}: not a DNS-1123 label (lowercase letters, digits and '-')"
            )));
        }
        optional.grafana_dashboard = Some(GrafanaDashboard {
            namespace,
            labels: labels(&args.grafana_dashboard_label, "grafana-dashboard-label")?,
        });
    }
    Ok(optional)
}

/// The PrometheusRule's labels and thresholds.
fn prometheus_rule(args: &InstallArgs) -> Result<PrometheusRule, CliError> {
    let stale = args.alert_fetch_stale;
    if stale.as_secs() == 0 || stale.subsec_nanos() != 0 {
        return Err(CliError::Usage(format!(
            "--alert-fetch-stale {stale:?}: give whole seconds, at least 1s"
        )));
    }
    let for_ = |text: &str, option: &str| duration(text, option, &FOR_UNITS);
    Ok(PrometheusRule {
        labels: labels(&args.prometheus_rule_label, "prometheus-rule-label")?,
        tenant_not_ready_for: for_(
            &args.alert_tenant_not_ready_for,
            "alert-tenant-not-ready-for",
        )?,
        fetch_stale_seconds: stale.as_secs(),
        fetch_failing_for: for_(&args.alert_fetch_failing_for, "alert-fetch-failing-for")?,
        tenant_stalled_for: for_(&args.alert_tenant_stalled_for, "alert-tenant-stalled-for")?,
        rollout_halted_for: for_(&args.alert_rollout_halted_for, "alert-rollout-halted-for")?,
        prune_held_for: for_(&args.alert_prune_held_for, "alert-prune-held-for")?,
    })
}
