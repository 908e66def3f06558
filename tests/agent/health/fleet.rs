//! Waiting for health never holds up another tenant's apply: a fresh agent with 100 tenants
//! whose Deployments never become ready (this control plane has no node) applies all of them
//! and is ready at once, and a healthy tenant's change pushed meanwhile goes out in seconds.

use super::*;

/// Deployments named `web` in the namespaces of tenants starting with `prefix`.
fn deployments_applied(prefix: &str) -> usize {
    let list = kubectl_json(&["get", "deployments", "-A"]).unwrap_or_default();
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|d| {
            d["metadata"]["name"] == "web"
                && d["metadata"]["namespace"]
                    .as_str()
                    .is_some_and(|ns| ns.starts_with(prefix))
        })
        .count()
}

/// Component `cfg`: one ConfigMap (healthy once it exists) with `greeting`.
fn cfg(greeting: &str) -> Vec<(String, String)> {
    vec![
        (
            "components/cfg/varz.yaml".to_string(),
            "greeting: hello\n".to_string(),
        ),
        (
            "components/cfg/templates/config.yaml".to_string(),
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  greeting: {greeting}\n"
            ),
        ),
    ]
}

#[test]
fn a_fresh_agent_with_100_never_ready_tenants_applies_all_and_is_ready_within_30s_and_a_healthy_change_goes_out_in_seconds()
 {
    let agent_ns = common::unique("fief-hl4");
    let prefix = common::unique("nr");
    let healthy = format!("{prefix}-ok");
    let mut files: Vec<(String, String)> = (0..100)
        .map(|i| tenant_file(&format!("{prefix}-{i:03}"), &["web"]))
        .collect();
    files.push(tenant_file(&healthy, &["cfg"]));
    let mut files = repo(&agent_ns, "300s", &files);
    files.extend(cfg("one"));
    let server = GitServer::new(&files);
    let started = Instant::now();
    let agent = Agent::spawn(&server.url(), &["--interval", "300s"], &[]);
    agent.wait_ready(Duration::from_secs(30));
    let ready = started.elapsed();
    wait_until(
        "all 100 never-ready tenants applied",
        Duration::from_secs(30).saturating_sub(started.elapsed()),
        || deployments_applied(&format!("{prefix}-")) == 100,
    );
    let applied = started.elapsed();
    eprintln!("ready {ready:?} and all 100 applied {applied:?} after start");
    assert!(applied < Duration::from_secs(30), "{applied:?}");
    assert_eq!(
        agent.metric("fief_tenants_health", "state=\"reconciling\""),
        100.0,
        "every never-ready tenant is waiting for health"
    );

    // A healthy tenant's own change, pushed while the 100 wait for health.
    server.commit(&cfg("two"), "cfg two");
    assert_eq!(agent.signed_push(), 202);
    let took = wait_until(
        "the healthy change applied",
        Duration::from_secs(20),
        || configmap_value(&format!("{healthy}-prod"), "cfg", "greeting").as_deref() == Some("two"),
    );
    eprintln!("the healthy tenant's change applied {took:?} after the push");
    assert!(
        took < Duration::from_secs(5),
        "took {took:?}\n{}",
        agent.log()
    );
    assert_eq!(
        agent.metric("fief_tenants_in_flight", "fief_tenants_in_flight "),
        0.0,
        "no rollout: nothing is counted against the bound"
    );
}
