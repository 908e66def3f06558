//! The agent's alerts: the PrometheusRule `fief install --prometheus-rule` makes, whose
//! `spec.groups` is also the plain rule file `deploy/monitoring/prometheus-rules.yaml`.
//!
//! In: the agent's namespace and the [`PrometheusRule`] settings (labels, thresholds). Out: the
//! PrometheusRule object, on the metrics the agent exports (crates/fief-agent/src/metrics.rs),
//! each alert with a summary and a description that says what to run. The chart's
//! `templates/prometheusrule.yaml` renders the same object for the same settings. Pure.

use serde_json::{Value, json};

use super::{Labels, MONITORING_GROUP, metadata};

/// The PrometheusRule's settings.
#[derive(Debug, Clone)]
pub struct PrometheusRule {
    /// Extra labels for Prometheus to select it by.
    pub labels: Labels,
    /// How long a tenant stays failed before FiefTenantNotReady fires (a Prometheus duration).
    pub tenant_not_ready_for: String,
    /// Seconds without a successful fetch before FiefRepoNotFetched fires.
    pub fetch_stale_seconds: u64,
    /// How long every fetch fails before FiefGitFetchFailing fires.
    pub fetch_failing_for: String,
    /// How long tenants stay stalled on health before FiefTenantsStalled fires.
    pub tenant_stalled_for: String,
    /// How long a rollout stays halted before FiefRolloutHalted fires.
    pub rollout_halted_for: String,
    /// How long prunes stay held before FiefPruneHeld fires.
    pub prune_held_for: String,
}

impl Default for PrometheusRule {
    fn default() -> Self {
        Self {
            labels: Labels::new(),
            tenant_not_ready_for: "15m".into(),
            fetch_stale_seconds: 600,
            fetch_failing_for: "10m".into(),
            tenant_stalled_for: "15m".into(),
            rollout_halted_for: "15m".into(),
            prune_held_for: "30m".into(),
        }
    }
}

/// What Prometheus puts in an annotation for the alert's `tenant` label, `reason` label and
/// value.
const TENANT: &str = "{{ $labels.tenant }}";
const REASON: &str = "{{ $labels.reason }}";
const VALUE: &str = "{{ $value }}";

/// One alerting rule.
fn alert(
    name: &str,
    expr: String,
    for_: &str,
    critical: bool,
    summary: String,
    description: String,
) -> Value {
    json!({
        "alert": name,
        "expr": expr,
        "for": for_,
        "labels": {"severity": if critical { "critical" } else { "warning" }},
        "annotations": {"summary": summary, "description": description},
    })
}

/// The agent's replicas: none scraped, or none leading. `ns` is the target label Prometheus
/// gives the scraped series.
fn agent_rules(ns: &str) -> Vec<Value> {
    let pods = format!("kubectl -n {ns} get pods -l app.kubernetes.io/name=fief-agent");
    vec![
        alert(
            "FiefAgentNotScraped",
            format!("absent(fief_leader{{namespace=\"{ns}\"}})"),
            "10m",
            true,
            format!("no fief agent in {ns} has been scraped for 10 minutes"),
            format!(
                "No replica's /metrics reaches Prometheus: the agent is down, or (with the ServiceMonitor, which scrapes the leader through the Service fief-agent) no replica holds the Lease. No tenant is reconciled. `{pods}` shows the replicas; `kubectl -n {ns} describe deployment fief-agent` and `kubectl -n {ns} logs deploy/fief-agent` say why."
            ),
        ),
        alert(
            "FiefNoLeader",
            format!("max by (namespace) (fief_leader{{namespace=\"{ns}\"}}) == 0"),
            "5m",
            true,
            format!("no fief agent replica in {ns} holds the Lease"),
            format!(
                "Replicas run but none leads, so no tenant is reconciled. `kubectl -n {ns} get lease fief-agent -o yaml` shows the last holder; `kubectl -n {ns} logs -l app.kubernetes.io/name=fief-agent` says why no replica can take it (its RBAC on leases, the API server unreachable)."
            ),
        ),
    ]
}

/// Git: the last successful fetch too old, or every recent fetch failed.
fn git_rules(ns: &str, r: &PrometheusRule) -> Vec<Value> {
    let (stale, failing_for) = (r.fetch_stale_seconds, &r.fetch_failing_for);
    let fetches = |result: &str| {
        format!(
            "sum by (namespace) (increase(fief_git_fetches_total{{namespace=\"{ns}\",result=\"{result}\"}}[10m])) > 0"
        )
    };
    let why = format!(
        "`kubectl -n {ns} logs deploy/fief-agent` and `fief status --namespace {ns}` show the fetch error: a revoked or expired credential (Secret fief-git), a changed host key (known_hosts), the git host down, or the branch gone."
    );
    vec![
        alert(
            "FiefRepoNotFetched",
            format!(
                "time() - fief_git_last_fetch_timestamp_seconds{{namespace=\"{ns}\"}} > {stale}"
            ),
            "5m",
            false,
            format!("the fief agent in {ns} has not fetched the tenants repo for {stale}s"),
            format!("Tenants are not updated from git. {why}"),
        ),
        alert(
            "FiefGitFetchFailing",
            format!("{} unless {}", fetches("failure"), fetches("success")),
            failing_for,
            false,
            format!("every git fetch of the fief agent in {ns} has failed for {failing_for}"),
            format!(
                "The agent retries every --interval and on each push webhook, and keeps serving the last commit it fetched. {why}"
            ),
        ),
    ]
}

/// Tenants: failing to sync, stalled on health, prunes held; and the rollout halted.
fn tenant_rules(ns: &str, r: &PrometheusRule) -> Vec<Value> {
    let sel = format!("namespace=\"{ns}\"");
    let not_ready_for = &r.tenant_not_ready_for;
    vec![
        alert(
            "FiefTenantNotReady",
            format!("fief_tenant_ready{{{sel}}} == 0"),
            not_ready_for,
            false,
            format!("fief tenant {TENANT} has failed to sync for {not_ready_for}"),
            format!(
                "Its last sync failed: it did not render or validate, or an apply was refused. `fief status --tenant {TENANT} --namespace {ns}` says why; `fief validate REPO --tenant {TENANT}` lists every render error."
            ),
        ),
        alert(
            "FiefTenantsStalled",
            format!("max by (namespace) (fief_tenants_health{{{sel},state=\"stalled\"}}) > 0"),
            &r.tenant_stalled_for,
            false,
            format!("{VALUE} fief tenant(s) in {ns} are stalled on health"),
            format!(
                "Applied, but an object failed or did not turn healthy within its health timeout. `fief status --namespace {ns} --not-ready` lists them with the objects that keep each one from Ready; see those objects' events (`kubectl -n NAMESPACE describe KIND NAME`), fix the workload or the component's health settings. The tenant turns Ready by itself once they are healthy."
            ),
        ),
        alert(
            "FiefRolloutHalted",
            format!("max by (namespace) (fief_rollout_halted{{{sel}}}) == 1"),
            &r.rollout_halted_for,
            false,
            format!("the fief rollout in {ns} is halted"),
            format!(
                "A tenant of the current wave failed, was invalid or is stalled; the later waves stay at the commit they run. `fief status --namespace {ns}` names the wave and the tenant. Fix it (a fix commit starts a new rollout), revert the change, or `fief suspend TENANT --namespace {ns}` to take it out of the waves."
            ),
        ),
        alert(
            "FiefPruneHeld",
            format!("max by (namespace, reason) (fief_tenants_prune_held{{{sel}}}) > 0"),
            &r.prune_held_for,
            false,
            format!("{VALUE} fief tenant(s) in {ns} have a prune held ({REASON})"),
            format!(
                "Objects that left git still run. `fief status --namespace {ns} --not-ready` names the tenants and the hold. mass_prune: check the change with `fief diff REPO --tenant TENANT`, then run `fief apply REPO --tenant TENANT --allow-mass-prune` (the agent never lifts the guard) or raise pruneGuard in fief.yaml. empty_render: fix the templates, or set `state: purged` to delete the tenant. apply_failed: fix the failing apply (FiefTenantNotReady names the tenant); the next sync prunes."
            ),
        ),
    ]
}

/// The PrometheusRule in the agent's namespace `ns`, with one group of every alert.
pub(super) fn prometheus_rule(ns: &str, r: &PrometheusRule) -> Value {
    let mut rules = agent_rules(ns);
    rules.extend(git_rules(ns, r));
    rules.extend(tenant_rules(ns, r));
    json!({
        "apiVersion": format!("{MONITORING_GROUP}/v1"),
        "kind": "PrometheusRule",
        "metadata": metadata(ns, "fief-agent", &r.labels),
        "spec": {"groups": [{"name": "fief-agent", "rules": rules}]},
    })
}
