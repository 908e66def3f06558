//! Health gating in the agent, on the real control plane: a tenant is `Reconciling` until the
//! objects it applied are healthy by kstatus rules, `Stalled` naming them after its
//! component's `health.timeout`, `Ready` once they are; and `--max-in-flight` bounds the
//! tenants applied but not yet healthy.
//!
//! This control plane runs no deployment controller and no node, so the test plays the
//! controller: it writes a Deployment's status (the `status` subresource) the way the
//! controller would once its Pods are ready, and the agent sees it through its watches. The
//! same sequence with a real kubelet and a failing readiness probe is in tests/node/main.rs
//! (`apply_wait_…`, for the CLI).

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use common::agent::*;
use common::kubectl::Kubectl;
use serde_json::Value;

mod fleet;
mod in_flight;

const DEPLOYMENT: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n        - name: web\n          image: \"registry.example/web:{{ values.tag }}\"\n";

fn tenant_file(name: &str, components: &[&str]) -> (String, String) {
    let list: String = components
        .iter()
        .map(|c| format!("    - name: {c}\n"))
        .collect();
    (
        format!("tenants/{name}.yaml"),
        format!(
            "apiVersion: fief.dev/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\nspec:\n  components:\n{list}"
        ),
    )
}

/// A repo with component `web` (a Deployment, `health.timeout` as given) and `batch` (a
/// Deployment nobody waits for: `health: {wait: false}`).
fn repo(agent_ns: &str, timeout: &str, tenants: &[(String, String)]) -> Vec<(String, String)> {
    let mut files = vec![
        (
            "fief.yaml".to_string(),
            format!("agentNamespace: {agent_ns}\n"),
        ),
        (
            "components/web/component.yaml".to_string(),
            format!("health: {{timeout: {timeout}}}\n"),
        ),
        (
            "components/web/varz.yaml".to_string(),
            "tag: \"1\"\n".to_string(),
        ),
        (
            "components/web/templates/deployment.yaml".to_string(),
            DEPLOYMENT.to_string(),
        ),
        (
            "components/batch/component.yaml".to_string(),
            "health: {wait: false}\n".to_string(),
        ),
        (
            "components/batch/varz.yaml".to_string(),
            "tag: \"1\"\n".to_string(),
        ),
        (
            "components/batch/templates/deployment.yaml".to_string(),
            DEPLOYMENT.replace("name: web\nspec", "name: batch\nspec"),
        ),
    ];
    files.extend(tenants.iter().cloned());
    files
}

fn kubectl(args: &[&str]) -> String {
    Kubectl::admin().ok(args)
}

/// Play the deployment controller: the Deployment's current generation is rolled out, its
/// replica ready and available.
fn mark_healthy(ns: &str, name: &str, generation: i64) {
    let status = serde_json::json!({"status": {
        "observedGeneration": generation, "replicas": 1, "updatedReplicas": 1,
        "readyReplicas": 1, "availableReplicas": 1}});
    kubectl(&[
        "patch",
        "deployment",
        name,
        "-n",
        ns,
        "--subresource=status",
        "--type=merge",
        "-p",
        &status.to_string(),
    ]);
}

fn condition_of(status: &Value, type_: &str) -> (String, String, String) {
    status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == type_)
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or("").to_string();
            (s("status"), s("reason"), s("message"))
        })
        .unwrap_or_default()
}

fn wait_for_condition(
    agent: &Agent,
    agent_ns: &str,
    tenant: &str,
    type_: &str,
    reason: &str,
    timeout: Duration,
) -> (String, String, String) {
    let start = Instant::now();
    loop {
        let c = condition_of(&status(agent_ns, tenant), type_);
        if c.0 == "True" && c.1 == reason {
            return c;
        }
        assert!(
            start.elapsed() < timeout,
            "{tenant} not {type_} ({reason}) after {timeout:?}; status {}\nagent log:\n{}",
            status(agent_ns, tenant),
            agent.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn an_agent_tenant_is_reconciling_until_its_deployment_is_ready_stalled_naming_it_after_the_timeout_and_ready_after_a_fix()
 {
    let agent_ns = common::unique("fief-hl1");
    let tenant = common::unique("sick");
    let ns = format!("{tenant}-prod");
    let server = GitServer::new(&repo(
        &agent_ns,
        "6s",
        &[tenant_file(&tenant, &["web", "batch"])],
    ));
    let agent = Agent::start(&server.url(), &["--interval", "300s"]);

    // Applied, but the Deployment has no ready replica: Reconciling, naming it.
    let (_, reason, message) = wait_for_condition(
        &agent,
        &agent_ns,
        &tenant,
        "Reconciling",
        "WaitingForHealth",
        Duration::from_secs(10),
    );
    assert_eq!(reason, "WaitingForHealth");
    assert!(
        message.contains(&format!("Deployment.apps/{ns}/web")) && !message.contains("/batch"),
        "{message}"
    );
    assert_eq!(
        condition_of(&status(&agent_ns, &tenant), "Ready").0,
        "False"
    );

    stalled_after_the_timeout_naming_the_deployment(&agent, &agent_ns, &tenant, &ns);
    // A hand edit is repaired, but the repaired Deployment is what was applied before: the
    // tenant stays Stalled (its wait is not restarted).
    kubectl(&[
        "patch",
        "deployment",
        "web",
        "-n",
        &ns,
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":3}}"#,
    ]);
    wait_until("the hand edit repaired", Duration::from_secs(10), || {
        kubectl_json(&["get", "deployment", "web", "-n", &ns])
            .is_some_and(|d| d["spec"]["replicas"] == 1)
    });
    std::thread::sleep(Duration::from_millis(1500));
    let st = status(&agent_ns, &tenant);
    assert_eq!(condition_of(&st, "Stalled").0, "True", "{st}");
    assert_eq!(condition_of(&st, "Reconciling").0, "False", "{st}");
    let before_fix = web_generation(&ns);

    a_fix_is_reconciling_until_rolled_out_then_ready(
        &server, &agent, &agent_ns, &tenant, &ns, before_fix,
    );
}

/// Still not healthy after the component's 6s: Stalled, the Deployment named with why
/// (status, metrics, `/status`).
fn stalled_after_the_timeout_naming_the_deployment(
    agent: &Agent,
    agent_ns: &str,
    tenant: &str,
    ns: &str,
) {
    // Still not healthy after the component's 6s: Stalled, the Deployment named with why.
    let started = Instant::now();
    let (_, reason, message) = wait_for_condition(
        agent,
        agent_ns,
        tenant,
        "Stalled",
        "Unhealthy",
        Duration::from_secs(20),
    );
    eprintln!("stalled {:?} after Reconciling was seen", started.elapsed());
    assert_eq!(reason, "Unhealthy");
    assert!(
        message.contains(&format!("Deployment.apps/{ns}/web")) && message.contains("timed out"),
        "{message}"
    );
    let st = status(agent_ns, tenant);
    assert_eq!(condition_of(&st, "Ready").0, "False");
    assert_eq!(condition_of(&st, "Reconciling").0, "False");
    assert!(st["lastError"].as_str().is_some_and(|e| e.contains("/web")));
    assert_eq!(
        agent.metric("fief_tenants_health", "state=\"stalled\""),
        1.0
    );
    assert_eq!(
        agent.metric("fief_tenant_healthy", &format!("tenant=\"{tenant}\"")),
        0.0
    );
    let (_, body) = agent.get("/status").expect("/status");
    let view: Value = serde_json::from_str(&body).expect("status JSON");
    assert_eq!(view["health"]["tenants"][&tenant]["health"], "stalled");
}

/// A fix commit changes the Deployment: Reconciling again until its new generation is
/// rolled out (the `batch` Deployment, never healthy, is not waited for), then Ready.
fn a_fix_is_reconciling_until_rolled_out_then_ready(
    server: &GitServer,
    agent: &Agent,
    agent_ns: &str,
    tenant: &str,
    ns: &str,
    before_fix: i64,
) {
    // A fix commit changes the Deployment: Reconciling again until its new generation is
    // rolled out (the `batch` Deployment, never healthy, is not waited for), then Ready.
    server.commit(
        &[(
            "components/web/varz.yaml".to_string(),
            "tag: \"2\"\n".to_string(),
        )],
        "fix web",
    );
    assert_eq!(agent.signed_push(), 202);
    wait_until("the fix applied", Duration::from_secs(10), || {
        web_generation(ns) == before_fix + 1
    });
    let (_, reason, _) = wait_for_condition(
        agent,
        agent_ns,
        tenant,
        "Reconciling",
        "WaitingForHealth",
        Duration::from_secs(10),
    );
    assert_eq!(reason, "WaitingForHealth");
    mark_healthy(ns, "web", before_fix + 1);
    let (_, reason, _) = wait_for_condition(
        agent,
        agent_ns,
        tenant,
        "Ready",
        "Healthy",
        Duration::from_secs(10),
    );
    assert_eq!(reason, "Healthy");
    let st = status(agent_ns, tenant);
    assert_eq!(condition_of(&st, "Stalled").0, "False");
    assert_eq!(condition_of(&st, "Reconciling").0, "False");
    wait_until("metrics say healthy", Duration::from_secs(5), || {
        agent.metric("fief_tenant_healthy", &format!("tenant=\"{tenant}\"")) == 1.0
    });
}

/// The generation of the `web` Deployment in `ns` (0 when it cannot be read).
fn web_generation(ns: &str) -> i64 {
    kubectl_json(&["get", "deployment", "web", "-n", ns])
        .and_then(|d| d["metadata"]["generation"].as_i64())
        .unwrap_or(0)
}

/// Deployments of the given namespaces, by namespace: (generation, rolled out).
fn deployments(namespaces: &BTreeSet<String>) -> BTreeMap<String, (i64, bool)> {
    let list =
        kubectl_json(&["get", "deployments", "-A", "-l", "fief.dev/tenant"]).unwrap_or(Value::Null);
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|d| {
            let ns = d["metadata"]["namespace"].as_str()?;
            if !namespaces.contains(ns) || d["metadata"]["name"] != "web" {
                return None;
            }
            let generation = d["metadata"]["generation"].as_i64()?;
            let observed = d["status"]["observedGeneration"].as_i64();
            Some((ns.to_string(), (generation, observed == Some(generation))))
        })
        .collect()
}

/// Play the controller for every tenant's `web` Deployment until all of them are at
/// `generation` and rolled out; each applied Deployment stays unhealthy for `hold`. Returns
/// the most Deployments seen applied but not rolled out at once.
fn roll_out_all(namespaces: &BTreeSet<String>, generation: i64, hold: Duration) -> usize {
    let start = Instant::now();
    let mut first_seen: BTreeMap<String, Instant> = BTreeMap::new();
    let mut peak = 0;
    loop {
        let now = deployments(namespaces);
        let pending: Vec<&String> = now
            .iter()
            .filter(|(_, (g, done))| *g == generation && !done)
            .map(|(ns, _)| ns)
            .collect();
        peak = peak.max(pending.len());
        let done = now
            .values()
            .filter(|(g, done)| *g == generation && *done)
            .count();
        if done == namespaces.len() {
            return peak;
        }
        for ns in pending {
            let seen = *first_seen.entry(ns.clone()).or_insert_with(Instant::now);
            if seen.elapsed() >= hold {
                mark_healthy(ns, "web", generation);
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(240),
            "only {done}/{} rolled out at generation {generation}",
            namespaces.len()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
